"""Model cards: the result goes into model-index through huggingface_hub; everything else is preserved."""

from __future__ import annotations

import pytest
from huggingface_hub import ModelCard
from huggingface_hub.repocard_data import model_index_to_eval_results

from embedselect.cli import main
from embedselect.errors import ConfigError
from embedselect.publish.cards import END, START, update_card, write_card
from embedselect.store import Store
from tests.test_publish_badges_leaderboard import FP, _ranking, _save

CARD = """---
license: apache-2.0
tags:
- sentence-transformers
custom_key:
  nested: [1, 2]
model-index:
- name: org/m1
  results:
  - task: {type: text-classification}
    dataset: {name: imdb, type: imdb}
    metrics:
    - {type: accuracy, value: 0.91}
---
# org/m1

## Usage

Keep me exactly.
"""


def test_card_round_trip_keeps_everything_else():
    r = _ranking(["org/m1", "m2"], [0.9, 0.5], "aaaa1111")
    out = update_card(CARD, r, "org/m1")
    card = ModelCard(out)
    assert card.data.license == "apache-2.0" and card.data.tags == ["sentence-transformers"]
    assert card.data.to_dict()["custom_key"] == {"nested": [1, 2]}
    assert "## Usage\n\nKeep me exactly." in card.text
    name, results = model_index_to_eval_results(card.data.to_dict()["model-index"])  # hub's own parser
    assert name == "org/m1"
    by_type = {(e.source_name, e.metric_type): e for e in results}
    assert by_type[(None, "accuracy")].metric_value == 0.91  # the author's own result kept
    ours = by_type[("embedselect", "task_prior")]
    assert ours.metric_value == pytest.approx(0.9) and ours.dataset_revision == FP
    assert ours.dataset_type == f"embedselect/{FP[:16]}" and "aaaa1111" in ours.source_url
    assert by_type[("embedselect", "embedselect_rank")].metric_value == 1
    assert out.count(START) == 1 and "#1 of 2" in out

    # A newer ranking of the same data replaces (not duplicates) the embedselect results and the badge block.
    r2 = _ranking(["m2", "org/m1"], [0.8, 0.7], "bbbb2222")
    out2 = update_card(out, r2, "org/m1")
    _, results2 = model_index_to_eval_results(ModelCard(out2).data.to_dict()["model-index"])
    ours2 = [e for e in results2 if e.source_name == "embedselect"]
    assert len(ours2) == 2 and sorted(e.metric_value for e in ours2) == pytest.approx([0.7, 2])
    assert out2.count(START) == 1 and out2.count(END) == 1 and "#2 of 2" in out2 and "#1 of 2" not in out2
    assert "Keep me exactly." in out2 and len(results2) == 3


def test_failed_candidate_is_a_typed_error(tmp_path):
    r = _ranking(["m1"], [0.9], "aaaa1111", failed=["bad"])
    with pytest.raises(ConfigError, match="failed"):
        write_card(tmp_path / "README.md", r, "bad")
    with pytest.raises(ConfigError, match="no candidate"):
        write_card(tmp_path / "README.md", r, "../../etc/passwd")
    assert not (tmp_path / "README.md").exists()


def test_cli_card_writes_local_file(tmp_path, capsys):
    store = Store.open(tmp_path / "store")
    _save(store, _ranking(["org/m1", "m2"], [0.9, 0.5], "aaaa1111"))
    card = tmp_path / "repo" / "README.md"
    card.parent.mkdir()
    card.write_text(CARD)
    assert main(["card", str(card.parent), "--cache-dir", str(tmp_path / "store")]) == 0
    text = card.read_text()
    assert "custom_key" in text and "Keep me exactly." in text and "embedselect_rank" in text
    assert "rank 1 of 2" in capsys.readouterr().out

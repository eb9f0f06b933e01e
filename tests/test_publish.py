"""Publishing: badges, model cards and leaderboards from stored rankings, safe with hostile names."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import embedselect
from embedselect.cli import main
from embedselect.data import sample_path
from embedselect.errors import ConfigError
from embedselect.publish import leaderboard as lb
from embedselect.publish import load_ranking, previous_ranking, update_card, write_badges
from embedselect.ranking.result import CandidateResult, Ranking
from embedselect.store import Store
from testkit.tinymodels import make_tiny_sentence_transformer

SAMPLE = sample_path("texts")
EVIL = '../../<script>alert("x")</script> | [a](javascript:1)'

# shields.io endpoint badge schema (https://shields.io/badges/endpoint-badge)
ENDPOINT_SCHEMA = {
    "type": "object",
    "required": ["schemaVersion", "label", "message"],
    "properties": {
        "schemaVersion": {"const": 1}, "label": {"type": "string"}, "message": {"type": "string"},
        "color": {"type": "string"}, "labelColor": {"type": "string"}, "isError": {"type": "boolean"},
        "namedLogo": {"type": "string"}, "logoSvg": {"type": "string"}, "logoColor": {"type": "string"},
        "style": {"type": "string"}, "cacheSeconds": {"type": "integer", "minimum": 300},
    },
    "additionalProperties": False,
}


def _fake(names_scores: list[tuple[str, float]], *, fingerprint: str = "f" * 64) -> Ranking:
    cands = [
        CandidateResult(name=n, spec=n, model_id=f"org/{i}", revision="a" * 40, scores={"task_prior": s},
                        ranks={"task_prior": i + 1}, combined_score=s, rank=i + 1, dim=8)
        for i, (n, s) in enumerate(names_scores)
    ]
    return Ranking(candidates=cands, metrics=["task_prior"], combine="mean-rank",
                   dataset={"source": "/data/tickets.csv", "n": 100, "modality": "text", "fingerprint": fingerprint},
                   settings={"seed": 0}, versions={"embedselect": "0.1.0"}, ranking_id="r" * 32,
                   created_at="2026-11-23T00:00:00+00:00")


@pytest.mark.fault
def test_badges_are_svg_with_the_rank_and_valid_endpoint_json_under_safe_names(tmp_path):
    import jsonschema

    ranking = _fake([(EVIL, 0.9), ("org/model", 0.5), ("tfidf-svd", 0.1)])
    written = write_badges(ranking, tmp_path / "badges")
    assert set(written) == {EVIL, "org/model", "tfidf-svd"}
    files = sorted(p.name for p in (tmp_path / "badges").iterdir())
    assert all(p.parent == tmp_path / "badges" for p in (tmp_path / "badges").iterdir())
    assert len(files) == 7 and "badges.md" in files  # 3 × (svg, json) + the snippets
    assert not any(n.startswith(".") or "/" in n or ".." in n.replace(".svg", "").replace(".json", "") for n in files)
    for i, name in enumerate([EVIL, "org/model", "tfidf-svd"]):
        svg = ET.parse(written[name]["svg"]).getroot()
        texts = [t.text for t in svg.iter("{http://www.w3.org/2000/svg}text")]
        assert "embedselect" in texts and f"#{i + 1} of 3 · tickets.csv" in texts
        endpoint = json.loads(open(written[name]["json"]).read())
        jsonschema.validate(endpoint, ENDPOINT_SCHEMA)
        assert endpoint["message"] == f"#{i + 1} of 3 · tickets.csv"
    assert json.loads(open(written[EVIL]["json"]).read())["color"] == "brightgreen"
    assert json.loads(open(written["tfidf-svd"]["json"]).read())["color"] == "orange"
    assert "<script>" not in (tmp_path / "badges" / "badges.md").read_text()


def test_an_undecided_lead_shows_as_a_tie_on_the_badge(tmp_path):
    ranking = _fake([("a", 0.9), ("b", 0.9), ("c", 0.1)])
    ranking.decided, ranking.leaders = False, ["a", "b"]
    ranking.candidates[2].combined_score, ranking.leaders = 0.85, ["a", "b", "c"]  # c (rank 3) is a leader too
    written = write_badges(ranking, tmp_path)
    for name in ("a", "b", "c"):  # every leader is tied for first: "c" read "tied #3 of 3", in orange
        endpoint = json.loads(open(written[name]["json"]).read())
        assert endpoint["message"] == "tied #1 of 3 · tickets.csv" and endpoint["color"] == "brightgreen", endpoint
    ranking.leaders = ["a", "b"]
    written = write_badges(ranking, tmp_path)
    assert json.loads(open(written["c"]["json"]).read())["message"] == "#3 of 3 · tickets.csv"


def test_an_undecided_ranking_says_so_on_the_html_leaderboard_as_on_the_markdown():
    """The HTML leaderboard showed the first row and no caveat where the Markdown one says "no clear winner"."""
    ranking = _fake([("a", 0.9), ("b", 0.9), ("c", 0.1)])
    ranking.decided, ranking.leaders = False, ["a", "b"]
    ranking.undecided_reasons, ranking.next_step = ["a, b <tie>"], "label a few items"
    page = lb.to_html(ranking)
    assert "no clear winner: a, b &lt;tie&gt;" in page and "label a few items" in page
    assert "- no clear winner: a, b" in lb.to_markdown(ranking)
    ranking.decided, ranking.leaders = True, ["a"]
    assert "no clear winner" not in lb.to_html(ranking)


CARD = """---
license: apache-2.0
language: [en]
tags: [sentence-transformers, feature-extraction]
pipeline_tag: sentence-similarity
model-index:
- name: org/model
  results:
  - task: {type: retrieval}
    dataset: {type: mteb/scifact, name: SciFact}
    metrics:
    - {type: ndcg_at_10, value: 0.64}
---

# org/model

Some words the authors wrote.

## Training

Details that must stay.
"""


def test_model_card_round_trip_keeps_everything_else_and_replaces_its_own_section():
    from huggingface_hub import ModelCard

    ranking = _fake([("org/model", 0.9), ("other", 0.4)])
    once = update_card(CARD, ranking, "org/model")
    twice = update_card(once, ranking, "org/model")
    assert twice == once  # idempotent: the same section and the same eval results, not appended again
    card = ModelCard(twice)
    data = card.data.to_dict()
    assert data["license"] == "apache-2.0" and data["language"] == ["en"]
    assert data["tags"] == ["sentence-transformers", "feature-extraction"] and data["pipeline_tag"] == "sentence-similarity"
    results = card.data.eval_results  # parsed by huggingface_hub's own model-index parser
    assert any(r.dataset_type == "mteb/scifact" and r.metric_value == 0.64 for r in results)
    ours = [r for r in results if r.source_name == "embedselect"]
    assert {r.metric_type for r in ours} == {"embedselect/rank", "embedselect/task_prior"}
    assert all(r.dataset_revision == "f" * 64 for r in ours)
    assert [r.metric_value for r in ours if r.metric_type == "embedselect/rank"] == [1]
    assert "Some words the authors wrote." in card.text and "## Training\n\nDetails that must stay." in card.text
    assert card.text.count("<!-- embedselect:start -->") == 1 and "#1 of 2" in card.text
    # a new ranking of other data adds its own entries next to the first
    other = update_card(twice, _fake([("x", 0.2), ("org/model", 0.1)], fingerprint="e" * 64), "org/model")
    assert len([r for r in ModelCard(other).data.eval_results if r.source_name == "embedselect"]) == 4
    with pytest.raises(ConfigError, match="is not in the ranking"):
        update_card(CARD, ranking, "no-such-candidate")


@pytest.mark.fault
def test_a_new_card_gets_front_matter_and_the_section():
    from huggingface_hub import ModelCard

    card = ModelCard(update_card(None, _fake([(EVIL, 0.9), ("b", 0.1)]), EVIL))
    assert card.data.eval_results and "<script>" not in card.text.split("<!-- embedselect:start -->")[1]


def test_a_metric_that_did_not_score_the_candidate_has_no_model_index_result():
    """RankMe left out of the score (NaN for every candidate) was published as ``value: .nan`` in the card's
    model-index, where the card's own sentence says ``rankme -``."""
    r = _fake([("a", 0.9), ("b", 0.1)])
    r.metrics = ["task_prior", "rankme"]
    for c in r.candidates:
        c.scores["rankme"] = float("nan")
    card = update_card(None, r, "a")
    assert ".nan" not in card and "embedselect/rankme" not in card and "rankme -" in card
    assert "type: embedselect/task_prior" in card and "type: embedselect/rank" in card


def test_leaderboard_history_from_the_store(tmp_path, cache_dir, capsys):
    st = make_tiny_sentence_transformer(tmp_path / "tiny-st")
    first = embedselect.select(SAMPLE, "tfidf-svd,random-projection", column="text", metrics=["task_prior"], seed=0)
    second = embedselect.select(SAMPLE, ["tfidf-svd", "random-projection", str(st)], column="text",
                                metrics=["task_prior"], seed=0)
    store = Store.open(cache_dir)
    latest = load_ranking(store)
    assert latest.ranking_id == second.ranking_id
    prev = previous_ranking(store, latest)
    assert prev is not None and prev.ranking_id == first.ranking_id
    assert previous_ranking(store, first) is None
    rows = {r.name: r for r in lb.leaderboard_rows(latest, prev)}
    new_name = next(c.name for c in second if c.name not in {"tfidf-svd", "random-projection"})
    assert rows[new_name].new and rows[new_name].rank_change is None
    for name in ("tfidf-svd", "random-projection"):
        assert not rows[name].new
        assert rows[name].rank_change == first[name].rank - second[name].rank
        assert rows[name].score_change == pytest.approx(second[name].combined_score - first[name].combined_score)
    assert "| new |" in lb.to_markdown(latest, prev)

    assert main(["leaderboard", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["ranking_id"] == second.ranking_id and payload["previous_ranking_id"] == first.ranking_id
    assert {r["name"] for r in payload["rows"] if r["new"]} == {new_name}
    assert main(["leaderboard", "--ranking", first.ranking_id[:10], "--format", "html", "--out", str(tmp_path / "l.html")]) == 0
    assert "<table" in (tmp_path / "l.html").read_text()
    assert main(["badge", "--out", str(tmp_path / "b"), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 3
    assert main(["card", "--candidate", "tfidf-svd", "--out", str(tmp_path / "README.md")]) == 0
    assert "embedselect/task_prior" in (tmp_path / "README.md").read_text()
    assert main(["report", "--out", str(tmp_path / "r.html")]) == 0
    assert main(["leaderboard", "--ranking", "nope"]) == 2
    assert "no stored ranking" in capsys.readouterr().err


@pytest.mark.fault
def test_no_stored_ranking_is_a_clear_error(cache_dir, capsys):
    assert main(["leaderboard"]) == 2
    assert "run `embedselect rank` first" in capsys.readouterr().err


def test_the_report_shows_the_distribution_of_accuracy_over_sampled_tasks(cache_dir):
    from embedselect.publish import plots

    r = embedselect.select(SAMPLE, "tfidf-svd,random-projection", column="text", metrics=["task_prior"], seed=0)
    per_task = r.details["task_prior"]["task_accuracy"]
    n_tasks = r.details["task_prior"]["n_tasks"]
    assert set(per_task) == {"tfidf-svd", "random-projection"} and all(len(v) == n_tasks for v in per_task.values())
    assert r["tfidf-svd"].columns["task_prior.probe_acc_mean"] == pytest.approx(np.mean(per_task["tfidf-svd"]), abs=1e-3)
    full = plots.task_accuracy(r)
    assert "sampled task" in full and "cluster task" not in full
    r.details["task_prior"].pop("task_accuracy")
    summary = plots.task_accuracy(r)
    assert full.startswith("<svg") and summary.startswith("<svg") and full != summary
    # cluster tasks (the image default) are called so
    clustered = embedselect.select(SAMPLE, "tfidf-svd,random-projection", column="text", metrics=["task_prior"],
                                   seed=0, metric_options={"task_prior": {"tasks": "clusters"}})
    assert clustered.details["task_prior"]["tasks"] == "clusters"
    assert "cluster task" in plots.task_accuracy(clustered)


def test_model_size_is_recorded_for_the_cost_plot(tmp_path, cache_dir):
    from embedselect.publish import plots

    st = make_tiny_sentence_transformer(tmp_path / "tiny-st")
    r = embedselect.select(SAMPLE, [str(st), "tfidf-svd", "random-projection"], column="text",
                           metrics=["task_prior"], seed=0)
    weights = sum(p.stat().st_size for p in st.rglob("*.safetensors"))
    (model,) = [c for c in r if c.name not in ("tfidf-svd", "random-projection")]
    assert model.model_bytes == weights > 0 and r["tfidf-svd"].model_bytes is None
    again = Ranking.from_json(r.to_json())
    assert again[model.name].model_bytes == weights
    assert plots.score_vs_cost(r).startswith("<svg")


@pytest.mark.fault
def test_leaderboards_and_cards_are_safe_with_hostile_names_and_card_text():
    """Issue 14 (fault suite, publish): a candidate name / hub model id with HTML, Markdown and path tricks cannot
    break out of the Markdown table, inject markup into the HTML leaderboard, or break the JSON; a card whose own text
    already fakes embedselect's section markers keeps the authors' text and gets exactly one section."""
    import html
    from html.parser import HTMLParser

    from huggingface_hub import ModelCard

    pipe = "org/x | injected | cell"
    ranking = _fake([(EVIL, 0.9), (pipe, 0.5), ("tfidf-svd", 0.1)])
    md = lb.to_markdown(ranking)
    rows = [ln for ln in md.splitlines() if ln.startswith("|")]
    assert len({ln.count("|") - ln.count("\\|") for ln in rows}) == 1, md  # every row has the header's cells
    assert "<script>" not in md and "](javascript:" not in md
    page = lb.to_html(ranking)

    class Tags(HTMLParser):
        seen: list[str] = []

        def handle_starttag(self, tag, attrs):
            self.seen.append(tag)

    parser = Tags()
    parser.feed(page)
    assert "script" not in parser.seen and html.escape(EVIL) in page
    assert {r["name"] for r in json.loads(lb.to_json(ranking))["rows"]} == {EVIL, pipe, "tfidf-svd"}

    sneaky = CARD + "\n<!-- embedselect:start -->\nfake section the author pasted\n"  # an unterminated marker
    card = update_card(sneaky, ranking, EVIL)
    again = update_card(card, ranking, EVIL)
    assert again == card
    text = ModelCard(card).text
    assert "Some words the authors wrote." in text and "Details that must stay." in text
    assert "<script>" not in text.split("Details that must stay.")[1]


def test_the_cost_plots_log_axes_show_plain_numbers():
    """With costs spanning more than 20x the score-vs-cost panels use a log axis; its tick labels were drawn as
    the raw mathtext ``$\\mathdefault{10^{2}}$`` (figure text is never parsed as math, so a ``$`` in a name stays
    a dollar sign) and the minor labels overlapped them: they are plain numbers now, on the major ticks only."""
    import re

    from embedselect.publish import plots

    ranking = _fake([("a", 0.9), ("b", 0.6), ("c", 0.3)])
    for c, (mb, rate) in zip(ranking.candidates, [(0.1, 40.0), (25.0, 900.0), (400.0, 20000.0)]):
        c.model_bytes, c.items_per_second = int(mb * 1e6), rate
    svg = plots.score_vs_cost(ranking)
    assert svg is not None
    drawn = re.findall(r"<!-- (.*?) -->", svg)  # matplotlib names each text it draws as paths in a comment
    assert not [t for t in drawn if "$" in t or "mathdefault" in t], drawn
    for label in ("0.1", "1", "10", "100", "1,000", "10,000"):
        assert label in drawn, (label, drawn)


def test_a_card_without_front_matter_is_updated_without_huggingface_hubs_warning(tmp_path, cache_dir, capfd, caplog):
    """New-user audit: ``card --card README.md`` of a README without front matter printed huggingface_hub's "Repo
    card metadata block was not found" twice (its own handler and the CLI's); the card gets front matter anyway."""
    import logging

    embedselect.select(SAMPLE, "tfidf-svd,random-projection", column="text", metrics=["task_prior"], seed=0)
    readme, out = tmp_path / "README.md", tmp_path / "out.md"
    readme.write_text("# My model\n\nSome text the authors wrote.\n", encoding="utf-8")
    capfd.readouterr()
    with caplog.at_level(logging.INFO):
        assert main(["card", "--candidate", "tfidf-svd", "--card", str(readme), "--out", str(out)]) == 0
    err = capfd.readouterr().err
    assert "metadata block" not in err and not any("metadata block" in r.getMessage() for r in caplog.records), err
    assert f"wrote {out}" in err  # the tool's own messages still show
    written = out.read_text(encoding="utf-8")
    assert written.startswith("---\nmodel-index:") and "Some text the authors wrote." in written
    # the library's other warnings of that logger are not hidden
    logging.getLogger("huggingface_hub.repocard").warning("another warning")
    assert any(r.getMessage() == "another warning" for r in caplog.records)


def test_the_list_of_stored_rankings_is_readable_and_its_json_complete(cache_dir, capsys):
    """`leaderboard --list` printed 32-hex ids and 64-hex fingerprints (over 200 characters a line) and nothing
    about which data each ranking was of or what came first."""
    r = embedselect.select(SAMPLE, "tfidf-svd,random-projection", column="text", metrics=["task_prior"], seed=0)
    assert main(["leaderboard", "--list"]) == 0
    head, row = capsys.readouterr().out.splitlines()[:2]
    assert head.split()[:6] == ["ranking", "created", "data", "fingerprint", "candidates", "first"]
    first = f"{r.best.name} (undecided)" if not r.decided else r.best.name
    assert row.split()[0] == r.ranking_id[:12] and "texts.csv" in row and first in row
    assert r.ranking_id not in row and r.dataset["fingerprint"] not in row and len(row) < 140
    assert main(["leaderboard", "--list", "--json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)
    assert entry["ranking_id"] == r.ranking_id and entry["fingerprint"] == r.dataset["fingerprint"]
    assert entry["first"] == r.best.name and entry["decided"] is r.decided and entry["source"].endswith("texts.csv")

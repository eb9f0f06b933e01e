"""Issue 23 item 4: a copy the vectors cannot show (a model2vec distillation) is known by what its model card
declares, and is never ranked above the model it was made from; a fine-tune naming the same base is not a copy."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import embedselect
import embedselect.pipeline.scoring as pipeline_metrics
from embedselect.models.candidates.card import CardOrigin, card_origin, model_aliases, parse_card
from embedselect.metrics.copies import declared_copies

from testkit.tinymodels import make_tiny_sentence_transformer

M2V_CARD = """---
base_model: {base}
library_name: model2vec
license: mit
tags:
- embeddings
- static-embeddings
---

# a static model
"""
FINETUNE_CARD = "---\nbase_model: {base}\nbase_model_relation: finetune\nlibrary_name: sentence-transformers\n---\n"
QUANT_CARD = "---\nbase_model:\n- {base}\nbase_model_relation: quantized\n---\n# int8\n"


def test_cards_say_distilled_quantized_or_nothing():
    assert parse_card(M2V_CARD.format(base="sentence-transformers/all-MiniLM-L6-v2")) == CardOrigin(
        ("sentence-transformers/all-MiniLM-L6-v2",), "distilled")
    assert parse_card(QUANT_CARD.format(base="org/m")) == CardOrigin(("org/m",), "quantized")
    assert parse_card(FINETUNE_CARD.format(base="org/m")) == CardOrigin(("org/m",), None)  # a new model, not a copy
    # a model2vec card that says it was fine-tuned is trusted: not a copy
    assert parse_card(M2V_CARD.format(base="org/m").replace("license", "base_model_relation: finetune\nlicense")
                      ).relation is None
    for text in ("# no front matter\nbase_model: x\n", "---\nbase_model: [unclosed\n---\n", "---\n- a list\n---\n",
                 "---\nbase_model: x\n", "---\nlibrary_name: model2vec\n---\n", "---\nbase_model: 42\n---\n", ""):
        assert parse_card(text) is None, text
    long = "x" * 301
    assert parse_card(f"---\nbase_model: [{long}, ok/model]\nlibrary_name: model2vec\n---\n").base_models == ("ok/model",)


def test_a_card_is_read_only_inside_its_folder(tmp_path):
    outside = tmp_path / "outside.md"
    outside.write_text(M2V_CARD.format(base="teacher"))
    linked = tmp_path / "linked"
    linked.mkdir()
    os.symlink(outside, linked / "README.md")
    assert card_origin(linked) is None  # a link out of the folder the user gave is never followed
    assert card_origin(linked, within=tmp_path) == CardOrigin(("teacher",), "distilled")  # a hub snapshot's blobs
    own = tmp_path / "own"
    own.mkdir()
    (own / "README.md").write_bytes(M2V_CARD.format(base="teacher").encode() + b"\xff" * 10)
    assert card_origin(own) == CardOrigin(("teacher",), "distilled")
    assert card_origin(tmp_path / "missing") is None and card_origin(None) is None


def test_declared_pairs_match_hub_ids_folder_names_and_skip_variants_and_ambiguity(tmp_path):
    ids = {
        "teacher": ("local:/m/all-MiniLM-L6-v2", model_aliases("local:/m/all-MiniLM-L6-v2", Path("/m/all-MiniLM-L6-v2")), True),
        "teacher-cls": ("local:/m/all-MiniLM-L6-v2", model_aliases("local:/m/all-MiniLM-L6-v2", Path("/m/all-MiniLM-L6-v2")), False),
        "hub-model": ("org/other", model_aliases("org/other", None), True),
        "m2v": ("local:/m/m2v", ("/m/m2v", "m2v"), True),
        "m2v-of-other": ("local:/m/m2v2", ("/m/m2v2", "m2v2"), True),
        "tuned": ("local:/m/tuned", ("/m/tuned", "tuned"), True),
    }
    declared = {"m2v": CardOrigin(("sentence-transformers/all-MiniLM-L6-v2",), "distilled"),
                "m2v-of-other": CardOrigin(("ORG/other",), "quantized"),
                "tuned": CardOrigin(("org/other",), None)}
    pairs = {(d.copy, d.parent): d for d in declared_copies(declared, ids)}
    assert set(pairs) == {("m2v", "teacher"), ("m2v-of-other", "hub-model")}  # not the cls variant, not the fine-tune
    assert pairs[("m2v", "teacher")].declared and pairs[("m2v", "teacher")].relation == "distilled"
    assert pairs[("m2v", "teacher")].to_dict()["median_abs_spearman"] is None  # JSON-safe: no NaN
    ambiguous = dict(ids, twin=("local:/n/all-MiniLM-L6-v2", ("/n/all-minilm-l6-v2", "all-minilm-l6-v2"), True))
    assert ("m2v", "teacher") not in {(d.copy, d.parent) for d in declared_copies(declared, ambiguous)}
    exact = {"m2v": CardOrigin(("/m/all-MiniLM-L6-v2",), "distilled")}  # a whole path picks its folder
    assert {(d.copy, d.parent) for d in declared_copies(exact, ambiguous)} == {("m2v", "teacher")}


@pytest.fixture(scope="module")
def family(tmp_path_factory):
    root = tmp_path_factory.mktemp("family")
    teacher = make_tiny_sentence_transformer(root / "teacher", seed=0)
    static = make_tiny_sentence_transformer(root / "static-copy", seed=1)
    (static / "README.md").write_text(M2V_CARD.format(base=str(teacher)))
    tuned = make_tiny_sentence_transformer(root / "tuned", seed=2)
    (tuned / "README.md").write_text(FINETUNE_CARD.format(base="teacher"))
    return teacher, static, tuned


def test_select_ranks_a_declared_distillation_below_its_teacher(family, cache_dir, monkeypatch, one_thread):
    """The fake metric puts the fine-tune and the distilled copy first; the copy goes right below the teacher, which
    keeps its own place (below the baseline: a copy does not lift it, issue 41); the fine-tune keeps its place; the run
    says why and records the pair."""
    from embedselect.metrics import MetricResult

    teacher, static, tuned = family
    names = {str(static): 3.0, str(tuned): 4.0, str(teacher): 1.0, "tfidf-svd": 2.0}

    def fn(ctx):
        return MetricResult(name="fake", scores={k: next(v for s, v in names.items() if k.endswith(Path(s).name))
                                                 for k in ctx.embeddings})

    monkeypatch.setattr(pipeline_metrics, "get_metric", lambda m: fn)
    texts = [f"sentence number {i} about {w}" for i, w in enumerate(["cats", "dogs", "stocks", "rain"] * 6)]
    r = embedselect.select(texts, [str(teacher), str(static), str(tuned), "tfidf-svd"], metrics=["task_prior"])
    order = [c.name for c in r.candidates]
    assert order == ["tuned", "tfidf-svd", "teacher", "static-copy"], order
    pair = next(p for p in r.details["copies"]["pairs"] if p["copy"] == "static-copy")
    assert pair == {"copy": "static-copy", "parent": "teacher", "relation": "distilled", "median_abs_spearman": None,
                    "monotone_fit": None, "declared": True}
    assert r.details["copies"]["moved_below_parent"] == [["static-copy", "teacher"]]
    assert any("static-copy is a distilled copy of teacher (its model card names teacher as its base_model)" in w
               for w in r.warnings)
    assert r.candidates[2].combined_score > r.candidates[3].combined_score


def test_a_hub_models_card_is_fetched_and_read(hub, family, cache_dir, monkeypatch, one_thread):
    """Through the loopback hub: the distilled copy's README.md comes with its snapshot (its files link into the
    repo's blob folder) and names the teacher by hub id."""
    from embedselect.metrics import MetricResult

    teacher, static, _ = family
    hub.publish("acme/teacher", teacher, library_name="sentence-transformers")
    hub.publish("acme/teacher-m2v", static, library_name="sentence-transformers",
                files={"README.md": M2V_CARD.format(base="acme/teacher").encode()})
    monkeypatch.setattr(pipeline_metrics, "get_metric", lambda m: lambda ctx: MetricResult(
        name="fake", scores={k: float(k.endswith("m2v")) for k in ctx.embeddings}))
    texts = [f"sentence number {i} about {w}" for i, w in enumerate(["cats", "dogs", "stocks", "rain"] * 6)]
    r = embedselect.select(texts, ["acme/teacher", "acme/teacher-m2v", "tfidf-svd"], metrics=["task_prior"])
    assert [c.name for c in r.candidates] == ["acme/teacher", "tfidf-svd", "acme/teacher-m2v"]  # tied, by name
    assert r.details["copies"]["moved_below_parent"] == [["acme/teacher-m2v", "acme/teacher"]]


def test_a_night_applies_what_the_cards_declare(hub, family, tmp_path, monkeypatch, one_thread):
    """The nightly job ranks through select_embedded (its executor resolved the candidates): the cards read at
    resolve time travel with the outcomes, so the night puts the distillation below its teacher as select() does."""
    from embedselect.metrics import MetricResult
    from embedselect.nightly import load_config, run_night
    from tests.test_nightly import publish_st, write_config

    teacher, static, _ = family
    publish_st(hub, "acme/teacher", teacher, 1)
    hub.publish("acme/teacher-m2v", static, library_name="sentence-transformers", trending_score=5,
                files={"README.md": M2V_CARD.format(base="acme/teacher").encode()})
    monkeypatch.setattr(pipeline_metrics, "get_metric", lambda m: lambda ctx: MetricResult(
        name="fake", scores={k: float(k.endswith("m2v")) for k in ctx.embeddings}))
    summary = run_night(load_config(write_config(tmp_path)))
    assert summary["status"] == "ok"
    ranking = json.loads((tmp_path / "site" / "ranking.json").read_text())  # what the night published
    assert ranking["details"]["copies"]["moved_below_parent"] == [["acme/teacher-m2v", "acme/teacher"]]
    order = [c["name"] for c in ranking["candidates"]]
    assert order.index("acme/teacher") < order.index("acme/teacher-m2v")

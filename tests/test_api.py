"""select() / embed(): the one orchestration path, end to end on real (tiny and pretrained) models."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pandas as pd
import pytest

import embedselect
from embedselect import pipeline as api
from embedselect.pipeline import scoring as pipeline_metrics
from embedselect.pipeline import conclude as pipeline_ranking
from embedselect.data import sample_path
from embedselect.errors import (
    AllCandidatesFailedError,
    ColumnNotFoundError,
    TooFewItemsError,
    UnknownMetricError,
)
from embedselect.ranking.result import Ranking
from embedselect.store import Store
from testkit.tinymodels import make_pickle_only_model, make_tiny_sentence_transformer

SAMPLE = sample_path("texts")


@pytest.fixture
def no_model_loading(monkeypatch):
    """Fail the test if any model is loaded (and so if any forward pass could happen)."""
    import embedselect.models.backends.loader as loader

    def refuse(*a, **k):
        raise AssertionError("a model was loaded although everything was cached")

    monkeypatch.setattr(loader, "load_embedder", refuse)


def test_select_ranks_and_second_run_is_fully_cached(tmp_path, cache_dir, monkeypatch):
    st_dir = make_tiny_sentence_transformer(tmp_path / "tiny-st")
    models = [str(st_dir), "tfidf-svd", "random-projection"]
    first = embedselect.select(SAMPLE, models, column="text", metrics=["task_prior"], seed=0)
    assert isinstance(first, Ranking)
    assert [c.status for c in first] == ["ok"] * 3
    assert sorted(c.rank for c in first) == [1, 2, 3]
    assert not any(c.cached for c in first)
    assert all(np.isfinite(c.scores["task_prior"]) for c in first)

    import embedselect.models.backends.loader as loader

    monkeypatch.setattr(loader, "load_embedder", lambda *a, **k: pytest.fail("model loaded on a cached run"))
    second = embedselect.select(SAMPLE, models, column="text", metrics=["task_prior"], seed=0)
    assert all(c.cached for c in second)
    assert {c.name: c.scores for c in second} == {c.name: c.scores for c in first}

    # the store holds what a user would query
    store = Store.open(cache_dir)
    assert len(store.query_df("SELECT * FROM embedding_runs")) == 3
    assert len(store.query_df("SELECT * FROM rankings")) == 2
    assert set(store.query_df("SELECT DISTINCT candidate FROM metric_results").candidate) == {c.name for c in first}


def test_ranking_json_roundtrip_and_pandas(tmp_path, cache_dir):
    r = embedselect.select(SAMPLE, "tfidf-svd,random-projection", column="text", metrics=["task_prior"])
    text = r.to_json()
    back = Ranking.from_json(text)
    assert back.to_dict() == r.to_dict()
    assert json.loads(text)["dataset"]["fingerprint"] == r.dataset["fingerprint"]
    df = r.to_pandas()
    assert isinstance(df, pd.DataFrame)
    assert list(df.index) == [c.name for c in r.candidates]
    assert {"rank", "task_prior", "task_prior_rank", "model_id", "revision"} <= set(df.columns)
    assert r.versions["embedselect"] == embedselect.__version__
    assert r.settings["seed"] == 0
    assert any("unreliable in pools smaller" in w for w in r.warnings)


def test_a_failing_model_is_reported_and_the_run_goes_on(tmp_path, cache_dir):
    bad = make_pickle_only_model(tmp_path / "pickle-only")
    r = embedselect.select(SAMPLE, [str(bad), "tfidf-svd", "random-projection"], column="text", metrics=["task_prior"])
    failed = r.failed
    assert len(failed) == 1 and failed[0].error_type == "UnsafeModelError"
    assert "safetensors" in failed[0].error or "pickle" in failed[0].error
    assert r.candidates[-1].status == "failed"  # failures sorted last
    assert {c.name for c in r.ok} == {"tfidf-svd", "random-projection"}
    store = Store.open(cache_dir)
    f = store.query_df("SELECT stage, error_type FROM failures")
    assert len(f) == 1 and f.iloc[0]["error_type"] == "UnsafeModelError"
    assert f.iloc[0]["stage"] in ("resolve", "load")


def test_all_candidates_failing_is_a_typed_error(tmp_path, cache_dir):
    """It carries the failed candidates and their reasons, as CandidatesFailedError carries ``failed`` (the new-user
    audit: it had neither, only the message)."""
    bad = make_pickle_only_model(tmp_path / "pickle-only")
    with pytest.raises(AllCandidatesFailedError, match="no candidate could be embedded") as e:
        embedselect.select(SAMPLE, [str(bad), f"again={bad}"], column="text", metrics=["task_prior"])
    assert e.value.failed == ["pickle-only", "again"], e.value.failed
    assert set(e.value.reasons) == {"pickle-only", "again"}
    assert all(why.startswith("UnsafeModelError: ") and "pickle" in why for why in e.value.reasons.values())
    again = pickle.loads(pickle.dumps(e.value))  # the Ray executor sends errors back pickled
    assert again.failed == e.value.failed and again.reasons == e.value.reasons


def test_bad_inputs_are_typed_errors(tmp_path, cache_dir):
    with pytest.raises(ColumnNotFoundError):
        embedselect.select(SAMPLE, "tfidf-svd", column="nope")
    with pytest.raises(UnknownMetricError, match="available"):
        embedselect.select(SAMPLE, "tfidf-svd", column="text", metrics=["accuracy"])
    with pytest.raises(TooFewItemsError) as e:
        embedselect.select(["a b", "c d", "e f"], "tfidf-svd", metrics=["task_prior"])
    assert e.value.needed > 3 and e.value.got == 3
    assert isinstance(e.value, embedselect.EmbedselectError)


def test_labels_validate_but_never_reach_label_free_metrics(tmp_path, cache_dir, monkeypatch):
    from embedselect.metrics import base

    seen = []
    real_get = base.get_metric

    def spy(name):
        fn = real_get(name)

        def wrapped(ctx):
            seen.append(ctx.labels)
            return fn(ctx)

        return wrapped

    monkeypatch.setattr(pipeline_metrics, "get_metric", spy)
    with_labels = embedselect.select(
        SAMPLE, "tfidf-svd,random-projection", column="text", labels="label", metrics=["task_prior"]
    )
    without = embedselect.select(  # a separate cache, so that the metric is computed again
        SAMPLE, "tfidf-svd,random-projection", column="text", metrics=["task_prior"], cache_dir=tmp_path / "other"
    )
    assert seen == [None, None]
    assert {c.name: c.scores for c in with_labels} == {c.name: c.scores for c in without}
    assert with_labels.validation is not None and without.validation is None
    assert with_labels.validation["accuracy_column"] == "logistic_acc"
    acc = {c.name: c.columns["labels.logistic_acc"] for c in with_labels}
    assert acc["tfidf-svd"] > acc["random-projection"]


def test_embed_only_fills_the_cache(tmp_path, cache_dir, request):
    outcomes = api.embed(SAMPLE, "tfidf-svd,random-projection", column="text")
    assert [o.result.status for o in outcomes] == ["ok", "ok"]
    store = Store.open(cache_dir)
    assert len(store.list_runs()) == 2
    request.getfixturevalue("no_model_loading")
    again = api.embed(SAMPLE, "tfidf-svd,random-projection", column="text")
    assert all(o.result.cached for o in again)


def test_public_signatures_show_no_private_parameters_and_loaded_data_goes_through_embed_reference(cache_dir):
    """select()/embed() take no ``_data``/``_store``; a caller with a loaded ReferenceData and an open Store uses
    the internal embed_reference(), which reads and writes that store and records the data set once."""
    import inspect

    for fn in (api.select, api.embed, embedselect.select, embedselect.embed):
        private = [p for p in inspect.signature(fn).parameters if p.startswith("_")]
        assert not private, f"{fn.__name__} shows private parameters {private}"
    ref = api.load_reference_data(SAMPLE, embedselect.RankConfig(column="text"))
    store = Store.open(cache_dir.parent / "other")
    outcomes = api.embed_reference(ref, ["tfidf-svd"], store=store, keep_vectors=True)
    assert outcomes[0].result.ok and outcomes[0].vectors.shape == (len(ref), outcomes[0].result.dim)
    assert store.load_vectors(outcomes[0].result.run_key) is not None
    assert len(Store.open(cache_dir).list_runs()) == 0  # nothing went to the default store


def test_batch_size_and_workers_reuse_the_cached_run(tmp_path, cache_dir, request):
    """?batch_size= / ?num_workers= change speed, not vectors: another value is served from the cache."""
    st_dir = make_tiny_sentence_transformer(tmp_path / "tiny-st")
    (first,) = api.embed(SAMPLE, f"{st_dir}?batch_size=4", column="text")
    assert first.result.status == "ok" and not first.result.cached
    request.getfixturevalue("no_model_loading")
    (again,) = api.embed(SAMPLE, f"{st_dir}?batch_size=16", column="text")
    assert again.result.cached and again.result.run_key == first.result.run_key


def test_embed_function_survives_importing_the_backends(tmp_path, cache_dir):
    """`embedselect.embed` is the public function, also after a select() imported the backend package."""
    embedselect.select(SAMPLE, "tfidf-svd,random-projection", column="text", metrics=["task_prior"], seed=0)
    import importlib

    importlib.import_module("embedselect.models.backends.base")  # what select() imports; it used to rebind the attribute

    assert callable(embedselect.embed)
    outcomes = embedselect.embed(SAMPLE, "tfidf-svd", column="text")
    assert outcomes[0].result.status == "ok"


@pytest.mark.slow
def test_end_to_end_real_minilm_configurations_and_baselines(cache_dir):
    """The demo's pool on the bundled sample: the real all-MiniLM-L6-v2 as shipped, with CLS pooling and
    truncated to 8 tokens, and two baselines. The label-free ranking puts the shipped configuration first and
    the random projection last; the labels agree."""
    from embedselect.cli import demo_candidates

    r = embedselect.select(SAMPLE, demo_candidates(), column="text", labels="label", metrics=["task_prior"], seed=0)
    assert [c.status for c in r] == ["ok"] * 5
    assert r.best.name == "all-MiniLM-L6-v2" and r.best.dim == 384
    assert r["random-projection"].rank == 5
    assert r.best.columns["task_prior_alignment"] == max(c.columns["task_prior_alignment"] for c in r)
    acc = {c.name: c.columns["labels.logistic_acc"] for c in r}
    assert acc["all-MiniLM-L6-v2"] > 0.85 > acc["tfidf-svd"] > acc["random-projection"]
    tp = next(m for m in r.validation["metrics"] if m["metric"] == "task_prior")
    assert tp["top_pick"] == "all-MiniLM-L6-v2" and tp["spearman"] > 0.5


def test_images_end_to_end_with_timm_and_baselines(tmp_path, cache_dir):
    """An image folder through the same path: a real timm model (its own data config), pixel-PCA, random
    projection; one undecodable file is skipped and reported when asked to."""
    from testkit.tinymodels import make_tiny_images, make_tiny_timm

    folder = tmp_path / "photos"
    make_tiny_images(folder, n=40, size=32)
    (folder / "broken.jpg").write_bytes(b"not an image")
    timm_dir = make_tiny_timm(tmp_path / "tiny-timm")
    models = [str(timm_dir), "pixel-pca", "random-projection"]
    with pytest.raises(embedselect.DataError, match="broken.jpg"):
        embedselect.select(folder, models, metrics=["task_prior"])
    r = embedselect.select(folder, models, metrics=["task_prior"], on_error="skip")
    assert r.dataset["modality"] == "image" and r.dataset["n"] == 40
    assert r.dataset["report"]["n_skipped_undecodable"] == 1
    assert [c.status for c in r] == ["ok"] * 3
    assert {c.backend for c in r} == {"timm", "pixel-pca", "random-projection"}
    assert sorted(c.rank for c in r) == [1, 2, 3]
    text_model = make_tiny_sentence_transformer(tmp_path / "st")
    mixed = embedselect.select(folder, [str(text_model), "pixel-pca"], metrics=["task_prior"], on_error="skip")
    assert mixed[text_model.name].status == "failed" and "text" in mixed[text_model.name].error


def test_select_prints_nothing(cache_dir, minilm_path, capfd):
    """Pipelines get no output on stdout/stderr: no progress bars from transformers or huggingface_hub."""
    from transformers.utils import logging as tf_logging

    assert tf_logging.is_progress_bar_enabled()
    embedselect.select(SAMPLE, [minilm_path, "tfidf-svd"], column="text", metrics=["task_prior"])
    out, err = capfd.readouterr()
    assert out == "" and "Loading weights" not in err and "it/s" not in err
    assert tf_logging.is_progress_bar_enabled()  # the global setting is restored


def test_a_combined_tie_is_shown_and_best_first_row_and_top_pick_agree(tmp_path, cache_dir, monkeypatch):
    """Issue 9 item 4: two metrics that disagree on the top two give a combined tie. The table shows it (shared
    rank 1), the ranking says it does not know (decided False, leaders, a warning, in the JSON), and best, the
    first row and the validation's top pick for the combined score are the same candidate."""
    from embedselect.metrics import MetricResult

    # the top two are not copies of each other (tfidf-svd?dim=8 would be a truncation of ?dim=16)
    order_a = ["tfidf-svd?dim=16", "random-projection?dim=16", "tfidf-svd?dim=8", "random-projection?dim=8"]
    order_b = [order_a[1], order_a[0], *order_a[2:]]

    def fake(order):
        def fn(ctx):
            return MetricResult(name="fake", scores={k: float(len(order) - order.index(k)) for k in ctx.embeddings})

        return fn

    monkeypatch.setattr(pipeline_metrics, "get_metric", lambda m: fake(order_a if m == "task_prior" else order_b))
    r = embedselect.select(SAMPLE, order_a, column="text", labels="label", metrics=["task_prior", "sufficiency"],
                           weights={"task_prior": 1.0, "sufficiency": 1.0})
    first, second = r.candidates[0], r.candidates[1]
    assert first.rank == second.rank == 1
    assert {first.name, second.name} == set(order_a[:2])
    assert r.best.name == first.name == sorted(order_a[:2])[0]  # the documented rule: ties by name
    combined = next(m for m in r.validation["metrics"] if m["metric"] == "combined")
    assert combined["top_pick"] == r.best.name and combined["top_tied"] == sorted(order_a[:2])
    assert r.decided is False and r.leaders == sorted(order_a[:2])
    assert any("no clear winner" in w and "tie" in w for w in r.warnings)
    d = json.loads(r.to_json())
    assert d["decided"] is False and d["leaders"] == r.leaders and d["undecided_reasons"]
    assert Ranking.from_json(r.to_json()).leaders == r.leaders


def test_select_drops_duplicates_and_embeds_only_the_kept_rows(tmp_path, cache_dir):
    base = pd.read_csv(SAMPLE)["text"].tolist()[:60]
    texts = base + base[:10] + [t.upper() + "!" for t in base[10:15]]  # 10 exact and 5 near copies
    full = embedselect.select(texts, ["tfidf-svd", "random-projection"], metrics=["task_prior"], seed=0)
    assert full.dataset["n"] == 75 and full.dataset["report"]["n_dropped_duplicates"] == 0
    exact = embedselect.select(texts, ["tfidf-svd", "random-projection"], metrics=["task_prior"], seed=0,
                               drop_duplicates="exact")
    near = embedselect.select(texts, ["tfidf-svd", "random-projection"], metrics=["task_prior"], seed=0,
                              drop_duplicates="near")
    for r, n_kept, rule in ((exact, 65, "exact"), (near, 60, "near")):
        rep = r.dataset["report"]
        assert r.dataset["n"] == n_kept and rep["n_dropped_duplicates"] == 75 - n_kept
        assert rep["duplicates_dropped"] == rule
        assert json.loads(r.to_json())["dataset"]["report"]["n_dropped_duplicates"] == 75 - n_kept
        # vectors of the rows actually embedded: a new fingerprint, new runs, not the full data's cache
        assert r.dataset["fingerprint"] != full.dataset["fingerprint"]
        assert all(c.n == n_kept for c in r)
        # tfidf-svd is fitted on the kept rows; random-projection reads the kept rows' vectors the full run stored
        assert (r["tfidf-svd"].embedded_items, r["tfidf-svd"].cached) == (n_kept, False)
        assert (r["random-projection"].embedded_items, r["random-projection"].stored_items) == (0, n_kept)
        assert {c.run_key for c in r}.isdisjoint({c.run_key for c in full})
    assert near.dataset["fingerprint"] == embedselect.ReferenceData.from_texts(base).fingerprint
    with pytest.raises(embedselect.ConfigError, match="drop_duplicates"):
        embedselect.select(texts, ["tfidf-svd"], metrics=["task_prior"], drop_duplicates="all")


def test_a_truncated_copy_ranks_right_below_its_parent(tmp_path, cache_dir, monkeypatch):
    """Issue 9: a copy (here the first 8 SVD dimensions of tfidf-svd?dim=16) that the label-free scores put first is
    ranked right below its parent, which keeps its own score (issue 41: a copy added to the pool does not lift its
    parent above another model); the run says so and records the pair."""
    from embedselect.metrics import MetricResult

    order = ["tfidf-svd?dim=8", "random-projection?dim=16", "tfidf-svd?dim=16"]

    def fn(ctx):
        return MetricResult(name="fake", scores={k: float(len(order) - order.index(k)) for k in ctx.embeddings})

    monkeypatch.setattr(pipeline_metrics, "get_metric", lambda m: fn)
    r = embedselect.select(SAMPLE, order, column="text", metrics=["task_prior"])
    assert [c.name for c in r.candidates] == ["random-projection?dim=16", "tfidf-svd?dim=16", "tfidf-svd?dim=8"]
    assert [c.rank for c in r.candidates] == [1, 2, 3]  # not a tie: the copy is strictly below
    assert r.candidates[0].combined_score > r.candidates[1].combined_score > r.candidates[2].combined_score
    pairs = {(p["copy"], p["parent"]) for p in r.details["copies"]["pairs"]}
    assert ("tfidf-svd?dim=8", "tfidf-svd?dim=16") in pairs
    assert r.details["copies"]["moved_below_parent"] == [["tfidf-svd?dim=8", "tfidf-svd?dim=16"]]
    assert any("truncated copy of tfidf-svd?dim=16" in w for w in r.warnings)
    assert r.settings["combined_weights"] == {"task_prior": 1.0}


def test_default_metrics_weights_and_method_are_the_benchmark_choice():
    """The defaults live in one place each (DEFAULT_METRICS, the specs' weights, DEFAULT_METHOD) and are the
    choice of docs/validity.md's protocol (selection half, confirmed on the confirmation half)."""
    from embedselect.ranking.combine import DEFAULT_METHOD
    from embedselect.metrics.base import get_spec

    assert api.DEFAULT_METRICS == ("task_prior", "sufficiency", "nn_agreement", "rankme", "modularity")
    assert {m: get_spec(m).weight for m in api.DEFAULT_METRICS} == {
        "task_prior": 1.0, "sufficiency": 0.25, "nn_agreement": 0.0, "rankme": 0.0, "modularity": 0.0}
    assert DEFAULT_METHOD == "mean-rank"


def _weight_0(monkeypatch, metric: str) -> None:
    """Give ``metric`` a default weight of 0 (shown, not combined), as sufficiency had until 2026-11-25."""
    import dataclasses

    from embedselect.metrics import base

    monkeypatch.setitem(base._SPECS, metric, dataclasses.replace(base.get_spec(metric), weight=0.0))


def test_a_weight_0_metric_is_shown_but_not_combined(cache_dir, monkeypatch):
    """A metric of default weight 0 (sufficiency until 2026-11-25): its scores and ranks are in the result, and the
    combined score is the same as without it, whatever it says, also for deciding the leaders."""
    from embedselect.metrics import MetricResult

    _weight_0(monkeypatch, "sufficiency")
    cands = ["tfidf-svd", "random-projection", "random-projection?dim=32", "random-projection?dim=24"]
    votes = {"task_prior": [4, 3, 2, 1], "sufficiency": [1, 2, 3, 40], "nn_agreement": [4, 1, 3, 2],
             "rankme": [3, 4, 1, 2], "modularity": [4, 2, 3, 1]}

    def fake(m):
        return lambda ctx: MetricResult(name=m, scores={k: float(votes[m][cands.index(k)]) for k in ctx.embeddings})

    monkeypatch.setattr(pipeline_metrics, "get_metric", fake)
    r = embedselect.select(SAMPLE, cands, column="text")
    assert r.settings["combined_weights"] == {"task_prior": 1.0, "sufficiency": 0.0, "nn_agreement": 0.0,
                                              "rankme": 0.0, "modularity": 0.0}
    assert all("sufficiency" in c.scores and "sufficiency" in c.ranks for c in r.candidates)
    without = embedselect.select(SAMPLE, cands, column="text",
                                 metrics=["task_prior", "nn_agreement", "rankme", "modularity"])
    assert {c.name: c.combined_score for c in r.candidates} == pytest.approx(
        {c.name: c.combined_score for c in without.candidates})
    assert r.best.name == without.best.name == "tfidf-svd"  # sufficiency's strong vote for the last one changes nothing


def test_a_run_of_only_weight_0_metrics_weights_them_equally(cache_dir, monkeypatch):
    """Asking for a weight-0 metric alone ranks by it instead of failing with 'weights all 0'."""
    from embedselect.metrics import MetricResult

    _weight_0(monkeypatch, "sufficiency")
    cands = ["tfidf-svd", "random-projection"]
    monkeypatch.setattr(pipeline_metrics, "get_metric", lambda m: lambda ctx: MetricResult(
        name=m, scores={"tfidf-svd": 1.0, "random-projection": 2.0}))
    r = embedselect.select(SAMPLE, cands, column="text", metrics=["sufficiency"])
    assert r.settings["combined_weights"] == {"sufficiency": 1.0} and r.best.name == "random-projection"
    with pytest.raises(embedselect.ConfigError, match="not all 0"):  # weights the user set all to 0 stay an error
        embedselect.select(SAMPLE, cands, column="text", metrics=["sufficiency"], weights={"sufficiency": 0})


def test_only_the_intervals_of_combined_scores_decide_the_lead():
    """A weight-0 metric's bootstrap interval cannot separate the leaders; task_prior's interval (on its alignment)
    still counts."""
    iv = {"task_prior_alignment": [0.1, 0.2], "sufficiency": [0.3, 0.4], "rankme": [1.0, 2.0]}
    w = {"task_prior": 1.0, "sufficiency": 0.0, "rankme": 1.0}
    assert pipeline_ranking._intervals_in_score(iv, w) == {"task_prior_alignment": [0.1, 0.2], "rankme": [1.0, 2.0]}


def test_a_ranking_that_was_not_stored_names_no_stored_ranking(tmp_path):
    """``select(save=False)`` returned a ``ranking_id`` that no stored ranking has (`leaderboard --ranking ID` could
    not find it, a model card cited it): it is None, in the JSON too, and what prints the id says it is not stored.
    A ranking the cache refused to store (``not-stored``) is the same (tests/test_cache_write_failures.py)."""
    from embedselect.publish import leaderboard as lb
    from embedselect.publish.cards import update_card

    pool, cache = ["tfidf-svd", "random-projection"], tmp_path / "c"
    r = embedselect.select(SAMPLE, pool, column="text", metrics=["alpha_req"], cache_dir=cache, save=False)
    assert r.ranking_id is None and Store.open(cache).list_rankings().empty
    text = r.to_json()
    assert json.loads(text)["ranking_id"] is None and Ranking.from_json(text) == r
    assert ", ranking not stored " in lb.to_markdown(r) and json.loads(lb.to_json(r))["ranking_id"] is None
    assert "Ranking not stored, of " in update_card(None, r, r.ok[0].name)
    stored = embedselect.select(SAMPLE, pool, column="text", metrics=["alpha_req"], cache_dir=cache)
    assert stored.ranking_id and Store.open(cache).get_ranking(stored.ranking_id)["ranking_id"] == stored.ranking_id
    assert f", ranking {stored.ranking_id[:12]} " in lb.to_markdown(stored)

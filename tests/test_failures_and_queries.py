"""The one failure recorder (store/failures.py), the store's queries (store/queries.py) and
``sufficiency.missing_pairs`` (issue 20: failures vs refusals, redaction; issue 22 items 2 and 8)."""

from __future__ import annotations

import numpy as np
import pytest

from embedselect.models.candidates import parse_candidates
from embedselect.errors import HubError, ModelTimeoutError, UnsafeModelError
from embedselect._util.kinds import PAIR_KEY_PREFIX
from embedselect.store import Store, hub_models
from embedselect.store.failures import is_transient, record_failure
from embedselect.metrics import MemoryPairCache
from tests.test_sufficiency import FAST

TOKEN = "hf_SecretTokenForTests123"


@pytest.mark.fault
def test_a_timed_out_unit_records_a_token_free_message(tmp_path):
    """Issue 20 (security): the local executor's time-limit path recorded its error without redaction."""
    from embedselect.nightly.executors.local import timed_out

    store = Store.open(tmp_path / "c")
    (cand,) = parse_candidates(["acme/slow@main"], modality="text")
    out = timed_out(cand, ModelTimeoutError(f"acme/slow (token {TOKEN}) took longer than the limit"), store=store,
                    fingerprint="f" * 16)
    assert out.result.status == "failed" and TOKEN not in out.result.error
    rows = store.query_df("SELECT message FROM failures")
    assert len(rows) == 1 and TOKEN not in rows.message[0] and "***" in rows.message[0]


def test_only_a_policy_refusal_is_a_refusal_and_it_is_per_revision(tmp_path):
    store = Store.open(tmp_path / "c")
    fault = HubError(f"acme/x: the hub answered 503 (token {TOKEN})")
    msg = record_failure(store, spec="acme/x", stage="resolve", error=fault, repo_id="acme/x", revision="a" * 40)
    assert TOKEN not in msg and is_transient("HubError") and not is_transient("ModelLoadError")
    refusal = UnsafeModelError("only pickle weights", reason="pickle_only")
    refusal.revision = "b" * 40  # the commit fetch_model saw
    record_failure(store, spec="acme/y", stage="resolve", error=refusal, repo_id="acme/y")
    rows = hub_models.refusals(store)[["repo_id", "revision", "reason"]].values.tolist()
    assert rows == [["acme/y", "b" * 40, "pickle_only"]]
    assert [(r["spec"], r["error_type"]) for r in store.failure_rows()] == [("acme/x", "HubError"),
                                                                            ("acme/y", "UnsafeModelError")]
    with pytest.raises(Exception, match="unknown refusal reason"):
        hub_models.record_refusal(store, "acme/z", "c" * 40, "fetch_error", "a hub fault is not a refusal")


def test_store_queries(tmp_path):
    store = Store.open(tmp_path / "c")
    assert store.count_pairs() == 0 and store.failure_rows() == [] and store.latest_ranking("f" * 16) is None
    store.put_many({PAIR_KEY_PREFIX + "1": {"v": 1}, PAIR_KEY_PREFIX + "2": {"v": 2}, "is-marginal:3": {"v": 3}})
    assert store.count_pairs() == 2
    for i, rid in enumerate(["old", "new"]):
        store.save_ranking(rid, {"dataset": {"fingerprint": "f" * 16}, "metrics": ["m"], "candidates": [], "i": i}, [])
    assert store.latest_ranking("f" * 16)["i"] == 1 and store.latest_ranking("g" * 16) is None


def test_missing_pairs_are_exactly_what_the_estimate_would_compute():
    """Issue 22 item 8: which pairs the cache lacks, without running the estimator on a cache that raises."""
    from embedselect.metrics.sufficiency.score import information_sufficiency, missing_pairs

    rng = np.random.default_rng(0)
    base = rng.standard_normal((200, 4))
    pool = {k: (base @ rng.standard_normal((4, 6)) + 0.3 * rng.standard_normal((200, 6))).astype(np.float32)
            for k in ("a", "b", "c")}
    keys = {k: f"run-{k}" for k in pool}
    cache = MemoryPairCache()
    assert len(missing_pairs(keys, cache, seed=3, **FAST)) == 6
    information_sufficiency({k: pool[k] for k in ("a", "b")}, seed=3, run_keys=keys, pair_cache=cache, **FAST)
    assert missing_pairs({k: keys[k] for k in ("a", "b")}, cache, seed=3, **FAST) == []
    assert sorted(missing_pairs(keys, cache, seed=3, batched=True, **FAST)) == [
        ("a", "c"), ("b", "c"), ("c", "a"), ("c", "b")]
    assert len(missing_pairs(keys, cache, seed=4, **FAST)) == 6  # another seed: other keys
    res = information_sufficiency(pool, seed=3, run_keys=keys, pair_cache=cache, **FAST)
    assert res.n_computed == 4 and missing_pairs(keys, cache, seed=3, **FAST) == []


def test_select_embedded_ranks_what_was_embedded_as_select_does(tmp_path):
    """Issue 22 item 1: the night's rank stage (select's stages over the executor's outcomes) gives select()'s
    ranking without resolving again; a candidate whose vectors left the store since is failed, not re-embedded."""
    from embedselect.config import RankConfig, Runtime
    from embedselect.pipeline import embed_reference, select, select_embedded
    from embedselect.data import ReferenceData, sample_path

    ref = ReferenceData.load(sample_path("texts"), column="text")
    store = Store.open(tmp_path / "c")
    cands = parse_candidates("tfidf-svd,random-projection,random-projection?dim=32", modality="text")
    outcomes = embed_reference(ref, cands, store=store)
    config, runtime = RankConfig(metrics=["task_prior", "rankme"]), Runtime(save=False)
    got = select_embedded(ref, cands, outcomes, store=store, config=config, runtime=runtime)
    want = select(ref, cands, metrics=["task_prior", "rankme"], cache_dir=store.root, save=False)
    assert [(r.name, r.rank, r.combined_score) for r in got.candidates] == \
        [(r.name, r.rank, r.combined_score) for r in want.candidates]
    outcomes = embed_reference(ref, cands, store=store)
    store.delete_runs([outcomes[2].result.run_key])
    third = select_embedded(ref, cands, outcomes, store=store, config=config, runtime=runtime)
    (failed,) = third.failed
    assert failed.name == cands[2].name and failed.error_type == "CacheError" and len(third.ok) == 2

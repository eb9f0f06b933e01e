"""Tests of sufficiency's ``pairs`` option: the KNIFE estimate trains only the directed pairs some score reads
(``pairs="scored"``, the default) or every pair (``"all"``), with the same scores."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from embedselect.errors import ConfigError
from embedselect.metrics import MemoryPairCache, MetricContext, get_metric
from embedselect.metrics.sufficiency.score import scored_targets
from embedselect.metrics.sufficiency.settings import PAIR_KEY_PREFIX

torch.set_num_threads(1)

FAST = dict(max_steps=60, eval_every=20, patience=2, batch_size=64, hidden=16, n_components=2, max_repeats=1)
REFS = frozenset({"ref"})
FAMS = {"a": "a", "a-copy": "a", "b": "b", "c": "c", "ref": "ref"}
EVERY = 5 * 4
"""Directed pairs of the five-candidate pool."""
SCORED = {("a", "b"), ("a", "c"), ("a-copy", "b"), ("a-copy", "c"), ("b", "a"), ("b", "c"), ("c", "a"), ("c", "b"),
          ("ref", "a"), ("ref", "b"), ("ref", "c")}
"""The pairs the scores read: the witnesses are the heads a, b, c (the reference point is not evidence, the copy is
not a head); each candidate is compared with the other families' heads."""


def _pool(n=200, seed=3):
    """A model ``a`` with a copy (its family), two other models and a reference point; float32 (n, d)."""
    rng = np.random.default_rng(seed)
    base = rng.standard_normal((n, 4))
    return {
        "a": (base @ rng.standard_normal((4, 5)) + 0.3 * rng.standard_normal((n, 5))).astype(np.float32),
        "a-copy": (base[:, :3] + 0.1 * rng.standard_normal((n, 3))).astype(np.float32),
        "b": np.c_[base[:, :2], rng.standard_normal((n, 2))].astype(np.float32),
        "c": (np.tanh(base[:, 1:]) + 0.5 * rng.standard_normal((n, 3))).astype(np.float32),
        "ref": rng.standard_normal((n, 4)).astype(np.float32),
    }


def _run(pool, cache, **options):
    ctx = MetricContext(embeddings=pool, run_keys={k: f"run-{k}" for k in pool}, seed=0, options={**FAST, **options},
                        references=REFS, families=FAMS, pair_cache=cache)
    return get_metric("sufficiency")(ctx)


def _estimated(res):
    return {(p["source"], p["target"]) for p in res.details["pairs"]}


def _stored_pairs(cache):
    return [k for k in cache.new if k.startswith(PAIR_KEY_PREFIX)]


def test_scored_targets_is_the_rule_the_scores_read():
    reads = scored_targets(list(_pool(n=60)), REFS, FAMS)
    assert {(s, t) for s, ts in reads.items() for t in ts} == SCORED
    assert reads["a-copy"] == ["b", "c"] and reads["ref"] == ["a", "b", "c"]
    # one family with its variants and no other: every candidate but itself, as compared_with says
    assert scored_targets(["m", "m-cls", "m-l6"], frozenset(), {"m-cls": "m", "m-l6": "m"})["m"] == ["m-cls", "m-l6"]


def test_default_trains_only_the_scored_pairs_and_scores_as_every_pair():
    pool = _pool()
    scored_cache, every_cache = MemoryPairCache(), MemoryPairCache()
    scored = _run(pool, scored_cache)
    every = _run(pool, every_cache, pairs="all")
    # no pair towards a reference point, a copy, or the candidate's own family is trained
    assert _estimated(scored) == SCORED and not any(t == "ref" for _, t in _estimated(scored))
    assert len(_stored_pairs(scored_cache)) == len(SCORED) and scored.details["pairs_computed"] == len(SCORED)
    assert len(_stored_pairs(every_cache)) == EVERY and every.details["pairs_computed"] == EVERY
    assert scored.details["pairs_estimated"] == "scored" and every.details["pairs_estimated"] == "all"
    assert scored.details["pairs_not_estimated"] == EVERY - len(SCORED) and every.details["pairs_not_estimated"] == 0
    # each pair trains on its own: the same scores up to float rounding (the pairs are stacked in other groups)
    keys = list(pool)
    np.testing.assert_allclose([scored.scores[k] for k in keys], [every.scores[k] for k in keys], rtol=0, atol=1e-5)
    for s, t in SCORED:
        assert scored.details["matrix"][s][t] == pytest.approx(every.details["matrix"][s][t], abs=1e-5)
    # the cells not estimated are NaN; the columns read the estimated cells only
    assert math.isnan(scored.details["matrix"]["a"]["ref"]) and math.isnan(scored.details["matrix"]["b"]["a-copy"])
    m = scored.details["matrix"]
    assert scored.columns["sufficiency_mean_out"]["a"] == pytest.approx(np.mean([m["a"]["b"], m["a"]["c"]]))
    assert scored.columns["sufficiency_median_in"]["b"] == pytest.approx(
        np.median([m[s]["b"] for s in ("a", "a-copy", "c", "ref")]))
    assert math.isnan(scored.columns["sufficiency_median_in"]["ref"])  # nothing towards it was estimated
    # Louvain needs every pair: not computed, and the details say how to get them
    assert scored.details["communities"] is None and "sufficiency_community" not in scored.columns
    assert "sufficiency.pairs=all" in scored.details["communities_note"]
    assert every.details["communities"] and "communities_note" not in every.details
    assert set(every.columns["sufficiency_community"]) == set(pool)
    # the same pair-cache entries: a later run with every pair trains only the pairs missing
    later = _run(pool, scored_cache, pairs="all")
    assert later.details["pairs_computed"] == EVERY - len(SCORED) and later.details["pairs_cached"] == len(SCORED)
    assert set(_stored_pairs(scored_cache)) >= set(_stored_pairs(every_cache))  # the same keys
    np.testing.assert_allclose([later.scores[k] for k in keys], [every.scores[k] for k in keys], rtol=0, atol=1e-5)
    # and a scored run reads them back without training
    again = _run(pool, scored_cache)
    assert again.details["pairs_computed"] == 0 and again.scores == scored.scores


def test_missing_pairs_lists_the_pairs_the_metric_would_estimate():
    """What a precompute (the nightly job's Ray executor) asks for: with the pool's reference points and families,
    the pairs the scores read under ``pairs="scored"`` (:func:`scored_targets`), every pair with ``pairs="all"`` or
    ``targets="all"``; after the metric ran, none."""
    from embedselect.metrics.sufficiency.score import missing_pairs

    pool = _pool(n=120)
    keys = {k: f"run-{k}" for k in pool}
    cache = MemoryPairCache()
    roles = dict(references=REFS, families=FAMS)
    assert set(missing_pairs(keys, cache, **roles, **FAST)) == SCORED
    assert len(missing_pairs(keys, cache, **roles, **FAST)) == len(SCORED)
    assert len(missing_pairs(keys, cache, **roles, pairs="all", **FAST)) == EVERY
    assert len(missing_pairs(keys, cache, **roles, targets="all", **FAST)) == EVERY
    assert len(missing_pairs(keys, cache, **FAST)) == EVERY  # no reference points, each candidate its own family
    _run(pool, cache)
    assert missing_pairs(keys, cache, **roles, **FAST) == []
    assert set(missing_pairs(keys, cache, **roles, pairs="all", **FAST)) == {
        (s, t) for s in pool for t in pool if s != t} - SCORED


def test_every_pair_is_trained_for_targets_all_and_bad_values_are_refused():
    pool = _pool(n=120)
    res = _run(pool, MemoryPairCache(), targets="all")
    assert len(_estimated(res)) == EVERY and res.details["communities"]
    with pytest.raises(ConfigError, match="'pairs' must be one of scored, all"):
        _run(pool, MemoryPairCache(), pairs="some")
    # the Gaussian estimator computes its whole matrix whatever pairs says
    g = get_metric("sufficiency")(MetricContext(embeddings=pool, run_keys={}, seed=0,
                                                options={"estimator": "gaussian", "pairs": "scored"},
                                                references=REFS, families=FAMS))
    assert all(not math.isnan(g.details["matrix"][s][t]) for s in pool for t in pool if s != t)


@pytest.mark.fault
@pytest.mark.parametrize("kind", ["nan", "constant_after_split"])
def test_the_scored_pairs_follow_a_head_left_out_as_degenerate(kind):
    """A witness left out (NaN values: before anything is prepared; constant on the training rows: found while
    preparing) changes whom the others are compared with: the pairs are chosen among the candidates left."""
    from embedselect.metrics.sufficiency.rows import splits
    from embedselect.metrics.sufficiency.settings import SufficiencySettings

    pool = _pool(n=160)
    n = len(pool["b"])
    bad = np.ones((n, 4), dtype=np.float32)
    if kind == "nan":
        bad = pool["b"].copy()
        bad[7, 0] = np.nan
    else:
        train, _, _ = splits(n, SufficiencySettings(**FAST), 0)
        bad[np.setdiff1d(np.arange(n), train)[:3]] = 5.0
    res = _run({**pool, "b": bad}, MemoryPairCache())
    assert "b" in res.details["excluded"] and math.isnan(res.scores["b"])
    left = [k for k in pool if k != "b"]
    want = {(s, t) for s, ts in scored_targets(left, REFS, FAMS).items() for t in ts}
    assert _estimated(res) == want and all(np.isfinite(res.scores[k]) for k in left)
    without = _run({k: pool[k] for k in left}, MemoryPairCache())
    for k in left:
        assert res.scores[k] == pytest.approx(without.scores[k], abs=1e-5)

"""Bootstrap uncertainty of a ranking (embedselect.ranking.bootstrap), on a toy metric."""

from __future__ import annotations

import json

import numpy as np
import pytest

from embedselect.errors import ConfigError, DataError, MetricError
from embedselect.metrics.base import MetricContext, MetricResult
from embedselect.ranking.bootstrap import bootstrap_metric


def toy_metric(ctx: MetricContext) -> MetricResult:
    """Score = mean of the first coordinate (higher is better)."""
    return MetricResult(
        name="toy", scores={k: float(np.mean(v[:, 0], dtype=np.float64)) for k, v in ctx.embeddings.items()}
    )


def _pool(n, seed=0, means=(0.0, 0.5, 0.52, 2.0)):
    rng = np.random.default_rng(seed)
    return {f"c{i}": (rng.normal(size=(n, 3)) + [m, 0, 0]).astype(np.float32) for i, m in enumerate(means)}


def _ctx(emb, **kw):
    return MetricContext(embeddings=emb, run_keys={k: k for k in emb}, **kw)


def test_intervals_ranks_and_indistinguishable_pairs():
    res = bootstrap_metric(toy_metric, _ctx(_pool(400)), n_boot=200, seed=0, level=0.9)
    assert res.order == ["c3", "c2", "c1", "c0"]
    for c in res.order:
        lo, hi = res.intervals[c]
        assert lo < res.scores[c] < hi
    assert res.indistinguishable == [("c2", "c1")]  # means 0.52 vs 0.5
    assert res.rank_intervals["c3"] == (1.0, 1.0)
    assert res.rank_intervals["c2"][0] <= 2 and res.rank_intervals["c2"][1] >= 3
    assert res.samples.shape == (200, 4)
    d = json.loads(json.dumps(res.to_dict()))
    assert d["indistinguishable"] == [["c2", "c1"]]
    table = res.to_pandas()
    assert list(table.index) == res.order and table.loc["c3", "distinct_from_next"]


def test_intervals_shrink_as_n_grows():
    widths = []
    for n in (100, 1600):
        res = bootstrap_metric(toy_metric, _ctx(_pool(n, seed=1)), n_boot=100, seed=0)
        widths.append(np.mean([hi - lo for lo, hi in res.intervals.values()]))
    assert widths[1] < 0.5 * widths[0]  # ~1/sqrt(n): expect a ratio near 1/4


def test_rows_are_shared_across_candidates():
    emb = _pool(200)
    emb = {"a": emb["c0"], "b": emb["c0"] + np.float32(0.01)}  # same rows, constant offset
    res = bootstrap_metric(toy_metric, _ctx(emb), n_boot=50, seed=0)
    # the individual intervals overlap widely, yet the paired difference is exactly 0.01
    assert res.intervals["a"][1] > res.intervals["b"][0]
    (pair,) = res.pairs
    assert pair.upper == "b" and pair.distinguishable and pair.p_order == 1.0
    assert pair.ci[0] == pytest.approx(0.01, abs=1e-5)


class _CountingCache:
    def __init__(self):
        self.calls = 0

    def get_many(self, keys):
        self.calls += 1
        return {}

    def put_many(self, items):
        self.calls += 1


def test_pair_cache_only_for_point_estimate_and_labels_follow_rows():
    emb = _pool(50)
    labels = np.arange(50)
    seen = []

    def metric(ctx):
        seen.append((ctx.pair_cache is not None, ctx.options.get("extra"), ctx.seed))
        # row 0 of each candidate encodes which original row it is (labels follow the rows)
        if ctx.pair_cache is None:
            for k, v in ctx.embeddings.items():
                np.testing.assert_array_equal(v, emb[k][ctx.labels])
        return toy_metric(ctx)

    res = bootstrap_metric(
        metric, _ctx(emb, labels=labels, pair_cache=_CountingCache(), options={"extra": 1}),
        n_boot=5, seed=0, options={"extra": 2},
    )
    assert seen[0][0] is True and not any(s[0] for s in seen[1:])
    assert all(s[1] == 2 for s in seen)  # overrides reach point and replicates
    assert len({s[2] for s in seen[1:]}) == 5  # each replicate gets its own seed
    assert res.options["extra"] == 2


def test_half_sampling_recentres_on_point_and_is_seeded():
    ctx = _ctx(_pool(300))
    a = bootstrap_metric(toy_metric, ctx, n_boot=60, seed=2, resample="half")
    b = bootstrap_metric(toy_metric, ctx, n_boot=60, seed=2, resample="half")
    assert a.to_dict() == b.to_dict()
    for c in a.order:
        lo, hi = a.intervals[c]
        assert lo < a.scores[c] < hi
    assert a.indistinguishable == [("c2", "c1")]


def test_errors():
    emb = _pool(30)
    with pytest.raises(ConfigError):
        bootstrap_metric(toy_metric, _ctx(emb), n_boot=1)
    with pytest.raises(ConfigError):
        bootstrap_metric(toy_metric, _ctx(emb), resample="jackknife")
    with pytest.raises(DataError):
        bootstrap_metric(toy_metric, _ctx({"a": emb["c0"]}))
    with pytest.raises(DataError):
        bootstrap_metric(toy_metric, _ctx({"a": emb["c0"], "b": emb["c1"][:10]}))

    calls = []

    def flaky(ctx):
        calls.append(1)
        if len(calls) > 1:
            raise MetricError("degenerate")
        return toy_metric(ctx)

    with pytest.raises(MetricError, match="bootstrap replicates"):
        bootstrap_metric(flaky, _ctx(emb), n_boot=4)


# --- through the real task_prior metric ----------------------------------------------------------
def known_order_pool(n=200, seed=0):
    """A shared signal seen with increasing noise, a random embedder, and an exact copy of the best.

    Known order: clean == clean_copy > mid > noisy > random.
    """
    rng = np.random.default_rng(seed)
    s = rng.normal(size=(n, 8))
    out = {}
    for name, sigma in [("clean", 0.3), ("mid", 1.0), ("noisy", 3.0)]:
        r = rng.normal(size=(8, 24)) / np.sqrt(8)
        out[name] = (s @ r + sigma * rng.normal(size=(n, 24))).astype(np.float32)
    out["random"] = rng.normal(size=(n, 24)).astype(np.float32)
    out["clean_copy"] = out["clean"].copy()
    return out




def test_task_prior_ranks_the_known_order(one_thread):
    from embedselect.metrics import get_metric

    emb = known_order_pool()
    s = get_metric("task_prior")(_ctx(emb, options={"probes": False})).scores  # closed-form alignment
    assert s["clean"] == pytest.approx(s["clean_copy"])
    assert s["clean"] > s["mid"] > s["noisy"] > s["random"], s
    p = get_metric("task_prior")(_ctx(emb)).scores  # the default headline: probes on 64 sampled tasks
    assert p["clean"] == pytest.approx(p["clean_copy"])
    assert p["clean"] > p["mid"] > p["noisy"] > p["random"], p


def test_task_prior_bootstrap_flags_only_the_copy_as_indistinguishable(one_thread):
    emb = known_order_pool()
    res = bootstrap_metric("task_prior", _ctx(emb, options={"n_tasks": 8}), n_boot=30, seed=0)
    assert res.score_name == "task_prior_alignment"  # moments only in replicates
    assert res.options["probes"] is False and res.options["n_tasks"] == 8
    assert set(res.order[:2]) == {"clean", "clean_copy"}
    assert res.order[2:] == ["mid", "noisy", "random"]
    assert res.indistinguishable == [tuple(res.order[:2])]
    assert res.rank_intervals["random"] == (5.0, 5.0)


def test_task_prior_bootstrap_intervals_shrink_with_n(one_thread):
    widths = []
    for n in (100, 800):
        res = bootstrap_metric("task_prior", _ctx(known_order_pool(n, seed=3)), n_boot=30, seed=0)
        widths.append(np.mean([hi - lo for lo, hi in res.intervals.values()]))
    assert widths[1] < 0.6 * widths[0]

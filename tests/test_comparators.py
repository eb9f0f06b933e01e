"""Label-free comparators: RankMe, α-ReQ, uniformity, nearest-neighbour agreement on known geometry."""

from __future__ import annotations

import numpy as np
import pytest

from embedselect.errors import ConfigError, MetricError, TooFewItemsError
from embedselect.metrics import MemoryPairCache, MetricContext, get_metric
from embedselect.metrics.comparators.agreement import agreement_matrix, knn_indices
from embedselect.metrics.comparators.spectral import alpha_req, rankme, uniformity

pytestmark = pytest.mark.usefixtures("one_thread")


def _ctx(emb, **opts):
    return MetricContext(embeddings=emb, run_keys={k: k for k in emb}, seed=0, options=opts)


def test_rankme_isotropic_vs_rank_one():
    rng = np.random.default_rng(0)
    iso = rng.normal(size=(4000, 16))
    assert rankme(iso) == pytest.approx(16, rel=0.02)  # flat spectrum: every direction counts
    r1 = np.outer(rng.normal(size=4000), rng.normal(size=16)) + 1e-9 * rng.normal(size=(4000, 16))
    # rows of a rank-1 matrix are ± one direction: after normalising and centring one direction is left
    assert rankme(r1) < 1.05
    low = iso[:, :4] @ rng.normal(size=(4, 16))  # rank 4 in 16 dims
    assert 3.0 < rankme(low) <= 4.0 + 1e-6


def test_alpha_req_recovers_power_law_slope():
    rng = np.random.default_rng(1)
    d = 64
    for alpha in (0.5, 1.0, 2.0):
        scales = np.arange(1, d + 1, dtype=np.float64) ** (-alpha / 2)  # λ_k = scale_k² ∝ k^-α
        x = rng.normal(size=(20000, d)) * scales
        # cosine normalisation bends the spectrum a little; the fitted α stays close
        assert alpha_req(x) == pytest.approx(alpha, abs=0.15), alpha
    assert abs(alpha_req(rng.normal(size=(5000, 32)))) < 0.1  # flat spectrum: α ≈ 0


def test_uniformity_orders_spread_and_collapse():
    rng = np.random.default_rng(2)
    spread = rng.normal(size=(500, 8))
    clumped = np.array([1.0] + [0.0] * 7) + 0.05 * rng.normal(size=(500, 8))
    u_s, u_c = uniformity(spread), uniformity(clumped)
    assert u_s < u_c <= 0.0  # lower = more uniform; a clump has all distances ≈ 0 → log 1 = 0
    # exact on two antipodal points: ‖a − b‖² = 4 → log exp(−8) = −8
    assert uniformity(np.array([[1.0, 0.0], [-1.0, 0.0]])) == pytest.approx(-8.0, abs=1e-9)


def test_comparator_metrics_through_the_registry():
    rng = np.random.default_rng(3)
    emb = {"iso": rng.normal(size=(300, 16)), "low": rng.normal(size=(300, 2)) @ rng.normal(size=(2, 16))}
    r = get_metric("rankme")(_ctx(emb))
    assert r.scores["iso"] > r.scores["low"]
    a = get_metric("alpha_req")(_ctx(emb))
    assert set(a.columns["alpha"]) == {"iso", "low"} and all(s <= 0 for s in a.scores.values())
    u = get_metric("uniformity")(_ctx(emb))
    assert u.scores["iso"] > u.scores["low"]
    with pytest.raises(ConfigError, match="unknown rankme option"):
        get_metric("rankme")(_ctx(emb, bogus=1))
    with pytest.raises(MetricError, match="NaN"):
        get_metric("rankme")(_ctx({"bad": np.full((10, 3), np.nan)}))
    with pytest.raises(TooFewItemsError):
        get_metric("nn_agreement")(_ctx({"a": np.eye(2), "b": np.eye(2)}))


def test_knn_and_agreement_known_values():
    x = np.array([[1.0, 0.0], [0.99, 0.1], [0.0, 1.0], [0.1, 0.99]])
    nb = knn_indices(x, 1)
    assert nb[:, 0].tolist() == [1, 0, 3, 2]
    same = agreement_matrix([nb, nb.copy()])
    np.testing.assert_allclose(same, np.ones((2, 2)))
    other = np.array([[2], [3], [0], [1]])
    assert agreement_matrix([nb, other])[0, 1] == 0.0


def test_knn_breaks_ties_by_the_lower_index_and_agreement_counts_shared_neighbours():
    """The partial selection of knn_indices gives exactly the first k of a stable sort, ties included (repeated items
    are common in real data), and agreement_matrix is the mean share of common neighbours."""
    rng = np.random.default_rng(7)
    x = rng.integers(-2, 3, size=(300, 3)).astype(np.float64)  # few distinct directions: many exact ties
    x[50:60] = x[40]  # and repeated rows
    for k in (1, 5, 30):
        xn = x / np.where(np.linalg.norm(x, axis=1, keepdims=True) > 1e-12, np.linalg.norm(x, axis=1, keepdims=True), 1)
        s = xn @ xn.T
        np.fill_diagonal(s, -np.inf)
        assert np.array_equal(knn_indices(x, k), np.argsort(-s, axis=1, kind="stable")[:, :k])
    a, b = knn_indices(x, 8), knn_indices(x + 0.3 * rng.standard_normal(x.shape), 8)
    want = np.mean([len(set(p) & set(q)) / 8 for p, q in zip(a.tolist(), b.tolist())])
    assert agreement_matrix([a, b])[0, 1] == pytest.approx(want, abs=1e-15) and 0 < want < 1
    # FAISS's -1 ("no neighbour found") matches nothing, not even another -1
    assert agreement_matrix([np.array([[0, -1], [2, 1]]), np.array([[-1, 0], [1, -1]])])[0, 1] == 0.5


def test_nn_agreement_keeps_each_pair_in_the_pair_cache_and_searches_nothing_it_has(monkeypatch):
    from embedselect.metrics.comparators import agreement

    rng = np.random.default_rng(4)
    base = rng.normal(size=(200, 12))
    emb = {c: (base + 0.3 * rng.normal(size=base.shape)).astype(np.float32) for c in "abc"}
    cache = MemoryPairCache()
    ctx = MetricContext(embeddings=emb, run_keys={k: f"run-{k}" for k in emb}, seed=0, options={"k": 5},
                        pair_cache=cache)
    first = get_metric("nn_agreement")(ctx)
    assert len(cache) == 3 and all(v["knn_device"] == "cpu" for v in cache.values())
    searched = []
    real = agreement.neighbour_lists
    monkeypatch.setattr(agreement, "neighbour_lists", lambda c, keys, *a, **kw: (searched.extend(keys), real(c, keys, *a, **kw))[1])
    again = get_metric("nn_agreement")(ctx)
    assert searched == [] and again.scores == first.scores and again.details["knn_device"] == "cpu"
    # a new candidate: only pairs with it are new, and the others' lists are searched for them
    emb["d"] = rng.normal(size=base.shape).astype(np.float32)
    more = get_metric("nn_agreement")(MetricContext(embeddings=emb, run_keys={k: f"run-{k}" for k in emb}, seed=0,
                                                    options={"k": 5}, pair_cache=cache))
    assert sorted(searched) == ["a", "b", "c", "d"] and len(cache) == 6
    assert more.details["agreement"]["a"]["b"] == first.details["agreement"]["a"]["b"]
    # another k is another pair; so are other rows (another seed when the items are subsampled)
    searched.clear()
    get_metric("nn_agreement")(MetricContext(embeddings=emb, run_keys={k: f"run-{k}" for k in emb}, seed=0,
                                             options={"k": 6}, pair_cache=cache))
    assert sorted(searched) == ["a", "b", "c", "d"] and len(cache) == 12
    searched.clear()
    get_metric("nn_agreement")(MetricContext(embeddings=emb, run_keys={k: f"run-{k}" for k in emb}, seed=1,
                                             options={"k": 5, "max_items": 150}, pair_cache=cache))
    assert sorted(searched) == ["a", "b", "c", "d"] and len(cache) == 18
    # candidates without a run key are computed, never cached
    searched.clear()
    get_metric("nn_agreement")(MetricContext(embeddings=emb, run_keys={}, seed=0, options={"k": 5}, pair_cache=cache))
    assert sorted(searched) == ["a", "b", "c", "d"] and len(cache) == 18


def test_nn_agreement_favours_the_consensus_and_copies():
    rng = np.random.default_rng(4)
    base = rng.normal(size=(400, 12))
    emb = {"a": base + 0.1 * rng.normal(size=base.shape), "b": base + 0.1 * rng.normal(size=base.shape),
           "c": base + 0.1 * rng.normal(size=base.shape), "noise": rng.normal(size=(400, 12))}
    r = get_metric("nn_agreement")(_ctx(emb, k=5))
    assert min(r.scores["a"], r.scores["b"], r.scores["c"]) > r.scores["noise"] + 0.2
    assert r.details["agreement"]["a"]["a"] == 1.0
    with pytest.raises(MetricError, match="at least 2"):
        get_metric("nn_agreement")(_ctx({"a": base}))


def test_rankme_is_left_out_when_every_candidate_is_capped_by_the_item_count():
    """With n items, the centred matrix's effective rank is at most min(n - 1, d). When every candidate has d >= n - 1,
    RankMe compares only spectral flatness, which a noise-like embedding wins: no scores then (values kept as a column,
    one warning); with one narrower candidate the values are comparable and scored."""
    rng = np.random.default_rng(0)
    n = 30
    structured = rng.normal(size=(n, 3)) @ rng.normal(size=(3, 40)) + 0.05 * rng.normal(size=(n, 40))
    noise = rng.normal(size=(n, 32))
    emb = {"structured": structured, "noise": noise}
    res = get_metric("rankme")(MetricContext(embeddings=emb, run_keys={k: k for k in emb}, seed=0))
    assert all(np.isnan(v) for v in res.scores.values())
    assert res.columns["rankme"]["noise"] > res.columns["rankme"]["structured"]  # flatness: noise would have won
    assert any("capped by the number of items" in w for w in res.details["warnings"])
    narrow = rng.normal(size=(n, 8))
    emb["narrow"] = narrow
    res = get_metric("rankme")(MetricContext(embeddings=emb, run_keys={k: k for k in emb}, seed=0))
    assert all(np.isfinite(v) for v in res.scores.values()) and "warnings" not in res.details

"""The ``modularity`` metric: Louvain modularity of each candidate's own k-NN graph (issue 23, docs/archive/benchmarks-diary.md §4k)."""

from __future__ import annotations

import numpy as np
import pytest

from embedselect.errors import ConfigError, TooFewItemsError
from embedselect.metrics import MetricContext, get_metric
from embedselect.metrics.base import get_spec
from embedselect.metrics.comparators.modularity import knn_graph_modularity


def _clustered(rng: np.random.Generator, n: int = 300, d: int = 32, groups: int = 6, spread: float = 4.0) -> np.ndarray:
    centres = rng.normal(size=(groups, d)) * spread
    return (np.repeat(centres, n // groups, axis=0) + rng.normal(size=(n, d))).astype(np.float32)


def _run(embeddings: dict[str, np.ndarray], seed: int = 0, **options):
    return get_metric("modularity")(MetricContext(embeddings=embeddings, run_keys={}, seed=seed, options=options))


def test_separated_groups_score_above_noise_and_the_partition_finds_them():
    rng = np.random.default_rng(0)
    r = _run({"groups": _clustered(rng), "blurred": _clustered(rng, spread=0.6), "noise": rng.normal(size=(300, 32))})
    s = r.scores
    assert s["groups"] > s["blurred"] > s["noise"]
    assert 0.7 < s["groups"] <= 1.0 and -0.5 <= s["noise"] < 0.5
    assert r.columns["modularity_communities"]["groups"] == 6.0  # the six groups, no more, no fewer
    assert r.details["k"] == 10 and r.details["n_items"] == 300 and r.details["knn_device"] == "cpu"


def test_a_candidate_is_scored_on_its_own_whatever_the_pool():
    """No consensus: a candidate's score is the same alone, beside a copy of itself, or beside noise."""
    rng = np.random.default_rng(1)
    x, noise = _clustered(rng), rng.normal(size=(300, 32)).astype(np.float32)
    alone = _run({"x": x}).scores["x"]
    assert _run({"x": x, "copy": x.copy(), "noise": noise}).scores["x"] == alone
    assert _run({"noise": noise, "x": x}, seed=0).scores["x"] == alone


def test_seeded_and_subsampled_with_the_same_rows_for_every_candidate():
    rng = np.random.default_rng(2)
    x = _clustered(rng, n=600)
    a, b = _run({"x": x, "y": x[::-1].copy()}, seed=3, max_items=200), _run({"x": x}, seed=3, max_items=200)
    assert a.scores["x"] == b.scores["x"] and a.details["n_items"] == 200
    assert _run({"x": x}, seed=3, max_items=200).scores == b.scores  # the same seed, the same result


def test_louvain_restarts_keep_the_best_partition():
    rng = np.random.default_rng(4)
    from embedselect.metrics.comparators.agreement import knn_indices

    nb = knn_indices(rng.normal(size=(200, 8)), 10)
    one = [knn_graph_modularity(nb, restarts=1, seed=s)[0] for s in range(4)]
    best = knn_graph_modularity(nb, restarts=4, seed=0)[0]
    assert best >= max(one[:1]) and best >= min(one)


def test_unusable_candidates_are_left_out_with_the_reason():
    rng = np.random.default_rng(5)
    bad = _clustered(rng)
    bad[3] = np.nan
    r = _run({"ok": _clustered(rng), "nan": bad, "flat": np.ones((300, 4), np.float32)})
    assert np.isnan(r.scores["nan"]) and np.isnan(r.scores["flat"]) and np.isfinite(r.scores["ok"])
    assert "NaN" in r.details["excluded"]["nan"] and "same embedding" in r.details["excluded"]["flat"]


@pytest.mark.parametrize("options, needle", [({"k": 0}, "'k' must be an integer ≥ 1"),
                                             ({"restarts": True}, "'restarts' must be an integer ≥ 1"),
                                             ({"resolution": 2}, "unknown modularity option")])
def test_bad_options_say_what_to_fix(options, needle):
    with pytest.raises(ConfigError, match=needle):
        _run({"x": _clustered(np.random.default_rng(6))}, **options)


def test_too_few_items_and_how_the_bootstrap_resamples():
    with pytest.raises(TooFewItemsError, match="at least 20"):
        _run({"x": np.random.default_rng(7).normal(size=(10, 4))})
    # a row drawn twice would be its own nearest neighbour and close a spurious community: half-samples instead
    assert get_spec("modularity").resample == "half"

"""Tests of sufficiency's linear-Gaussian, cross-fitted estimator (embedselect.metrics.sufficiency.gaussian)."""

from __future__ import annotations

import numpy as np
import pytest

from embedselect.errors import ConfigError, TooFewItemsError
from embedselect.metrics import MetricContext, get_metric, information_sufficiency
from embedselect.metrics.sufficiency.score import missing_pairs
from embedselect.metrics.sufficiency.gaussian import GaussianSettings, fold_ids, gaussian_is_matrix
from embedselect.metrics import MemoryPairCache


def _pool(n: int = 300, seed: int = 0) -> dict[str, np.ndarray]:
    """Views of one 8-d latent: full, half of it, a quarter of it (each with a little noise in every dimension), and
    independent noise."""
    rng = np.random.default_rng(seed)
    latent = rng.standard_normal((n, 8))
    mix = rng.standard_normal((8, 24))
    return {
        "full": latent @ mix + 0.01 * rng.standard_normal((n, 24)),
        "half": latent[:, :4] @ mix[:4] + 0.01 * rng.standard_normal((n, 24)),
        "quarter": latent[:, :2] @ mix[:2, :16] + 0.01 * rng.standard_normal((n, 16)),
        "noise": rng.standard_normal((n, 24)),
    }


def test_more_informative_sources_score_higher_and_noise_scores_about_zero():
    res = information_sufficiency(_pool(), estimator="gaussian", seed=0)
    s = res.scores
    assert s["full"] > s["half"] > s["quarter"] > s["noise"]
    # held-out rows only: an independent source gains nothing (no training-set optimism)
    assert abs(res.matrix.loc["noise", "full"]) < 0.02
    assert res.matrix.loc["full", "half"] > 1.0  # half is (nearly) a function of full
    assert res.matrix.loc["full", "half"] > 2 * res.matrix.loc["half", "full"]  # not the other way round
    assert res.settings["estimator"] == "gaussian" and res.settings["units"] == "nats per target coordinate"
    assert all(p["dim"] >= 1 and not p["cached"] for p in res.pairs)


def test_seeded_and_invariant_to_names_scale_and_rotation():
    pool = _pool()
    a = information_sufficiency(pool, estimator="gaussian", seed=3)
    b = information_sufficiency(pool, estimator="gaussian", seed=3)
    assert a.matrix.equals(b.matrix)
    rng = np.random.default_rng(9)
    q, _ = np.linalg.qr(rng.standard_normal((24, 24)))
    moved = {"renamed": pool["full"] @ q * 7.5, "half": pool["half"], "quarter": pool["quarter"], "noise": pool["noise"]}
    c = information_sufficiency(moved, estimator="gaussian", seed=3)
    np.testing.assert_allclose(c.matrix.loc["renamed", "half"], a.matrix.loc["full", "half"], rtol=1e-6)
    np.testing.assert_allclose(c.matrix.loc["half", "renamed"], a.matrix.loc["half", "full"], rtol=1e-6)
    other = information_sufficiency(pool, estimator="gaussian", seed=4)
    assert not other.matrix.equals(a.matrix)  # the folds do depend on the seed


def test_wide_embeddings_use_the_gram_branch_with_the_same_result():
    """A candidate wider than the training rows (the (m, m) Gram route) scores as its narrow twin: an isometric
    embedding into 600 dimensions keeps every cosine, so every IS value must stay."""
    pool = _pool(n=200)
    rng = np.random.default_rng(2)
    q, _ = np.linalg.qr(rng.standard_normal((600, 24)))  # (600, 24), orthonormal columns
    wide = dict(pool, full=pool["full"] @ q.T)
    a = information_sufficiency(pool, estimator="gaussian", seed=0)
    b = information_sufficiency(wide, estimator="gaussian", seed=0)
    np.testing.assert_allclose(b.matrix.to_numpy(), a.matrix.to_numpy(), rtol=1e-6, atol=1e-9)


def test_folds_are_balanced_and_cover_every_item_once():
    f = fold_ids(103, 5, seed=1)
    assert sorted(np.bincount(f)) == [20, 20, 21, 21, 21]
    assert not np.array_equal(f, fold_ids(103, 5, seed=2))


def test_compute_wiring_options_and_errors():
    pool = _pool()
    ctx = MetricContext(embeddings=pool, run_keys={k: k for k in pool}, seed=0,
                        options={"estimator": "gaussian", "target_pcs": 8}, references=frozenset({"noise"}))
    res = get_metric("sufficiency")(ctx)
    assert res.details["settings"]["target_pcs"] == 8
    assert "noise" not in res.details["targets"]  # a reference point is scored, not consulted
    assert res.scores["full"] == max(res.scores.values())
    with pytest.raises(ConfigError, match="max_steps"):  # a KNIFE setting is not the Gaussian estimator's
        information_sufficiency(pool, estimator="gaussian", max_steps=10)
    with pytest.raises(ConfigError, match="estimator"):
        get_metric("sufficiency")(MetricContext(embeddings=pool, run_keys={}, options={"estimator": "flow"}))
    with pytest.raises(ConfigError, match="folds"):
        GaussianSettings(folds=1)
    with pytest.raises(TooFewItemsError):
        information_sufficiency({k: v[:30] for k, v in pool.items()}, estimator="gaussian")
    # no pairs are cached for it, so a Ray night has nothing to precompute
    assert missing_pairs({k: k for k in pool}, MemoryPairCache(), estimator="gaussian", targets="all") == []
    assert len(missing_pairs({k: k for k in pool}, MemoryPairCache())) == 12  # KNIFE: every ordered pair


def test_rows_above_max_items_are_sampled_and_stated():
    pool = _pool(n=400)
    ctx = MetricContext(embeddings=pool, run_keys={k: k for k in pool}, seed=0,
                        options={"estimator": "gaussian", "max_items": 250})
    res = get_metric("sufficiency")(ctx)
    assert res.details["subsampled"] == {"rows": 250}
    names, mat, info = gaussian_is_matrix(pool, seed=0, settings=GaussianSettings(max_items=250))
    assert info["n_used"] == 250 and mat.shape == (4, 4)


def test_a_constant_candidate_is_left_out_and_the_others_ranked():
    pool = dict(_pool(), stuck=np.ones((300, 8)))
    res = information_sufficiency(pool, estimator="gaussian", seed=0)
    assert np.isnan(res.scores["stuck"]) and "stuck" in res.excluded
    assert res.scores["full"] > res.scores["noise"]

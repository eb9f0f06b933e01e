"""Tests of median information sufficiency (embedselect.metrics.sufficiency.score / knife)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from embedselect.errors import ConfigError, MetricError, TooFewItemsError
from embedselect.metrics import MemoryPairCache, MetricContext, get_metric, information_sufficiency
from embedselect.metrics.sufficiency.score import SufficiencySettings
from testkit.options import FAST_SUFFICIENCY

torch.set_num_threads(1)

# Small, fast settings for tests that do not check accuracy; one estimate (the repeats have their own tests).
FAST = {**FAST_SUFFICIENCY, "max_repeats": 1}


def _gaussian_pair(n, a, noise_sd, seed):
    """U ~ N(0, I_du), Z = U a + noise; returns U, Z and the analytic I(U; Z) in nats."""
    rng = np.random.default_rng(seed)
    u = rng.standard_normal((n, a.shape[0]))
    z = u @ a + noise_sd * rng.standard_normal((n, a.shape[1]))
    cov_z = a.T @ a + noise_sd**2 * np.eye(a.shape[1])
    mi = 0.5 * (np.linalg.slogdet(cov_z)[1] - a.shape[1] * np.log(noise_sd**2))
    return u, z, mi


@pytest.mark.parametrize("case", ["diagonal", "mixed"])
def test_gaussian_known_mutual_information(case):
    """Total MI (IS * dim Z) of jointly Gaussian data is within 15% of the analytic value."""
    rng = np.random.default_rng(1)
    if case == "diagonal":
        a = 0.8 / np.sqrt(1 - 0.8**2) * np.eye(4)  # per-dim correlation 0.8 (after scaling)
        noise = 1.0
    else:
        a = rng.standard_normal((3, 5)) * 0.7  # Z (5-d) depends on all of U (3-d)
        noise = 0.8
    u, z, mi = _gaussian_pair(3000, a, noise, seed=2)
    res = information_sufficiency({"u": u, "z": z}, seed=0)
    est_total = res.matrix.loc["u", "z"] * z.shape[1]
    assert abs(est_total - mi) <= 0.15 * mi, (est_total, mi)
    # reverse direction: I(U;Z) is symmetric; IS(Z->U) * dim U estimates the same MI
    est_rev = res.matrix.loc["z", "u"] * u.shape[1]
    assert abs(est_rev - mi) <= 0.15 * mi, (est_rev, mi)


def test_independent_source_scores_about_zero():
    """A source independent of a non-Gaussian target gets |IS| <= 0.05 nats/dim on held-out data."""
    rng = np.random.default_rng(3)
    n = 1500
    lab = rng.integers(0, 3, n)
    centres = rng.standard_normal((3, 6)) * 3
    target = centres[lab] + rng.standard_normal((n, 6))  # a 3-cluster mixture
    noise = rng.standard_normal((n, 8))
    res = information_sufficiency({"noise": noise, "target": target}, seed=0, max_steps=600)
    assert abs(res.matrix.loc["noise", "target"]) <= 0.05
    assert abs(res.matrix.loc["target", "noise"]) <= 0.05
    # its own (noisy one-hot) cluster label explains about I = H(label) = log 3 nats of the target
    onehot = np.eye(3)[lab] + 0.05 * rng.standard_normal((n, 3))
    res2 = information_sufficiency({"label": onehot, "target": target}, seed=0, **FAST)
    expected = np.log(3) / 6  # per target dimension; clusters are well separated
    assert 0.8 * expected < res2.matrix.loc["label", "target"] < 1.15 * expected


def test_noise_family_is_decreasing_and_pool_ranked():
    rng = np.random.default_rng(4)
    n = 1500
    x = rng.standard_normal((n, 5))
    target = np.tanh(x @ rng.standard_normal((5, 6)))
    noises = [0.05, 0.3, 0.8, 2.0]
    pool = {"target": target}
    for s in noises:
        pool[f"noisy{s}"] = target + s * rng.standard_normal(target.shape)
    res = information_sufficiency(pool, seed=0, max_steps=300, eval_every=25, batch_size=128)
    vals = [res.matrix.loc[f"noisy{s}", "target"] for s in noises]
    assert all(a > b for a, b in zip(vals, vals[1:])), vals

    # a pool of equal-size views of one latent with increasing noise s0 < s1 < s2 < s3. With 4
    # candidates the medians are: v0 -> I(v0;v2), v1 -> I(v1;v2), v2 -> I(v2;v1), v3 -> I(v3;v1), so
    # the true order is v0 > v1 = v2 > v3 (v1 and v2 tie exactly: MI is symmetric). Check every
    # strict inequality.
    views = {}
    for k, s in enumerate([0.1, 0.5, 1.0, 2.0]):
        views[f"v{k}"] = x @ rng.standard_normal((5, 6)) + s * rng.standard_normal((n, 6))
    sc = information_sufficiency(views, seed=0, **{**FAST, "max_steps": 200}).scores
    assert sc["v0"] > sc["v1"] > sc["v3"] and sc["v0"] > sc["v2"] > sc["v3"], sc


def _pool(n=600, seed=5):
    rng = np.random.default_rng(seed)
    xa, xb = rng.standard_normal((n, 3)), rng.standard_normal((n, 3))
    return {
        "a1": xa @ rng.standard_normal((3, 5)) + 0.3 * rng.standard_normal((n, 5)),
        "a2": np.tanh(xa @ rng.standard_normal((3, 4))) + 0.3 * rng.standard_normal((n, 4)),
        "b1": xb @ rng.standard_normal((3, 6)) + 0.3 * rng.standard_normal((n, 6)),
        "b2": xb @ rng.standard_normal((3, 3)) + 0.3 * rng.standard_normal((n, 3)),
    }


def test_batched_equals_one_pair_at_a_time_and_seeded():
    pool = {k: v for k, v in _pool().items() if k != "b2"}
    b = information_sufficiency(pool, seed=7, batched=True, **FAST)
    s = information_sufficiency(pool, seed=7, batched=False, **FAST)
    np.testing.assert_allclose(b.matrix.to_numpy(), s.matrix.to_numpy(), atol=2e-4, equal_nan=True)
    assert [p["best_step"] for p in b.pairs] == [p["best_step"] for p in s.pairs]
    again = information_sufficiency(pool, seed=7, batched=True, **FAST)
    np.testing.assert_array_equal(b.matrix.to_numpy(), again.matrix.to_numpy())
    other = information_sufficiency(pool, seed=8, batched=True, **FAST)
    assert not np.allclose(b.matrix.to_numpy(), other.matrix.to_numpy(), equal_nan=True)


def test_scores_depend_on_the_vectors_not_on_names_or_run_keys():
    # issue 23: a model folder moved elsewhere (same vectors, another run key) changed one score, because the EM and
    # initial-weight seeds came from the run keys; they now come from the vectors' content
    pool = {k: v for k, v in _pool().items() if k != "b2"}
    a = information_sufficiency(pool, seed=3, run_keys={k: f"/models/{k}@rev" for k in pool}, **FAST)
    renamed = {f"moved-{k}": v for k, v in pool.items()}
    b = information_sufficiency(renamed, seed=3, run_keys={k: f"/elsewhere/{k}@rev" for k in renamed}, **FAST)
    np.testing.assert_array_equal(a.matrix.to_numpy(), b.matrix.to_numpy())
    assert [a.scores[k] for k in pool] == [b.scores[f"moved-{k}"] for k in pool]


def test_incremental_pool_computes_only_new_pairs():
    pool = _pool()
    keys = {k: f"run-{k}" for k in pool}
    cache = MemoryPairCache()
    first = {k: pool[k] for k in ("a1", "a2", "b1")}
    r1 = information_sufficiency(first, seed=0, run_keys=keys, pair_cache=cache, **FAST)
    assert r1.n_computed == 6 and r1.n_cached == 0
    assert cache.puts == 6 + 3  # 6 pairs + 3 target marginals
    r2 = information_sufficiency(pool, seed=0, run_keys=keys, pair_cache=cache, **FAST)
    assert r2.n_computed == 6 and r2.n_cached == 6  # only pairs with b2
    for s in first:
        for t in first:
            if s != t:
                assert r2.matrix.loc[s, t] == r1.matrix.loc[s, t]
    fresh = information_sufficiency(pool, seed=0, run_keys=keys, **FAST)
    np.testing.assert_allclose(r2.matrix.to_numpy(), fresh.matrix.to_numpy(), atol=2e-4, equal_nan=True)
    # the two independent groups are found as communities (Louvain on the directed IS graph)
    assert r2.communities == [["a1", "a2"], ["b1", "b2"]]
    assert r2.matrix.loc["a1", "b1"] < 0.05 < r2.matrix.loc["a1", "a2"]
    # another seed (or other settings) -> other cache keys -> recomputed
    sub = {k: pool[k] for k in ("a1", "a2")}
    r3 = information_sufficiency(sub, seed=1, run_keys=keys, pair_cache=cache, **FAST)
    assert r3.n_cached == 0 and r3.n_computed == 2


def test_constant_dimension_is_ignored():
    rng = np.random.default_rng(6)
    n = 800
    u = rng.standard_normal((n, 3))
    z = u @ rng.standard_normal((3, 4)) + 0.5 * rng.standard_normal((n, 4))
    z_const = np.concatenate([z, np.full((n, 1), 3.0)], 1)
    r1 = information_sufficiency({"u": u, "z": z}, seed=0, **FAST)
    r2 = information_sufficiency({"u": u, "z": z_const}, seed=0, **FAST)
    assert r2.pairs[0]["dim"] == 4
    assert r2.matrix.loc["u", "z"] == pytest.approx(r1.matrix.loc["u", "z"], abs=1e-4)


def test_compute_wiring_and_errors(caplog):
    pool = _pool(n=300)
    two = {k: pool[k].astype(np.float32) for k in ("a1", "a2")}
    ctx = MetricContext(embeddings=two, run_keys={k: k for k in two}, seed=0, options=FAST,
                        pair_cache=MemoryPairCache())
    with caplog.at_level("WARNING", logger="embedselect"):
        res = get_metric("sufficiency")(ctx)
    # its warnings are the result's (the ranking's notes), not also log lines: the terminal said each twice
    assert res.details["warnings"] and not [r for r in caplog.records if r.levelname == "WARNING"]
    assert res.name == "sufficiency"
    assert set(res.scores) == {"a1", "a2"}
    assert res.scores["a1"] == pytest.approx(res.details["matrix"]["a1"]["a2"])
    assert res.scores["a1"] > 0.05
    assert any("small pool" in w for w in res.details["warnings"])
    assert res.details["settings"]["max_steps"] == FAST["max_steps"]
    assert res.details["pairs_computed"] == 2
    assert sorted(m for c in res.details["communities"] for m in c) == ["a1", "a2"]
    import json

    json.dumps(res.details)  # JSON-serialisable

    with pytest.raises(MetricError, match="at least 2"):
        get_metric("sufficiency")(MetricContext(embeddings={"a1": two["a1"]}, run_keys={}))
    with pytest.raises(ConfigError, match="unknown sufficiency option"):
        get_metric("sufficiency")(MetricContext(embeddings=two, run_keys={}, options={"steps": 3}))
    with pytest.raises(ConfigError):
        SufficiencySettings(patience=0)
    bad = dict(two, a2=np.where(np.arange(two["a2"].size).reshape(two["a2"].shape) == 5, np.nan, two["a2"]))
    with pytest.raises(MetricError, match="NaN"):
        information_sufficiency(bad)
    with pytest.raises(MetricError, match="same items"):
        information_sufficiency({"a1": two["a1"], "a2": two["a2"][:-1]})
    with pytest.raises(TooFewItemsError):
        information_sufficiency({"a1": two["a1"][:40], "a2": two["a2"][:40]})
    with pytest.raises(ConfigError, match="run_keys"):
        information_sufficiency(two, pair_cache=MemoryPairCache())


def test_small_n_noisy_copy_beats_independent():
    """n = 240 (the bundled demo's size): the small-n rule keeps the metric informative.

    Before it, 128 whitened source PCs from ~150 training rows let the conditional memorise the training
    rows, every pair stopped at step 0 and every candidate scored exactly 0.
    """
    rng = np.random.default_rng(12)
    n = 240
    x = rng.standard_normal((n, 6))
    target = np.tanh(x @ rng.standard_normal((6, 96)) / np.sqrt(6)) + 0.3 * rng.standard_normal((n, 96))
    pool = {
        "target": target,
        "copy": target + 0.3 * rng.standard_normal((n, 96)),
        "indep": rng.standard_normal((n, 64)),
    }
    res = information_sufficiency(pool, seed=0)
    m = res.matrix
    eff = res.settings["effective"]
    assert eff["source_pcs"] < res.settings["n_train"] // 5 and eff["n_components"] < 8
    # both directions of the shared pair are clearly positive (at n = 240 single values are noisy:
    # about 0.01-0.07 nats/dim over data seeds), every pair involving the independent source is ~0
    assert m.loc["copy", "target"] > 0.01 and m.loc["target", "copy"] > 0.01, m
    indep = [m.loc[s, t] for s, t in [("indep", "target"), ("indep", "copy"), ("target", "indep"), ("copy", "indep")]]
    assert max(abs(v) for v in indep) <= 0.01, m
    shared = 0.5 * (m.loc["copy", "target"] + m.loc["target", "copy"])
    assert shared > 0.015 and shared > 4 * max(abs(v) for v in indep), m
    best = {(p["source"], p["target"]): p["best_step"] for p in res.pairs}
    assert best[("copy", "target")] > 0 and best[("target", "copy")] > 0
    assert res.scores["indep"] < min(res.scores["copy"], res.scores["target"])


def test_early_stopped_pairs_leave_the_batch_exactly():
    """Pairs stop at different steps (min_steps=0, patience 1) and differ in source/target widths
    (padding): the one stacked model still equals one-pair-at-a-time training."""
    pool = _pool(n=400)
    opts = {**FAST, "min_steps": 0, "patience": 1, "eval_every": 10, "max_steps": 200, "learning_rate": 0.01}
    b = information_sufficiency(pool, seed=3, batched=True, **opts)
    s = information_sufficiency(pool, seed=3, batched=False, **opts)
    stops = [p["steps"] for p in b.pairs]
    assert len(set(stops)) > 1 and min(stops) < 200, stops  # pairs really left the batch early
    np.testing.assert_allclose(b.matrix.to_numpy(), s.matrix.to_numpy(), atol=2e-4, equal_nan=True)
    assert stops == [p["steps"] for p in s.pairs]
    assert [p["best_step"] for p in b.pairs] == [p["best_step"] for p in s.pairs]


def test_hand_written_gradients_match_autograd():
    """The training step's hand-derived gradients equal autograd through ``loglik`` (float64), with
    padded sources/targets and parameters outside the log-scale clamp range; chunking the pairs of a
    step changes nothing."""
    from embedselect.metrics.sufficiency import knife

    rng = np.random.default_rng(0)
    n = 400
    x = rng.standard_normal((n, 4))
    pool = {f"c{d}": np.tanh(x @ rng.standard_normal((4, d))) + 0.3 * rng.standard_normal((n, d)) for d in (5, 12, 30)}
    train = np.arange(300)
    dev = torch.device("cpu")
    prep = {k: knife.Prepared.fit(v, train, 16, dev) for k, v in pool.items()}
    marg = {k: knife.fit_marginal(prep[k].z[torch.from_numpy(train)], 4, seed=1) for k in pool}
    tables = {k: knife.TargetTables.build(prep[k], marg[k], 10) for k in pool}
    names = list(pool)
    pairs = [knife.PairSpec(s, t, i) for i, (s, t) in enumerate((s, t) for s in names for t in names if s != t)]
    eng = knife.engine._Engine(pairs, prep, tables, marg, 8, dev)
    assert eng.pad
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for v in eng.params.values():
            v.add_(0.3 * torch.randn(v.shape, generator=g))
        eng.params["ls"][0, 0, 0] = 7.5  # log-scale above the clamp range
        eng.params["Wo"][1, :, -1] += 20.0  # rest log-scale shift above the range for some rows
    for k in list(eng.params):
        eng.params[k] = eng.params[k].detach().double().requires_grad_(True)
    for a in ("U", "Z", "RQ", "RL", "DR", "DIM", "MASK"):
        setattr(eng, a, getattr(eng, a).double())
    idx = torch.arange(0, 128)
    loss = -eng.loglik(idx).mean(1).sum()
    auto = torch.autograd.grad(loss, list(eng.params.values()))
    hand = eng.loss_grads(eng.step_rows(idx), idx.numel())
    for (name, _), a in zip(eng.params.items(), auto):
        torch.testing.assert_close(hand[name], a, rtol=1e-9, atol=1e-9 * float(a.abs().max()), msg=name)

    e1 = knife.engine._Engine(pairs, prep, tables, marg, 8, dev)
    e2 = knife.engine._Engine(pairs, prep, tables, marg, 8, dev)
    e2.CHUNK_BYTES = 1  # one pair per chunk
    for s in range(3):
        e1.step(idx + s, 1e-2)
        e2.step(idx + s, 1e-2)
    for name in e1.params:
        torch.testing.assert_close(e1.params[name], e2.params[name], rtol=0, atol=0)


def test_pair_cache_keys_follow_the_estimator_code(tmp_path, monkeypatch):
    """Issue 13 bug 2: the pair and marginal keys came from a hand-bumped constant ('is-v2'), so a fix in
    knife.py silently reused old pair results. They now hash the estimator's source."""
    from pathlib import Path

    from embedselect.metrics.sufficiency import settings as sufficiency  # code_version reads _CODE_FILES there

    pool = {k: v for k, v in _pool().items() if k in ("a1", "a2")}
    keys = {k: f"run-{k}" for k in pool}
    cache = MemoryPairCache()
    r1 = information_sufficiency(pool, seed=0, run_keys=keys, pair_cache=cache, **FAST)
    assert r1.n_computed == 2
    assert information_sufficiency(pool, seed=0, run_keys=keys, pair_cache=cache, **FAST).n_cached == 2
    # the same code read from another place: same keys
    files = list(sufficiency._CODE_FILES)
    at = next(i for i, f in enumerate(files) if "NULL_EIG = " in Path(f).read_text())  # knife/prepare.py
    knife = files[at]
    (tmp_path / "same").mkdir()
    copy = tmp_path / "same" / Path(knife).name
    copy.write_bytes(Path(knife).read_bytes())
    monkeypatch.setattr(sufficiency, "_CODE_FILES", (*files[:at], copy, *files[at + 1:]))
    assert information_sufficiency(pool, seed=0, run_keys=keys, pair_cache=cache, **FAST).n_cached == 2
    # one changed line in the knife package: every pair and marginal is recomputed
    copy.write_text(Path(knife).read_text().replace("NULL_EIG = ", "NULL_EIG =  "))
    r3 = information_sufficiency(pool, seed=0, run_keys=keys, pair_cache=cache, **FAST)
    assert r3.n_cached == 0 and r3.n_computed == 2


def _rank_deficient_pool(n=500, seed=0):
    """Pixel-like features of rank 8 in 64 dimensions, their PCA to 48 components computed in float32 (the
    components past the rank are float rounding noise, as pixel-pca makes on upscaled images), a noisy view."""
    rng = np.random.default_rng(seed)
    latent = rng.standard_normal((n, 8))
    pixels = latent @ rng.standard_normal((8, 64))  # exactly rank 8
    c = (pixels - pixels.mean(0)).astype(np.float32)
    _, _, vt = np.linalg.svd(c, full_matrices=False)
    pca = (c @ vt[:48].T).astype(np.float32)
    view = latent[:, :6] + 0.3 * rng.standard_normal((n, 6))
    return {"pixels": pixels, "pixel_pca": pca, "view": view}


def test_rank_deficient_embeddings_give_finite_meaningful_scores():
    """Issue 9 item 2: columns of float noise past an embedding's rank were standardised to unit variance and
    gave nonsense (hundreds of kept dimensions, IS far from the truth). They are null at the embedding's scale."""
    pool = _rank_deficient_pool()
    r = information_sufficiency(pool, seed=0, **FAST)
    dims = {p["target"]: p["dim"] for p in r.pairs}
    assert dims["pixel_pca"] == dims["pixels"] == 8  # the rank, not 48
    m = r.matrix.to_numpy()
    off = m[~np.eye(3, dtype=bool)]
    assert np.isfinite(off).all() and (np.abs(off) < 5).all()
    # the same information in two bases: each predicts the other well, both better than the noisy view does
    assert r.matrix.loc["pixels", "pixel_pca"] > 0.3 and r.matrix.loc["pixel_pca", "pixels"] > 0.3
    assert r.matrix.loc["pixels", "pixel_pca"] > r.matrix.loc["view", "pixel_pca"]


def test_collinear_and_zero_variance_dimensions_change_nothing():
    pool = {k: v for k, v in _pool().items() if k in ("a1", "a2", "b1")}
    base = information_sufficiency(pool, seed=0, **FAST)
    a1 = pool["a1"]
    messy = dict(pool, a1=np.hstack([a1, a1[:, :2] * 3.0, a1[:, :1] - a1[:, 1:2], np.zeros((len(a1), 3)) + 7.0]))
    r = information_sufficiency(messy, seed=0, **FAST)
    assert {p["target"]: p["dim"] for p in r.pairs}["a1"] == 5
    np.testing.assert_allclose(r.matrix.to_numpy(), base.matrix.to_numpy(), atol=0.05, equal_nan=True)


@pytest.mark.parametrize("kind", ["nan", "inf", "constant_rows", "constant_after_split"])
@pytest.mark.fault
def test_a_degenerate_candidate_is_left_out_and_the_others_are_ranked(kind):
    """NaN/inf values or constant rows used to abort the whole metric (or crash); now that candidate gets NaN
    with the reason, and the others are scored as without it."""
    pool = {k: v for k, v in _pool().items() if k in ("a1", "a2", "b1")}
    n = len(pool["a1"])
    bad = np.random.default_rng(0).standard_normal((n, 4))
    if kind == "nan":
        bad[3, 1] = np.nan
    elif kind == "inf":
        bad[5] = np.inf
    elif kind == "constant_rows":
        bad = np.ones((n, 4))
    else:  # a few rows differ, but they all sit outside the training split: constant where it is fitted
        from embedselect.metrics.sufficiency.rows import splits

        train, _, _ = splits(n, SufficiencySettings(**FAST), 0)
        bad = np.ones((n, 4))
        bad[np.setdiff1d(np.arange(n), train)[:3]] = 5.0
    base = information_sufficiency(pool, seed=0, **FAST)
    r = information_sufficiency({**pool, "bad": bad}, seed=0, **FAST)
    assert np.isnan(r.scores["bad"]) and "bad" in r.excluded
    assert any("bad" in w for w in r.warnings)
    for k in pool:
        assert r.scores[k] == pytest.approx(base.scores[k], abs=1e-6)
    # through the metric entry point, as select() calls it
    res = get_metric("sufficiency")(MetricContext(embeddings={**pool, "bad": bad}, run_keys={}, options=FAST))
    assert np.isnan(res.scores["bad"]) and res.details["excluded"]["bad"]
    # too few usable candidates left: a typed error that names the reason
    with pytest.raises(MetricError, match="usable"):
        information_sufficiency({"a1": pool["a1"], "bad": bad}, seed=0, **FAST)


def test_small_n_known_order_is_seed_stable():
    """Issue 9 item 3: at 500 items the old capacity rule (rows_per_pc=10) let the conditional overfit before its
    first evaluation, so nearly every pair stopped at step 0 and scored exactly 0 (Spearman undefined or negative
    across seeds). The known order must now come out on every seed, with a positive score for the best."""
    from scipy.stats import spearmanr

    rng = np.random.default_rng(7)
    n = 500
    lat = rng.standard_normal((n, 4))
    pool = {f"noise{sd}": lat @ rng.standard_normal((4, 64)) + sd * rng.standard_normal((n, 64)) for sd in (0.3, 0.7, 1.5, 3.0)}
    pool["random"] = rng.standard_normal((n, 64))
    truth = [5, 4, 3, 2, 1]
    for seed in (0, 1):
        r = information_sufficiency(pool, seed=seed)
        scores = [r.scores[k] for k in pool]
        assert r.scores["noise0.3"] > 0.02
        assert spearmanr(scores, truth).statistic >= 0.7


@pytest.mark.slow
def test_upscaled_digits_pixel_pca_gives_sane_numbers(tmp_path):
    """Issue 9 item 2 on the data that showed it: 8x8 digits upscaled to 64x64 PNGs, baselines pixel-pca and
    random-projection. Before: IS into pixel-pca of -723 to +104 nats/dim (near-collinear directions of the
    training rows, held-out rows 1e4 train sds along them). Now every pair is finite and small."""
    from PIL import Image
    from sklearn.datasets import load_digits

    from embedselect.models.backends.baselines import make_baseline

    d = load_digits()
    idx = np.sort(np.random.default_rng(0).choice(len(d.target), 500, replace=False))
    paths = []
    for i in idx:
        p = tmp_path / f"digit-{i:04d}.png"
        Image.fromarray((d.images[i] / 16.0 * 255).astype(np.uint8), mode="L").resize((64, 64), Image.NEAREST).convert(
            "RGB"
        ).save(p)
        paths.append(p)
    specs = {"pixel-pca": ("pixel-pca", {}), "random-projection": ("random-projection", {}),
             "pixel-pca32": ("pixel-pca", {"dim": 32}), "random-projection64": ("random-projection", {"dim": 64})}
    pool = {k: make_baseline(b, modality="image", options=o, seed=0, fit_items=paths).embed(paths)
            for k, (b, o) in specs.items()}
    r = information_sufficiency(pool, seed=0)
    values = [p["is"] for p in r.pairs]
    assert np.isfinite(values).all()
    assert max(abs(v) for v in values) < 1.0, r.matrix
    assert all(np.isfinite(v) for v in r.scores.values())


def test_capped_splits_and_marginal_fit_are_stated():
    from embedselect.metrics.sufficiency.score import SufficiencySettings, _subsampled

    # test 0.2 (cap 10 000), val 0.15 (cap 5 000), EM cap 50 000, standardisation and principal axes cap 100 000
    st = dataclasses.asdict(SufficiencySettings())
    assert _subsampled({**st, "n_train": 85_000, "n_val": 5_000, "n_test": 10_000}) == {
        "test": 10_000, "val": 5_000, "marginal_fit": 50_000}
    assert _subsampled({**st, "n_train": 985_000, "n_val": 5_000, "n_test": 10_000}) == {
        "test": 10_000, "val": 5_000, "marginal_fit": 50_000, "prep": 100_000}
    assert _subsampled({**st, "n_train": 650, "n_val": 150, "n_test": 200}) == {}


def test_normal_scores_break_ties_spread_point_masses_and_ignore_monotone_changes():
    from embedselect.metrics.normal_scores import normal_scores

    rng = np.random.default_rng(0)
    x = np.maximum(rng.standard_normal((200, 3)), 0.0)  # about half exact zeros per column (ReLU)
    a = normal_scores(x, seed=1)
    assert a.dtype == np.float32 and a.shape == x.shape
    for j in range(3):  # every column a permutation of the same distinct scores: the zeros are spread
        assert len(np.unique(a[:, j])) == 200
        np.testing.assert_array_equal(np.sort(a[:, j]), np.sort(a[:, 0]))
    np.testing.assert_array_equal(a, normal_scores(np.exp(3 * x) + 5, seed=1))  # monotone change: same output
    np.testing.assert_array_equal(a, normal_scores(x, seed=1))
    assert not np.array_equal(a, normal_scores(x, seed=2))  # only the tie order moves with the seed
    nz = x[:, 0] > 0
    np.testing.assert_array_equal(a[nz, 0], normal_scores(x, seed=2)[nz, 0])


def test_normal_scores_option_keeps_a_point_mass_target_bounded():
    # issue 23: max-pooled / int8 features repeat exact values; on the raw values a mixture component collapses onto
    # the point mass and IS ran to -170 / +19 nats per dimension on a 200-photo set; with normal scores it stays bounded
    rng = np.random.default_rng(3)
    n = 400
    u = rng.standard_normal((n, 4))
    z = np.maximum(u @ rng.standard_normal((4, 6)) - 1.0, 0.0)  # mostly exact zeros
    z_int = np.round(z * 2) / 2  # and a few levels only
    r = information_sufficiency({"u": u, "z": z_int}, seed=0, normal_scores=True, **FAST)
    assert np.isfinite(r.matrix.to_numpy()[~np.eye(2, dtype=bool)]).all()
    assert 0.05 < r.matrix.loc["u", "z"] < 3.0 and abs(r.matrix.loc["z", "u"]) < 3.0
    raw = information_sufficiency({"u": u, "z": z_int}, seed=0, **FAST)
    assert raw.matrix.loc["u", "z"] == 0.0  # on the raw values the fit never beats its step-0 marginal (IS exactly 0)
    assert r.settings["normal_scores"] is True
    with pytest.raises(ConfigError, match="normal_scores"):
        information_sufficiency({"u": u, "z": z_int}, seed=0, normal_scores="yes", **FAST)


def test_how_many_estimates_are_averaged_follows_the_test_rows():
    """Issue 23 item 6: a small test split is averaged over several seeds' estimates; a large one is estimated once."""
    st = SufficiencySettings()
    assert [st.repeats(t) for t in (60, 200, 400, 999, 1000, 10_000)] == [5, 5, 3, 2, 1, 1]
    assert SufficiencySettings(max_repeats=1).repeats(60) == 1
    assert SufficiencySettings(repeat_test_rows=120).repeats(60) == 2
    # the repeat settings choose how many estimates, not how one is made: not in a pair's key
    assert st.key(3) == SufficiencySettings(max_repeats=1, repeat_test_rows=7).key(3) != st.key(4)
    with pytest.raises(ConfigError, match="max_repeats"):
        SufficiencySettings(max_repeats=0)


def test_repeated_estimates_are_the_mean_of_plain_estimates_under_derived_seeds():
    """Issue 23 item 6: the averaged estimate is exactly the mean of the plain estimates under its seeds (the first is
    the root seed itself), pair by pair; they are cached as plain estimates, and missing_pairs lists a pair while any
    seed's estimate of it is missing."""
    from embedselect.metrics.sufficiency.score import missing_pairs
    from embedselect.metrics.sufficiency.settings import repeat_seeds

    pool = {k: v for k, v in _pool(n=300).items() if k != "b2"}
    keys = {k: f"run-{k}" for k in pool}
    three = {**FAST, "max_repeats": 3}
    cache = MemoryPairCache()
    assert len(missing_pairs(keys, cache, seed=2, n_items=300, **three)) == 6
    res = information_sufficiency(pool, seed=2, run_keys=keys, pair_cache=cache, **three)
    seeds = repeat_seeds(2, 3)
    assert seeds[0] == 2 and len(set(seeds)) == 3
    assert res.settings["repeats"] == 3 and res.settings["repeat_seeds"] == seeds and res.settings["seed"] == 2
    assert res.n_computed == 3 * 6 and missing_pairs(keys, cache, seed=2, n_items=300, **three) == []
    plain = [information_sufficiency(pool, seed=s, run_keys=keys, pair_cache=cache, **FAST) for s in seeds]
    assert all(p.n_cached == 6 and p.n_computed == 0 and p.spread is None for p in plain)
    mean = np.mean([p.matrix.to_numpy() for p in plain], axis=0)
    np.testing.assert_allclose(res.matrix.to_numpy(), mean, rtol=1e-12, equal_nan=True)
    for s in pool:
        assert res.scores[s] == pytest.approx(np.median([res.matrix.loc[s, t] for t in pool if t != s]))
        assert res.spread[s] == pytest.approx(np.std([p.scores[s] for p in plain]))
    assert any("the mean of 3 estimates" in w for w in res.warnings)
    # the root seed's estimate alone is cached: missing_pairs without the item count sees nothing missing, with it
    # the other seeds' pairs
    only_root = MemoryPairCache()
    information_sufficiency(pool, seed=2, run_keys=keys, pair_cache=only_root, **FAST)
    assert missing_pairs(keys, only_root, seed=2, **three) == []
    assert len(missing_pairs(keys, only_root, seed=2, n_items=300, **three)) == 6
    assert information_sufficiency(pool, seed=2, run_keys=keys, pair_cache=only_root, **three).n_cached == 6

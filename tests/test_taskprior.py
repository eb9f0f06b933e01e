"""Task Priors: kernels, closed-form moments, sampler and the `task_prior` metric."""

from __future__ import annotations

import numpy as np
import pytest

from embedselect.errors import ConfigError, MetricError, TooFewItemsError
from embedselect.metrics import MetricContext, centered_cosine_kernel, get_metric, sample_tasks, task_prior_moments
from embedselect.metrics.kernels import kernel_factor, label_factor, sum_kernel_factor
from embedselect.metrics.task_prior.score import DEFAULT_TAU, compute, resolve_temperature


pytestmark = pytest.mark.usefixtures("one_thread")


def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def _dense(m_emb, k_dense, t):
    """Dense float64 reference of Theorem 2.6 (all i, j)."""
    m = centered_cosine_kernel(m_emb)
    p = _sig(k_dense / t)
    return float(np.sum(m * p)), float(np.sum(m * m * p * (1 - p)))


def _clusters(n, d, k, sep, seed):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(k, d)) * sep
    lab = rng.integers(0, k, size=n)
    return centres[lab] + rng.normal(size=(n, d)), lab


# --- kernels ------------------------------------------------------------------------------------------
def test_centered_cosine_kernel_properties():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(37, 5)) + 3.0
    k = centered_cosine_kernel(x)
    assert k.shape == (37, 37) and k.dtype == np.float64
    np.testing.assert_allclose(k, k.T, atol=1e-15)
    np.testing.assert_allclose(k.sum(axis=0), 0.0, atol=1e-12)
    assert np.linalg.norm(k) == pytest.approx(1.0, rel=1e-12)
    # cosine: invariant to positive row scaling
    k2 = centered_cosine_kernel(x * rng.uniform(0.1, 10, size=(37, 1)))
    np.testing.assert_allclose(k, k2, atol=1e-12)
    # matches the explicit H C H / ||H C H||_F
    xn = x / np.linalg.norm(x, axis=1, keepdims=True)
    h = np.eye(37) - 1.0 / 37
    ref = h @ (xn @ xn.T) @ h
    np.testing.assert_allclose(k, ref / np.linalg.norm(ref), atol=1e-13)


def test_kernel_errors():
    with pytest.raises(MetricError, match="NaN"):
        kernel_factor(np.array([[1.0, np.nan], [0.0, 1.0], [1.0, 1.0]]))
    with pytest.raises(MetricError, match="2-D"):
        kernel_factor(np.ones(5))
    with pytest.raises(MetricError, match="same direction"):
        kernel_factor(np.tile([[1.0, 2.0]], (6, 1)) * np.arange(1, 7)[:, None])
    with pytest.raises(MetricError, match="2 distinct"):
        label_factor(np.zeros(10, dtype=int))


# --- closed-form moments --------------------------------------------------------------------------------
def test_moments_match_bernoulli_brute_force():
    """E and Var of Tr(MG) over 40 000 sampled graphs with independent Bernoulli(σ(K_ij/T)) edges."""
    rng = np.random.default_rng(1)
    n = 10
    x, p_emb = rng.normal(size=(n, 4)), rng.normal(size=(n, 3))
    tau = 0.5  # mid-range probabilities so the variance is not degenerate
    mo = task_prior_moments(x, p_emb, tau=tau)
    m = centered_cosine_kernel(x)
    prob = _sig(centered_cosine_kernel(p_emb) / (tau / n))
    assert 0.05 < prob.mean() < 0.95
    n_graphs = 40_000
    g = rng.random((n_graphs, n, n)) < prob  # every (i, j) independent, diagonal included
    tr = np.einsum("sij,ij->s", g.astype(np.float64), m)
    se_mean = tr.std(ddof=1) / np.sqrt(n_graphs)
    c = tr - tr.mean()
    se_var = np.sqrt((np.mean(c**4) - np.var(c) ** 2) / n_graphs)
    assert abs(tr.mean() - mo.mean) < 4 * se_mean
    assert abs(tr.var(ddof=1) - mo.var) < 4 * se_var
    # the test can fail: dropping the diagonal (a plausible mistake) is rejected by the same check
    no_diag = mo.mean - float(np.sum(np.diag(m) * np.diag(prob)))
    assert abs(tr.mean() - no_diag) > 4 * se_mean


@pytest.mark.parametrize("dtype,rtol", [("float64", 1e-9), ("float32", 1e-4)])
def test_streamed_equals_dense(dtype, rtol):
    rng = np.random.default_rng(2)
    n = 203  # not a multiple of the tile
    models = {"a": rng.normal(size=(n, 7)), "b": rng.normal(size=(n, 12)) ** 3}
    prior = rng.normal(size=(n, 9))
    t = resolve_temperature(n, tau=DEFAULT_TAU)
    res = task_prior_moments(models, prior, tile=64, dtype=dtype)
    for key, emb in models.items():
        e, v = _dense(emb, centered_cosine_kernel(prior), t)
        assert res[key].mean == pytest.approx(e, rel=rtol)
        assert res[key].var == pytest.approx(v, rel=rtol)
        assert res[key].temperature == t and res[key].n == n
        assert -1.0 <= res[key].alignment <= 1.0
    # one tile or many: same result
    single = task_prior_moments(models["a"], prior, tile=1000, dtype=dtype)
    assert single.mean == pytest.approx(res["a"].mean, rel=rtol)


def test_kernel_sum_prior_equals_summed_kernel():
    rng = np.random.default_rng(3)
    n = 150
    x, p1, p2 = rng.normal(size=(n, 6)), rng.normal(size=(n, 5)), rng.normal(size=(n, 8))
    t = 2e-3
    got = task_prior_moments(x, [p1, p2], temperature=t, tile=64)
    k_sum = centered_cosine_kernel(p1) + centered_cosine_kernel(p2)
    e, v = _dense(x, k_sum, t)
    assert got.mean == pytest.approx(e, rel=1e-9)
    assert got.var == pytest.approx(v, rel=1e-9)
    # and differs from either prior alone (the check has teeth)
    alone = task_prior_moments(x, p1, temperature=t)
    assert abs(alone.mean - got.mean) > 1e-6 * abs(got.mean)
    # the normalised sum factor really has unit Frobenius norm
    z = sum_kernel_factor([kernel_factor(p1), kernel_factor(p2)], normalize=True)
    assert np.linalg.norm(z @ z.T) == pytest.approx(1.0, rel=1e-12)


def test_temperature_and_tau():
    assert resolve_temperature(8192, tau=DEFAULT_TAU) == pytest.approx(1e-5, rel=1e-12)
    assert resolve_temperature(100, tau=1.0, temperature=0.3) == 0.3
    rng = np.random.default_rng(4)
    x, p = rng.normal(size=(50, 4)), rng.normal(size=(50, 4))
    a = task_prior_moments(x, p, tau=0.5)
    b = task_prior_moments(x, p, temperature=0.5 / 50)
    assert a.mean == pytest.approx(b.mean, rel=1e-12) and a.tau == pytest.approx(0.5)
    for bad in (0, -1.0, float("nan"), "x"):
        with pytest.raises(ConfigError):
            task_prior_moments(x, p, tau=bad)
    with pytest.raises(MetricError, match="same n items"):
        task_prior_moments(x, p[:40])
    with pytest.raises(ConfigError, match="dtype"):
        task_prior_moments(x, p, dtype="float16")
    with pytest.raises(ConfigError, match="tile"):
        task_prior_moments(x, p, tile=0)


# --- sampler ------------------------------------------------------------------------------------------
def test_sampler_reproducible_and_shaped():
    x, _ = _clusters(120, 6, 3, 3.0, seed=5)
    a = sample_tasks(x, 16, 3, seed=7)
    b = sample_tasks(x, 16, 3, seed=7)
    c = sample_tasks(x, 16, 3, seed=8)
    assert a.shape == (16, 120) and a.dtype == np.int64
    assert a.min() >= 0 and a.max() <= 2
    np.testing.assert_array_equal(a, b)
    assert (a != c).any()
    with pytest.raises(ConfigError):
        sample_tasks(x, 0, 2)
    with pytest.raises(ConfigError):
        sample_tasks(x, 4, 1)


def test_sampler_high_temperature_is_uniform_and_independent():
    x, lab = _clusters(400, 5, 2, 4.0, seed=6)
    tasks = sample_tasks(x, 200, 2, temperature=1e9, seed=0)
    # class frequencies: binomial(400·200, 1/2)
    assert abs(tasks.mean() - 0.5) < 4 * np.sqrt(0.25 / tasks.size)
    # independence: a pair of points in the same true cluster shares a label half of the time
    same = lab[:, None] == lab[None, :]
    np.fill_diagonal(same, False)
    agree = np.mean([(t[:, None] == t[None, :])[same].mean() for t in tasks[:50]])
    assert abs(agree - 0.5) < 0.02


def test_sampler_follows_clusters_as_temperature_drops():
    x, lab = _clusters(300, 8, 2, 3.0, seed=9)

    def cluster_agreement(tau):
        tasks = sample_tasks(x, 60, 2, tau=tau, seed=1)
        acc = (tasks == lab[None, :]).mean(axis=1)
        return float(np.mean(np.maximum(acc, 1 - acc)))  # label permutation does not matter

    scores = [cluster_agreement(tau) for tau in (1e3, 10.0, 1.0, DEFAULT_TAU)]
    assert scores[0] < 0.6  # hot: unrelated to the clusters
    assert all(a < b for a, b in zip(scores, scores[1:])), scores
    assert scores[-1] > 0.95  # default temperature: tasks follow the well-separated clusters


# --- the metric ---------------------------------------------------------------------------------------
def _pool(n=240, seed=11):
    """A shared clustered signal seen through increasing noise, plus a near-duplicate of the worst."""
    rng = np.random.default_rng(seed)
    sig, lab = _clusters(n, 8, 4, 2.0, seed)
    emb = {}
    for name, noise in (("clean", 0.3), ("mid", 1.5), ("noisy", 6.0)):
        emb[name] = (sig @ rng.normal(size=(8, 24)) + noise * 3 * rng.normal(size=(n, 24))).astype(np.float32)
    emb["noisy_copy"] = emb["noisy"] + 0.01 * rng.normal(size=(n, 24)).astype(np.float32)
    return emb, lab


def _ctx(emb, **kw):
    return MetricContext(embeddings=emb, run_keys={k: k for k in emb}, **kw)


def test_compute_registered_and_complete():
    emb, lab = _pool()
    assert get_metric("task_prior").__wrapped__ is compute  # behind the registry's option check
    res = compute(_ctx(emb, options={"n_tasks": 16}, labels=np.array(["bad"])))  # labels must be ignored
    assert res.name == "task_prior"
    assert set(res.scores) == set(emb)
    for col in ("task_prior_mean", "task_prior_var", "task_prior_alignment", "probe_acc_mean",
                "probe_acc_std", "probe_acc_p05", "agreement_mean"):
        assert set(res.columns[col]) == set(emb), col
    assert res.details["prior"] == "central"
    assert sum(res.details["prior_weights"].values()) == pytest.approx(1.0)
    # the two near-copies share one member's weight
    w = res.details["prior_weights"]
    assert w["noisy"] < 0.6 * w["clean"] and w["noisy"] + w["noisy_copy"] < 1.2 * w["clean"]
    assert res.details["temperature"] == pytest.approx(DEFAULT_TAU / 240)
    assert res.scores == res.columns["probe_acc_mean"]  # the default headline
    assert res.details["headline"] == "probe_acc_mean" and res.details["secondary"] == ["task_prior_alignment"]
    assert res.scores["clean"] > res.scores["noisy"]
    assert res.columns["task_prior_alignment"]["clean"] > res.columns["task_prior_alignment"]["noisy"]
    by_alignment = compute(_ctx(emb, options={"n_tasks": 16, "headline": "alignment"}))
    assert by_alignment.scores == by_alignment.columns["task_prior_alignment"] == res.columns["task_prior_alignment"]
    assert compute(_ctx(emb, options={"probes": False})).details["headline"] == "task_prior_alignment"
    with pytest.raises(ConfigError, match="headline"):
        compute(_ctx(emb, options={"headline": "best"}))
    assert res.columns["agreement_mean"]["clean"] > res.columns["agreement_mean"]["noisy"]
    # same seed, same result
    again = compute(_ctx(emb, options={"n_tasks": 16}))
    assert again.scores == res.scores


def test_compute_priors():
    emb, lab = _pool()
    opts = {"probes": False}
    lab_res = compute(_ctx(emb, options={**opts, "prior": "labels"}, labels=lab))
    assert lab_res.details["prior"] == "labels"
    s = lab_res.scores
    assert s["clean"] > s["mid"] > s["noisy"]
    assert lab_res.scores == lab_res.columns["task_prior_alignment"]
    loo = compute(_ctx(emb, options={**opts, "prior": "loo"}))
    cons = compute(_ctx(emb, options={**opts, "prior": "consensus"}))
    assert loo.details["prior"] == "loo"
    assert loo.scores["clean"] != pytest.approx(cons.scores["clean"], rel=1e-6)
    # loo equals an explicit moments call with the others' kernels summed and renormalised
    others = [emb[k] for k in emb if k != "mid"]
    z = sum_kernel_factor([kernel_factor(o) for o in others], normalize=True)
    e, _ = _dense(emb["mid"], z @ z.T, DEFAULT_TAU / 240)
    assert loo.columns["task_prior_mean"]["mid"] == pytest.approx(e, rel=1e-9)
    own = compute(_ctx(emb, options={**opts, "prior": "mid"}))
    assert own.details["prior"] == "candidate:mid"
    assert any("self-bias" in w for w in own.details["warnings"])


def test_balanced_prior_resists_near_duplicates():
    """Three near-copies of the noisiest model: the plain consensus prior is pulled toward them and
    ranks them above the clean model (the known trap); the redundancy-balanced prior does not."""
    emb, _ = _pool()
    rng = np.random.default_rng(0)
    for j in range(3):
        emb[f"noisy_copy{j}"] = emb["noisy"] + 0.01 * rng.normal(size=emb["noisy"].shape).astype(np.float32)
    opts = {"probes": False}
    cons = compute(_ctx(emb, options={**opts, "prior": "consensus"})).scores
    bal = compute(_ctx(emb, options={**opts, "prior": "balanced"})).scores
    assert cons["noisy"] > cons["clean"]  # the trap is real in this pool
    assert bal["clean"] > bal["mid"] > bal["noisy"]


def test_central_prior_weighs_a_kernel_no_other_member_shares_little():
    """An untrained network's features share nothing with the models' (here: another clustering of the items). The
    redundancy-balanced prior gives such a kernel the largest weight, as the one least like the others, and so samples
    tasks it solves; the central prior weighs each member by its mean CKA with the others, so the outsider weighs least
    and scores below the models (docs/archive/benchmarks-diary.md §4o)."""
    emb, _ = _pool()
    del emb["noisy_copy"]
    other, _ = _clusters(240, 8, 4, 2.0, 99)
    emb["outsider"] = (other @ np.random.default_rng(5).normal(size=(8, 24))).astype(np.float32)
    opts = {"n_tasks": 64}
    bal = compute(_ctx(emb, options={**opts, "prior": "balanced"}))
    cen = compute(_ctx(emb, options={**opts, "prior": "central"}))
    wb, wc = bal.details["prior_weights"], cen.details["prior_weights"]
    assert max(wb, key=wb.get) == "outsider" and min(wc, key=wc.get) == "outsider"
    assert sum(wc.values()) == pytest.approx(1.0) and cen.details["prior"] == "central"
    assert cen.details["prior_members"] == list(emb)
    assert cen.scores["outsider"] < min(cen.scores["clean"], cen.scores["mid"])
    assert cen.scores["outsider"] < bal.scores["outsider"]
    # the models as three variants of one model: the family's head is its one member in the prior
    three = {"clean": "m", "mid": "m", "noisy": "m"}
    wf = compute(_ctx(emb, options={**opts, "prior": "central"}, families=three)).details
    assert wf["prior_members"] == ["clean", "outsider"]
    assert {k for k, v in wf["prior_weights"].items() if v > 0} == {"clean", "outsider"}


def test_compute_subsamples_for_probes_only():
    emb, _ = _pool()
    res = compute(_ctx(emb, options={"n_tasks": 8, "max_items": 100, "agreement": False, "n_classes": 3}))
    assert res.details["n_probe_items"] == 100 and res.details["n_items"] == 240
    assert res.details["probe_temperature"] == pytest.approx(DEFAULT_TAU / 100)
    assert res.details["splits"] == 8  # "auto": 30 held-out items a split, 8 splits at most
    assert "agreement_mean" not in res.columns
    one = compute(_ctx(emb, options={"n_tasks": 8, "max_items": 100, "agreement": False, "n_classes": 3, "splits": 1}))
    assert one.details["splits"] == 1 and one.scores != res.scores
    full = compute(_ctx(emb, options={"probes": False}))
    assert res.columns["task_prior_mean"] == full.columns["task_prior_mean"]  # moments use all items


def test_moments_subsample_above_their_cap_and_say_so():
    emb, lab = _pool()
    opts = {"probes": False}
    full = compute(_ctx(emb, options=opts))
    assert "subsampled" not in full.details and full.details["n_moment_items"] == 240
    capped = compute(_ctx(emb, options={**opts, "moments_max_items": 120}))
    assert capped.details["subsampled"] == {"moments": 120}
    assert capped.details["n_moment_items"] == 120 and capped.details["n_items"] == 240
    assert capped.details["temperature"] == pytest.approx(DEFAULT_TAU / 120)
    # the same as the moments of the seeded subsample itself (rows drawn with the metric's own seed stream)
    rows = np.sort(np.random.default_rng([0, 5]).choice(240, size=120, replace=False))
    direct = compute(_ctx({k: v[rows] for k, v in emb.items()}, options=opts))
    assert capped.columns["task_prior_alignment"] == direct.columns["task_prior_alignment"]
    assert capped.scores != full.scores
    # a label prior follows the same rows
    lp = compute(_ctx(emb, options={**opts, "prior": "labels", "moments_max_items": 120}, labels=lab))
    lp_direct = compute(_ctx({k: v[rows] for k, v in emb.items()}, options={**opts, "prior": "labels"},
                             labels=np.asarray(lab)[rows]))
    assert lp.scores == lp_direct.scores
    probes = compute(_ctx(emb, options={"n_tasks": 4, "max_items": 100, "agreement": False}))
    assert probes.details["subsampled"] == {"probes": 100}
    with pytest.raises(ConfigError, match="moments_max_items"):
        compute(_ctx(emb, options={**opts, "moments_max_items": 0}))


def test_compute_errors():
    emb, _ = _pool()
    with pytest.raises(ConfigError, match="labels"):
        compute(_ctx(emb, options={"prior": "labels"}))
    with pytest.raises(ConfigError, match="prior must be"):
        compute(_ctx(emb, options={"prior": "nope"}))
    with pytest.raises(ConfigError, match="unknown task_prior option"):
        compute(_ctx(emb, options={"n_task": 3}))
    with pytest.raises(ConfigError, match="True or False"):
        compute(_ctx(emb, options={"probes": "no"}))
    with pytest.raises(TooFewItemsError):
        compute(_ctx({k: v[:10] for k, v in emb.items()}))
    with pytest.raises(MetricError, match="rows"):
        compute(_ctx({"a": emb["clean"], "b": emb["mid"][:-1]}))


@pytest.mark.parametrize("kind", ["constant", "constant_up_to_noise", "nan", "same_direction"])
@pytest.mark.fault
def test_a_degenerate_candidate_is_left_out_and_the_others_are_scored_as_without_it(kind):
    """Issue 14: one candidate whose kernel is useless used to raise for the whole metric (every candidate unscored)."""
    emb, _ = _pool()
    n = len(emb["clean"])
    rng = np.random.default_rng(0)
    bad = {
        "constant": np.ones((n, 8), np.float32),
        "constant_up_to_noise": np.ones((n, 8), np.float32) + 1e-7 * rng.normal(size=(n, 8)).astype(np.float32),
        "nan": np.where(np.arange(n)[:, None] == 3, np.nan, rng.normal(size=(n, 8))).astype(np.float32),
        "same_direction": np.outer(rng.uniform(1, 2, n), rng.normal(size=8)).astype(np.float32),
    }[kind]
    opts = {"n_tasks": 8}
    base = compute(_ctx(emb, options=opts))
    res = compute(_ctx({**emb, "bad": bad}, options=opts))
    assert np.isnan(res.scores["bad"]) and res.details["excluded"]["bad"]
    assert all(np.isnan(values["bad"]) for values in res.columns.values())
    assert {k: res.scores[k] for k in emb} == pytest.approx(base.scores)
    with pytest.raises(MetricError, match="could not score any candidate"):
        compute(_ctx({"bad": bad}, options=opts))
    with pytest.raises(MetricError, match="prior candidate 'bad' cannot be used"):
        compute(_ctx({**emb, "bad": bad}, options={**opts, "prior": "bad"}))


# --- cluster tasks and the prior without the candidate's own kernel ----------------------------------
def test_cluster_tasks_recover_clear_clusters_and_are_seeded():
    from sklearn.metrics import adjusted_rand_score

    from embedselect.metrics.task_prior.sampling import cluster_tasks_from_kernel

    x, lab = _clusters(150, 6, 3, 6.0, 4)
    z = kernel_factor(x)
    got = cluster_tasks_from_kernel(z @ z.T, [3, 2], 5, seed=2)
    assert sorted(got) == [2, 3] and got[2].max() == 1
    tasks = got[3]
    assert tasks.shape == (5, 150) and tasks.dtype == np.int64 and tasks.min() >= 0 and tasks.max() < 3
    assert all(adjusted_rand_score(lab, t) > 0.95 for t in tasks)
    np.testing.assert_array_equal(tasks, cluster_tasks_from_kernel(z @ z.T, [3], 5, seed=2)[3])
    # the kernel's scale does not matter
    np.testing.assert_array_equal(tasks, cluster_tasks_from_kernel(7.0 * (z @ z.T), [3], 5, seed=2)[3])
    noise = kernel_factor(np.random.default_rng(0).normal(size=(150, 6)))
    # no clear partition: restarts from their own seeds disagree
    loose = cluster_tasks_from_kernel(noise @ noise.T, [8], 4, seed=0)[8]
    assert min(adjusted_rand_score(loose[0], t) for t in loose[1:]) < 0.9
    with pytest.raises(ConfigError, match="at most the number of items"):
        cluster_tasks_from_kernel(z @ z.T, [151], 1)
    with pytest.raises(ConfigError, match="square matrix"):
        cluster_tasks_from_kernel(z, [3], 1)


def test_cluster_tasks_lanczos_and_dense_paths_agree(monkeypatch):
    """Above EXACT_EIGH_MAX items the eigenvectors come from Lanczos iterations: the same partitions as the dense
    eigendecomposition, whatever the seed of its start vector."""
    from embedselect.metrics.task_prior import sampling as ts

    x, _ = _clusters(200, 10, 5, 2.0, 7)
    z = kernel_factor(x)
    dense = ts.cluster_tasks_from_kernel(z @ z.T, [4, 8], 3, seed=1)
    monkeypatch.setattr(ts, "EXACT_EIGH_MAX", 50)
    for q, tasks in ts.cluster_tasks_from_kernel(z @ z.T, [4, 8], 3, seed=1).items():
        np.testing.assert_array_equal(tasks, dense[q])


def test_prior_kernels_are_the_prior_factors_kernels():
    """kernel(c) of a pool prior is factor(c) factor(c)ᵀ up to a positive scale, with and without the candidate's
    own kernel, for every pool prior."""
    from embedselect.metrics.task_prior.priors import prior_factors, prior_kernels

    emb, _ = _pool(n=90)
    zs = [kernel_factor(v) for v in emb.values()]
    members = [0, 1, 2, 3]
    for kind in ("consensus", "balanced", "central"):
        factor = prior_factors(kind, zs, None, members)
        kernel = prior_kernels(kind, zs, None, members)
        for c in (None, 0, 3):
            f = factor(c)
            want, got = f @ f.T, kernel(c)
            np.testing.assert_allclose(got / np.linalg.norm(got), want / np.linalg.norm(want), atol=1e-12)
        assert not np.allclose(kernel(0) / np.linalg.norm(kernel(0)), kernel(None) / np.linalg.norm(kernel(None)))


def test_cluster_tasks_rank_by_the_shared_structure_and_check_their_options():
    emb, _ = _pool()
    res = compute(_ctx(emb, options={"tasks": "clusters", "agreement": False}))
    d = res.details
    assert d["tasks"] == "clusters" and d["n_classes"] == [4, 8, 16] and d["n_tasks"] == 24
    assert all(len(v) == 24 for v in d["task_accuracy"].values())
    assert res.scores["clean"] > res.scores["mid"] > res.scores["noisy"]
    # class counts above a fifth of the probe items are dropped; none left falls back to 2
    few = compute(_ctx(emb, options={"tasks": "clusters", "max_items": 60, "cluster_classes": [8, 16],
                                     "cluster_restarts": 2, "agreement": False}))
    assert few.details["n_classes"] == 8 and few.details["n_tasks"] == 2
    two = compute(_ctx(emb, options={"tasks": "clusters", "max_items": 40, "cluster_classes": [16],
                                     "cluster_restarts": 2, "agreement": False}))
    assert two.details["n_classes"] == 2
    for bad in ({"tasks": "modes"}, {"tasks": "clusters", "cluster_classes": []},
                {"tasks": "clusters", "cluster_classes": "8"}, {"tasks": "clusters", "cluster_classes": [1]},
                {"tasks": "clusters", "cluster_restarts": 0}, {"leave_self_out": "yes"},
                {"tasks": "modes", "probes": False}):
        with pytest.raises(ConfigError):
            compute(_ctx(emb, options=bad))


def test_leave_self_out_scores_a_candidate_on_tasks_the_others_drew():
    """A member whose structure no other member shares solves the tasks it drew itself; left out of its own prior
    it is scored on the others' tasks, for the probes and the moments alike (the prior 'loo' is the consensus with
    it)."""
    emb, _ = _pool()
    del emb["noisy_copy"]
    other, _ = _clusters(240, 8, 4, 4.0, 99)
    emb["outsider"] = (other @ np.random.default_rng(5).normal(size=(8, 24))).astype(np.float32)
    for tasks in ("sampled", "clusters"):
        opts = {"tasks": tasks, "n_tasks": 32, "agreement": False, "prior": "consensus"}
        own = compute(_ctx(emb, options=opts))
        out = compute(_ctx(emb, options={**opts, "leave_self_out": True}))
        assert out.scores["outsider"] < own.scores["outsider"] - 0.02, tasks
        assert out.columns["task_prior_alignment"]["outsider"] < own.columns["task_prior_alignment"]["outsider"]
        assert out.scores["clean"] > out.scores["outsider"]
    probes_off = {"probes": False}
    loo = compute(_ctx(emb, options={**probes_off, "prior": "loo"}))
    same = compute(_ctx(emb, options={**probes_off, "prior": "consensus", "leave_self_out": True}))
    assert same.columns["task_prior_mean"] == pytest.approx(loo.columns["task_prior_mean"], rel=1e-12)

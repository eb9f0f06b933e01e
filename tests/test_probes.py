"""Ridge probes on sampled tasks: held-out accuracy and agreement score."""

from __future__ import annotations

import numpy as np
import pytest

from embedselect.errors import ConfigError, MetricError
from embedselect.metrics.probes import probe_tasks, split_indices


pytestmark = pytest.mark.usefixtures("one_thread")


def test_split_indices():
    tr, te = split_indices(100, 0.3, seed=1)
    assert len(te) == 30 and len(tr) == 70
    assert np.intersect1d(tr, te).size == 0
    np.testing.assert_array_equal(np.union1d(tr, te), np.arange(100))
    tr2, te2 = split_indices(100, 0.3, seed=1)
    np.testing.assert_array_equal(te, te2)
    assert not np.array_equal(te, split_indices(100, 0.3, seed=2)[1])
    with pytest.raises(ConfigError):
        split_indices(100, 1.0, seed=0)


def test_separable_tasks_reach_full_accuracy():
    """Each task is a 3-class labeling of noise features; its own block of coordinates separates
    the classes with a wide margin, so every held-out point is classified correctly."""
    rng = np.random.default_rng(0)
    n, d, s = 400, 10, 12
    x = rng.normal(size=(n, d))
    tasks = rng.integers(0, 3, size=(s, n))
    blocks = [4.0 * np.eye(3)[t] for t in tasks]
    rep = probe_tasks(np.concatenate([x, *blocks], axis=1), tasks, seed=0)
    assert rep.accuracy.shape == (s,) and rep.n_test == 120 and rep.n_train == 280
    assert rep.accuracy.min() > 0.97
    assert rep.agreement.min() > 0.95
    assert rep.summary()["probe_acc_p05"] > 0.97
    assert abs(rep.summary()["probe_majority_mean"] - 0.36) < 0.06  # about 1/3: accuracy is earned


def test_random_features_give_chance_on_held_out_items():
    rng = np.random.default_rng(1)
    n, d, s = 400, 300, 64  # d > n_train: a probe can fit its training labels exactly
    x = rng.normal(size=(n, d))
    tasks = rng.integers(0, 2, size=(s, n))
    rep = probe_tasks(x, tasks, seed=3)
    summ = rep.summary()
    assert abs(summ["probe_acc_mean"] - 0.5) < 0.03  # SE ≈ 0.0057
    assert summ["probe_acc_std"] > 0.01
    assert summ["probe_acc_p05"] < summ["probe_acc_mean"]


def test_batched_solve_matches_sklearn_ridge_per_task():
    from sklearn.linear_model import Ridge

    rng = np.random.default_rng(2)
    n, d = 150, 6
    x = rng.normal(size=(n, d))
    tasks = np.stack([(x @ rng.normal(size=d) + rng.normal(size=n) > 0).astype(np.int64) for _ in range(5)])
    alpha = 0.1
    rep = probe_tasks(x, tasks, seed=4, alphas=(alpha,), agreement=False)
    assert rep.agreement is None
    tr, te = split_indices(n, 0.3, seed=4)
    xc = x[tr] - x[tr].mean(axis=0)
    lam = alpha * float(np.mean(np.linalg.svd(xc, compute_uv=False) ** 2))
    for i, t in enumerate(tasks):
        y = np.eye(2)[t[tr]]
        pred = Ridge(alpha=lam).fit(x[tr], y).predict(x[te]).argmax(axis=1)
        assert rep.accuracy[i] == pytest.approx(np.mean(pred == t[te]))


def test_probe_input_errors():
    x = np.random.default_rng(0).normal(size=(50, 4))
    with pytest.raises(MetricError, match="shape"):
        probe_tasks(x, np.zeros((3, 49), dtype=int))
    with pytest.raises(MetricError, match="integer"):
        probe_tasks(x, np.zeros((3, 50)))
    with pytest.raises(MetricError, match=r"\[0, 2\)"):
        probe_tasks(x, np.full((3, 50), 2), n_classes=2)


def test_tasks_spread_over_splits_each_use_their_own_held_out_items():
    """Issue 23 item 6: with ``splits=k`` task s is trained and tested on split s % k. Split 0 is the single split
    of ``splits=1`` (same seed), so those tasks score exactly as before; the other splits hold out other items."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(120, 10))
    tasks = (x[:, :1] + 0.8 * rng.normal(size=(120, 6)) > 0).T.astype(np.int64)  # (6, 120), noisy labels
    one = probe_tasks(x, tasks, seed=5, splits=1)
    three = probe_tasks(x, tasks, seed=5, splits=3)
    np.testing.assert_array_equal(three.accuracy[0::3], probe_tasks(x, tasks[0::3], seed=5).accuracy)
    np.testing.assert_array_equal(three.agreement[0::3], probe_tasks(x, tasks[0::3], seed=5).agreement)
    assert three.n_test == one.n_test == 36 and three.alpha == probe_tasks(x, tasks[0::3], seed=5).alpha
    # the other splits: each task scored on its own held-out items, so the same task on split 0 scores otherwise
    moved = probe_tasks(x, np.repeat(tasks[:1], 3, axis=0), seed=5, splits=3).accuracy
    assert moved[0] == probe_tasks(x, tasks[:1], seed=5).accuracy[0] and len(set(moved.round(6))) > 1
    again = probe_tasks(x, tasks, seed=5, splits=3)
    np.testing.assert_array_equal(again.accuracy, three.accuracy)  # seeded


def test_auto_splits_hold_out_about_two_thousand_items_in_all():
    from embedselect.metrics.probes import probe_splits

    assert [probe_splits(n, 0.3) for n in (20, 300, 1000, 4096, 20000)] == [8, 8, 7, 2, 1]
    assert probe_splits(300, 0.5) == 8 and probe_splits(10000, 0.5) == 1

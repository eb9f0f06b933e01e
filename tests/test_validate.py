"""Validation with a few labels (embedselect.validation.check)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from embedselect.errors import ConfigError, DataError
from embedselect.validation.check import (
    kendall,
    probe_accuracies,
    probe_accuracy,
    spearman,
    validate,
    validate_scores,
)


def _separable(n_per_class=40, q=3, d=16, seed=0):
    """Well separated classes: the 'good' embedder sees the class means, 'random' sees noise."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(q), n_per_class)
    means = rng.normal(size=(q, d)) * 4.0
    good = (means[y] + rng.normal(size=(len(y), d))).astype(np.float32)
    random = rng.normal(size=(len(y), d)).astype(np.float32)
    return {"good": good, "random": random}, y


def test_probe_accuracy_good_is_near_one_random_is_near_chance():
    emb, y = _separable()
    df = probe_accuracies(emb, y, cv=5, seed=0)
    for p in ("logistic", "knn"):
        assert df.loc["good", f"{p}_acc"] >= 0.97
        assert abs(df.loc["random", f"{p}_acc"] - 1 / 3) < 0.15
        assert 0 <= df.loc["good", f"{p}_acc_std"] < 0.1
    assert df.loc["good", "chance"] == pytest.approx(1 / 3)
    assert df.attrs["n_folds"] == 5 and df.attrs["n_classes"] == 3
    assert all(len(v) == 5 for v in df.attrs["fold_acc"]["good"].values())


def test_probe_accuracy_is_seeded():
    emb, y = _separable()
    a = probe_accuracies(emb, y, seed=3, probes=("knn",))
    b = probe_accuracies(emb, y, seed=3, probes=("knn",))
    assert a.equals(b)
    assert list(a.columns) == ["knn_acc", "knn_acc_std", "knn_acc_lo", "knn_acc_hi", "n_labeled", "chance"]


def test_unlabelled_items_are_ignored_and_small_classes_handled():
    emb, y = _separable(n_per_class=10)
    labels = [str(v) for v in y]
    labels[0] = None
    labels[1] = float("nan")
    labels[25] = "singleton"  # a class with one member: dropped
    labels[11] = labels[12] = labels[13] = None  # class "1" keeps 7 items -> 5 folds still fine
    df = probe_accuracies(emb, labels, cv=5)
    assert df.loc["good", "n_labeled"] == 30 - 2 - 3 - 1
    assert df.attrs["dropped_classes"] == ["singleton"]
    # a class with 3 members forces 3 folds
    labels3 = list(labels)
    for i in range(20, 27):
        labels3[i] = None
    df3 = probe_accuracies(emb, labels3, cv=5)
    assert df3.attrs["n_folds"] == 3


@pytest.mark.parametrize(
    "labels, kwargs, err",
    [
        (np.zeros(5), {}, DataError),  # wrong length
        (np.zeros(120), {}, DataError),  # one class
        ([None] * 120, {}, DataError),  # nothing labelled
        (np.repeat([0, 1, 2], 40), {"cv": 1}, ConfigError),
        (np.repeat([0, 1, 2], 40), {"probes": ("svm",)}, ConfigError),
    ],
)
def test_bad_input_raises_typed_errors(labels, kwargs, err):
    emb, _ = _separable()
    with pytest.raises(err):
        probe_accuracies(emb, labels, **kwargs)


def test_nonfinite_or_mismatched_embeddings_raise():
    emb, y = _separable()
    with pytest.raises(DataError, match="same number of rows"):
        probe_accuracies({"a": emb["good"], "b": emb["good"][:10]}, y)
    bad = emb["good"].copy()
    bad[3, 2] = np.nan
    with pytest.raises(DataError, match="NaN"):
        probe_accuracies({"a": bad}, y)


def test_correlations_match_scipy():
    rng = np.random.default_rng(1)
    x = rng.normal(size=9)
    y = x + rng.normal(size=9)
    y[2] = y[3]  # a tie
    assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y).statistic)
    assert kendall(x, y) == pytest.approx(stats.kendalltau(x, y).statistic)


def test_validate_scores_perfect_and_reversed_metrics():
    acc = {"a": 0.9, "b": 0.8, "c": 0.7, "d": 0.6, "e": 0.5}
    label_free = {
        "right": {"a": 5.0, "b": 4.0, "c": 3.0, "d": 2.0, "e": 1.0},
        "wrong": {"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0, "e": 5.0},
        "one_swap": {"a": 4.0, "b": 5.0, "c": 3.0, "d": 2.0, "e": 1.0},
    }
    rep = validate_scores(label_free, acc, n_boot=200, seed=0)
    by = {m.metric: m for m in rep.metrics}
    assert by["right"].spearman == pytest.approx(1.0) and by["right"].kendall == pytest.approx(1.0)
    assert by["right"].wrong_pairs == [] and by["right"].regret == 0.0
    assert by["wrong"].spearman == pytest.approx(-1.0)
    assert len(by["wrong"].wrong_pairs) == 10
    sw = by["one_swap"]
    assert [(w.ranked_higher, w.ranked_lower) for w in sw.wrong_pairs] == [("b", "a")]
    assert sw.top_pick == "b" and sw.regret == pytest.approx(0.1)
    lo, hi = sw.spearman_ci
    assert lo <= sw.spearman <= hi + 1e-12 and lo < hi  # few candidates: a real, wide interval
    assert any("only 5 candidates" in w for w in rep.warnings)
    df = rep.to_pandas()
    assert df.loc["wrong", "n_wrong_pairs"] == 10
    d = json.loads(json.dumps(rep.to_dict()))
    assert d["table"]["a"]["accuracy"] == 0.9


def test_validate_scores_is_seeded_and_skips_missing_candidates():
    acc = {"a": 0.9, "b": 0.7, "c": 0.8, "d": float("nan")}
    lf = {"m": {"a": 3.0, "b": 1.0, "c": 2.0, "d": 9.0, "zz": 1.0}}
    r1 = validate_scores(lf, acc, n_boot=100, seed=5)
    r2 = validate_scores(lf, acc, n_boot=100, seed=5)
    assert r1.metrics[0].n_candidates == 3
    assert r1.metrics[0].spearman_ci == r2.metrics[0].spearman_ci
    with pytest.raises(DataError):
        validate_scores({"m": {"a": 1.0}}, acc)
    with pytest.raises(ConfigError):
        validate_scores(lf, acc, level=1.5)


def test_validate_end_to_end_on_a_separable_set():
    emb, y = _separable()
    rng = np.random.default_rng(2)
    emb["noisy"] = (emb["good"] + rng.normal(size=emb["good"].shape) * 6.0).astype(np.float32)
    label_free = {"toy": {"good": 2.0, "noisy": 1.0, "random": 0.0}}
    rep = validate(emb, y, label_free, n_boot=100, seed=0)
    t = rep.table
    assert t.loc["good", "logistic_acc"] > t.loc["noisy", "logistic_acc"] > t.loc["random", "logistic_acc"]
    assert rep.accuracy_column == "logistic_acc"
    assert rep.metrics[0].spearman == pytest.approx(1.0)
    assert rep.metrics[0].wrong_pairs == []
    assert {"knn_acc", "toy", "chance"} <= set(t.columns)
    json.dumps(rep.to_dict())


def test_label_free_metrics_ignore_labels():
    """task_prior (default options) gives identical scores with or without labels in the context."""
    import torch

    from embedselect.metrics import MetricContext, get_metric

    torch.set_num_threads(1)
    emb, y = _separable()
    emb["noisy"] = emb["good"] + np.random.default_rng(0).normal(size=emb["good"].shape).astype(np.float32) * 5
    keys = {k: k for k in emb}
    fn = get_metric("task_prior")
    opts = {"n_tasks": 8}
    without = fn(MetricContext(embeddings=emb, run_keys=keys, options=opts, labels=None))
    with_y = fn(MetricContext(embeddings=emb, run_keys=keys, options=opts, labels=y))
    shuffled = fn(MetricContext(embeddings=emb, run_keys=keys, options=opts, labels=y[::-1].copy()))
    assert without.scores == with_y.scores == shuffled.scores
    assert without.columns == with_y.columns
    # ...while a label prior (explicit opt-in) does read them
    lab = fn(MetricContext(embeddings=emb, run_keys=keys, options={**opts, "prior": "labels"}, labels=y))
    assert lab.scores != without.scores


def test_tied_top_scores_follow_the_one_tie_rule_and_report_the_tie():
    acc = {"a": 0.6, "b": 0.9, "c": 0.5}
    rep = validate_scores({"m": {"b": 1.0, "a": 1.0, "c": 0.0}}, acc, n_boot=10)
    m = rep.metrics[0]
    # the first of the tied group by name, as in the ranking's table and Ranking.best
    assert m.top_pick == "a" and m.regret == pytest.approx(0.3)
    assert m.top_tied == ["a", "b"] and m.tied_regret == pytest.approx(0.3)
    assert m.wrong_pairs == []  # a tie in score is not a wrong order
    # near-equal sums (a weighted mean added in another order) are a tie too
    rep = validate_scores({"m": {"b": 0.1 + 0.2, "a": 0.3, "c": 0.0}}, acc, n_boot=10)
    assert rep.metrics[0].top_tied == ["a", "b"]


def _anisotropic(n_per_class=60, q=3, d_noise=20, seed=0):
    """Class information in a few small-variance dimensions next to large-variance noise dimensions (e.g. a CLS
    vector dominated by a few uninformative directions)."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(q), n_per_class)
    means = np.eye(q)[:, :q] * 3.0
    informative = (means[y] + rng.normal(size=(len(y), q))) * 0.01
    noise = rng.normal(size=(len(y), d_noise)) * 10.0
    return np.hstack([noise, informative]).astype(np.float32), y


def test_probe_standardises_each_dimension_and_tunes_c():
    """The old probe (centring + one global RMS scale + C=1) regularised small informative directions away
    and scored this anisotropic embedding near chance; the standard probe recovers it."""
    x, y = _anisotropic()
    acc = probe_accuracy(x, y, seed=0)
    assert acc > 0.85
    # a per-candidate call equals the per-candidate column of probe_accuracies (same folds)
    df = probe_accuracies({"aniso": x, "other": x[:, ::-1]}, y, seed=0, probes=("logistic",))
    assert df.loc["aniso", "logistic_acc"] == pytest.approx(acc)
    assert df.loc["aniso", "logistic_C"] in (0.01, 0.1, 1.0, 10.0, 100.0)


def test_probe_is_not_fooled_by_per_dimension_scale():
    """The same for every candidate: rescaling the dimensions of an embedding barely moves its ground truth."""
    x, y = _anisotropic(seed=1)
    scale = np.random.default_rng(0).uniform(0.01, 100.0, size=x.shape[1])
    a = probe_accuracies({"x": x, "scaled": x * scale}, y, seed=0, probes=("logistic",))
    assert a.loc["x", "logistic_acc"] > 0.85
    assert a.loc["x", "logistic_acc"] == pytest.approx(a.loc["scaled", "logistic_acc"], abs=0.03)


def test_probe_survives_a_rank_deficient_svd():
    """An SVD with as many components as items: standardising its coordinates whitens the data (every item
    equidistant from every other). The inner CV may decline standardisation, so the probe still sees the classes."""
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(4), 30)
    raw = np.eye(4)[y] @ rng.normal(size=(4, 300)) * 2.0 + rng.normal(size=(len(y), 300))
    u, s, _ = np.linalg.svd(raw - raw.mean(0), full_matrices=False)
    svd = (u * s)[:, : len(y) - 1]  # n - 1 components, the tail near-empty
    df = probe_accuracies({"svd": svd}, y, seed=0)
    assert df.loc["svd", "logistic_acc"] > 0.9
    assert df.loc["svd", "logistic_standardised"] < 1.0


def test_report_states_which_probe_produced_the_accuracies():
    emb, y = _separable()
    rep = validate(emb, y, {"toy": {"good": 1.0, "random": 0.0}}, n_boot=10)
    d = rep.to_dict()
    assert "StandardScaler" in d["probe_settings"]["accuracy_probe"]
    assert "GridSearchCV" in d["probe_settings"]["accuracy_probe"]
    assert set(d["probe_settings"]["probe_descriptions"]) == {"logistic", "knn"}


def test_each_accuracy_has_a_seeded_bootstrap_interval():
    emb, y = _separable(n_per_class=20)
    df = probe_accuracies(emb, y, cv=5, seed=1, level=0.9, n_boot=500)
    for p in ("logistic", "knn"):
        for c in emb:
            lo, acc, hi = df.loc[c, [f"{p}_acc_lo", f"{p}_acc", f"{p}_acc_hi"]]
            assert 0 <= lo <= acc <= hi <= 1
        lo, hi = df.loc["random", [f"{p}_acc_lo", f"{p}_acc_hi"]]
        assert 0.05 < hi - lo < 0.35  # 60 items: about +-0.1 around a chance-level accuracy
    assert df.equals(probe_accuracies(emb, y, cv=5, seed=1, level=0.9, n_boot=500))
    wide = probe_accuracies(emb, y, cv=5, seed=1, level=0.99, n_boot=500)
    assert wide.loc["random", "knn_acc_hi"] - wide.loc["random", "knn_acc_lo"] > hi - lo
    with pytest.raises(ConfigError):
        probe_accuracies(emb, y, level=1.0)


def test_an_undecided_ranking_checked_against_labels_says_what_the_labels_show_not_to_label():
    """With labels, an undecided ranking's ``next_step`` names the probe's best on them (and who is within its
    interval), instead of the label-free advice to go and label items (:data:`~embedselect.ranking.combine.SETTLE`);
    ``decided`` and ``leaders`` are not changed by it, and a decided ranking keeps an empty ``next_step``."""
    from embedselect.pipeline.conclude import _labels_settle
    from embedselect.ranking.combine import SETTLE, Decision

    emb, y = _separable()
    emb["good-too"] = (emb["good"] + np.random.default_rng(3).normal(size=emb["good"].shape) * 0.1).astype(np.float32)
    rep = validate(emb, y, {"toy": {"random": 2.0, "good": 1.0, "good-too": 0.0}}, n_boot=100, seed=0).to_dict()
    undecided = Decision(False, ["random", "good"], ["two model families"], ["small-pool"], SETTLE)
    out = _labels_settle(undecided, rep)
    acc = rep["table"]
    best = max(acc, key=lambda c: acc[c]["logistic_acc"])
    assert best in ("good", "good-too") and out.settle.startswith(f"your labels' held-out probes put {best} first")
    other = "good-too" if best == "good" else "good"
    assert f"{other} is within its interval" in out.settle  # the two good embedders cannot be told apart
    assert "random" not in out.settle.split("first")[1]  # chance level, far below
    assert (out.decided, out.leaders, out.reasons) == (False, ["random", "good"], ["two model families"])
    decided = Decision(True, ["good"])
    assert _labels_settle(decided, rep) is decided and _labels_settle(undecided, None) is undecided


def test_a_class_with_one_item_in_a_training_fold_still_gets_a_logistic_probe():
    """Six labelled items, four of one class and two of the other: two folds, so each training fold holds a single
    item of the small class. The inner CV that chooses C cannot hold one of it out and still train on it, and a split
    of one class left sklearn's solver with one class (an unexpected ValueError, exit 1, from `validate`). The probe is
    then fitted at the grid's middle setting; the accuracies come out like any other."""
    emb, _ = _separable(n_per_class=10)
    labels: list = [None] * 30
    for i in (0, 1, 2, 3):
        labels[i] = "food"
    for i in (10, 11):
        labels[i] = "tech"
    df = probe_accuracies(emb, labels, cv=5, seed=0)
    assert df.attrs["n_folds"] == 2 and (df["n_labeled"] == 6).all()
    assert ((df["logistic_acc"] >= 0) & (df["logistic_acc"] <= 1)).all()
    assert (df["logistic_C"] == 1.0).all() and (df["logistic_standardised"] == 1.0).all()
    # two items of each class: every training fold holds one item of every class
    labels[2] = labels[3] = None
    df = probe_accuracies(emb, labels, cv=5, seed=0)
    assert df.attrs["n_folds"] == 2 and (df["logistic_C"] == 1.0).all()

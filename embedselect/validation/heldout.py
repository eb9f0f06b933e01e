"""Held-out probe accuracy on the user's labels: the ground truth of the trust check.

The label-free ranking is checked against what a user would measure with labels: the held-out accuracy
of a *standard, tuned* probe trained on each candidate's embeddings. The probe is the same for every
candidate and says what it is (:data:`PROBE_DESCRIPTIONS`, copied into every report):

``"logistic"`` (primary)
    A ``GridSearchCV`` over the ``Pipeline`` [scaler, ``LogisticRegression``] (multinomial, lbfgs): the inverse
    regularisation ``C`` (:data:`LOGISTIC_CS`) and the scaler (``StandardScaler``, i.e. per-dimension
    standardisation, or none) are chosen by an inner stratified cross-validation on the training fold only.
    Standardisation and a tuned ``C`` keep an anisotropic embedding (a few large directions that carry no
    class information, e.g. CLS pooling) from being underrated by a fixed regulariser; letting the inner CV
    also decline standardisation keeps a rank-deficient embedding (an SVD with as many components as items,
    whose standardised coordinates are the whitened data: every item equidistant from every other) from
    being destroyed by it.
``"knn"`` (secondary)
    k-nearest neighbours (k = :data:`KNN_NEIGHBORS`, Euclidean, FAISS exact search:
    :class:`~embedselect.metrics.neighbours.FaissKNeighborsClassifier`, votes as scikit-learn's) on the
    embedding as it is.

Outer folds are ``StratifiedKFold(shuffle=True, random_state=seed)`` and shared by every candidate, so
differences between candidates are not differences between splits.

Public functions: :func:`probe_accuracy` (one embedding matrix -> one number; what a benchmark imports),
:func:`probe_accuracies` (every candidate, every probe, with per-fold detail), :func:`make_probe`.
"""

from __future__ import annotations

import math
import warnings as _warnings
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from embedselect._util.arrays import check_embeddings, is_missing
from embedselect.errors import ConfigError, DataError, TooFewItemsError
from embedselect.ranking.bootstrap import check_bootstrap, percentile_interval

__all__ = [
    "PROBES",
    "PROBE_DESCRIPTIONS",
    "LOGISTIC_CS",
    "KNN_NEIGHBORS",
    "INNER_FOLDS",
    "clean_labels",
    "make_probe",
    "probe_accuracy",
    "probe_accuracies",
    "accuracy_interval",
]

PROBES = ("logistic", "knn")
"""Probe names, primary first."""

LOGISTIC_CS = (0.01, 0.1, 1.0, 10.0, 100.0)
"""Grid of inverse regularisation strengths searched by the logistic probe's inner cross-validation."""

INNER_FOLDS = 3
"""Inner folds used to choose ``C`` (reduced to the smallest class size of the training fold, min 2; none where a
class has a single item in the training fold: :func:`make_probe`)."""

FIXED_C = 1.0
"""The logistic probe's C where its inner CV cannot run (a class with one item in the training fold): the middle of
:data:`LOGISTIC_CS`, with per-dimension standardisation."""

KNN_NEIGHBORS = 5
"""k of the k-NN probe (reduced when a training fold has fewer items)."""

PROBE_DESCRIPTIONS = {
    "logistic": (
        "GridSearchCV(Pipeline[StandardScaler or none, LogisticRegression (multinomial, lbfgs)]): C in "
        f"{list(LOGISTIC_CS)} and the scaler chosen by {INNER_FOLDS}-fold inner stratified CV on the training fold"
    ),
    "knn": f"{KNN_NEIGHBORS}-nearest-neighbours (Euclidean, FAISS exact search, on the unscaled embedding)",
}
"""What each probe is, in words; reports copy it so a reader knows which probe produced the accuracies."""


# ------------------------------------------------------------------------------------------------
# labels
# ------------------------------------------------------------------------------------------------
def clean_labels(labels: Any, n: int, *, cv: int) -> tuple[np.ndarray, np.ndarray, int, list[Any]]:
    """Select the usable labelled items.

    Args:
        labels: length-``n`` sequence; ``None`` / ``NaN`` / ``pd.NA`` mark unlabelled items.
        n: number of reference items (rows of every embedding matrix).
        cv: requested number of folds.

    Returns:
        ``(rows, y, n_folds, dropped)``: int64 row indices of the kept items, their labels as an
        array of class codes (int64, 0..q-1), the number of folds actually used, and the class
        values dropped because they have a single member (a held-out split cannot contain them on
        both sides).

    Rules: classes with fewer than 2 members are dropped; the number of folds is reduced to the
    smallest remaining class size (never below 2), so that every fold holds every class.

    Raises:
        DataError: wrong length; fewer than 2 classes with at least 2 members.
        ConfigError: ``cv < 2``.
    """
    if isinstance(cv, bool) or not isinstance(cv, (int, np.integer)) or cv < 2:
        raise ConfigError(f"cv must be an integer >= 2 (number of folds), got {cv!r}")
    values = list(labels.tolist() if isinstance(labels, (np.ndarray, pd.Series)) else labels)
    if len(values) != n:
        raise DataError(
            f"labels has {len(values)} entries but the embeddings have {n} rows; give one label per "
            "reference item (None or NaN for unlabelled items)"
        )
    keep = [i for i, v in enumerate(values) if not is_missing(v)]
    kept = [values[i] for i in keep]
    counts = pd.Series(kept, dtype=object).value_counts(sort=False)
    dropped = [c for c, k in counts.items() if k < 2]
    good = counts[counts >= 2]
    if len(good) < 2:
        raise DataError(
            f"validation needs at least 2 classes with at least 2 labelled items each; got {len(good)} "
            f"such class(es) among {len(keep)} labelled items. Label more items."
        )
    dropped_set = set(dropped)
    rows = np.array([i for i, v in zip(keep, kept) if v not in dropped_set], dtype=np.int64)
    classes = {c: k for k, c in enumerate(sorted(good.index, key=lambda c: (str(type(c)), str(c))))}
    y = np.array([classes[values[i]] for i in rows], dtype=np.int64)
    n_folds = int(min(cv, int(good.min())))
    return rows, y, n_folds, dropped


# ------------------------------------------------------------------------------------------------
# probes
# ------------------------------------------------------------------------------------------------
def make_probe(name: str, y_train: np.ndarray, *, seed: int):
    """The sklearn ``Pipeline`` of probe ``name`` for a training fold with labels ``y_train`` (int codes).

    The inner folds and k are reduced to what the training fold allows; everything else is fixed, so
    every candidate gets the same probe. Where a class has a single item in the training fold (a class of two
    labelled items, two outer folds), no inner split can hold it out and still train on it, and a split of one class
    stops the solver: the logistic probe is then fitted at :data:`FIXED_C`, standardised (a one-point grid, "searched" on
    the training fold itself), so that its chosen C and scaler are recorded as the searched ones are.
    """
    from sklearn.model_selection import StratifiedKFold
    from sklearn.preprocessing import StandardScaler

    from embedselect.metrics.neighbours import FaissKNeighborsClassifier

    if name == "logistic":
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import GridSearchCV
        from sklearn.pipeline import Pipeline

        counts = np.bincount(y_train)
        smallest = int(counts[counts > 0].min())
        pipe = Pipeline([("scale", StandardScaler()), ("clf", LogisticRegression(max_iter=1000, random_state=seed))])
        if smallest < 2:
            whole = np.arange(len(y_train))
            fixed = {"scale": [StandardScaler()], "clf__C": [FIXED_C]}
            return GridSearchCV(pipe, fixed, cv=[(whole, whole)], scoring="accuracy", refit=True, error_score="raise")
        inner = StratifiedKFold(n_splits=max(2, min(INNER_FOLDS, smallest)), shuffle=True, random_state=seed)
        grid = {"scale": [StandardScaler(), "passthrough"], "clf__C": list(LOGISTIC_CS)}
        return GridSearchCV(pipe, grid, cv=inner, scoring="accuracy", refit=True, error_score="raise")
    elif name == "knn":
        # Euclidean neighbours of the embedding as it is: centring or one global scale would not change them,
        # and per-dimension standardisation would whiten a rank-deficient embedding into equidistant points
        return FaissKNeighborsClassifier(n_neighbors=max(1, min(KNN_NEIGHBORS, len(y_train))))
    raise ConfigError(f"unknown probe {name!r}; choose from {', '.join(PROBES)}")


def _fold_accuracies(x: np.ndarray, y: np.ndarray, splits, probe: str, seed: int):
    """Per outer fold: held-out accuracy, the C chosen by the inner CV (NaN for k-NN), and whether the inner
    CV chose per-dimension standardisation (False for k-NN, which uses the embedding as it is); and the number of
    held-out items predicted right over all folds."""
    from sklearn.exceptions import ConvergenceWarning
    from threadpoolctl import threadpool_limits

    accs: list[float] = []
    cs: list[float] = []
    scaled: list[bool] = []
    n_right = 0
    for train, test in splits:
        model = make_probe(probe, y[train], seed=seed)
        # one BLAS thread: the probes' matrices are small and many, and threads on them cost far more than they
        # save (measured: 0.3 s vs 0.01 s for one 120x16 fit on a busy 2-core machine)
        with _warnings.catch_warnings(), threadpool_limits(limits=1):
            # a probe that did not fully converge in max_iter is still a fair, equal-budget probe
            _warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(x[train], y[train])
        right = model.predict(x[test]) == y[test]
        n_right += int(right.sum())
        accs.append(float(np.mean(right)))
        chosen = getattr(model, "best_params_", None)
        cs.append(float(chosen["clf__C"]) if chosen else math.nan)
        scaled.append(bool(chosen and chosen["scale"] != "passthrough"))
    return accs, cs, scaled, n_right


def _check_matrix(name: str, emb: Any, n: int | None = None) -> np.ndarray:
    return check_embeddings(emb, what=f"embeddings of {name!r}", n=n, dtype=np.float64, error=DataError,
                            hint="; re-embed the data")


def accuracy_interval(n_correct: int, n: int, *, level: float = 0.9, n_boot: int = 1000, seed: int = 0):
    """Percentile bootstrap interval of a held-out accuracy: ``n_correct`` of ``n`` items right.

    Resampling ``n`` items with replacement from ``n`` right/wrong outcomes draws the number right from
    Binomial(n, n_correct / n), so the ``n_boot`` replicates are drawn from that directly (seeded by ``seed``).

    Returns:
        ``(lo, hi)``, fractions in [0, 1]; ``(nan, nan)`` when ``n`` or ``n_boot`` is 0.
    """
    if n <= 0:
        return (math.nan, math.nan)
    draws = np.random.default_rng(seed).binomial(n, n_correct / n, size=n_boot) / n
    return percentile_interval(draws.astype(np.float64), level)


def probe_accuracy(
    x: np.ndarray,
    y: Sequence[Any] | np.ndarray,
    *,
    seed: int = 0,
    folds: int = 5,
    probe: str = "logistic",
) -> float:
    """Mean held-out accuracy (fraction in [0, 1]) of the standard probe on one embedding matrix.

    Args:
        x: array of shape (n, d), any float dtype; row i is item i.
        y: length-n labels (``None``/``NaN`` = unlabelled; see :func:`clean_labels`).
        seed: outer folds, inner folds and solver randomness.
        folds: requested outer folds (reduced to the smallest class size).
        probe: one of :data:`PROBES` (default the primary, tuned logistic probe).

    With the same ``y``, ``seed`` and ``folds`` every candidate is evaluated on the same folds, so
    calling this once per candidate gives the same numbers as :func:`probe_accuracies`.
    """
    df = probe_accuracies({"x": x}, y, cv=folds, seed=seed, probes=(probe,))
    return float(df.loc["x", f"{probe}_acc"])


def probe_accuracies(
    embeddings: Mapping[str, np.ndarray],
    labels: Sequence[Any] | np.ndarray,
    *,
    cv: int = 5,
    seed: int = 0,
    probes: Iterable[str] = PROBES,
    level: float = 0.9,
    n_boot: int = 1000,
) -> pd.DataFrame:
    """Held-out accuracy of the standard probes on each candidate's embeddings.

    Args:
        embeddings: candidate -> array of shape (n, d_candidate) (any float dtype); row i is item i.
        labels: length-n labels; ``None``/``NaN`` items are ignored. Classes with a single labelled
            item are dropped and the number of folds is reduced to the smallest remaining class size
            (see :func:`clean_labels`); both are recorded in ``df.attrs``.
        cv: requested number of outer folds (>= 2).
        seed: fold shuffling and probe randomness.
        probes: subset of :data:`PROBES`.
        level: coverage of the accuracy intervals, in (0, 1).
        n_boot: bootstrap replicates of the accuracy intervals (0: no interval, NaN).

    Returns:
        DataFrame indexed by candidate with, for each probe ``p``, columns ``{p}_acc`` (mean held-out
        accuracy over folds, a fraction in [0, 1]), ``{p}_acc_std`` (standard deviation over
        folds), ``{p}_acc_lo`` / ``{p}_acc_hi`` (a percentile bootstrap interval at ``level`` of the held-out
        accuracy: the labelled items are resampled with replacement, each scored by the probe of the fold that
        held it out; see :func:`accuracy_interval`), ``logistic_C`` (median C chosen by the inner CV) and
        ``logistic_standardised`` (fraction of outer folds where the inner CV chose per-dimension
        standardisation), when the logistic probe ran, plus
        ``n_labeled`` and ``chance`` (accuracy of always predicting the most frequent class).
        ``df.attrs`` holds ``n_folds``, ``dropped_classes``, ``n_classes``, ``probes``,
        ``probe_descriptions``, ``fold_acc`` (candidate -> probe -> per-fold accuracies) and ``seed``.

    Raises:
        DataError: no candidates, mismatched row counts, non-finite embeddings, too few labels.
        ConfigError: unknown probe, bad ``cv``.
    """
    from sklearn.model_selection import StratifiedKFold

    probes = tuple(probes)
    check_bootstrap(n_boot, level, min_boot=0)
    if not probes:
        raise ConfigError(f"probes is empty; choose from {', '.join(PROBES)}")
    bad = [p for p in probes if p not in PROBES]
    if bad:
        raise ConfigError(f"unknown probe(s) {bad}; choose from {', '.join(PROBES)}")
    if not embeddings:
        raise DataError("no candidate embeddings given to probe_accuracies")
    sizes = {k: np.shape(v)[0] if np.ndim(v) == 2 else None for k, v in embeddings.items()}
    if any(s is None for s in sizes.values()) or len(set(sizes.values())) != 1:
        raise DataError(
            f"every embedding must be a 2-D array with the same number of rows; got shapes "
            f"{ {k: np.shape(v) for k, v in embeddings.items()} }"
        )
    n = int(np.shape(next(iter(embeddings.values())))[0])
    rows, y, n_folds, dropped = clean_labels(labels, n, cv=cv)
    if len(rows) < 2 * n_folds:
        raise TooFewItemsError(
            f"only {len(rows)} usable labelled items for {n_folds}-fold validation; label more items",
            needed=2 * n_folds,
            got=len(rows),
        )
    splits = list(StratifiedKFold(n_splits=n_folds, shuffle=True, random_state=seed).split(rows, y))
    chance = float(np.bincount(y).max() / len(y))

    records: dict[str, dict[str, float]] = {}
    fold_acc: dict[str, dict[str, list[float]]] = {}
    for cand, emb in embeddings.items():
        x = _check_matrix(cand, emb)[rows]
        rec: dict[str, float] = {}
        fold_acc[cand] = {}
        for p in probes:
            accs, cs, scaled, n_right = _fold_accuracies(x, y, splits, p, seed)
            fold_acc[cand][p] = accs
            rec[f"{p}_acc"] = float(np.mean(accs))
            rec[f"{p}_acc_std"] = float(np.std(accs))
            rec[f"{p}_acc_lo"], rec[f"{p}_acc_hi"] = accuracy_interval(
                n_right, len(rows), level=level, n_boot=n_boot, seed=seed
            )
            if p == "logistic":
                rec["logistic_C"] = float(np.median(cs))
                rec["logistic_standardised"] = float(np.mean(scaled))
        rec["n_labeled"] = float(len(rows))
        rec["chance"] = chance
        records[cand] = rec
    df = pd.DataFrame.from_dict(records, orient="index")
    df.index.name = "candidate"
    df["n_labeled"] = df["n_labeled"].astype(np.int64)
    df.attrs.update(
        n_folds=n_folds,
        dropped_classes=[str(c) for c in dropped],
        n_classes=int(y.max() + 1),
        probes=list(probes),
        probe_descriptions={p: PROBE_DESCRIPTIONS[p] for p in probes},
        fold_acc=fold_acc,
        seed=seed,
    )
    return df

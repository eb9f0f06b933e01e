"""Check a label-free ranking against a few labels the user has.

Two steps, both pure functions over embeddings:

1. :func:`probe_accuracy` trains held-out probes (logistic regression and k-NN, stratified K-fold
   cross-validation, features centred and isotropically scaled inside each fold) on each candidate's embeddings of the
   labelled items and reports the actual accuracy.
2. :func:`validate_scores` compares each label-free metric's scores with those accuracies: Spearman
   and Kendall rank correlations with bootstrap confidence intervals (resampling candidates), the
   pairs of candidates the metric put in the wrong order, and whether its top pick was the best.

:func:`validate` runs both. Labels are used only here; the label-free metrics never see them.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from embedselect.errors import ConfigError, DataError, TooFewItemsError
from embedselect.uncertainty import percentile_interval

__all__ = [
    "PROBES",
    "probe_accuracy",
    "validate_scores",
    "validate",
    "ValidationReport",
    "MetricValidation",
    "WrongPair",
]

PROBES = ("logistic", "knn")
"""Probe names accepted by :func:`probe_accuracy`."""

KNN_NEIGHBORS = 5
"""k of the k-NN probe (reduced when a training fold has fewer items)."""

SMALL_POOL = 10
"""With fewer candidates than this, rank correlations are reported with a warning: their bootstrap
intervals are wide and a single swapped pair moves them a lot."""


# ------------------------------------------------------------------------------------------------
# labels
# ------------------------------------------------------------------------------------------------
def _is_missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, (float, np.floating)) and math.isnan(value):
        return True
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


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
    keep = [i for i, v in enumerate(values) if not _is_missing(v)]
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
class IsotropicScaler:
    """Centre the features and divide by the root-mean-square row norm, both fitted on the training fold.

    One scale for all dimensions keeps the embedding's own geometry (which directions carry variance is
    part of what is being evaluated). Per-dimension standardisation would blow up near-empty directions
    (e.g. the tail of an SVD) to the size of the informative ones and penalise such embedders for it.
    """

    def fit(self, x: np.ndarray, y: Any = None) -> "IsotropicScaler":
        self.mean_ = x.mean(axis=0)
        rms = float(np.sqrt(((x - self.mean_) ** 2).sum(axis=1).mean()))
        self.scale_ = rms if rms > 0 else 1.0
        return self

    def transform(self, x: np.ndarray) -> np.ndarray:
        return (x - self.mean_) / self.scale_

    def fit_transform(self, x: np.ndarray, y: Any = None) -> np.ndarray:
        return self.fit(x).transform(x)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {}

    def set_params(self, **params: Any) -> "IsotropicScaler":
        return self


def _make_probe(name: str, n_train: int, seed: int):
    from sklearn.linear_model import LogisticRegression
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline

    if name == "logistic":
        clf = LogisticRegression(C=1.0, max_iter=2000, random_state=seed)
    elif name == "knn":
        clf = KNeighborsClassifier(n_neighbors=max(1, min(KNN_NEIGHBORS, n_train)))
    else:  # validated by the caller
        raise ConfigError(f"unknown probe {name!r}; choose from {', '.join(PROBES)}")
    return make_pipeline(IsotropicScaler(), clf)


def probe_accuracy(
    embeddings: Mapping[str, np.ndarray],
    labels: Sequence[Any] | np.ndarray,
    *,
    cv: int = 5,
    seed: int = 0,
    probes: Iterable[str] = PROBES,
) -> pd.DataFrame:
    """Held-out accuracy of simple probes trained on each candidate's embeddings.

    Every candidate is evaluated on the *same* stratified folds (``StratifiedKFold(shuffle=True,
    random_state=seed)``); features are centred and scaled to unit RMS row norm inside each fold
    (:class:`IsotropicScaler`, fitted on the training fold), so no statistic of the held-out items leaks
    into training and every embedder is regularised on the same scale.

    Probes: ``"logistic"`` — multinomial logistic regression (lbfgs, C=1); ``"knn"`` — k-nearest
    neighbours (k=5, Euclidean on the scaled features).

    Args:
        embeddings: candidate -> array of shape (n, d_candidate) (any float dtype); row i is item i.
        labels: length-n labels; ``None``/``NaN`` items are ignored. Classes with a single labelled
            item are dropped and the number of folds is reduced to the smallest remaining class size
            (see :func:`clean_labels`); both are recorded in ``df.attrs``.
        cv: requested number of folds (>= 2).
        seed: fold shuffling and probe randomness.
        probes: subset of :data:`PROBES`.

    Returns:
        DataFrame indexed by candidate with, for each probe ``p``, columns ``{p}_acc`` (mean held-out
        accuracy over folds, a fraction in [0, 1]) and ``{p}_acc_std`` (standard deviation over
        folds), plus ``n_labeled`` and ``chance`` (accuracy of always predicting the most frequent
        class). ``df.attrs`` holds ``n_folds``, ``dropped_classes``, ``n_classes``, ``probes``,
        ``fold_acc`` (candidate -> probe -> list of per-fold accuracies) and ``seed``.

    Raises:
        DataError: no candidates, mismatched row counts, non-finite embeddings, too few labels.
        ConfigError: unknown probe, bad ``cv``.
    """
    from sklearn.model_selection import StratifiedKFold

    probes = tuple(probes)
    if not probes:
        raise ConfigError(f"probes is empty; choose from {', '.join(PROBES)}")
    bad = [p for p in probes if p not in PROBES]
    if bad:
        raise ConfigError(f"unknown probe(s) {bad}; choose from {', '.join(PROBES)}")
    if not embeddings:
        raise DataError("no candidate embeddings given to probe_accuracy")
    sizes = {k: np.shape(v)[0] if np.ndim(v) == 2 else None for k, v in embeddings.items()}
    if any(s is None for s in sizes.values()) or len(set(sizes.values())) != 1:
        raise DataError(
            f"every embedding must be a 2-D array with the same number of rows; got shapes "
            f"{ {k: np.shape(v) for k, v in embeddings.items()} }"
        )
    n = next(iter(sizes.values()))
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
        x = np.asarray(emb, dtype=np.float64)[rows]
        if not np.isfinite(x).all():
            raise DataError(f"embeddings of {cand!r} contain NaN or infinite values; re-embed the data")
        rec: dict[str, float] = {}
        fold_acc[cand] = {}
        for p in probes:
            accs = []
            for train, test in splits:
                model = _make_probe(p, len(train), seed)
                model.fit(x[train], y[train])
                accs.append(float(np.mean(model.predict(x[test]) == y[test])))
            fold_acc[cand][p] = accs
            rec[f"{p}_acc"] = float(np.mean(accs))
            rec[f"{p}_acc_std"] = float(np.std(accs))
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
        fold_acc=fold_acc,
        seed=seed,
    )
    return df


# ------------------------------------------------------------------------------------------------
# rank correlations
# ------------------------------------------------------------------------------------------------
def _rankdata(a: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata

    return rankdata(a, method="average", axis=-1)


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman rank correlation (ties get average ranks); NaN when either side is constant."""
    rx, ry = _rankdata(np.asarray(x, np.float64)), _rankdata(np.asarray(y, np.float64))
    rx, ry = rx - rx.mean(), ry - ry.mean()
    den = math.sqrt(float(rx @ rx) * float(ry @ ry))
    return float(rx @ ry / den) if den > 0 else float("nan")


def kendall(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's tau-b (tie-corrected); NaN when either side is constant."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    sx = np.sign(x[:, None] - x[None, :])
    sy = np.sign(y[:, None] - y[None, :])
    iu = np.triu_indices(len(x), 1)
    sx, sy = sx[iu], sy[iu]
    den = math.sqrt(float(np.sum(sx * sx)) * float(np.sum(sy * sy)))
    return float(np.sum(sx * sy) / den) if den > 0 else float("nan")


@dataclass(frozen=True)
class WrongPair:
    """Two candidates the metric ordered opposite to their actual accuracy.

    ``ranked_higher`` got the higher label-free score but the lower accuracy.
    """

    ranked_higher: str
    ranked_lower: str
    score_diff: float  # score(ranked_higher) - score(ranked_lower) > 0, in the metric's units
    accuracy_diff: float  # accuracy(ranked_lower) - accuracy(ranked_higher) > 0, fraction


@dataclass
class MetricValidation:
    """How well one label-free metric predicted the actual accuracies.

    Attributes:
        metric: metric name.
        n_candidates: candidates with both a finite score and an accuracy.
        spearman, kendall: rank correlations (NaN if undefined, e.g. fewer than 2 candidates).
        spearman_ci, kendall_ci: percentile bootstrap intervals at ``level`` (resampling candidates
            with replacement; NaN when fewer than 3 candidates).
        top_pick: candidate with the highest score (if several tie, the one with the lowest accuracy:
            a user following the metric could have picked any of them); ``top_pick_accuracy`` its accuracy.
        best: candidate with the highest accuracy; ``regret`` = best accuracy − top pick's accuracy.
        wrong_pairs: every pair ordered opposite to the accuracies, largest accuracy gap first.
    """

    metric: str
    n_candidates: int
    spearman: float
    spearman_ci: tuple[float, float]
    kendall: float
    kendall_ci: tuple[float, float]
    top_pick: str
    top_pick_accuracy: float
    best: str
    best_accuracy: float
    regret: float
    wrong_pairs: list[WrongPair] = field(default_factory=list)


@dataclass
class ValidationReport:
    """Result of :func:`validate_scores` (and :func:`validate`).

    Attributes:
        metrics: one :class:`MetricValidation` per label-free metric.
        table: rows = candidates; columns = each metric's score, ``accuracy`` (the one used for the
            correlations) and, when produced by :func:`validate`, every probe column.
        accuracy_column: which accuracy the correlations use (e.g. ``"logistic_acc"``).
        level, n_boot, seed: bootstrap settings.
        warnings: plain-language caveats (small pool, ties, dropped classes...).
    """

    metrics: list[MetricValidation]
    table: pd.DataFrame
    accuracy_column: str = "accuracy"
    level: float = 0.9
    n_boot: int = 1000
    seed: int = 0
    warnings: list[str] = field(default_factory=list)
    probe_settings: dict[str, Any] = field(default_factory=dict)

    def to_pandas(self) -> pd.DataFrame:
        """One row per metric: correlations, their intervals, top pick, regret, number of wrong pairs."""
        rows = []
        for m in self.metrics:
            rows.append(
                {
                    "metric": m.metric,
                    "n_candidates": m.n_candidates,
                    "spearman": m.spearman,
                    "spearman_lo": m.spearman_ci[0],
                    "spearman_hi": m.spearman_ci[1],
                    "kendall": m.kendall,
                    "kendall_lo": m.kendall_ci[0],
                    "kendall_hi": m.kendall_ci[1],
                    "top_pick": m.top_pick,
                    "best": m.best,
                    "regret": m.regret,
                    "n_wrong_pairs": len(m.wrong_pairs),
                }
            )
        return pd.DataFrame(rows).set_index("metric")

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form (NaN becomes ``None``)."""

        def clean(v: Any) -> Any:
            if isinstance(v, dict):
                return {str(k): clean(x) for k, x in v.items()}
            if isinstance(v, (list, tuple)):
                return [clean(x) for x in v]
            if isinstance(v, (np.floating, float)):
                return None if not math.isfinite(float(v)) else float(v)
            if isinstance(v, np.integer):
                return int(v)
            return v

        table = {
            str(c): {str(k): v for k, v in row.items()} for c, row in self.table.to_dict(orient="index").items()
        }
        return clean(
            {
                "accuracy_column": self.accuracy_column,
                "level": self.level,
                "n_boot": self.n_boot,
                "seed": self.seed,
                "warnings": list(self.warnings),
                "probe_settings": self.probe_settings,
                "metrics": [asdict(m) for m in self.metrics],
                "table": table,
            }
        )


def validate_scores(
    label_free: Mapping[str, Mapping[str, float]],
    accuracy: Mapping[str, float],
    *,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.9,
) -> ValidationReport:
    """Compare label-free scores with actual accuracies.

    Args:
        label_free: metric name -> {candidate: score} (higher = predicted better).
        accuracy: candidate -> actual held-out accuracy (fraction; higher = better).
        n_boot: bootstrap replicates for the correlation intervals (resampling candidates with
            replacement; replicates where a correlation is undefined are skipped).
        seed: bootstrap seed.
        level: coverage of the percentile intervals, in (0, 1).

    Returns:
        A :class:`ValidationReport`. Candidates missing from a metric, or with a NaN score or
        accuracy, are left out of that metric's statistics. With fewer than :data:`SMALL_POOL`
        candidates a warning says that the intervals are wide: the correlation of 4 numbers can be
        high by chance.

    Raises:
        DataError: no metric, or a metric shares fewer than 2 candidates with ``accuracy``.
        ConfigError: bad ``n_boot`` / ``level``.
    """
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 0:
        raise ConfigError(f"n_boot must be a non-negative integer, got {n_boot!r}")
    if not (0.0 < float(level) < 1.0):
        raise ConfigError(f"level must be in (0, 1), e.g. 0.9; got {level!r}")
    if not label_free:
        raise DataError("no label-free scores to validate; pass {metric: {candidate: score}}")
    acc = {str(k): float(v) for k, v in accuracy.items() if v is not None and math.isfinite(float(v))}
    rng = np.random.default_rng(seed)
    results: list[MetricValidation] = []
    warnings: list[str] = []
    columns: dict[str, dict[str, float]] = {}
    for metric, scores in label_free.items():
        sc = {str(k): float(v) for k, v in scores.items() if v is not None and math.isfinite(float(v))}
        cands = sorted(set(sc) & set(acc))
        columns[metric] = {str(k): float(v) for k, v in scores.items()}
        if len(cands) < 2:
            raise DataError(
                f"metric {metric!r} shares {len(cands)} candidate(s) with the accuracies; need at least 2 "
                "candidates with both a finite score and an accuracy"
            )
        s = np.array([sc[c] for c in cands])
        a = np.array([acc[c] for c in cands])
        k = len(cands)
        rho, tau = spearman(s, a), kendall(s, a)
        boot_rho = np.full(n_boot, np.nan)
        boot_tau = np.full(n_boot, np.nan)
        if k >= 3:
            for b in range(n_boot):
                idx = rng.integers(0, k, size=k)
                boot_rho[b] = spearman(s[idx], a[idx])
                boot_tau[b] = kendall(s[idx], a[idx])
        wrong: list[WrongPair] = []
        for i in range(k):
            for j in range(k):
                if s[i] > s[j] and a[i] < a[j]:
                    wrong.append(WrongPair(cands[i], cands[j], float(s[i] - s[j]), float(a[j] - a[i])))
        wrong.sort(key=lambda w: (-w.accuracy_diff, w.ranked_higher, w.ranked_lower))
        # ties for the top score: the pessimistic choice (lowest accuracy among the tied) is reported,
        # since a user following the metric could have picked any of them
        tied = [i for i in range(k) if s[i] == s.max()]
        top = cands[min(tied, key=lambda i: (a[i], cands[i]))]
        best = cands[int(np.argmax(a))]
        results.append(
            MetricValidation(
                metric=metric,
                n_candidates=k,
                spearman=rho,
                spearman_ci=percentile_interval(boot_rho, level),
                kendall=tau,
                kendall_ci=percentile_interval(boot_tau, level),
                top_pick=top,
                top_pick_accuracy=acc[top],
                best=best,
                best_accuracy=acc[best],
                regret=float(acc[best] - acc[top]),
                wrong_pairs=wrong,
            )
        )
        if k < SMALL_POOL:
            msg = (
                f"only {k} candidates: rank correlations over so few models are noisy and their "
                f"bootstrap intervals are wide; read the wrong pairs rather than the single number"
            )
            if msg not in warnings:
                warnings.append(msg)
    table = pd.DataFrame(columns)
    table["accuracy"] = pd.Series(acc)
    table.index.name = "candidate"
    return ValidationReport(
        metrics=results, table=table, level=float(level), n_boot=int(n_boot), seed=seed, warnings=warnings
    )


def validate(
    embeddings: Mapping[str, np.ndarray],
    labels: Sequence[Any] | np.ndarray,
    label_free: Mapping[str, Mapping[str, float]],
    *,
    probe: str = "logistic",
    cv: int = 5,
    seed: int = 0,
    n_boot: int = 1000,
    level: float = 0.9,
    probes: Iterable[str] = PROBES,
) -> ValidationReport:
    """Run :func:`probe_accuracy` then :func:`validate_scores` against the ``probe`` accuracy.

    This is the function ``select(..., labels=...)`` and ``embedselect validate`` call: the
    label-free scores must have been computed *without* the labels.

    Returns:
        The report; its ``table`` also holds every probe column (``logistic_acc``, ``knn_acc``,
        their ``_std``, ``chance``, ``n_labeled``) and ``accuracy_column`` names the probe used.
    """
    probes = tuple(probes)
    if probe not in probes:
        raise ConfigError(f"probe {probe!r} must be one of the probes run: {', '.join(probes)}")
    acc = probe_accuracy(embeddings, labels, cv=cv, seed=seed, probes=probes)
    report = validate_scores(
        label_free, acc[f"{probe}_acc"].to_dict(), n_boot=n_boot, seed=seed, level=level
    )
    report.table = report.table.drop(columns=["accuracy"]).join(acc, how="outer")
    report.table.index.name = "candidate"
    report.accuracy_column = f"{probe}_acc"
    settings = {k: v for k, v in acc.attrs.items() if k != "fold_acc"}
    report.probe_settings = settings
    if settings.get("dropped_classes"):
        report.warnings.append(
            f"classes with a single labelled item were left out: {settings['dropped_classes']}"
        )
    if settings.get("n_folds", cv) < cv:
        report.warnings.append(
            f"used {settings['n_folds']} folds instead of {cv}: the smallest class has only "
            f"{settings['n_folds']} labelled items"
        )
    return report

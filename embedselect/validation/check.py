"""Check a label-free ranking against a few labels the user has.

Two steps, both pure functions over embeddings:

1. :func:`embedselect.validation.heldout.probe_accuracies` (re-exported here) trains the standard held-out probes
   (per-dimension standardisation + logistic regression with C tuned by inner cross-validation, and
   k-NN; stratified K-fold) on each candidate's embeddings of the labelled items and reports the actual
   accuracy. The report states which probe produced the accuracies (``probe_settings``).
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

from embedselect.errors import ConfigError, DataError
from embedselect.validation.heldout import (
    PROBE_DESCRIPTIONS,
    PROBES,
    clean_labels,
    probe_accuracies,
    probe_accuracy,
)
from embedselect.ranking.ties import order_by_score, tie_groups
from embedselect.ranking.bootstrap import check_bootstrap, percentile_interval

__all__ = [
    "PROBES",
    "PROBE_DESCRIPTIONS",
    "clean_labels",
    "probe_accuracy",
    "probe_accuracies",
    "validate_scores",
    "validate",
    "ValidationReport",
    "MetricValidation",
    "WrongPair",
]

ONE_CANDIDATE = (
    "only 1 candidate has an accuracy: its accuracy is reported, but a ranking needs at least two candidates to "
    "be checked; add candidates to see how well the label-free scores predict the accuracies"
)
"""The warning of a validation with a single candidate."""

SMALL_POOL = 10
"""With fewer candidates than this, rank correlations are reported with a warning: their bootstrap
intervals are wide and a single swapped pair moves them a lot."""


# ------------------------------------------------------------------------------------------------
# rank correlations
# ------------------------------------------------------------------------------------------------
def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman rank correlation (``scipy.stats.spearmanr``; ties get average ranks); NaN when either side
    is constant or has fewer than 2 values."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    if len(x) < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    from scipy.stats import spearmanr

    return float(spearmanr(x, y).statistic)


def kendall(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's tau-b (``scipy.stats.kendalltau``, tie-corrected); NaN when either side is constant."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    if len(x) < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    from scipy.stats import kendalltau

    return float(kendalltau(x, y).statistic)


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
        top_pick: candidate with the highest score; if several tie, the first of them by name (the package's
            one tie rule, :func:`embedselect.ranking.ties.tie_groups`: for the combined score it is the ranking's
            first row and ``Ranking.best``); ``top_pick_accuracy`` its accuracy (the search check: its MRR@10, also
            ``top_pick_mrr@10`` in :meth:`ValidationReport.to_dict`; likewise ``best_accuracy``).
        best: candidate with the highest accuracy; ``regret`` = best accuracy − top pick's accuracy.
        wrong_pairs: every pair ordered opposite to the accuracies, largest accuracy gap first.
        top_tied: every candidate tied for the top score (``[top_pick]`` without a tie).
        tied_regret: best accuracy − the lowest accuracy among ``top_tied`` (the regret of a user who
            picked the worst of the tied candidates; equals ``regret`` without a tie).
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
    top_tied: list[str] = field(default_factory=list)
    tied_regret: float = 0.0


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
        truth: what the accuracies are (:func:`validate_scores`' ``truth``): ``"accuracy"``, or ``"mrr@10"`` for the
            search check, whose :meth:`to_dict` also names its values for what they are.
    """

    metrics: list[MetricValidation]
    table: pd.DataFrame
    accuracy_column: str = "accuracy"
    level: float = 0.9
    n_boot: int = 1000
    seed: int = 0
    warnings: list[str] = field(default_factory=list)
    probe_settings: dict[str, Any] = field(default_factory=dict)
    truth: str = "accuracy"

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
        """JSON-serialisable form (NaN becomes ``None``). Each metric is :class:`MetricValidation`'s fields; where
        :attr:`truth` is not ``"accuracy"`` (the search check: ``"mrr@10"``) it also holds ``top_pick_<truth>`` and
        ``best_<truth>`` and each wrong pair ``<truth>_diff``, the same values as ``top_pick_accuracy``,
        ``best_accuracy`` and ``accuracy_diff``, which stay for readers of the files written before."""

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
                "metrics": [self._metric_dict(m) for m in self.metrics],
                "table": table,
            }
        )


    def _metric_dict(self, m: MetricValidation) -> dict[str, Any]:
        """``asdict(m)`` with the values named for :attr:`truth` too (:meth:`to_dict`)."""
        d = asdict(m)
        if self.truth != "accuracy":
            d[f"top_pick_{self.truth}"], d[f"best_{self.truth}"] = m.top_pick_accuracy, m.best_accuracy
            for pair in d["wrong_pairs"]:
                pair[f"{self.truth}_diff"] = pair["accuracy_diff"]
        return d


_TRUTHS = {"accuracy": ("an accuracy", "the accuracies", "the labels"),
           "mrr@10": ("an MRR@10", "the MRR@10 scores", "your queries")}
"""What :func:`validate_scores` compares with, as its notes say it: one value, the values, what they come from."""


def validate_scores(
    label_free: Mapping[str, Mapping[str, float]],
    accuracy: Mapping[str, float],
    *,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.9,
    truth: str = "accuracy",
) -> ValidationReport:
    """Compare label-free scores with actual accuracies.

    Args:
        label_free: metric name -> {candidate: score} (higher = predicted better).
        accuracy: candidate -> actual held-out accuracy (fraction; higher = better).
        n_boot: bootstrap replicates for the correlation intervals (resampling candidates with
            replacement; replicates where a correlation is undefined are skipped).
        seed: bootstrap seed.
        level: coverage of the percentile intervals, in (0, 1).
        truth: what ``accuracy`` holds, as the notes name it: ``"accuracy"`` (held-out probes on the labels) or
            ``"mrr@10"`` (the search check's MRR@10 on the user's queries, :mod:`embedselect.pipeline.queries`).

    Returns:
        A :class:`ValidationReport`. Candidates missing from a metric, or with a NaN score or
        accuracy, are left out of that metric's statistics; a metric left with fewer than 2 candidates is
        left out of the report, with a warning. With fewer than :data:`SMALL_POOL`
        candidates a warning says that the intervals are wide: the correlation of 4 numbers can be
        high by chance.

    Raises:
        DataError: no metric, or no metric shares at least 2 candidates with ``accuracy``.
        ConfigError: bad ``n_boot`` / ``level``.
    """
    check_bootstrap(n_boot, level, min_boot=0)
    one, many, against = _TRUTHS[truth]
    if not label_free:
        raise DataError("no label-free scores to validate; pass {metric: {candidate: score}}")
    acc = {str(k): float(v) for k, v in accuracy.items() if v is not None and math.isfinite(float(v))}
    rng = np.random.default_rng(seed)
    results: list[MetricValidation] = []
    warnings: list[str] = []
    skipped: list[str] = []
    columns: dict[str, dict[str, float]] = {}
    for metric, scores in label_free.items():
        sc = {str(k): float(v) for k, v in scores.items() if v is not None and math.isfinite(float(v))}
        cands = sorted(set(sc) & set(acc))
        columns[metric] = {str(k): float(v) for k, v in scores.items()}
        if len(cands) < 2:
            skipped.append(f"{metric!r} scored {len(cands)} of the candidates with {one}")
            continue
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
        # the package's one tie rule: the top pick is the first of the tied top group (by name), the same
        # candidate the ranking lists first and ``Ranking.best`` returns; the whole tied group is reported
        tied = tie_groups({c: sc[c] for c in cands})[0]
        top = tied[0]
        best = order_by_score({c: acc[c] for c in cands})[0]
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
                top_tied=list(tied),
                tied_regret=float(acc[best] - min(acc[c] for c in tied)),
            )
        )
        if k < SMALL_POOL:
            msg = (
                f"only {k} candidates: rank correlations over so few models are noisy and their "
                f"bootstrap intervals are wide; read the wrong pairs rather than the single number"
            )
            if msg not in warnings:
                warnings.append(msg)
    if skipped and not results:
        raise DataError(
            f"no metric shares 2 candidates with {many} ({'; '.join(skipped)}); a rank correlation needs at "
            f"least 2 candidates with both a finite score and {one}"
        )
    warnings += [f"not checked against {against}: {why} (a ranking needs at least 2)" for why in skipped]
    table = pd.DataFrame(columns)
    table["accuracy"] = pd.Series(acc)
    table.index.name = "candidate"
    return ValidationReport(
        metrics=results, table=table, level=float(level), n_boot=int(n_boot), seed=seed, warnings=warnings,
        truth=truth,
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
    """Run :func:`probe_accuracies` then :func:`validate_scores` against the ``probe`` accuracy.

    This is the function ``select(..., labels=...)`` and ``embedselect validate`` call: the
    label-free scores must have been computed *without* the labels.

    Returns:
        The report; its ``table`` also holds every probe column (``logistic_acc``, ``knn_acc``,
        their ``_std``, ``_lo`` and ``_hi``, ``chance``, ``n_labeled``) and ``accuracy_column`` names the probe
        used. With a single candidate, or when no metric scored two of them, the report has the accuracies, no
        ``metrics`` and a warning that says why (a ranking needs at least two candidates).
    """
    probes = tuple(probes)
    if probe not in probes:
        raise ConfigError(f"probe {probe!r} must be one of the probes run: {', '.join(probes)}")
    acc = probe_accuracies(embeddings, labels, cv=cv, seed=seed, probes=probes, level=level, n_boot=n_boot)
    accuracy = acc[f"{probe}_acc"].to_dict()
    try:
        report = validate_scores(label_free, accuracy, n_boot=n_boot, seed=seed, level=level)
        report.table = report.table.drop(columns=["accuracy"])
    except DataError as exc:
        # one candidate (or one that every metric scored): its accuracy is still worth reporting, but there is
        # no ranking to check
        why = ONE_CANDIDATE if sum(math.isfinite(a) for a in accuracy.values()) < 2 else str(exc)
        table = pd.DataFrame({m: pd.Series(v, dtype=float) for m, v in label_free.items()}, index=acc.index)
        report = ValidationReport(metrics=[], table=table, level=float(level), n_boot=int(n_boot), seed=seed,
                                  warnings=[why])
    report.table = report.table.join(acc, how="outer")
    report.table.index.name = "candidate"
    report.accuracy_column = f"{probe}_acc"
    settings = {k: v for k, v in acc.attrs.items() if k != "fold_acc"}
    settings["accuracy_probe"] = f"{probe}: {PROBE_DESCRIPTIONS[probe]}"
    report.probe_settings = settings
    n_missing = len(labels) - int(acc["n_labeled"].iloc[0]) - len(settings.get("dropped_classes") or [])
    if n_missing > 0:
        report.warnings.append(
            f"{n_missing} of the {len(labels)} items have no label and were left out of the check (the label-free "
            "scores use every item)"
        )
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

"""Combine several label-free metrics into one rank, keeping each metric's own rank visible.

Method ``"mean-rank"`` (:data:`DEFAULT_METHOD`, what ``select()`` uses; a weighted Borda count):

1. For each metric, rank the candidates it scored (1 = best = highest score; tied scores share the
   average rank). Candidates a metric did not score, or scored NaN, are left out of that metric.
2. Normalise each rank to ``u = (rank - 1) / (m - 1)`` in [0, 1] (m = candidates the metric scored;
   ``u = 0`` when m = 1), so metrics that scored different numbers of candidates weigh the same.
3. Combined score = ``1 - Σ_k w_k u_k / Σ_k w_k`` over the metrics that scored the candidate:
   1.0 means first on every metric, 0.0 last on every metric. Higher is better.

Method ``"mean-z"``: the weighted mean of per-metric z-scores
(score minus the metric's mean, over its standard deviation across candidates; unbounded, 0 = average). It uses the
size of the gaps, not only the order; one metric with an outlier can dominate (docs/validity.md, "Current
defaults": both modalities combine by mean rank).

Ties follow the package's one rule (:func:`embedselect.ranking.result.tie_groups`): equal combined scores share
a rank (competition ranks 1, 1, 3) and are listed by name; no metric breaks a tie, because a tie decided by
one metric is that metric's ranking, not the combination's. :func:`decide` says when the leading candidates
cannot be separated (a tie, overlapping bootstrap intervals, too few candidates). The per-metric ranks are
always columns of :func:`rank_table`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from embedselect.errors import ConfigError, DataError
from embedselect.ranking.result import just_below, order_by_score, rank_scores, tie_groups

__all__ = ["METHODS", "DEFAULT_METHOD", "MIN_POOL", "Decision", "metric_ranks", "combine_ranks", "rank_table", "decide",
           "copies_below_parents"]

METHODS = ("mean-rank", "mean-z")
DEFAULT_METHOD = "mean-rank"
"""The combination ``select()`` uses for texts and images (:mod:`embedselect.pipeline.defaults`), chosen by
leave-one-dataset-out on the validity benchmark (docs/validity.md, "Current defaults"). Ranks make each signal one
vote; mean z keeps the size of the gaps, which lets one signal's outlier or a family's shared bias decide."""

MIN_POOL = 4
"""With fewer scored candidates than this, the ranking is reported as undecided: the label-free scores
compare candidates with one another (consensus priors, pairwise sufficiency), so 2 or 3 candidates give them
too little to compare against."""


def _finite(scores: Mapping[str, float]) -> dict[str, float]:
    out = {}
    for k, v in scores.items():
        if v is None:
            continue
        v = float(v)
        if math.isfinite(v):
            out[str(k)] = v
    return out


def metric_ranks(per_metric_scores: Mapping[str, Mapping[str, float]]) -> pd.DataFrame:
    """Rank of every candidate under each metric.

    Args:
        per_metric_scores: metric -> {candidate: score}, higher = better.

    Returns:
        DataFrame indexed by candidate, one float column per metric: rank 1.0 = best, ties share the
        average rank, NaN where the metric did not score the candidate.
    """
    cols: dict[str, pd.Series] = {}
    for metric, scores in per_metric_scores.items():
        ranks = rank_scores(_finite(scores), ties="average")
        cols[metric] = pd.Series({k: float(r) for k, r in ranks.items() if r is not None}, dtype=np.float64)
    df = pd.DataFrame(cols)
    df.index.name = "candidate"
    return df


def _check(per_metric_scores, weights, method) -> dict[str, float]:
    if method not in METHODS:
        raise ConfigError(f"unknown combination method {method!r}; choose from {', '.join(METHODS)}")
    if not per_metric_scores:
        raise DataError("no metric scores to combine")
    if weights is None:
        return {m: 1.0 for m in per_metric_scores}
    unknown = set(weights) - set(per_metric_scores)
    if unknown:
        raise ConfigError(
            f"weights given for metric(s) {sorted(unknown)} that have no scores; metrics: "
            f"{', '.join(per_metric_scores)}"
        )
    w = {m: float(weights.get(m, 0.0)) for m in per_metric_scores}
    if any(not math.isfinite(v) or v < 0 for v in w.values()) or sum(w.values()) <= 0:
        raise ConfigError(f"weights must be finite, >= 0 and not all 0; got {dict(weights)}")
    return w


def combine_ranks(
    per_metric_scores: Mapping[str, Mapping[str, float]],
    *,
    weights: Mapping[str, float] | None = None,
    method: str = "mean-rank",
) -> dict[str, float]:
    """One combined score per candidate (higher = better); see the module docstring for the formula.

    Args:
        per_metric_scores: metric -> {candidate: score}, higher = better for every metric.
        weights: metric -> weight >= 0 (default: all 1). Metrics missing from ``weights`` get 0.
        method: ``"mean-rank"`` (default; in [0, 1]) or ``"mean-z"`` (unbounded, mean 0 per metric).

    Returns:
        candidate -> combined score, for every candidate scored by at least one metric with a
        positive weight. Use :func:`rank_table` for the ordered table with the per-metric ranks.

    Raises:
        ConfigError: unknown method, negative / all-zero weights, weights for unknown metrics.
        DataError: no metrics, or no finite score at all.
    """
    w = _check(per_metric_scores, weights, method)
    num: dict[str, float] = {}
    den: dict[str, float] = {}
    for metric, scores in per_metric_scores.items():
        if w[metric] == 0:
            continue
        sc = _finite(scores)
        if not sc:
            continue
        if method == "mean-rank":
            ranks = metric_ranks({metric: sc})[metric]
            m = len(sc)
            part = {k: (r - 1.0) / (m - 1.0) if m > 1 else 0.0 for k, r in ranks.items()}
        else:
            v = np.array(list(sc.values()), dtype=np.float64)
            sd = float(v.std())
            part = {k: (x - v.mean()) / sd if sd > 0 else 0.0 for k, x in sc.items()}
        for k, u in part.items():
            num[k] = num.get(k, 0.0) + w[metric] * float(u)
            den[k] = den.get(k, 0.0) + w[metric]
    if not num:
        raise DataError("no finite score in any weighted metric; nothing to combine")
    if method == "mean-rank":
        return {k: 1.0 - num[k] / den[k] for k in num}
    return {k: num[k] / den[k] for k in num}


def rank_table(
    per_metric_scores: Mapping[str, Mapping[str, float]],
    *,
    weights: Mapping[str, float] | None = None,
    method: str = "mean-rank",
) -> pd.DataFrame:
    """The combined ranking with every metric's own rank beside it.

    Returns:
        DataFrame indexed by candidate, sorted best first, with columns ``{metric}_rank`` (float,
        1 = best, NaN if unscored) for each metric, ``combined`` (the :func:`combine_ranks` score)
        and ``rank`` (int, 1 = best, ties broken as documented in the module docstring).
    """
    combined = combine_ranks(per_metric_scores, weights=weights, method=method)
    ranks = metric_ranks(per_metric_scores)
    order = order_by_score(combined)
    df = ranks.add_suffix("_rank").reindex(order)
    df["combined"] = pd.Series(combined, dtype=np.float64)
    competition = rank_scores(combined)
    df["rank"] = np.array([competition[c] for c in order], dtype=np.int64)
    df.index.name = "candidate"
    return df


@dataclass
class Decision:
    """Whether the combined ranking separates its first candidate from the rest.

    Attributes:
        decided: True when the first candidate is the winner on this data; False when the scores cannot
            separate it from ``leaders`` or the pool is too small to judge.
        leaders: the first candidate followed by every candidate it cannot be told apart from (the first is
            what ``Ranking.best`` returns; a single name when decided).
        reasons: plain-language reasons when undecided (empty when decided).
        codes: the warning code of each reason, in the same order (:data:`embedselect.ranking.result.WARNING_CODES`):
            ``small-pool`` for the pool-size rule, ``undecided`` for the others.
    """

    decided: bool
    leaders: list[str]
    reasons: list[str] = field(default_factory=list)
    codes: list[str] = field(default_factory=list)


def _overlap(a: Sequence[float], b: Sequence[float]) -> bool:
    lo1, hi1 = float(a[0]), float(a[1])
    lo2, hi2 = float(b[0]), float(b[1])
    if not all(math.isfinite(v) for v in (lo1, hi1, lo2, hi2)):
        return True  # an undefined interval separates nothing
    return max(lo1, lo2) <= min(hi1, hi2)


def copies_below_parents(
    combined: Mapping[str, float], pairs: Sequence[tuple[str, str]]
) -> tuple[dict[str, float], list[tuple[str, str]]]:
    """Combined scores with every derived copy strictly below each of its parents.

    A copy that is a coordinate-wise function of its parent's vectors (:mod:`embedselect.metrics.copies`: a
    quantisation or a truncation) cannot carry more information about any labelling than the parent (data
    processing inequality): the parent is at least as good as its copy. So when a copy scores at or above its
    parent, the parent takes the copy's score (the evidence for the copy is evidence for the parent) and the copy
    gets the closest score below it that is not a tie (:func:`embedselect.ranking.result.just_below`). Chains such as first-64 < first-128 < full resolve in order; candidates that
    are neither copy nor parent keep their scores.

    Args:
        combined: candidate -> combined score (higher is better).
        pairs: (copy, parent) names; pairs naming a candidate without a finite score are ignored.

    Returns:
        (the adjusted scores, the (copy, parent) pairs that were moved, in the order they were moved).
    """
    out = {k: float(v) for k, v in combined.items()}
    live = [(c, p) for c, p in pairs if c in out and p in out and math.isfinite(out[c]) and math.isfinite(out[p])]
    moved: list[tuple[str, str]] = []
    for _ in range(len(live) + 1):  # a chain of k copies settles in at most k passes
        changed = False
        for c, p in live:
            if out[c] >= out[p]:
                out[p] = out[c]
                out[c] = just_below(out[p])
                if (c, p) not in moved:
                    moved.append((c, p))
                changed = True
        if not changed:
            break
    return out, moved


def decide(
    combined: Mapping[str, float],
    *,
    intervals: Mapping[str, Mapping[str, Sequence[float]]] | None = None,
    min_pool: int = MIN_POOL,
) -> Decision:
    """Can the combined ranking name a winner?

    Args:
        combined: candidate -> combined score (higher is better), as from :func:`combine_ranks`.
        intervals: candidate -> {score name: (low, high)} bootstrap intervals (``CandidateResult.intervals``),
            when a bootstrap ran.
        min_pool: fewer finite-scored candidates than this is undecided (:data:`MIN_POOL`).

    Rules (each adds to ``leaders`` / ``reasons``):

    1. **Tie**: candidates whose combined score ties the first one's (:func:`embedselect.ranking.result.tie_groups`).
    2. **Overlapping intervals**: a candidate whose bootstrap interval overlaps the first candidate's on
       *every* bootstrapped score they share (at least one) is not separated from it by the data.
    3. **Small pool**: fewer than ``min_pool`` candidates.

    The first candidate (``leaders[0]``) is always the first row of :func:`rank_table` and ``Ranking.best``.
    """
    groups = tie_groups(combined)
    if not groups:
        return Decision(False, [], ["no candidate has a combined score"], ["undecided"])
    order = [k for g in groups for k in g]
    first = order[0]
    leaders = list(groups[0])
    reasons: list[str] = []
    if len(groups[0]) > 1:
        reasons.append(
            f"tie: {', '.join(groups[0])} have the same combined score; listed by name, not by merit"
        )
    if intervals:
        mine = intervals.get(first) or {}
        close = []
        for c in order[len(groups[0]):]:
            theirs = intervals.get(c) or {}
            shared = [k for k in mine if k in theirs]
            if shared and all(_overlap(mine[k], theirs[k]) for k in shared):
                close.append(c)
        if close:
            leaders += close
            reasons.append(
                f"the bootstrap intervals of {first} overlap those of {', '.join(close)} on every bootstrapped "
                "score: the data do not separate them (use more items, or read them as equals)"
            )
    if len(order) < min_pool:
        reasons.append(
            f"only {len(order)} candidate(s) scored: label-free scores compare candidates with each other and are "
            f"unreliable in pools smaller than {min_pool}; add candidates"
        )
    codes = ["undecided"] * len(reasons)
    if len(order) < min_pool:
        codes[-1] = "small-pool"
    return Decision(not reasons, leaders, reasons, codes)

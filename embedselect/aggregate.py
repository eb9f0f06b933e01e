"""Combine several label-free metrics into one rank, keeping each metric's own rank visible.

Method ``"mean-rank"`` (the default, a weighted Borda count):

1. For each metric, rank the candidates it scored (1 = best = highest score; tied scores share the
   average rank). Candidates a metric did not score, or scored NaN, are left out of that metric.
2. Normalise each rank to ``u = (rank - 1) / (m - 1)`` in [0, 1] (m = candidates the metric scored;
   ``u = 0`` when m = 1), so metrics that scored different numbers of candidates weigh the same.
3. Combined score = ``1 - Σ_k w_k u_k / Σ_k w_k`` over the metrics that scored the candidate:
   1.0 means first on every metric, 0.0 last on every metric. Higher is better.

Method ``"mean-z"``: the weighted mean of per-metric z-scores (score minus the metric's mean, over
its standard deviation across candidates). It uses the size of the gaps, not only the order, so one
metric with an outlier can dominate; ranks are more robust and are the default.

Tie-breaking in :func:`rank_table` (and so in the combined rank): higher combined score, then the
better rank on the first metric given (the primary one), then the candidate key in alphabetical
order. The per-metric ranks are always columns of :func:`rank_table`.
"""

from __future__ import annotations

import math
from typing import Mapping

import numpy as np
import pandas as pd

from embedselect.errors import ConfigError, DataError

__all__ = ["METHODS", "metric_ranks", "combine_ranks", "rank_table"]

METHODS = ("mean-rank", "mean-z")


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
    from scipy.stats import rankdata

    cols = {}
    for metric, scores in per_metric_scores.items():
        sc = _finite(scores)
        keys = list(sc)
        ranks = rankdata([-sc[k] for k in keys], method="average") if keys else []
        cols[metric] = pd.Series(dict(zip(keys, map(float, ranks))), dtype=np.float64)
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
    df = ranks.add_suffix("_rank").reindex(sorted(set(ranks.index) | set(combined)))
    df["combined"] = pd.Series(combined, dtype=np.float64)
    first = next(iter(per_metric_scores))
    key = df[f"{first}_rank"].fillna(np.inf)
    order = sorted(
        df.index,
        key=lambda c: (-df.at[c, "combined"] if math.isfinite(df.at[c, "combined"]) else math.inf, key[c], c),
    )
    df = df.loc[order]
    df["rank"] = np.arange(1, len(df) + 1, dtype=np.int64)
    df.index.name = "candidate"
    return df

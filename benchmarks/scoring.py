"""The scoring of a label-free ranking against a view's ground truth (the validity benchmark's measures): Spearman and
Kendall correlations, the top pick under the package's tie rule and its regret, and copies ranked above a better
parent; the targets they are read against (:data:`TARGETS`)."""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

COPY_RELATIONS = ("distilled", "truncated", "quantized-int8", "quantized-binary", "max_length")
"""Pool relations that make a copy: never above its parent (issue 23; ``max_length``: the input cut shorter)."""
TARGETS = {"spearman_each": 0.8, "spearman_mean": 0.9, "regret": 0.02}
"""Issue 9's targets: Spearman ρ at least ``spearman_each`` on each view and ``spearman_mean`` on average, top-pick
regret at most ``regret``."""


def _finite(scores: Mapping[str, float | None]) -> dict[str, float]:
    return {k: float(v) for k, v in scores.items() if v is not None and math.isfinite(float(v))}


def correlations(scores: Mapping[str, float | None], truth: Mapping[str, float]) -> tuple[float, float]:
    """(Spearman rho, Kendall tau-b) between a signal (higher = better) and the ground-truth accuracy over the
    candidates both have finite values for; NaN with fewer than 3 such candidates or a constant side."""
    from scipy.stats import kendalltau, spearmanr

    sc = _finite(scores)
    keys = sorted(k for k in sc if k in truth and math.isfinite(truth[k]))
    if len(keys) < 3:
        return math.nan, math.nan
    a = np.array([sc[k] for k in keys], dtype=np.float64)
    b = np.array([truth[k] for k in keys], dtype=np.float64)
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return math.nan, math.nan
    return float(spearmanr(a, b).statistic), float(kendalltau(a, b).statistic)


def top_pick(scores: Mapping[str, float | None]) -> tuple[str | None, list[str]]:
    """(first candidate under the package's tie rule, the candidates tied with it)."""
    from embedselect.ranking.ties import tie_groups

    groups = tie_groups(scores)
    if not groups:
        return None, []
    return groups[0][0], list(groups[0])


def regret(scores: Mapping[str, float | None], truth: Mapping[str, float]) -> float:
    """Best ground-truth accuracy minus the accuracy of the signal's top pick (accuracy points as a fraction);
    NaN when the signal scored nothing."""
    pick, _ = top_pick({k: v for k, v in scores.items() if k in truth})
    if pick is None:
        return math.nan
    return float(max(truth.values()) - truth[pick])


def family_violations(
    scores: Mapping[str, float | None], truth: Mapping[str, float], entries: Sequence[Mapping[str, Any]],
    relations: Sequence[str] = COPY_RELATIONS,
) -> list[tuple[str, str]]:
    """(copy, parent) pairs where a copy (``relation`` in ``relations``) is scored strictly above its parent
    while the parent's ground-truth accuracy is strictly higher. Candidates without a finite score are skipped."""
    sc = _finite(scores)
    out = []
    for e in entries:
        c, p = e.get("name"), e.get("parent")
        if e.get("relation") not in relations or p is None:
            continue
        if c in sc and p in sc and c in truth and p in truth and sc[c] > sc[p] and truth[p] > truth[c]:
            out.append((c, p))
    return out

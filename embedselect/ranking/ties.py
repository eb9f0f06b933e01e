"""The package's one tie rule: scores equal up to a tolerance share a rank, ties listed by name
(:func:`tie_groups`), and the ranks and orders built on it."""

from __future__ import annotations

import math
from typing import Mapping

TIE_RTOL = 1e-9
"""Scores within this relative distance (``math.isclose(a, b, rel_tol=TIE_RTOL, abs_tol=TIE_ATOL)``) of the
best score of their group are a tie: the same weighted mean summed in a different order must not decide."""
TIE_ATOL = 1e-12


def just_below(score: float) -> float:
    """The score that ranks strictly below ``score`` and as close to it as the tie rule allows (not a tie under
    :func:`tie_groups`): ``score`` minus 4× the tie tolerance."""
    return score - 4 * max(TIE_RTOL * abs(score), TIE_ATOL)


def finite_scores(scores: Mapping[str, float | None]) -> dict[str, float]:
    """The scores that are ranked, as floats by name (a string): ``None``, NaN and infinities left out."""
    out = {}
    for k, v in scores.items():
        if v is None:
            continue
        v = float(v)
        if math.isfinite(v):
            out[str(k)] = v
    return out


def tie_groups(scores: Mapping[str, float | None]) -> list[list[str]]:
    """Candidates grouped by tied score, best (highest) group first; names inside a group in alphabetical order.

    This is the package's one tie rule. Scores are "higher is better". Two scores tie when they are equal up
    to :data:`TIE_RTOL` / :data:`TIE_ATOL` relative to the highest score of the group. ``None``, NaN and
    infinities are not ranked (left out). Where one order is needed (the table's rows, ``Ranking.best``, a
    validation's top pick), tied candidates are listed by name: a neutral, reproducible order that favours no
    metric and no kind of model; the ranking then says the tie exists (``Ranking.decided`` / ``leaders``).
    """
    items = sorted(finite_scores(scores).items(), key=lambda kv: (-kv[1], kv[0]))
    groups: list[list[str]] = []
    head = None
    for k, v in items:
        if head is not None and math.isclose(v, head, rel_tol=TIE_RTOL, abs_tol=TIE_ATOL):
            groups[-1].append(k)
        else:
            groups.append([k])
            head = v
    return [sorted(g) for g in groups]


def order_by_score(scores: Mapping[str, float | None]) -> list[str]:
    """Names best first by :func:`tie_groups` (ties by name); unranked (None / NaN) names last, by name."""
    ordered = [k for g in tie_groups(scores) for k in g]
    rest = sorted(str(k) for k in scores if str(k) not in set(ordered))
    return ordered + rest


def rank_scores(scores: Mapping[str, float | None], *, ties: str = "min") -> dict[str, float | None]:
    """1-based ranks (1 = highest score) under the tie rule of :func:`tie_groups`.

    Args:
        scores: name -> score, higher is better.
        ties: ``"min"`` (default; competition ranks 1, 1, 3: what tables and JSON show, so a tie reads as a
            tie) or ``"average"`` (1.5, 1.5, 3: tied candidates share the ranks they span, what a rank
            average such as the Borda count in :mod:`embedselect.ranking.combine` needs).

    Returns:
        name -> rank (int for ``"min"``, float for ``"average"``); ``None`` for an unranked (None / NaN / inf)
        score.
    """
    if ties not in ("min", "average"):
        raise ValueError(f"ties must be 'min' or 'average', got {ties!r}")
    ranks: dict[str, float | None] = {str(k): None for k in scores}
    pos = 1
    for g in tie_groups(scores):
        r = pos if ties == "min" else pos + (len(g) - 1) / 2.0
        for k in g:
            ranks[k] = r
        pos += len(g)
    return ranks


__all__ = ["TIE_ATOL", "TIE_RTOL", "just_below", "order_by_score", "rank_scores", "tie_groups"]

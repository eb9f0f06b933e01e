"""What a person's evidence decides between the contenders of a ranking: one candidate per model family
(:func:`contenders`), compared two by two on the questions the person settled (:func:`verdict`). The verdict is the
one rule behind ``rank --answers`` (triplet answers, :mod:`embedselect.validation.answers`, between these contenders)
and ``validate --queries`` (search queries, :mod:`embedselect.pipeline.queries`, between each family's best on them).

Per question each contender has a score, higher meaning closer to the person: 1 or 0 for a triplet answer it orders
the person's way or not, the reciprocal rank of the first relevant item for a search query. Two contenders are
compared on the questions where their scores differ (a paired sign test): one *beats* the other when the share of
those questions it wins has a Wilson interval (:data:`DECIDE_LEVEL`: 99.9 %) above one half, once at least
:data:`MIN_ANSWERED` questions are settled. The contenders no other beats remain; the evidence decides when one
remains, and the label-free pick stands unless such an interval rules it out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np


TOP_CONTENDERS = 3
"""Contenders when a ranking's leaders are of one model family: the best members of its first families, at most this
many (:func:`contenders`)."""
MIN_ANSWERED = 10
"""The evidence decides (:func:`verdict`) only once at least this many questions are settled (answers, skips not
counted; or search queries)."""
Z95 = 1.959963984540054
"""The normal quantile of a two-sided 95 % interval (each candidate's agreement interval)."""
DECIDE_LEVEL = 0.999
"""The two-sided level of the interval with which the answers rule a contender out (:func:`verdict`). Chosen on the
selection half of the validity benchmark's simulated person (docs/validity.md): at 95 % the answers overrode a right
label-free pick on more views."""
Z_DECIDE = 3.2905267314919255
"""The normal quantile of a two-sided :data:`DECIDE_LEVEL` interval."""


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of ``k`` successes in ``n`` trials (NaN, NaN for n = 0)."""
    if n <= 0:
        return math.nan, math.nan
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(0.0, centre - half), min(1.0, centre + half)


def contenders(leaders: Sequence[str], order: Sequence[str], families: Mapping[str, str] | None = None,
               top: int = TOP_CONTENDERS) -> list[str]:
    """Between whom the answers decide: one candidate per model family, in ``order``.

    The one rule of ``ask`` (which questions) and of ``rank --answers`` (which candidates they decide between).

    Args:
        leaders: the ranking's leaders (:class:`~embedselect.ranking.combine.Decision`; one name when decided).
        order: the scored candidates, best first.
        families: candidate -> family key (variants and copies of one model share one; ``RunContext.families``);
            a candidate not in it is a family of its own.
        top: how many families when the leaders are of one family.

    Returns:
        the best member (first in ``order``) of each family among ``leaders`` when they span at least two families;
        otherwise the best member of each of the first ``top`` families of ``order`` (at least two). A model's
        quantised or truncated copy is never a contender beside it: the answers would compare the model with itself.
    """
    fam = {c: (families or {}).get(c, c) for c in order}
    lead = set(leaders)
    heads: dict[str, str] = {}  # family -> its best leader, in order
    for c in order:
        if c in lead:
            heads.setdefault(fam[c], c)
    if len(heads) >= 2:
        return list(heads.values())
    best: dict[str, str] = {}  # family -> its best member, in order
    for c in order:
        best.setdefault(fam[c], c)
    return list(best.values())[: max(2, top)]


COUNTED = {"answers": "answers only one of them orders your way",
           "queries": "queries where one of them ranks the first relevant item higher"}
"""Per unit of evidence, the questions a pair's counts are taken on (:meth:`Verdict.pair_counts`)."""


@dataclass(frozen=True)
class Verdict:
    """What the evidence says about the contenders.

    Attributes:
        winner: the first contender (label-free order) that no other contender beats; None without evidence.
        decided: True when every other contender is beaten (:func:`verdict`): the evidence names ``winner``.
        remaining: the contenders no other contender beats, in label-free order (``winner`` first).
        ruled_out: contender -> ``{"by", "wins", "losses", "low", "high"}``: who beats it, on how many questions
            the one or the other scores higher, and the Wilson interval of that share.
        pairs: per other contender, the same counts of ``winner`` against it (``{"other", "wins", "losses", "low",
            "high"}``).
        n_answered: questions settled (answers given, skips not counted; or queries).
        unit: what a question is, in messages ("answers", "queries").
    """

    winner: str | None
    decided: bool
    pairs: list[dict[str, Any]] = field(default_factory=list)
    n_answered: int = 0
    remaining: list[str] = field(default_factory=list)
    ruled_out: dict[str, dict[str, Any]] = field(default_factory=dict)
    unit: str = "answers"

    def to_dict(self) -> dict[str, Any]:
        return {"winner": self.winner, "decided": self.decided, "remaining": list(self.remaining),
                "ruled_out": {k: dict(v) for k, v in self.ruled_out.items()}, "pairs": [dict(p) for p in self.pairs],
                "n_answered": self.n_answered}

    def summary(self) -> str:
        """One line: what the evidence rules out and whether it names one contender."""
        if self.winner is None:
            return f"no {self.unit} yet"
        out = "; ".join(f"{c} ruled out by {r['by']} ({r['wins']}:{r['losses']})" for c, r in self.ruled_out.items())
        if self.decided:
            return f"{self.winner} is separated from every other contender: {self.pair_counts()}"
        return (f"{(out + '; ') if out else ''}{', '.join(self.remaining)} not separated yet{self.need()}; "
                f"{self.pair_counts()}")

    def pair_counts(self) -> str:
        """The winner's paired counts against each other contender, and what they count: "a vs b 3:1, vs c 2:2
        (answers only one of them orders your way)" (wins:losses on the questions where the two score differently;
        :data:`COUNTED` says which those are). The one wording of these counts: ``ask``'s tally, ``rank --answers``'
        note and the ``--queries`` note."""
        counts = ", vs ".join(f"{p['other']} {p['wins']}:{p['losses']}" for p in self.pairs)
        return f"{self.winner} vs {counts} ({COUNTED.get(self.unit, self.unit + ' where the two differ')})"

    def need(self) -> str:
        """The note " (at least N answers needed)" while fewer than :data:`MIN_ANSWERED` questions are settled; else
        empty."""
        return f" (at least {MIN_ANSWERED} {self.unit} needed)" if self.n_answered < MIN_ANSWERED else ""


def verdict(scores: Mapping[str, np.ndarray], names: Sequence[str], *, z: float = Z_DECIDE,
            min_answered: int = MIN_ANSWERED, unit: str = "answers") -> Verdict:
    """What the evidence decides between the contenders ``names`` (in label-free order).

    ``scores[name]`` is (m,) over the settled questions, higher meaning closer to the person: bool for triplet answers
    (:func:`embedselect.validation.answers.agrees`), float for search queries (each query's reciprocal rank). Two
    contenders are compared on the questions where their scores differ (a paired sign test): one *beats* the other
    when its share of those questions has a Wilson interval (``z``: :data:`Z_DECIDE`, 99.9 %) above one half, once at
    least ``min_answered`` questions are settled. The contenders no other beats remain, in label-free order; the first
    of them is the ``winner`` (what the evidence cannot tell apart, the label-free order decides), and the evidence
    decides when only one remains. So the label-free pick (``names[0]``) stands unless another contender beats it.
    With bool scores "beats" follows the agreement counts and has no cycle (wins minus losses of x against y is x's
    agreements minus y's); with graded scores a cycle is possible, and when every contender is beaten none is ruled
    out.
    """
    names = [n for n in names if n in scores]
    m = len(scores[names[0]]) if names else 0
    if not names or m == 0:
        return Verdict(None, False, [], m, list(names), {}, unit)
    s = {n: np.asarray(scores[n], dtype=np.float64) for n in names}

    def duel(x: str, y: str) -> dict[str, Any]:
        wins = int(np.sum(s[x] > s[y]))
        losses = int(np.sum(s[y] > s[x]))
        lo, hi = wilson(wins, wins + losses, z)
        return {"wins": wins, "losses": losses, "low": lo, "high": hi}

    ruled_out: dict[str, dict[str, Any]] = {}
    if m >= min_answered:
        for c in names:
            beats = [(d, duel(d, c)) for d in names if d != c]
            beats = [(d, r) for d, r in beats if r["wins"] + r["losses"] > 0 and r["low"] > 0.5]
            if beats:
                d, r = max(beats, key=lambda dr: dr[1]["low"])
                ruled_out[c] = {"by": d, **r}
    if len(ruled_out) == len(names):  # a cycle of graded scores: nothing is settled
        ruled_out = {}
    remaining = [c for c in names if c not in ruled_out]
    winner = remaining[0]
    pairs = [{"other": c, **duel(winner, c)} for c in names if c != winner]
    return Verdict(winner, len(names) >= 2 and len(remaining) == 1, pairs, m, remaining, ruled_out, unit)

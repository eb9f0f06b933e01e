"""How candidates agree with a person's answers to triplet questions (``embedselect ask``), and what the answers
decide between the contenders. The questions file itself (read, check, write) is :mod:`embedselect.validation.questions`.

A question shows an anchor item and two others, ``a`` and ``b``; the answer is ``a``, ``b`` or ``skip``. A candidate
*agrees* with an answer when its embedding orders the triplet the person's way: cosine(anchor, a) > cosine(anchor, b)
for ``a``, the reverse for ``b`` (a tie agrees with neither), the cosines taken about the mean of the candidate's
vectors over the data (:func:`orders`). Its agreement is the share of answered (not skipped)
questions it agrees with, with a Wilson score interval.

The contenders are one candidate per model family (:func:`contenders`): the best member of each family among a
ranking's leaders when they span two families or more, else the best members of its first :data:`TOP_CONTENDERS`
families. Between them the answers decide with a paired rule (:func:`verdict`): a contender is ruled out when another
one orders more of the questions on which exactly one of the two agrees the person's way, with a Wilson interval
above one half (:data:`DECIDE_LEVEL`: 99.9 %), after at least :data:`MIN_ANSWERED` answers; the answers decide when
one contender remains. The label-free pick stands unless such an interval rules it out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from embedselect.errors import AnswersError
from embedselect.validation.questions import Question

TOP_CONTENDERS = 3
"""Contenders when a ranking's leaders are of one model family: the best members of its first families, at most this
many (:func:`contenders`)."""
MIN_ANSWERED = 10
"""The answers decide (:func:`verdict`) only once at least this many are given (skips not counted)."""
Z95 = 1.959963984540054
"""The normal quantile of a two-sided 95 % interval (each candidate's agreement interval)."""
DECIDE_LEVEL = 0.999
"""The two-sided level of the interval with which the answers rule a contender out (:func:`verdict`). Chosen on the
selection half of the validity benchmark's simulated person (docs/validity.md): at 95 % the answers overrode a right
label-free pick on more views."""
Z_DECIDE = 3.2905267314919255
"""The normal quantile of a two-sided :data:`DECIDE_LEVEL` interval."""


# --- the answers against the data ----------------------------------------------------------------------------------
def same_text(a: str, b: str) -> bool:
    """Texts equal up to runs of white space (a spreadsheet may change line ends and trailing spaces)."""
    return " ".join(a.split()) == " ".join(b.split())


@dataclass(frozen=True)
class Answered:
    """The answered questions of a file, as positions in the reference data.

    Attributes:
        triplets: int64 (m, 3): rows of (anchor, a, b) item positions, one per answered (not skipped) question.
        signs: int8 (m,): +1 where the answer is ``a``, -1 for ``b``.
        question_ids: int64 (m,) the questions' ids.
        n_questions / n_skipped: rows in the file; rows answered ``skip``.
        source: where the answers came from (a path, or ``"<DataFrame>"``).
    """

    triplets: np.ndarray
    signs: np.ndarray
    question_ids: np.ndarray
    n_questions: int
    n_skipped: int
    source: str = ""

    @property
    def n_answered(self) -> int:
        return int(len(self.signs))


def resolve(questions: Sequence[Question], ids: Sequence[str], shown: Sequence[str] | None, *,
            source: str = "") -> Answered:
    """Check ``questions`` against the reference data and return the answered ones as item positions.

    Args:
        questions: from :func:`~embedselect.validation.questions.read_questions`.
        ids: the data's item ids (``ReferenceData.ids``), in order.
        shown: the data's texts (compared with the file's ``anchor`` / ``a`` / ``b`` up to white space), or None
            for images (their ids, the relative paths, identify them).
        source: named in messages.

    Raises:
        AnswersError (exit 3): an id the data does not have, or a text that differs from the data's item of that
            id (answers to another data set, or data changed since); the message names the row.
    """
    pos = {str(x): i for i, x in enumerate(ids)}
    name = source or "answers"
    trip, signs, qids, skipped = [], [], [], 0
    for q in questions:
        where = f"{name}, row {q.row or '?'}: "
        idx = []
        for col, item_id, text in zip(("anchor", "a", "b"), q.ids, (q.anchor, q.a, q.b)):
            if item_id not in pos:
                raise AnswersError(f"{where}{col}_id {item_id[:60]!r} is not an item id of this data: these answers "
                                   "belong to another data set (or the data changed since `ask` wrote them, or its ids "
                                   "came from another --id-column); run `embedselect ask` on this data for a new file",
                                   row=q.row)
            i = pos[item_id]
            if shown is not None and not same_text(text, shown[i]):
                raise AnswersError(f"{where}the {col} text differs from item {item_id} of this data: these answers "
                                   "belong to another data set (or the data changed since `ask` wrote them)",
                                   row=q.row)
            idx.append(i)
        if q.answer == "skip":
            skipped += 1
        elif q.answer in ("a", "b"):
            trip.append(idx)
            signs.append(1 if q.answer == "a" else -1)
            qids.append(q.question_id)
    return Answered(np.asarray(trip, dtype=np.int64).reshape(-1, 3), np.asarray(signs, dtype=np.int8),
                    np.asarray(qids, dtype=np.int64), len(questions), skipped, source)


# --- agreement -----------------------------------------------------------------------------------------------------
def centre_of(vectors: np.ndarray) -> np.ndarray:
    """float64 (d,): the mean of the rows of (n, d) ``vectors`` (all the data's items), the origin of the cosines with
    which a candidate orders a triplet (:func:`orders`, and the question choice of
    :func:`embedselect.pipeline.questions.choose_triplets`)."""
    x = np.asarray(vectors)
    if x.ndim != 2 or not len(x):
        raise ValueError(f"vectors must be a non-empty (n, d) array, not shape {x.shape}")
    return np.asarray(x.mean(axis=0, dtype=np.float64), dtype=np.float64)


def orders(vectors: np.ndarray, triplets: np.ndarray, centre: np.ndarray | None = None) -> np.ndarray:
    """cosine(anchor, a) - cosine(anchor, b) per triplet, in float64: shape (m,) for (n, d) ``vectors`` and
    (m, 3) ``triplets`` of row positions.

    The cosines are taken about ``centre`` (default :func:`centre_of`: the mean of all n rows), not about the
    origin: an embedding whose vectors share a large common part (mean-pooled early layers, static word vectors)
    otherwise orders a triplet by that part rather than by what tells the items apart. A row equal to the centre
    gives NaN (it orders nothing)."""
    t = np.asarray(triplets, dtype=np.int64).reshape(-1, 3)
    if not len(t):
        return np.zeros(0)
    c = centre_of(vectors) if centre is None else np.asarray(centre, dtype=np.float64)

    def unit(rows: np.ndarray) -> np.ndarray:
        x = np.asarray(vectors[rows], dtype=np.float64) - c
        with np.errstate(invalid="ignore", divide="ignore"):
            return x / np.linalg.norm(x, axis=1, keepdims=True)

    anc, a, b = unit(t[:, 0]), unit(t[:, 1]), unit(t[:, 2])
    return np.einsum("ij,ij->i", anc, a) - np.einsum("ij,ij->i", anc, b)


def agrees(vectors: np.ndarray, answered: Answered) -> np.ndarray:
    """bool (m,): whether ``vectors`` order each answered triplet the person's way (a tie or NaN: no)."""
    d = orders(vectors, answered.triplets)
    with np.errstate(invalid="ignore"):
        return np.sign(d) == answered.signs.astype(np.float64)


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of ``k`` successes in ``n`` trials (NaN, NaN for n = 0)."""
    if n <= 0:
        return math.nan, math.nan
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class Agreement:
    """One candidate's agreement with the answers: ``k`` of ``n`` answered questions ordered the person's way,
    ``share`` = k / n with its 95 % Wilson interval [``low``, ``high``]."""

    k: int
    n: int

    @property
    def share(self) -> float:
        return self.k / self.n if self.n else math.nan

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.k, self.n)

    def to_columns(self) -> dict[str, float]:
        lo, hi = self.interval
        return {"answers.agreement": self.share, "answers.agreement_low": lo, "answers.agreement_high": hi,
                "answers.n": float(self.n)}


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


@dataclass(frozen=True)
class Verdict:
    """What the answers say about the contenders.

    Attributes:
        winner: the first contender (label-free order) that no other contender beats on the answers; None without
            answers.
        decided: True when every other contender is beaten (:func:`verdict`): the answers name ``winner``.
        remaining: the contenders no other contender beats, in label-free order (``winner`` first).
        ruled_out: contender -> ``{"by", "wins", "losses", "low", "high"}``: who beats it, on how many questions
            only the one or only the other orders the person's way, and the Wilson interval of that share.
        pairs: per other contender, the same counts of ``winner`` against it (``{"other", "wins", "losses", "low",
            "high"}``).
        n_answered: answers given (skips not counted).
    """

    winner: str | None
    decided: bool
    pairs: list[dict[str, Any]] = field(default_factory=list)
    n_answered: int = 0
    remaining: list[str] = field(default_factory=list)
    ruled_out: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"winner": self.winner, "decided": self.decided, "remaining": list(self.remaining),
                "ruled_out": {k: dict(v) for k, v in self.ruled_out.items()}, "pairs": [dict(p) for p in self.pairs],
                "n_answered": self.n_answered}

    def summary(self) -> str:
        """One line: what the answers rule out and whether they name one contender."""
        if self.winner is None:
            return "no answers yet"
        out = "; ".join(f"{c} ruled out by {r['by']} ({r['wins']}:{r['losses']})" for c, r in self.ruled_out.items())
        if self.decided:
            return f"{self.winner} is separated from every other contender ({self.pair_counts()})"
        return (f"{(out + '; ') if out else ''}{', '.join(self.remaining)} not separated yet{self.need()}; "
                f"{self.winner} against the others: {self.pair_counts()}")

    def pair_counts(self) -> str:
        """The winner's paired counts against each other contender: "b 3:1, c 2:2" (wins:losses on the questions
        where exactly one of the two orders the person's way)."""
        return ", ".join(f"{p['other']} {p['wins']}:{p['losses']}" for p in self.pairs)

    def need(self) -> str:
        """The note " (at least N answers needed)" while fewer answers than :data:`MIN_ANSWERED` are given; else empty."""
        return f" (at least {MIN_ANSWERED} answers needed)" if self.n_answered < MIN_ANSWERED else ""


def verdict(agree: Mapping[str, np.ndarray], names: Sequence[str], *, z: float = Z_DECIDE,
            min_answered: int = MIN_ANSWERED) -> Verdict:
    """What the answers decide between the contenders ``names`` (in label-free order).

    ``agree[name]`` is bool (m,) over the answered questions (:func:`agrees`). Two contenders are compared on the
    questions where exactly one of them orders the person's way (a paired sign test): one *beats* the other when its
    share of those questions has a Wilson interval (``z``: :data:`Z_DECIDE`, 99.9 %) above one half, once at least
    ``min_answered`` answers are given. The contenders no other beats remain, in label-free order; the first of
    them is the ``winner`` (what the answers cannot tell apart, the label-free order decides), and the answers decide
    when only one remains. So the label-free pick (``names[0]``) stands unless another contender beats it. (Wins minus
    losses of x against y is x's agreements minus y's, so "beats" follows the agreement counts and has no cycle: the
    contender agreeing most is never ruled out.)
    """
    names = [n for n in names if n in agree]
    m = len(agree[names[0]]) if names else 0
    if not names or m == 0:
        return Verdict(None, False, [], m, list(names), {})

    def duel(x: str, y: str) -> dict[str, Any]:
        wins = int(np.sum(agree[x] & ~agree[y]))
        losses = int(np.sum(agree[y] & ~agree[x]))
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
    remaining = [c for c in names if c not in ruled_out]
    winner = remaining[0]
    pairs = [{"other": c, **duel(winner, c)} for c in names if c != winner]
    return Verdict(winner, len(names) >= 2 and len(remaining) == 1, pairs, m, remaining, ruled_out)

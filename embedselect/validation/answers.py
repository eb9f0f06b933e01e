"""How candidates agree with a person's answers to triplet questions (``embedselect ask``), and what the answers
decide between the contenders. The questions file itself (read, check, write) is :mod:`embedselect.validation.questions`.

A question shows an anchor item and two others, ``a`` and ``b``; the answer is ``a``, ``b`` or ``skip``. A candidate
*agrees* with an answer when its embedding orders the triplet the person's way: cosine(anchor, a) > cosine(anchor, b)
for ``a``, the reverse for ``b`` (a tie agrees with neither), the cosines taken about the mean of the candidate's
vectors over the data (:func:`orders`). Its agreement is the share of answered (not skipped)
questions it agrees with, with a Wilson score interval.

What the answers decide between the contenders (one candidate per model family) is the rule of
:mod:`embedselect.validation.duels` (:func:`contenders`, :func:`verdict`; re-exported here), with each answered
question scored 1 for a contender that orders it the person's way and 0 otherwise.
"""

from __future__ import annotations

import filecmp
import math
import os
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from embedselect.errors import AnswersError
from embedselect.validation.duels import (
    DECIDE_LEVEL,
    MIN_ANSWERED,
    TOP_CONTENDERS,
    Z95,
    Z_DECIDE,
    Verdict,
    contenders,
    verdict,
    wilson,
)
from embedselect.validation.questions import Question

__all__ = ["DECIDE_LEVEL", "MIN_ANSWERED", "TOP_CONTENDERS", "Z95", "Z_DECIDE", "Agreement", "Answered", "Verdict",
           "agrees", "centre_of", "contenders", "orders", "resolve", "same_image", "same_text", "verdict", "wilson"]


# --- the answers against the data ----------------------------------------------------------------------------------
def same_text(a: str, b: str) -> bool:
    """Texts equal up to runs of white space (a spreadsheet may change line ends and trailing spaces)."""
    return " ".join(a.split()) == " ".join(b.split())


def same_image(cell: str, path: str) -> bool:
    """Whether a questions file's image cell (the image's path when ``ask`` wrote the file) can show the data's image
    at ``path``: the same path, a cell that names no file any more (the folder moved; its id decides), or a file
    with the same bytes (a copy of the folder). False only when the cell names another file with other bytes: an
    image of another folder whose files have the same names (as two cameras name their photos)."""
    if os.path.abspath(cell) == os.path.abspath(path):
        return True
    try:
        return not os.path.isfile(cell) or filecmp.cmp(cell, path, shallow=False)
    except OSError:  # unreadable: the id decides
        return True


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
            images: bool = False, source: str = "") -> Answered:
    """Check ``questions`` against the reference data and return the answered ones as item positions.

    Args:
        questions: from :func:`~embedselect.validation.questions.read_questions`.
        ids: the data's item ids (``ReferenceData.ids``), in order.
        shown: what the file shows of each item (``anchor`` / ``a`` / ``b``): the data's texts, compared up to
            white space (:func:`same_text`), or with ``images`` the images' paths (:func:`same_image`); None: the
            ids alone.
        images: ``shown`` holds image paths.
        source: named in messages.

    Raises:
        AnswersError (exit 3): an id the data does not have, a text that differs from the data's item of that id, or
            an image cell naming another file with other bytes (answers to another data set, or data changed since);
            the message names the row.
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
            if shown is not None and images and not same_image(text, shown[i]):
                raise AnswersError(f"{where}the {col} image {text[:200]!r} is another file than item {item_id} of "
                                   f"this data ({shown[i][:200]!r}): these answers belong to another data set (a "
                                   "folder whose images have the same names); run `embedselect ask` on this data for "
                                   "a new file", row=q.row)
            if shown is not None and not images and not same_text(text, shown[i]):
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

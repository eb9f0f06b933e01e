"""A person's answers to triplet questions (``embedselect ask``): the CSV both a person and a script fill, and how
each candidate agrees with the answers.

A question shows an anchor item and two others, ``a`` and ``b``: which of the two is closer to the anchor? The answer
is ``a``, ``b`` or ``skip`` (empty: not answered yet). A candidate *agrees* with an answer when its embedding orders
the triplet the person's way: cosine(anchor, a) > cosine(anchor, b) for ``a``, the reverse for ``b`` (a tie agrees
with neither). Its agreement is the share of answered (not skipped) questions it agrees with, with a Wilson score
interval.

The contenders are one candidate per model family (:func:`contenders`): the best member of each family among a
ranking's leaders when they span two families or more, else the best members of its first :data:`TOP_CONTENDERS`
families. Between them the answers decide with a paired rule (:func:`verdict`): a contender is ruled out when another
one orders more of the questions on which exactly one of the two agrees the person's way, with a Wilson interval
above one half (:data:`DECIDE_LEVEL`: 99.9 %), after at least :data:`MIN_ANSWERED` answers; the answers decide when
one contender remains. The label-free pick stands unless such an interval rules it out.
"""

from __future__ import annotations

import csv
import io
import math
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from embedselect.errors import AnswersError, ConfigError

COLUMNS = ("question_id", "anchor_id", "a_id", "b_id", "anchor", "a", "b", "answer")
"""The CSV's columns, in order; ``ask`` writes exactly these (a file with another header is not one of its own)."""
ANSWERS = ("a", "b", "skip")
"""The answers a row may hold (case and surrounding spaces ignored); an empty cell is a question not answered yet."""
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
MAX_BYTES = 64 << 20
"""A questions file larger than this is refused (a person answers tens of questions, not millions)."""


@dataclass(frozen=True)
class Question:
    """One row of the questions file. ``answer`` is ``""`` (not answered), ``"a"``, ``"b"`` or ``"skip"``; ``row``
    is its data row in the file it was read from (1-based, the header not counted; 0 for a new question)."""

    question_id: int
    anchor_id: str
    a_id: str
    b_id: str
    anchor: str
    a: str
    b: str
    answer: str = ""
    row: int = 0

    @property
    def ids(self) -> tuple[str, str, str]:
        return self.anchor_id, self.a_id, self.b_id

    def to_row(self) -> list[str]:
        return [str(self.question_id), self.anchor_id, self.a_id, self.b_id, self.anchor, self.a, self.b, self.answer]


def normal_answer(value: Any, *, row: int | None = None, where: str = "") -> str:
    """``value`` as one of ``""``, ``"a"``, ``"b"``, ``"skip"`` (case and spaces ignored; NaN/None are empty).

    Raises:
        AnswersError: anything else, naming ``where`` (the row).
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    text = str(value).strip().lower()
    if text in ("",) + ANSWERS:
        return text
    raise AnswersError(f"{where}answer {str(value)[:40]!r} is not a, b or skip (or empty, not answered yet); "
                       "correct it and run again", row=row)


# --- the file ----------------------------------------------------------------------------------------------------
def read_questions(source: str | os.PathLike | Any) -> list[Question]:
    """The questions of a file ``ask`` wrote (and a person or a script filled), or of the DataFrame ``ask()``
    returned.

    Args:
        source: a path, or a pandas DataFrame with the :data:`COLUMNS`.

    Returns:
        the questions in file order.

    Raises:
        AnswersError (exit 3): missing, not a regular file, not UTF-8, not CSV, a header without the
            :data:`COLUMNS`, a row with another number of fields, a question id that is not a whole number or
            repeats, an empty id, an item used twice in one question, an answer other than a / b / skip. The
            message names the row (1-based data row; the file's line in brackets).
    """
    if not isinstance(source, (str, os.PathLike)):
        return _from_frame(source)
    path = Path(source)
    try:
        if not path.is_file():
            raise AnswersError(f"answers file {path} {'is not a regular file' if path.exists() else 'does not exist'}"
                               "; give the CSV that `embedselect ask` wrote")
        if path.stat().st_size > MAX_BYTES:
            raise AnswersError(f"answers file {path} is larger than {MAX_BYTES >> 20} MiB: not a questions file")
        raw = path.read_bytes()
    except OSError as exc:
        raise AnswersError(f"answers file {path} cannot be read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise AnswersError(f"answers file {path} is not UTF-8 text ({exc.reason} at byte {exc.start}); save it as "
                           "UTF-8 CSV") from None
    return parse_questions(text, name=str(path))


def parse_questions(text: str, *, name: str = "answers file") -> list[Question]:
    """:func:`read_questions` of CSV ``text`` (``name`` says where it came from in messages)."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, None)
        if header is None:
            raise AnswersError(f"{name} is empty: expected the header {','.join(COLUMNS)}")
        header = [h.strip() for h in header]
        missing = [c for c in COLUMNS if c not in header]
        if missing:
            raise AnswersError(f"{name} is not a questions file of `embedselect ask`: its header lacks "
                               f"{', '.join(missing)} (expected {','.join(COLUMNS)})", row=0)
        if len(set(header)) != len(header):
            raise AnswersError(f"{name}: the header names a column twice ({','.join(header)})", row=0)
        pos = {c: header.index(c) for c in COLUMNS}
        out: list[Question] = []
        seen: dict[int, int] = {}
        for row_no, fields in enumerate(reader, start=1):
            where = f"{name}, row {row_no} (line {reader.line_num}): "
            if not fields or all(not f.strip() for f in fields):
                continue  # a blank line (a spreadsheet's trailing row)
            if len(fields) != len(header):
                raise AnswersError(f"{where}{len(fields)} fields where the header has {len(header)}; a text with a "
                                   "comma or a line break must be in double quotes", row=row_no)
            q = _question({c: fields[i] for c, i in pos.items()}, row_no, where)
            if q.question_id in seen:
                raise AnswersError(f"{where}question_id {q.question_id} is also on row {seen[q.question_id]}",
                                   row=row_no)
            seen[q.question_id] = row_no
            out.append(q)
    except csv.Error as exc:
        raise AnswersError(f"{name}, line {reader.line_num}: not valid CSV ({exc})", row=None) from None
    return out


def _question(cells: Mapping[str, Any], row_no: int, where: str) -> Question:
    raw_id = str(cells["question_id"]).strip()
    try:
        qid = int(raw_id)
    except ValueError:
        raise AnswersError(f"{where}question_id {raw_id[:40]!r} is not a whole number", row=row_no) from None
    ids = [str(cells[c]).strip() for c in ("anchor_id", "a_id", "b_id")]
    for c, v in zip(("anchor_id", "a_id", "b_id"), ids):
        if not v:
            raise AnswersError(f"{where}{c} is empty", row=row_no)
    if len(set(ids)) < 3:
        raise AnswersError(f"{where}the anchor, a and b must be three different items (ids {', '.join(ids)})",
                           row=row_no)
    answer = normal_answer(cells["answer"], row=row_no, where=where)
    return Question(qid, ids[0], ids[1], ids[2], str(cells["anchor"]), str(cells["a"]), str(cells["b"]),
                    answer=answer, row=row_no)


def _from_frame(df: Any) -> list[Question]:
    import pandas as pd

    if not isinstance(df, pd.DataFrame):
        raise ConfigError(f"answers must be a path to the questions CSV or the DataFrame ask() returned, not "
                          f"{type(df).__name__}")
    cols = [c for c in COLUMNS if c not in df.columns]
    if cols:
        raise AnswersError(f"the answers DataFrame lacks the columns {', '.join(cols)}", row=0)
    out: list[Question] = []
    seen: dict[int, int] = {}
    for row_no, rec in enumerate(df[list(COLUMNS)].to_dict("records"), start=1):
        cells = {k: ("" if v is None or (isinstance(v, float) and math.isnan(v)) else v) for k, v in rec.items()}
        cells["answer"] = rec["answer"]
        q = _question(cells, row_no, f"answers row {row_no}: ")
        if q.question_id in seen:
            raise AnswersError(f"answers row {row_no}: question_id {q.question_id} is also on row "
                               f"{seen[q.question_id]}", row=row_no)
        seen[q.question_id] = row_no
        out.append(q)
    return out


def questions_csv(questions: Sequence[Question]) -> str:
    """The CSV text of ``questions`` (header :data:`COLUMNS`, every field quoted where CSV needs it, ``\\r\\n``
    line ends as the csv module and spreadsheets write them)."""
    buf = io.StringIO(newline="")
    w = csv.writer(buf)
    w.writerow(COLUMNS)
    for q in questions:
        w.writerow(q.to_row())
    return buf.getvalue()


def questions_frame(questions: Sequence[Question]):
    """The questions as a pandas DataFrame with the :data:`COLUMNS` (``question_id`` int64, the rest str)."""
    import pandas as pd

    df = pd.DataFrame([q.to_row() for q in questions], columns=list(COLUMNS))
    df["question_id"] = df["question_id"].astype("int64")
    return df


def is_questions_file(path: Path) -> bool:
    """True when ``path`` is a regular file whose first line is exactly the :data:`COLUMNS` header ``ask`` writes:
    only such a file is ever replaced (a user's own CSV of the same name is not)."""
    try:
        if path.is_symlink() or not path.is_file():
            return False
        with open(path, "rb") as fh:
            first = fh.readline(4096)
        return first.decode("utf-8-sig").strip() == ",".join(COLUMNS)
    except (OSError, UnicodeDecodeError):
        return False


def write_questions(path: str | os.PathLike, questions: Sequence[Question]) -> None:
    """Write the questions file atomically (:func:`embedselect._fs.guard.write_text`: a complete new copy renamed
    over the old one, so a kill leaves the old or the new file, never a part).

    Raises:
        ConfigError: ``path`` exists but is not a questions file this tool wrote (:func:`is_questions_file`), or is a
            link; it is left as it is.
    """
    from embedselect._fs import guard as fsguard

    p = Path(path)
    fsguard.check_replaceable([p], ours=is_questions_file, what="--out")
    fsguard.write_text(p, questions_csv(questions))


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
        questions: from :func:`read_questions`.
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
                                   "belong to another data set (or the data changed since `ask` wrote them); run "
                                   "`embedselect ask` on this data for a new file", row=q.row)
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
def orders(vectors: np.ndarray, triplets: np.ndarray) -> np.ndarray:
    """cosine(anchor, a) - cosine(anchor, b) per triplet, in float64: shape (m,) for (n, d) ``vectors`` and
    (m, 3) ``triplets`` of row positions. A zero vector gives NaN (it orders nothing)."""
    t = np.asarray(triplets, dtype=np.int64).reshape(-1, 3)
    if not len(t):
        return np.zeros(0)

    def unit(rows: np.ndarray) -> np.ndarray:
        x = np.asarray(vectors[rows], dtype=np.float64)
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


def with_answer(questions: Sequence[Question], question_id: int, answer: str) -> list[Question]:
    """A copy of ``questions`` with question ``question_id``'s answer set to ``answer`` (normalised)."""
    value = normal_answer(answer)
    return [replace(q, answer=value) if q.question_id == question_id else q for q in questions]

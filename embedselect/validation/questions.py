"""The questions file of ``embedselect ask``: one triplet question a row, the CSV both a person and a script fill.

A question shows an anchor item and two others, ``a`` and ``b``: which of the two is closer to the anchor? The answer
is ``a``, ``b`` or ``skip`` (empty: not answered yet). This module reads, checks, writes and edits that file
(:func:`read_questions`, :func:`write_questions`, :func:`with_answer`); how candidates agree with the answers is
:mod:`embedselect.validation.answers`.
"""

from __future__ import annotations

import csv
import io
import math
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

from embedselect.errors import AnswersError, ConfigError

COLUMNS = ("question_id", "anchor_id", "a_id", "b_id", "anchor", "a", "b", "answer")
"""The CSV's columns, in order; ``ask`` writes exactly these (a file with another header is not one of its own)."""
ANSWERS = ("a", "b", "skip")
"""The answers a row may hold (case and surrounding spaces ignored); an empty cell is a question not answered yet."""
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
    """True when ``path`` is a regular file whose header names exactly the :data:`COLUMNS` ``ask`` writes, each once,
    in any order, as :func:`parse_questions` reads a header (a byte-order mark, spaces around a name, quotes and
    ``\r\n`` line ends ignored): the file ``ask`` wrote, also after a spreadsheet saved it with its columns moved.
    Only such a file is ever replaced (rewritten in ask's column order; every column it has is one ask writes); a
    user's own CSV of the same name, or a questions file with a column added, is not. Not a link, not a named pipe
    (its read would block)."""
    try:
        if path.is_symlink() or not path.is_file():
            return False
        with open(path, "rb") as fh:
            first = fh.readline(4096).decode("utf-8-sig")
        header = [h.strip() for h in next(csv.reader([first]), [])]
    except (OSError, UnicodeDecodeError, csv.Error):
        return False
    return len(header) == len(COLUMNS) and set(header) == set(COLUMNS)


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


def with_answer(questions: Sequence[Question], question_id: int, answer: str) -> list[Question]:
    """A copy of ``questions`` with question ``question_id``'s answer set to ``answer`` (normalised)."""
    value = normal_answer(answer)
    return [replace(q, answer=value) if q.question_id == question_id else q for q in questions]

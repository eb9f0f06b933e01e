"""A user's search queries and the reference items each should find (``validate --queries``, ``select(queries=)``).

The file is a table (CSV, TSV, JSONL, JSON, Parquet; ``.gz`` allowed except Parquet) with two columns:

- ``query``: the text a user would search with;
- ``relevant``: the item(s) of the reference data that query should find. Read as ids first: split on ``;``, and if
  every part (spaces around it stripped) is an id of the reference data (for a file, its 1-based data row, or the
  value of its ``id_column`` / ``--id-column``; see :mod:`embedselect.data`), those items are relevant. Otherwise the whole cell must be the exact text of an item
  (every item with that text is relevant), or else each ``;``-part must be an id or an item's exact text. In JSON /
  JSONL a list (``[12, 40]``) is a list of parts. An exact copy of a relevant item (the same text under another id)
  is relevant too: no embedding can tell the two apart, so the search ranks them together, and a copy left out
  would cost every candidate the same place on a coin toss of their order.

Rows are numbered as the reference data's are: the 1-based data row, the header not counted. A row whose query is
empty, with no relevant item, or naming an id or text that is not among the reference items (left out by
``--max-items``, or misspelt) is an error that names the row: nothing is dropped silently.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from embedselect.errors import ColumnNotFoundError, DataError, DataFileNotFoundError, DecodeError, EmptyDataError

QUERY_COLUMN = "query"
RELEVANT_COLUMN = "relevant"
MAX_ROWS_IN_MESSAGE = 5


class QueryFileError(DataError):
    """A queries file cannot be used as given (the message names the file and the rows)."""


@dataclass(frozen=True)
class QuerySet:
    """Queries matched to the reference data.

    Attributes:
        queries: the query texts, in file order.
        relevant: per query, the sorted rows (0-based positions in the reference data's ``items``) it should find.
        rows: per query, its 1-based data row in the file.
        source: the file (or ``"<list of N queries>"``).
        fingerprint: sha256 over the queries and their relevant rows, and the reference data's fingerprint.
    """

    queries: tuple[str, ...]
    relevant: tuple[tuple[int, ...], ...]
    rows: tuple[int, ...]
    source: str
    fingerprint: str

    def __len__(self) -> int:
        return len(self.queries)

    def to_dict(self) -> dict[str, Any]:
        """What a ranking records about its queries: source, count, relevant items per query, fingerprint."""
        per = [len(r) for r in self.relevant]
        return {"source": self.source, "n_queries": len(self.queries), "fingerprint": self.fingerprint,
                "relevant_per_query": (sum(per) / len(per)) if per else 0.0}


def _cell(v: Any) -> Any:
    """A table cell as read: None for a missing value (NaN, None)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    return v


def _read_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of the queries file as dicts (every column kept, values as read; CSV/TSV cells as strings)."""
    import pandas as pd

    from embedselect.data.readers import detect_format, read_bytes

    fmt, gz = detect_format(path, None)
    try:
        if fmt == "parquet":
            frame = pd.read_parquet(path)
        else:
            raw = read_bytes(path, gz)
            try:
                text = raw.decode("utf-8-sig")
            except UnicodeDecodeError as exc:
                raise DecodeError(f"queries file {path} is not UTF-8 text ({exc.reason} at byte {exc.start}); save it "
                                  "as UTF-8") from None
            if not text.strip():
                raise EmptyDataError(f"queries file {path} is empty: write a header 'query,relevant' and one row per "
                                     "query")
            if fmt in ("csv", "tsv"):
                frame = pd.read_csv(io.StringIO(text), sep="," if fmt == "csv" else "\t", dtype=str,
                                    keep_default_na=False, na_values=[])
            elif fmt == "jsonl":
                frame = pd.DataFrame([json.loads(line) for line in text.splitlines() if line.strip()])
            else:
                got = json.loads(text)
                frame = pd.DataFrame(got if isinstance(got, list) else [got])
    except (QueryFileError, DecodeError, EmptyDataError):
        raise
    except (ValueError, TypeError, OSError) as exc:  # a malformed table or JSON line
        raise QueryFileError(f"queries file {path} cannot be read as {fmt}: {exc}") from None
    return frame.to_dict(orient="records")


def _parts(v: Any) -> list[str]:
    """The ``;``-separated parts of a relevant cell (a JSON list: its elements), spaces stripped, empty ones
    dropped."""
    if isinstance(v, (list, tuple)):
        items = [str(x) for x in v if _cell(x) is not None]
        return [p.strip() for x in items for p in x.split(";") if p.strip()]
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return [p.strip() for p in str(v).split(";") if p.strip()]


def match_queries(rows: Sequence[Mapping[str, Any]], ids: Sequence[str], items: Sequence[Any], *, source: str,
                  ref_fingerprint: str = "", id_column: str | None = None) -> QuerySet:
    """Match query rows to reference items (the rules of the module docstring).

    Args:
        rows: dicts with ``query`` and ``relevant`` (other keys ignored), in file order; row i is data row i + 1.
        ids: the reference data's item ids; items: its items (texts), aligned with ``ids``.
        source: named in messages.
        ref_fingerprint: the reference data's fingerprint (part of the set's fingerprint).
        id_column: the column the reference data's ids come from (named in messages), or None for row numbers.

    Raises:
        QueryFileError: no rows, a column missing, an empty query, a row without a relevant item, an id or text that
            is not a reference item; the message names the rows.
    """
    if not rows:
        raise EmptyDataError(f"queries file {source} has no rows: add one row per query (columns query, relevant)")
    columns = list(rows[0])
    missing = [c for c in (QUERY_COLUMN, RELEVANT_COLUMN) if c not in columns]
    if missing:
        raise ColumnNotFoundError(f"queries file {source} has no column {' or '.join(repr(c) for c in missing)} (its "
                                  f"columns: {', '.join(map(repr, columns)) or 'none'}); it needs 'query' and "
                                  "'relevant'")
    by_id = {str(i): r for r, i in enumerate(ids)}
    by_text: dict[str, list[int]] = {}
    for r, it in enumerate(items):
        if isinstance(it, str):
            by_text.setdefault(it, []).append(r)
    problems: list[str] = []
    queries, relevant, numbers = [], [], []
    for i, row in enumerate(rows):
        n = i + 1
        q, rel = _cell(row.get(QUERY_COLUMN)), _cell(row.get(RELEVANT_COLUMN))
        if q is None or not str(q).strip():
            problems.append(f"row {n}: the query is empty")
            continue
        parts = [] if rel is None else _parts(rel)
        if not parts:
            problems.append(f"row {n} ({str(q)[:40]!r}): no relevant item; give its id(s), ';'-separated, or its text")
            continue
        found: set[int] = set()
        if all(p in by_id for p in parts):
            found = {by_id[p] for p in parts}
        elif isinstance(rel, str) and (rel in by_text or rel.strip() in by_text):
            found = set(by_text.get(rel) or by_text[rel.strip()])
        else:
            unknown = []
            for p in parts:
                if p in by_id:
                    found.add(by_id[p])
                elif p in by_text:
                    found.update(by_text[p])
                else:
                    unknown.append(p)
            if unknown:
                problems.append(f"row {n}: {', '.join(repr(u[:60]) for u in unknown[:3])} is neither an id of the "
                                f"{len(ids)} reference items nor the exact text of one")
                continue
        found.update(r for f in list(found) if isinstance(items[f], str) for r in by_text[items[f]])  # its copies
        queries.append(str(q))
        relevant.append(tuple(sorted(found)))
        numbers.append(n)
    if problems:
        more = f" (and {len(problems) - MAX_ROWS_IN_MESSAGE} more rows)" if len(problems) > MAX_ROWS_IN_MESSAGE else ""
        which = (f"the values of its id column {id_column!r}" if id_column else
                 "the reference data's 1-based data rows (or positions for a list)")
        hint = (f" Ids are {which}; an id left out by --max-items is not among the items."
                if any("neither an id" in p for p in problems) else "")
        raise QueryFileError(f"queries file {source}: " + "; ".join(problems[:MAX_ROWS_IN_MESSAGE]) + more + "." + hint)
    h = hashlib.sha256(b"embedselect-queries-v1\0" + ref_fingerprint.encode() + b"\0")
    for q, rel in zip(queries, relevant):
        h.update(json.dumps([q, list(rel)]).encode() + b"\n")
    return QuerySet(queries=tuple(queries), relevant=tuple(relevant), rows=tuple(numbers), source=source,
                    fingerprint=h.hexdigest())


def load_queries(obj: Any, ref: Any) -> QuerySet:
    """The queries of ``obj`` matched to the reference data ``ref`` (a :class:`~embedselect.data.ReferenceData`).

    Args:
        obj: a queries file (see the module docstring), a list of ``{"query": ..., "relevant": ...}`` dicts, a pandas
            DataFrame with those columns, or a :class:`QuerySet` (returned as it is).

    Raises:
        DataFileNotFoundError: the file does not exist. QueryFileError / EmptyDataError / ColumnNotFoundError: see
            :func:`match_queries`. DataError: the reference data are images (queries are texts).
    """
    if isinstance(obj, QuerySet):
        return obj
    if getattr(ref, "modality", "text") != "text":
        raise QueryFileError("queries search text reference data; the reference data here are images")
    if isinstance(obj, (str, Path)):
        path = Path(obj).expanduser()
        if not path.exists():
            raise DataFileNotFoundError(f"queries file {path} does not exist")
        if not path.is_file():
            raise QueryFileError(f"queries file {path} is not a file (a folder, a device or a pipe); name the file")
        rows, source = _read_rows(path), str(path)
    elif hasattr(obj, "to_dict") and hasattr(obj, "columns"):  # a DataFrame
        rows, source = obj.to_dict(orient="records"), f"<table of {len(obj)} queries>"
    elif isinstance(obj, Sequence) and all(isinstance(r, Mapping) for r in obj):
        rows, source = [dict(r) for r in obj], f"<list of {len(obj)} queries>"
    else:
        raise QueryFileError(f"cannot read queries from {type(obj).__name__}: pass a file (columns query, relevant), "
                             "a list of {'query': ..., 'relevant': ...} dicts or a DataFrame")
    return match_queries(rows, list(ref.ids), list(ref.items), source=source, ref_fingerprint=ref.fingerprint,
                         id_column=getattr(ref, "id_column", None))


__all__ = ["QUERY_COLUMN", "RELEVANT_COLUMN", "QueryFileError", "QuerySet", "load_queries", "match_queries"]

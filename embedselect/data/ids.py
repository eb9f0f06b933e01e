"""Item ids from a table's id column (``id_column=`` / ``--id-column``): the one rule every table format and DataFrame
uses to turn a column's cells into the items' ids, and the checks that the column can give them."""

from __future__ import annotations

from typing import Any

import numpy as np

from embedselect._util.arrays import is_missing
from embedselect.data.readers import BadItem, missing_column_message
from embedselect.errors import ColumnNotFoundError, ConfigError, IdColumnError


def check_id_column(id_column: str, columns: list[str], *, column: str | None, label_column: str | None,
                    source: str) -> None:
    """Refuse an id column that the table lacks (near names suggested) or that is its text or label column.

    Raises:
        ColumnNotFoundError: ``id_column`` is not among ``columns``.
        ConfigError: ``id_column`` is the text column ``column`` or the label column.
    """
    if id_column not in columns:
        raise ColumnNotFoundError(missing_column_message("id column", id_column, columns, source, []))
    for what, other in (("text", column), ("label", label_column)):
        if other == id_column:
            raise ConfigError(f"the id column {id_column!r} is also the {what} column ({source}); the ids must come "
                              f"from a column of their own: pass another --id-column / id_column=, or drop it")


def id_text(v: Any) -> str | None:
    """One id cell as the id's text: a string without its surrounding white space, a whole number without a decimal
    point (``17`` and ``17.0`` give ``"17"``: pandas stores an integer column with gaps as floats); None for a
    missing or blank cell.

    Raises:
        ValueError: a number that is not whole, a boolean, bytes that are not UTF-8, text with undecodable bytes or
            another type (the message says which).
    """
    if is_missing(v):
        return None
    if isinstance(v, (bool, np.bool_)):
        raise ValueError(f"a boolean ({v})")
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        if not float(v).is_integer():
            raise ValueError(f"{float(v)!r}, a number that is not whole")
        return str(int(v))
    if isinstance(v, (bytes, bytearray)):
        try:
            v = bytes(v).decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError("bytes that are not UTF-8") from None
    if not isinstance(v, str):
        raise ValueError(f"a {type(v).__name__}, not text or a number")
    try:
        v.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("text with bytes that are not UTF-8") from None
    return v.strip() or None


def ids_from_column(id_column: str, values: list[Any], rows: list[str], used: list[bool],
                    source: str) -> list[str | None]:
    """The items' ids from the id column (``id_column=`` / ``--id-column``): the one rule every table format and
    DataFrame uses.

    Args:
        id_column: the column's name (for the messages).
        values: its raw cells, one per row of the table (str, numbers, None/NaN, :class:`BadItem` for a row that
            did not parse).
        rows: each row's number as messages name rows (1-based data rows of a file, 0-based positions of a
            DataFrame).
        used: whether the row's text is used; a skipped row (empty or undecodable text) may lack an id.
        source: the data's name (for the messages).

    Returns:
        per row, its id (:func:`id_text`), or None where a skipped row has no readable id.

    Raises:
        IdColumnError: a used row without an id, a cell that is not an id (a number that is not whole, a boolean,
            ...) in a used row, or an id on more than one row (the first few named with their rows).
    """
    out: list[str | None] = []
    for v, row, use in zip(values, rows, used):
        try:
            i = None if isinstance(v, BadItem) else id_text(v)
        except ValueError as exc:
            if not use:
                out.append(None)
                continue
            raise IdColumnError(f"row {row} of {source}: its id (column {id_column!r}) is {exc}; ids must be text or "
                                "whole numbers: fix the cell or choose another --id-column / id_column=") from None
        if i is None and use:
            raise IdColumnError(f"row {row} of {source} has no id: its {id_column!r} cell is empty; give every row an "
                                "id, or drop the row")
        out.append(i)
    seen: dict[str, list[str]] = {}
    for i, row in zip(out, rows):
        if i is not None:
            seen.setdefault(i, []).append(row)
    dup = [(i, r) for i, r in seen.items() if len(r) > 1]
    if dup:
        shown = "; ".join(f"{i[:60]!r} (rows {', '.join(r[:4])}{', ...' if len(r) > 4 else ''})"
                          for i, r in dup[:5])
        more = f"; ... {len(dup) - 5} more" if len(dup) > 5 else ""
        raise IdColumnError(f"the id column {id_column!r} of {source} holds {len(dup)} id(s) on more than one row: "
                            f"{shown}{more}; ids must be unique: fix them or choose another --id-column / id_column=")
    return out

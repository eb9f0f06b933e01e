"""Names as text that can be stored and shown: a file name with bytes that are not UTF-8 (``caf\\xe9.csv`` made by
a Latin-1 system) reaches Python as a string with surrogate escapes, which DuckDB, JSON files and terminals refuse;
a name too long for the room a terminal has is cut in the middle."""

from __future__ import annotations

import os


def storable_name(name: str | os.PathLike[str]) -> str:
    """``name`` (a path or any text from the file system) with every byte that is not UTF-8 written as a ``\\xNN``
    escape, e.g. ``'/data/caf\\udce9.csv'`` -> ``'/data/caf\\\\xe9.csv'``; text without such bytes is unchanged."""
    text = os.fspath(name)
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def cut_middle(name: str, width: int) -> str:
    """``name`` in at most ``width`` characters, an ellipsis in the middle when it is longer (a candidate's start is
    its model, its end the variant or the stage: both tell two apart), e.g. ``cut_middle("all-MiniLM-L6-v2 (CLS
    pooling)", 16)`` -> ``'all-Min…pooling)'``."""
    if len(name) <= width:
        return name
    if width < 2:
        return name[:width]
    head = (width - 1) // 2
    return name[:head] + "…" + name[len(name) - (width - 1 - head):]

"""File names as text that can be stored and shown: a name with bytes that are not UTF-8 (``caf\\xe9.csv`` made by
a Latin-1 system) reaches Python as a string with surrogate escapes, which DuckDB, JSON files and terminals refuse."""

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

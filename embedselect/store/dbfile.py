"""Opening the cache's DuckDB file: waiting while a program outside embedselect holds it, and telling a damaged file
(:class:`~embedselect.errors.StoreCorruptError`, with its recovery) from a busy one, at the open and at any query."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any, Iterator

from embedselect.errors import StoreCorruptError, StoreError, StoreLockedError

CORRUPTION_SIGNS = (
    "not a valid duckdb database",
    "could not read enough bytes",
    "corrupt database file",
    "checksum",
    "failed to read database header",
    "unexpected end of file",
)
"""Lower-case phrases of DuckDB's errors (1.x) for a damaged database file: truncated ("could not read enough
bytes"), overwritten header ("not a valid DuckDB database file"), damaged blocks ("Corrupt database file: computed
checksum ... does not match")."""


def corrupt_error(db_path: Path, exc: BaseException) -> StoreCorruptError | None:
    """The :class:`StoreCorruptError` for DuckDB's error ``exc`` on ``db_path`` when it says the file is damaged,
    else None."""
    import duckdb

    text = str(exc).lower()
    if not isinstance(exc, duckdb.Error) or not any(sign in text for sign in CORRUPTION_SIGNS):
        return None
    first = " ".join(str(exc).split())[:300]
    return StoreCorruptError(
        f"the cache database {db_path} is damaged and cannot be read ({first}). Move it aside (e.g. "
        f"`mv {db_path} {db_path}.broken`, and its .wal file if there is one): the next run starts a new cache database there and computes the embeddings "
        "again (`embedselect cache gc` then removes the vector files no row points at); or use another --cache-dir"
    )


def connect(db_path: Path, *, read_only: bool, lock_timeout: float) -> Any:
    """A DuckDB connection to ``db_path`` (read-only or not), retried for up to ``lock_timeout`` seconds while another
    program holds the file.

    Raises:
        StoreCorruptError: the file is damaged (see :data:`CORRUPTION_SIGNS`).
        StoreLockedError: still held by another program after ``lock_timeout`` seconds.
        StoreError: any other reason DuckDB cannot open it.
    """
    import duckdb

    mode = " read-only" if read_only else ""
    deadline = time.monotonic() + lock_timeout
    while True:
        try:
            return duckdb.connect(str(db_path), read_only=read_only)
        except duckdb.Error as exc:
            corrupt = corrupt_error(db_path, exc)
            if corrupt is not None:
                raise corrupt from exc
            if not isinstance(exc, duckdb.IOException):
                raise StoreError(f"cannot open the{mode} cache database {db_path}: {exc}. Move it aside (the vectors "
                                 "are recomputed) or use another --cache-dir.") from exc
            if "lock" not in str(exc).lower() or time.monotonic() > deadline:  # held by a program outside embedselect
                raise StoreLockedError(f"cannot open {db_path}{mode}: {exc}. Close other programs using it.") from exc
            time.sleep(0.2)


@contextlib.contextmanager
def corruption_guard(db_path: Path) -> Iterator[None]:
    """Turn DuckDB's errors for a damaged ``db_path`` raised inside the block (a query reaching a truncated part of
    the file) into :class:`StoreCorruptError`; other errors pass unchanged."""
    try:
        yield
    except Exception as exc:
        corrupt = corrupt_error(db_path, exc)
        if corrupt is None:
            raise
        raise corrupt from exc

"""Opening the cache's DuckDB file: waiting while a program outside embedselect holds it, and telling a damaged file
(:class:`~embedselect.errors.CacheDatabaseCorruptError`, with its recovery) from a busy one, at the open and at any query.

Every connection is opened by :func:`open_duckdb`, with DuckDB's extension auto-install and auto-load off
(:data:`DUCKDB_CONFIG`): a file of another format in the cache's place (a SQLite database) is refused as "not a DuckDB
database", never a reason to fetch and load a native extension."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any, Iterator

from embedselect.errors import CacheDatabaseCorruptError, CacheError, CacheLockedError
from embedselect.store.write_failure import cache_write_error, over_size_limit, refused_errno

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


DUCKDB_CONFIG = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}
"""The settings of every DuckDB connection of the cache: no extension is ever downloaded or loaded on DuckDB's own
initiative (it would fetch ``sqlite_scanner`` over the network to open a SQLite file given as the database)."""

_FOREIGN_HEADERS = ((b"SQLite format 3\x00", "a SQLite database"),)
"""File headers of other databases' formats, and what to call them."""


def open_duckdb(db_path: Path, *, read_only: bool) -> Any:
    """``duckdb.connect`` of ``db_path`` with :data:`DUCKDB_CONFIG`: the one place the cache's connections are made.

    Raises:
        CacheError: the file is another database's format (see :func:`foreign_format`), or it is to be opened for
            writing under a file-size limit below its size (:func:`~embedselect.store.write_failure.over_size_limit`:
            DuckDB would damage it).
        duckdb.Error: as ``duckdb.connect``.
    """
    import duckdb

    if not read_only:
        too_big = over_size_limit(db_path, root=db_path.parent)
        if too_big is not None:
            raise too_big
    kind = foreign_format(db_path)
    if kind is not None:
        raise CacheError(f"the cache database {db_path} is not a DuckDB database (it is {kind}); embedselect uses it "
                         "only as its own DuckDB file. Give another --cache-dir, or move that file out of the cache "
                         "folder if it is yours")
    return duckdb.connect(str(db_path), read_only=read_only, config=dict(DUCKDB_CONFIG))


def foreign_format(db_path: Path) -> str | None:
    """What ``db_path`` is when its header is another database format's (e.g. "a SQLite database"), else None (a
    DuckDB file, a damaged one, or none at all)."""
    try:
        with open(db_path, "rb") as fh:
            head = fh.read(16)
    except OSError:
        return None
    return next((name for magic, name in _FOREIGN_HEADERS if head.startswith(magic)), None)


def is_own_database(db_path: Path) -> bool:
    """Whether the existing file ``db_path`` is a database embedselect made: DuckDB, with the schema's marker
    (``meta.schema_version``) and its ``embedding_runs`` table. Opened read-only; nothing is written. False for
    another format, another program's DuckDB file, or one that cannot be opened."""
    import duckdb

    try:
        con = open_duckdb(db_path, read_only=True)
    except (duckdb.Error, CacheError):
        return False
    try:
        tables = {r[0] for r in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'").fetchall()}
        if not {"meta", "embedding_runs"} <= tables:
            return False
        row = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return row is not None and str(row[0]).isdigit()
    except duckdb.Error:
        return False
    finally:
        con.close()


def corrupt_error(db_path: Path, exc: BaseException) -> CacheDatabaseCorruptError | None:
    """The :class:`CacheDatabaseCorruptError` for DuckDB's error ``exc`` on ``db_path`` when it says the file is damaged,
    else None."""
    import duckdb

    text = str(exc).lower()
    if not isinstance(exc, duckdb.Error) or not any(sign in text for sign in CORRUPTION_SIGNS):
        return None
    first = " ".join(str(exc).split())[:300]
    return CacheDatabaseCorruptError(
        f"the cache database {db_path} is damaged and cannot be read ({first}). Move it aside (e.g. "
        f"`mv {db_path} {db_path}.broken`, and its .wal file if there is one): the next run starts a new cache database there and computes the embeddings "
        "again (`embedselect cache gc` then removes the vector files no row points at); or use another --cache-dir"
    )


def connect(db_path: Path, *, read_only: bool, lock_timeout: float) -> Any:
    """A DuckDB connection to ``db_path`` (read-only or not), retried for up to ``lock_timeout`` seconds while another
    program holds the file.

    Raises:
        CacheDatabaseCorruptError: the file is damaged (see :data:`CORRUPTION_SIGNS`).
        CacheLockedError: still held by another program after ``lock_timeout`` seconds.
        CacheError: not a DuckDB database (:func:`open_duckdb`), a write the file system refused (a full disk: the
            partial file of a database this open was creating is removed, so the next run starts it afresh), or any
            other reason DuckDB cannot open it.
    """
    import duckdb

    mode = " read-only" if read_only else ""
    deadline = time.monotonic() + lock_timeout
    new = not read_only and not db_path.exists()
    while True:
        try:
            return open_duckdb(db_path, read_only=read_only)
        except duckdb.Error as exc:
            if refused_errno(exc) is not None:  # a full disk or a read-only folder, not a damaged file
                if new:  # the partial file of the database this open began would read as damaged: not kept
                    for part in (db_path, db_path.with_name(db_path.name + ".wal")):
                        part.unlink(missing_ok=True)
                raise cache_write_error(exc, what="open its database", path=db_path, root=db_path.parent) from exc
            corrupt = corrupt_error(db_path, exc)
            if corrupt is not None:
                raise corrupt from exc
            if not isinstance(exc, duckdb.IOException) or "lock" not in str(exc).lower():
                raise CacheError(f"cannot open the{mode} cache database {db_path}: {exc}. Move it aside (the vectors "
                                 "are recomputed) or use another --cache-dir.") from exc
            if time.monotonic() > deadline:  # held by a program outside embedselect
                raise CacheLockedError(f"cannot open {db_path}{mode}: {exc}. Close other programs using it.") from exc
            time.sleep(0.2)


@contextlib.contextmanager
def corruption_guard(db_path: Path) -> Iterator[None]:
    """Turn DuckDB's errors for a damaged ``db_path`` raised inside the block (a query reaching a truncated part of
    the file) into :class:`CacheDatabaseCorruptError`, and a write of the database or its write-ahead log that the
    file system refused (a full disk, a file-size limit: the transaction is rolled back) into the
    :class:`CacheError` of :func:`~embedselect.store.write_failure.cache_write_error`; other errors pass unchanged."""
    try:
        yield
    except Exception as exc:
        if refused_errno(exc) is not None and not isinstance(exc, OSError):
            raise cache_write_error(exc, what="write its database", path=db_path, root=db_path.parent) from exc
        corrupt = corrupt_error(db_path, exc)
        if corrupt is None:
            raise
        raise corrupt from exc

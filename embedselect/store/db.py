"""DuckDB connections of the cache under its inter-process lock: exclusive for writes, shared for reads.

DuckDB lets one process open a database read-write, or any number of processes open it read-only, never both at
once. The cache's lock file (``<root>/.lock``) follows that rule: a write (:meth:`Database.write`,
:meth:`Database._critical`) holds the exclusive lock and a read-write connection; a read (:meth:`Database.read`)
holds a *shared* lock (``flock(LOCK_SH)``) and a read-only connection, so readers in several processes run at
once and wait only for a writer. Where the lock file cannot be locked shared (a platform without ``flock``, a
filesystem where :mod:`filelock` fell back to a soft lock) or the read-only open fails (a write-ahead log left by a
killed writer, which only a read-write open replays), a read takes the exclusive path as writes do.

Connections are re-entrant within a thread: a read or write inside another reuses the outer connection (one
connection per stage), except that a write cannot start inside a shared read (the read-only connection cannot
write, and upgrading the lock could deadlock): that raises :class:`RuntimeError`, a programming error.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any, Iterator

from embedselect.errors import CacheError, CacheLockedError, CacheReadOnlyError
from embedselect.store.dbfile import connect, corrupt_error, corruption_guard, open_duckdb

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows: every read takes the exclusive lock
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

_POLL_S = 0.05


class Database:
    """The connection half of :class:`embedselect.store.Store` (it inherits this); set up by :meth:`_init_db`."""

    root: Path
    db_path: Path
    lock_timeout: float
    read_only: bool

    def _init_db(self) -> None:
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._con: Any = None
        self._shared = False  # the open connection is a shared (read-only) one
        self._in_transaction = False
        self._schema_ready = False
        self._file_lock: Any = None

    def require_writable(self, what: str) -> None:
        """Raise :meth:`read_only_error` when the cache is read-only."""
        error = self.read_only_error(what)
        if error is not None:
            raise error

    def read_only_error(self, what: str) -> CacheReadOnlyError | None:
        """The :class:`~embedselect.errors.CacheReadOnlyError` saying that the cache cannot ``what`` (e.g. "store
        the embeddings of X"), None when it is writable; the one message for every impossible write."""
        if not self.read_only:
            return None
        return CacheReadOnlyError(f"the cache at {self.root} is read-only, so it cannot {what}; use only what it "
                                  "holds, or give a writable --cache-dir (or EMBEDSELECT_CACHE_DIR)")

    def can_record(self, what: str) -> bool:
        """False (and a debug log line) when the cache is read-only: bookkeeping (``what``, e.g. "the ranking")
        is then skipped instead of failing the work it describes."""
        if self.read_only:
            log.debug("read-only cache %s: %s not recorded", self.root, what)
        return not self.read_only

    # --- connections ------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _connection(self, *, shared: bool = False) -> Iterator[Any]:
        """Yield a DuckDB connection under the inter-process lock (shared for ``shared=True`` where possible, see
        the module docstring). Re-entrant within a thread."""
        with self._thread_lock:
            if self._depth > 0:
                if self._shared and not shared:
                    raise RuntimeError("a write was started inside a read of the same store; open the write first")
                self._depth += 1
                try:
                    yield self._con
                finally:
                    self._depth -= 1
                return
            if self.read_only:
                yield from self._read_only_connection()
                return
            if shared and self._schema_ready:
                con, fd = self._shared_connection()
                if con is not None:
                    self._con, self._depth, self._shared = con, 1, True
                    try:
                        with corruption_guard(self.db_path):
                            yield con
                    finally:
                        self._con, self._depth, self._shared = None, 0, False
                        con.close()
                        _unlock(fd)
                    return
            yield from self._exclusive_connection()

    def _lock_message(self) -> str:
        return (
            f"the cache at {self.root} is locked by another embedselect process and was not released "
            f"within {self.lock_timeout:g}s. Wait for it to finish, raise EMBEDSELECT_LOCK_TIMEOUT, "
            "or use another --cache-dir."
        )

    def _shared_connection(self) -> tuple[Any, int | None]:
        """A read-only connection under a shared lock, or (None, None) where a shared read is not possible here
        (then the caller takes the exclusive path)."""
        import duckdb
        import filelock

        if fcntl is None or not isinstance(self._file_lock, filelock.UnixFileLock):
            return None, None
        fd = os.open(self._file_lock.lock_file, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + self.lock_timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    os.close(fd)
                    raise CacheLockedError(self._lock_message()) from None
                time.sleep(_POLL_S)
            except OSError:  # flock not supported on this filesystem
                os.close(fd)
                return None, None
        try:
            return open_duckdb(self.db_path, read_only=True), fd
        except (duckdb.Error, CacheError) as exc:
            corrupt = corrupt_error(self.db_path, exc)
            if corrupt is not None:
                _unlock(fd)
                raise corrupt from exc
            log.debug("shared read of %s not possible (%s); reading under the exclusive lock", self.db_path, exc)
            _unlock(fd)
            return None, None

    def _exclusive_connection(self) -> Iterator[Any]:
        """The body of :meth:`_connection` for the exclusive lock and a read-write connection (called with the
        thread lock held); creates or migrates the schema on this object's first connection."""
        import filelock

        from embedselect.store.schema import ensure_schema

        try:
            self._file_lock.acquire(timeout=self.lock_timeout)
        except filelock.Timeout:
            raise CacheLockedError(self._lock_message()) from None
        try:
            con = connect(self.db_path, read_only=False, lock_timeout=self.lock_timeout)
            self._con, self._depth, self._shared = con, 1, False
            try:
                with corruption_guard(self.db_path):
                    if not self._schema_ready:
                        ensure_schema(con, where=f"the cache database {self.db_path}")
                        self._schema_ready = True
                    yield con
            finally:
                self._depth, self._con = 0, None
                con.close()
        finally:
            self._file_lock.release()

    def _read_only_connection(self) -> Iterator[Any]:
        """The body of :meth:`_connection` for a read-only cache (called with the thread lock held): DuckDB opened
        read-only, no lock file, no schema changes."""
        con = connect(self.db_path, read_only=True, lock_timeout=self.lock_timeout)
        self._con, self._depth, self._shared = con, 1, True
        try:
            with corruption_guard(self.db_path):
                yield con
        finally:
            self._depth, self._con, self._shared = 0, None, False
            con.close()

    @contextlib.contextmanager
    def _write(self) -> Iterator[Any]:
        """A DuckDB connection inside one transaction: committed on normal exit, rolled back on error.

        Raises:
            CacheReadOnlyError: the cache is read-only.
        """
        self.require_writable("be changed")
        with self._connection() as con:
            if self._in_transaction:  # nested: part of the outer transaction
                yield con
                return
            con.execute("BEGIN TRANSACTION")
            self._in_transaction = True
            try:
                yield con
            except BaseException:
                self._in_transaction = False
                con.execute("ROLLBACK")
                raise
            self._in_transaction = False
            con.execute("COMMIT")

    @contextlib.contextmanager
    def _critical(self) -> Iterator[Any]:
        """Hold the exclusive inter-process lock (and a connection) across several steps, e.g. a committed
        :meth:`_write` followed by file operations that must not interleave with another process's: no other process
        reads or writes the cache until it ends. Yields the connection (autocommit; open a :meth:`_write` for a
        transaction)."""
        self.require_writable("be changed")
        with self._connection() as con:
            yield con

    @contextlib.contextmanager
    def _read(self) -> Iterator[Any]:
        """A DuckDB connection for queries, under the shared lock: other readers run at once, writers wait."""
        with self._connection(shared=True) as con:
            yield con

    def query_df(self, sql: str, params: list[Any] | None = None):
        """Run a read-only query and return a pandas DataFrame."""
        with self._read() as con:
            return con.execute(sql, params or []).df()


def _unlock(fd: int | None) -> None:
    if fd is None:
        return
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)

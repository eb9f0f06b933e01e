"""The one wording of a cache write that the file system refused: a full disk or quota, a file-size limit
(``ulimit -f``), a read-only mount or a folder this user may not write. Every writer of the cache (vector files,
per-run lock files, the DuckDB database and its write-ahead log) turns such an ``OSError`` or DuckDB I/O error into
a :class:`~embedselect.errors.CacheError` (exit 6) that names the path and says what to do; nothing else is
classified here."""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

from embedselect._fs.no_room import NO_ROOM, room_remedy
from embedselect.errors import CacheError
from embedselect.store.keys import DB_NAME

_NOT_WRITABLE = {errno.EROFS, errno.EACCES, errno.EPERM}
_PHRASES = {os.strerror(code).lower(): code for code in NO_ROOM | _NOT_WRITABLE}
"""The C library's texts of those errors ("no space left on device", "file too large", "read-only file system",
...), as DuckDB quotes them in its I/O errors."""

_DUCKDB_WRITE = re.compile(r"could not (?:write|truncate|create|open) file|cannot open file|failed to commit",
                           re.IGNORECASE)
_DUCKDB_PATH = re.compile(r'file "([^"]+)"')


SHORT_WRITE = -1
"""What :func:`refused_errno` returns for numpy's short write (``"245760 requested and 51168 written"``, no errno):
a full disk, a quota or a file-size limit, which of them the system did not say."""


def refused_errno(exc: BaseException) -> int | None:
    """The errno of a write the file system refused (one of ENOSPC, EDQUOT, EFBIG, EROFS, EACCES, EPERM), read from
    an ``OSError`` or from the text of a DuckDB error, or :data:`SHORT_WRITE`; None for any other error."""
    if isinstance(exc, OSError):
        if exc.errno in NO_ROOM | _NOT_WRITABLE:
            return exc.errno
        short = exc.errno is None and re.search(r"\d+ requested and \d+ written", str(exc))
        return SHORT_WRITE if short else None
    import duckdb

    text = str(exc).lower()
    if not isinstance(exc, duckdb.Error) or not _DUCKDB_WRITE.search(text):
        return None
    return next((code for phrase, code in _PHRASES.items() if phrase in text), None)


def cache_write_error(exc: BaseException, *, what: str, path: Path | str, root: Path | str) -> CacheError:
    """The :class:`CacheError` for ``exc``, a refused write (see :func:`refused_errno`) while the cache at ``root``
    tried to ``what`` (e.g. "store the embeddings of X"); ``path`` is the file or folder it was writing (a DuckDB
    error's own path is preferred). The message names the path, the system's reason and what to do: free space
    (or raise the file-size limit) for a full disk, make the folder writable or use the cache read-only for a
    folder that cannot be written, or choose another cache."""
    code = refused_errno(exc)
    found = _DUCKDB_PATH.search(str(exc)) if not isinstance(exc, OSError) else None
    where = found.group(1) if found else (getattr(exc, "filename", None) or path)
    if code == SHORT_WRITE:
        reason = f"the file system took only part of it: {exc}"
    else:
        reason = os.strerror(code) if code is not None else (getattr(exc, "strerror", None) or str(exc))
    if code in _NOT_WRITABLE:
        folder = where if Path(where).is_dir() else Path(where).parent
        todo = f"make {folder} writable, or set EMBEDSELECT_CACHE_READONLY=1 to use only what the cache holds"
    else:  # a full disk or quota, a file-size limit: the one rule the output files say too
        todo = room_remedy(code, unsaid=code == SHORT_WRITE) or "free disk space"
    # a write into the database file itself may have left part of a block behind (seen under a file-size limit
    # below the file's size); the next run checks the file and says so when it is damaged
    kept = ("What the cache held is unchanged" if Path(where).name != DB_NAME else
            "The next run checks the database file and says whether it is damaged")
    return CacheError(f"could not {what} in the cache at {root}: writing {where} failed ({reason}); {todo}, or "
                      f"choose another cache (--cache-dir / EMBEDSELECT_CACHE_DIR). {kept}")


def file_size_limit() -> int | None:
    """This process's file-size limit in bytes (``RLIMIT_FSIZE``, the soft limit ``ulimit -f`` sets), None when there
    is none or the platform has none."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    return None if soft == resource.RLIM_INFINITY else soft


def over_size_limit(db_path: Path, *, root: Path | str) -> CacheError | None:
    """The :class:`CacheError` refusing to open the existing database file ``db_path`` for writing when this process's
    file-size limit is below its size, else None.

    DuckDB's checkpoint (at the close of every connection that wrote) rewrites blocks of the file in place, in use
    ones included (its first metadata block, at byte 12288): under a limit below the file's size the write stops at
    the limit (4096 of 262144 bytes), the block fails its checksum and the rows it held are lost. Under a limit at or
    above the file's size every in-place write is whole and only growth is refused, which the failed checkpoint leaves
    harmless (the header still names the old blocks; the write-ahead log is kept and replayed), so only the size is
    compared. The message says the one remedy of a refused write for want of room (:func:`room_remedy`)."""
    limit = file_size_limit()
    try:
        size = db_path.stat().st_size
    except OSError:
        return None
    if limit is None or size <= limit:
        return None
    return CacheError(f"could not write its database in the cache at {root}: this process's file-size limit ({limit} "
                      f"bytes) is below the size of {db_path} ({size} bytes), and a write into it cut short at the "
                      f"limit would damage it; {room_remedy(errno.EFBIG)}, or choose another cache (--cache-dir / "
                      "EMBEDSELECT_CACHE_DIR). The database was not opened for writing: nothing was written to it")


__all__ = ["SHORT_WRITE", "cache_write_error", "file_size_limit", "over_size_limit", "refused_errno"]

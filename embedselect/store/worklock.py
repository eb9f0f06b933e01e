"""The cache's per-work lock files (``locks/<key>.lock``): one process computes a piece of work that others may need
too (an embedding run, a metric's result), while each other process that needs it waits, then reads what the first
stored instead of computing it again. Held for the whole work (minutes, hours), so there is no timeout: a lock
whose holder dies is released by the system.

The lock files are empty; ``cache gc`` removes those no process holds (:func:`sweep_locks`). Where ``flock`` is
available (POSIX), a lock is taken on a file that still has its name once locked: a holder that locked a file
:func:`sweep_locks` removed between its open and its lock opens the name again (a new file), so two processes never
both hold one name's lock. Elsewhere (Windows, or a file system that refuses ``flock``) :mod:`filelock` takes it, and
:func:`sweep_locks` removes nothing."""

from __future__ import annotations

import contextlib
import logging
import os
import re
from pathlib import Path
from typing import Iterator

from embedselect._fs.guard import own_file
from embedselect.errors import CacheError
from embedselect.store.write_failure import cache_write_error, refused_errno

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows: filelock takes the locks, gc keeps their files
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger("embedselect.store")

LOCK_NAME = re.compile(r"^(?:metric-)?[0-9a-f]{64}\.lock$")
"""The names of the lock files :func:`work_lock` makes: a run key's (``<run key>.lock``) or a metric result's
(``metric-<key>.lock``); :func:`sweep_locks` removes no other file."""

_FLAGS = os.O_RDWR | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


@contextlib.contextmanager
def work_lock(root: Path, key: str, *, work: str, waiting: str) -> Iterator[None]:
    """Hold ``root/locks/<key>.lock`` for the block, waiting (with the log line ``waiting``) while another process
    or thread holds it. ``work`` names what is computed under it (e.g. "the embeddings of NAME").

    Raises:
        CacheError: the lock file cannot be created (a read-only folder, a full disk), naming it.
    """
    locks = Path(root) / "locks"
    path = own_file(locks / f"{key}.lock", what=f"the lock file of {work}", error=CacheError)
    try:
        locks.mkdir(exist_ok=True)
        fd = _lock(path, waiting)
    except OSError as exc:  # the lock file cannot be created: a read-only folder, a full disk
        if refused_errno(exc) is None:
            raise
        raise cache_write_error(exc, what=f"create the lock file of {work}", path=path, root=root) from exc
    if fd is None:  # no flock here
        yield from _filelock(path, waiting)
        return
    try:
        yield
    finally:
        os.close(fd)  # releases the lock


def _lock(path: Path, waiting: str) -> int | None:
    """The descriptor of ``path`` (created if missing) under an exclusive ``flock`` once the file locked still has the
    name ``path`` (a file :func:`sweep_locks` removed in between is let go and the name opened again); the log line
    ``waiting`` is said once when another holds it. None where ``flock`` is not available."""
    if fcntl is None:
        return None
    said = False
    while True:
        fd = os.open(path, _FLAGS | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if not said:
                    log.warning("%s; waiting for it, then reading its result", waiting)
                    said = True
                fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as exc:
            os.close(fd)
            if refused_errno(exc) is not None:
                raise
            return None  # flock not supported on this file system (ENOLCK, EOPNOTSUPP): filelock's fallback
        except BaseException:
            os.close(fd)
            raise
        if _named(path, fd):
            return fd
        os.close(fd)


def _filelock(path: Path, waiting: str) -> Iterator[None]:
    """The body of :func:`work_lock` where ``flock`` is not available: :mod:`filelock` holds ``path``."""
    import filelock

    lock = filelock.FileLock(str(path))
    try:
        lock.acquire(timeout=0)
    except filelock.Timeout:
        log.warning("%s; waiting for it, then reading its result", waiting)
        lock.acquire()
    try:
        yield
    finally:
        lock.release()


def _named(path: Path, fd: int) -> bool:
    """Whether the open file ``fd`` still has the name ``path`` (it was not removed or replaced since it was opened)."""
    try:
        return os.path.samestat(os.stat(path, follow_symlinks=False), os.fstat(fd))
    except FileNotFoundError:
        return False


def sweep_locks(root: Path) -> int:
    """Remove the lock files of ``root/locks`` that :func:`work_lock` made (named as :data:`LOCK_NAME` says, empty,
    regular files, not links) and that no process holds: each is locked without waiting first, and removed only
    while held by this call (a held one is kept; a process that opened it before its removal opens its name again,
    see :func:`work_lock`). Returns how many were removed; 0 where ``flock`` is not available."""
    locks = Path(root) / "locks"
    if fcntl is None or locks.is_symlink() or not locks.is_dir():
        return 0
    removed = 0
    for entry in sorted(os.scandir(locks), key=lambda e: e.name):
        if not LOCK_NAME.match(entry.name) or not entry.is_file(follow_symlinks=False):
            continue
        try:
            fd = os.open(entry.path, _FLAGS)
        except OSError:  # gone already, or not ours to open
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if os.fstat(fd).st_size == 0 and _named(Path(entry.path), fd):
                os.unlink(entry.path)
                removed += 1
        except OSError:  # held by a process (or no flock here): kept
            pass
        finally:
            os.close(fd)
    return removed


__all__ = ["LOCK_NAME", "sweep_locks", "work_lock"]

"""The cache's per-work lock files (``locks/<key>.lock``): one process computes a piece of work that others may need
too (an embedding run, a metric's result), while each other process that needs it waits, then reads what the first
stored instead of computing it again. Held for the whole work (minutes, hours), so there is no timeout: a lock
whose holder dies is released by the system. The lock files are empty and stay (removing one another process may be
waiting on is not safe)."""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import Iterator

from embedselect._fs.guard import own_file
from embedselect.errors import CacheError
from embedselect.store.write_failure import cache_write_error, refused_errno

log = logging.getLogger("embedselect.store")


@contextlib.contextmanager
def work_lock(root: Path, key: str, *, work: str, waiting: str) -> Iterator[None]:
    """Hold ``root/locks/<key>.lock`` for the block, waiting (with the log line ``waiting``) while another process
    or thread holds it. ``work`` names what is computed under it (e.g. "the embeddings of NAME").

    Raises:
        CacheError: the lock file cannot be created (a read-only folder, a full disk), naming it.
    """
    import filelock

    locks = Path(root) / "locks"
    path = own_file(locks / f"{key}.lock", what=f"the lock file of {work}", error=CacheError)
    lock = filelock.FileLock(str(path))
    try:
        locks.mkdir(exist_ok=True)
        try:
            lock.acquire(timeout=0)
        except filelock.Timeout:
            log.warning("%s; waiting for it, then reading its result", waiting)
            lock.acquire()
    except OSError as exc:  # the lock file cannot be created: a read-only folder, a full disk
        if refused_errno(exc) is None:
            raise
        raise cache_write_error(exc, what=f"create the lock file of {work}", path=path, root=root) from exc
    try:
        yield
    finally:
        lock.release()

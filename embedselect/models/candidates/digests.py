"""The sha256 of each file of a local model folder, computed once: kept in memory, and for big files also on disk
(one small JSON record per file under the cache's ``digests/``) by (device, inode, path, size, mtime), so that a
new process does not hash the same unchanged multi-GB weights again."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path

_MEMORY: dict[tuple[str, int, int], str] = {}
_LOCK = threading.Lock()

ON_DISK_MIN_BYTES = 1 << 20
"""Files at least this big have their digest recorded on disk; smaller ones hash faster than a record is read."""


def _hash_file(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _record_path(digest_dir: Path, path: Path, st: os.stat_result) -> Path:
    ident = hashlib.sha256(f"{st.st_dev}:{st.st_ino}:{os.path.abspath(path)}".encode("utf-8", "surrogateescape"))
    name = ident.hexdigest()
    return digest_dir / name[:2] / f"{name}.json"


def file_sha256(path: Path, digest_dir: Path | None = None) -> str:
    """sha256 hex digest of the bytes of ``path``.

    Reused without reading the file when this process already hashed it, or (with ``digest_dir``, for files of at
    least :data:`ON_DISK_MIN_BYTES`) when a record there has the same device, inode, absolute path, size and
    modification time in nanoseconds: the rule ``make`` and ``rsync`` trust. A file changed in place changes its
    mtime, so it is hashed again. A record that cannot be written (a read-only cache) is skipped silently.
    """
    st = path.stat()
    key = (os.path.abspath(path), st.st_size, st.st_mtime_ns)
    with _LOCK:
        hit = _MEMORY.get(key)
    if hit is not None:
        return hit
    record = _record_path(digest_dir, path, st) if digest_dir is not None and st.st_size >= ON_DISK_MIN_BYTES else None
    stamp = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ino": st.st_ino, "dev": st.st_dev}
    digest = None
    if record is not None:
        try:
            saved = json.loads(record.read_text(encoding="utf-8"))
            if isinstance(saved, dict) and all(saved.get(k) == v for k, v in stamp.items()):
                digest = str(saved["sha256"])
        except (OSError, ValueError, KeyError):
            digest = None
    if digest is None:
        digest = _hash_file(path)
        if record is not None:
            try:
                from embedselect._fs import guard as fsguard
                from embedselect.errors import ConfigError

                record.parent.mkdir(parents=True, exist_ok=True)
                try:  # atomic, under a unique temporary name, never through a link planted in the cache
                    fsguard.write_text(record, json.dumps({**stamp, "path": os.path.abspath(path), "sha256": digest}))
                except ConfigError:
                    pass
            except OSError:
                pass
    with _LOCK:
        _MEMORY[key] = digest
    return digest

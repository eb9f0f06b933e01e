"""The read side of :mod:`embedselect._fs.guard`'s ownership rule: whether a folder is the tool's to replace or delete.

A folder is the tool's only while its marker :data:`MARKER` (written last by :func:`embedselect._fs.guard.mark_owned`)
lists every entry in it with the size and modification time it was written with. A marker alone (forged, or copied
along with a user's files by ``cp -r``) is not enough. Import these from :mod:`embedselect._fs.guard`.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path
from typing import Iterable

MARKER = ".embedselect-owned"
"""File name of the ownership marker: JSON ``{"tool": "embedselect", "kind", "created_at", "files"}`` where
``files`` maps each entry's relative path to ``[size, mtime_ns]`` (``null`` for a container that is never removed)."""


def folder_inventory(folder: Path) -> dict[str, list[int]]:
    """Every entry under ``folder`` but the top marker, links not followed: relative path -> ``[size, mtime_ns]``
    for a file, ``[-1, 0]`` for a folder, ``[-2, 0]`` for anything else (a link, a socket: never the tool's)."""
    out: dict[str, list[int]] = {}
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = p.relative_to(folder).as_posix()
            if rel == MARKER:
                continue
            st = os.lstat(p)
            if stat.S_ISREG(st.st_mode):
                out[rel] = [st.st_size, st.st_mtime_ns]
            else:
                out[rel] = [-1, 0] if stat.S_ISDIR(st.st_mode) else [-2, 0]
    return out


def _marker(folder: Path) -> dict | None:
    if folder.is_symlink() or not folder.is_dir() or (folder / MARKER).is_symlink():
        return None
    try:
        info = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) and info.get("tool") == "embedselect" else None


def is_marked(folder: str | Path) -> bool:
    """Whether ``folder`` is a real folder (not a link) carrying a marker of this tool (a claim, not a proof)."""
    return _marker(Path(folder)) is not None


def foreign(folder: str | Path) -> list[str]:
    """The entries of ``folder`` (relative paths, sorted) that its marker does not list as the tool wrote them: added
    since, changed (size or mtime), or links. Without a marker listing the files: every entry."""
    folder = Path(folder)
    info = _marker(folder)
    files = info.get("files") if info is not None else None
    listed = files if isinstance(files, dict) else {}
    return sorted(rel for rel, stamp in folder_inventory(folder).items() if stamp[0] == -2 or listed.get(rel) != stamp)


def marked_kind(folder: str | Path) -> str | None:
    """The ``kind`` of ``folder``'s marker (``index``, ``nightly-version``, ...), or None without a marker."""
    info = _marker(Path(folder))
    return str(info.get("kind")) if info is not None else None


def is_owned(folder: str | Path, kinds: Iterable[str] | None = None) -> bool:
    """Whether ``folder`` is the tool's to replace or delete: a real folder whose marker (of one of ``kinds`` when
    given: a night never takes an index) lists every entry in it, unchanged. A marker alone (forged, or copied with
    ``cp -r`` along with a user's files) is not enough."""
    info = _marker(Path(folder))
    if info is None or not isinstance(info.get("files"), dict):
        return False
    return (kinds is None or info.get("kind") in set(kinds)) and not foreign(folder)


def remove_owned(folder: str | Path, *, kinds: Iterable[str] | None = None) -> bool:
    """Delete ``folder`` when it is the tool's (:func:`is_owned`); otherwise leave it exactly as it is. Returns
    whether it was deleted."""
    p = Path(folder)
    if p.is_symlink() or not p.is_dir():
        return False
    if not is_owned(p, kinds):
        return False
    shutil.rmtree(p)
    return True

"""Model-folder layout rules that candidate resolution, the hub and the backends share, in one low place.

How a JSON file of a model folder or of the Hugging Face cache (``config.json``, ``modules.json``,
``1_Pooling/config.json``) is read: a missing file is ``None``, a damaged one a typed error that names the file;
and which file names make up a tokenizer (:data:`TOKENIZER_FILES`: what the hub fetches for a text model, and how
a local folder is recognised as a text model); which module folders a sentence-transformers model loads
(:func:`module_types`: what the hub fetches of it, and what the local check reads); and which files make up a local
model folder (:func:`model_folder_files`: never following a link out of it).
"""

from __future__ import annotations

import json
import os
from pathlib import Path, PurePosixPath
from typing import Any, Callable

from embedselect.errors import ModelFileError
from embedselect._fs.inside import real_inside

TOKENIZER_FILES = frozenset(
    {
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "added_tokens.json",
        "vocab.txt",
        "vocab.json",
        "merges.txt",
        "spiece.model",
        "sentencepiece.bpe.model",
        "tokenizer.model",
        "source.spm",
        "bpe.codes",
    }
)
"""File names (at a model folder's root) of the tokenizers of transformers / sentence-transformers models."""


def read_json(path: str | Path) -> Any:
    """The JSON document in ``path`` (any JSON value: dict, list, str, number, bool or None), or ``None`` when there
    is no such file.

    Raises:
        ModelFileError: the file exists but is not valid UTF-8 JSON, or cannot be read (a folder, no permission);
            the message names the file and what is wrong with it.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as exc:
        raise ModelFileError(f"{p} is not UTF-8 text ({exc}); the model folder is damaged: download or save it again") from None
    except OSError as exc:
        raise ModelFileError(f"{p} cannot be read ({type(exc).__name__}: {exc.strerror or exc})") from None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ModelFileError(f"{p} is not valid JSON ({exc}); the model folder is damaged: download or save it "
                             "again") from None


ST_NO_MODULES_JSON = "sentence_transformers.models.Transformer"
"""The module sentence-transformers makes of a model folder without ``modules.json``: a ``Transformer`` at its root
(with a mean ``Pooling``, which reads no files)."""


def module_types(read: Callable[[str], Any]) -> dict[str, str]:
    """The module folders a sentence-transformers model loads, each with its module type: ``{folder: type}``, the
    folder relative to the model's root in POSIX form (``""`` the root itself, ``1_Pooling``, ``mods/2_Dense``,
    ``0_Router/query_0_Transformer``). The one rule for which folders of a sentence-transformers model are read: the
    hub fetch takes their files, and the local check looks at their weights.

    They are ``modules.json``'s paths and, for each ``router_config.json`` in the root or in one of those folders (a
    Router), its ``types``' keys, folders beside that ``router_config.json``, at any depth. A folder without
    ``modules.json`` is one ``Transformer`` at the root (:data:`ST_NO_MODULES_JSON`). Paths sentence-transformers
    refuses (absolute, ``..``) and types that are no string are left out.

    Args:
        read: the JSON document at a path relative to the model's root (``modules.json``,
            ``0_Router/router_config.json``), or None when there is no such file (:func:`read_json` of a folder, or of
            a hub snapshot's downloaded files).
    """
    modules = read("modules.json")
    if modules is None:
        return {"": ST_NO_MODULES_JSON}
    found: dict[str, str] = {}
    for m in modules if isinstance(modules, list) else ():
        path, kind = (m.get("path"), m.get("type")) if isinstance(m, dict) else (None, None)
        folder = _below("", path)
        if folder is not None and isinstance(kind, str):
            found[folder] = kind
    for folder in ["", *[f for f in found if f]]:
        router = read(f"{folder}/router_config.json" if folder else "router_config.json")
        types = router.get("types") if isinstance(router, dict) else None
        for name, kind in types.items() if isinstance(types, dict) else ():
            route = _below(folder, name)
            if route and isinstance(kind, str):
                found[route] = kind
    return found


def _below(folder: str, path: Any) -> str | None:
    """``path`` (a module path of ``modules.json`` or a ``router_config.json``) joined to ``folder`` and normalised
    (``./0_Router/`` is ``0_Router``, ``""`` and ``.`` the folder itself), or None when sentence-transformers would
    not load it from below the model's root: not a string, absolute, or with ``..``."""
    if not isinstance(path, str) or path.startswith("/") or ".." in PurePosixPath(path).parts:
        return None
    joined = PurePosixPath(folder, path).as_posix()
    return "" if joined == "." else joined


SKIPPED_DIRS = frozenset({".git", "__pycache__", ".cache", ".ipynb_checkpoints"})
"""Folders inside a model folder that are not the model (version control, caches): never walked."""


def model_folder_files(root: str | Path) -> list[tuple[str, str, Path | str]]:
    """The entries that make up the model folder ``root``, sorted by relative path: ``(relative path, "file", path)``
    for each file inside it (a symbolic link is taken as the file it names when that file is inside ``root``),
    and ``(relative path, "link", target)`` for a link that leads out of ``root`` (its target as written, never
    read or followed: a link to ``/`` or to another user's file is only a name).

    No link to a folder is walked (a folder linked from inside ``root`` is walked where it really is), and
    :data:`SKIPPED_DIRS` are skipped, so the walk stays inside ``root`` and ends.
    """
    top = Path(root)
    real_top = top.resolve()
    out: list[tuple[str, str, Path | str]] = []
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        here = Path(dirpath)
        names = list(filenames) + [d for d in dirnames if (here / d).is_symlink()]
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS and not (here / d).is_symlink())
        for name in names:
            p = here / name
            rel = p.relative_to(top).as_posix()
            if not p.is_symlink():
                if p.is_file():
                    out.append((rel, "file", p))
                continue
            target = real_inside(p, real_top)
            if target is not None:
                if target.is_file():
                    out.append((rel, "file", target))
                continue  # a folder inside root is walked where it is; a dangling link is nothing
            out.append((rel, "link", os.readlink(p)))
    return sorted(out, key=lambda e: e[0])

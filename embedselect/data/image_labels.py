"""Labels for a folder of images: from sub-folder names (``"folder"``: PHOTOS/cat/1.jpg -> "cat"), from a CSV file of
``path,label`` rows, or from a sequence aligned with the files; the one place these rules live."""

from __future__ import annotations

import csv
import io
import os
import posixpath
from pathlib import Path
from typing import Any, Mapping, Sequence

from embedselect.data.readers import IMAGE_SUFFIXES, parse_untyped_labels
from embedselect.errors import ConfigError, DataError, DataFileNotFoundError

FOLDER = "folder"
"""The labels value that names each image's class by the first sub-folder below the image folder."""

PATH_COLUMNS = ("path", "file", "filename", "file_name", "filepath", "image", "image_path")
LABEL_COLUMNS = ("label", "labels", "class", "category", "target")
_SHOW = 5


def image_load_options(kw: Mapping[str, Any]) -> dict[str, Any]:
    """Loader keyword arguments for a folder (or list) of images: a ``label_column`` (what ``select(labels="...")``
    and ``--labels`` pass for any data) becomes ``labels``, since images have no columns.

    Raises:
        ConfigError: both ``labels`` and ``label_column`` are given.
    """
    out = dict(kw)
    column = out.pop("label_column", None)
    if column is not None:
        if out.get("labels") is not None:
            raise ConfigError("give either labels or label_column, not both")
        out["labels"] = column
    return out


def image_labels(labels: Any, *, root: Path, ids: Sequence[str]) -> list[Any]:
    """One label (or None) per image, aligned with ``ids``.

    Args:
        labels: ``"folder"`` (the first sub-folder of ``root`` names the class; images directly in ``root`` get
            None); a path (``str`` / :class:`os.PathLike`) of a CSV (``.tsv``: tab-separated) file of ``path,label``
            rows, an optional header naming the columns (``path``/``file``/``image`` and ``label``/``class``); or a
            sequence aligned with ``ids``. A CSV path is relative to ``root`` (``cat/1.jpg``), relative to the CSV
            file's own folder, or absolute; an empty label leaves that image unlabelled.
        root: the image folder (absolute, resolved).
        ids: the images' POSIX paths relative to ``root``, in the order of the data.

    Returns:
        a list of ``len(ids)`` labels: ``str``, ``int`` (when every CSV label is an integer) or None.

    Raises:
        DataError: no image is in a sub-folder (``"folder"``); a CSV row without two fields; CSV paths that match no
            image, match two, or give one image two labels; images the CSV does not name.
        DataFileNotFoundError: the CSV file does not exist.
        ConfigError: a sequence of another length than ``ids``; labels of an unsupported type.
    """
    if isinstance(labels, str) and labels == FOLDER:
        out = [i.split("/")[0] if "/" in i else None for i in ids]
        if ids and all(v is None for v in out):
            raise DataError(
                f"no image is in a sub-folder of {str(root)!r}: labels='folder' (--labels folder) takes each image's "
                "class from its sub-folder (PHOTOS/cat/1.jpg -> 'cat'); put the images in one folder per class, or "
                "give a CSV file of path,label rows"
            )
        return out
    if isinstance(labels, (str, os.PathLike)):
        return _csv_labels(Path(os.fspath(labels)).expanduser(), root=root, ids=ids)
    if isinstance(labels, (bytes, Mapping)) or not isinstance(labels, Sequence) and not hasattr(labels, "__len__"):
        raise ConfigError(
            f"labels for images must be 'folder', the path of a CSV file of path,label rows, or a sequence aligned "
            f"with the images; got {type(labels).__name__}"
        )
    out = list(labels)
    if len(out) != len(ids):
        raise ConfigError(
            f"labels has {len(out)} entries but there are {len(ids)} images; align them "
            "(for a folder, with the files sorted by relative path), or pass 'folder' or a CSV of path,label"
        )
    return out


def _csv_labels(path: Path, *, root: Path, ids: Sequence[str]) -> list[Any]:
    if not path.is_file():
        hint = "" if path.suffix else (
            f"; labels for a folder of images are '{FOLDER}' (sub-folder names) or the path of a CSV file of path,label"
        )
        raise DataFileNotFoundError(f"labels file {str(path)!r} does not exist{hint}")
    text = path.read_text(encoding="utf-8-sig", errors="replace")
    rows = [(n, r) for n, r in enumerate(csv.reader(io.StringIO(text), delimiter="\t" if path.suffix.lower() == ".tsv"
                                                    else ","), start=1) if any(c.strip() for c in r)]
    if not rows:
        raise DataError(f"labels file {path.name!r} is empty: write one row path,label per image")
    p_col, l_col = 0, 1
    first = [c.strip() for c in rows[0][1]]
    if first and not first[0].lower().endswith(IMAGE_SUFFIXES):  # a header
        low = [c.lower() for c in first]
        p_col = next((low.index(c) for c in PATH_COLUMNS if c in low), 0)
        l_col = next((low.index(c) for c in LABEL_COLUMNS if c in low), 1 if p_col != 1 else 0)
        rows = rows[1:]
    short = [n for n, r in rows if len(r) <= max(p_col, l_col)]
    if short:
        raise DataError(f"labels file {path.name!r}: row(s) {', '.join(map(str, short[:_SHOW]))} have fewer than two "
                        "fields; write one row path,label per image")
    index = {i: k for k, i in enumerate(ids)}
    labels: list[Any] = [None] * len(ids)
    given: dict[int, tuple[int, str]] = {}
    unmatched, ambiguous, conflicts = [], [], []
    for n, r in rows:
        raw, value = r[p_col].strip(), r[l_col].strip()
        hits = _matches(raw, root=root, csv_dir=path.parent.resolve(), index=index)
        if not hits:
            unmatched.append(raw)
            continue
        if len(hits) > 1:
            ambiguous.append(f"{raw} ({' or '.join(ids[h] for h in sorted(hits))})")
            continue
        (k,) = hits
        if k in given and given[k][1] != value:
            conflicts.append(f"{ids[k]} (rows {given[k][0]} and {n})")
        given[k] = (n, value)
    where = f"labels file {path.name!r}"
    if unmatched:
        raise DataError(
            f"{where}: {len(unmatched)} of its {len(rows)} paths match no image in {str(root)!r} (e.g. "
            f"{', '.join(repr(u) for u in unmatched[:_SHOW])}); write paths relative to the image folder "
            f"(cat/1.jpg) or absolute; images are {', '.join(IMAGE_SUFFIXES)} files"
        )
    if ambiguous:
        raise DataError(f"{where}: path(s) that name two images, relative to the image folder and to the CSV's "
                        f"folder: {', '.join(ambiguous[:_SHOW])}; write them relative to the image folder")
    if conflicts:
        raise DataError(f"{where} gives {len(conflicts)} image(s) two different labels: "
                        f"{', '.join(conflicts[:_SHOW])}; keep one row per image")
    missing = [ids[k] for k in range(len(ids)) if k not in given]
    if missing:
        raise DataError(
            f"{len(missing)} of the {len(ids)} images have no row in {where} (e.g. "
            f"{', '.join(repr(m) for m in missing[:_SHOW])}); add a row path,label for each, or 'path,' with an "
            "empty label to leave an image unlabelled"
        )
    for k, (_, value) in given.items():
        labels[k] = value
    return parse_untyped_labels(labels)


def _matches(raw: str, *, root: Path, csv_dir: Path, index: Mapping[str, int]) -> set[int]:
    """Indices of the images a CSV path names: relative to ``root``, relative to ``csv_dir``, or absolute."""
    text = raw.replace("\\", "/")
    hits: set[int] = set()
    if not text:
        return hits
    if not posixpath.isabs(text):
        rel = posixpath.normpath(text)
        if rel in index:
            hits.add(index[rel])
    for base in (csv_dir,) if not posixpath.isabs(text) else (Path("/"),):
        try:
            rel_root = Path(os.path.normpath(base / text)).relative_to(root).as_posix()  # no link is followed
        except ValueError:
            continue
        if rel_root in index:
            hits.add(index[rel_root])
    return hits


__all__ = ["FOLDER", "image_labels", "image_load_options"]

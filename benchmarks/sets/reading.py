"""What the dataset loaders share: a data file found inside an installed package, the rows of a CSV file or of a
SQLite query, labelled
pairs reduced to unique texts of one label each, and what a script or the docstrings of modules give in a fresh
interpreter."""

from __future__ import annotations

import collections
import gzip
import json
import os
import sys
from importlib import util
from pathlib import Path
from typing import Any, Callable, Sequence

from embedselect.errors import DataError


def package_file(module: str, rel: str) -> Path:
    """A data file inside an installed package, found without importing the package."""
    spec = util.find_spec(module)
    if spec is None or spec.origin is None:
        raise DataError(f"package {module!r} is not installed: pip install -e '.[bench]' (see benchmarks/README.md)")
    p = Path(spec.origin).parent / rel
    if not p.is_file():
        raise DataError(f"{p} is missing from the installed {module!r}: reinstall it")
    return p


def sqlite_rows(path: Path, query: str, table: str, reinstall: str) -> list[tuple[Any, ...]]:
    """The rows ``query`` returns from the SQLite database at ``path``, opened read-only.

    Raises:
        DataError: the file is not a SQLite database with that table (``table`` names it, ``reinstall`` says what
            to reinstall).
    """
    import sqlite3

    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return con.execute(query).fetchall()
        finally:
            con.close()
    except sqlite3.Error as e:
        raise DataError(f"{path}: cannot read the table {table} ({e}): reinstall {reinstall}") from e


def drop_ambiguous(pairs: list[tuple[str, str]], min_per_class: int) -> tuple[list[str], list[str]]:
    """Unique texts with exactly one label; classes with fewer than ``min_per_class`` items dropped."""
    seen: dict[str, set[str]] = {}
    order: list[str] = []
    for text, lab in pairs:
        if text not in seen:
            seen[text] = set()
            order.append(text)
        seen[text].add(lab)
    keep = [(t, next(iter(seen[t]))) for t in order if len(seen[t]) == 1]
    counts: dict[str, int] = {}
    for _, lab in keep:
        counts[lab] = counts.get(lab, 0) + 1
    keep = [(t, lab) for t, lab in keep if counts[lab] >= min_per_class]
    return [t for t, _ in keep], [lab for _, lab in keep]


def largest_classes(texts: list[str], labels: list[str], n_classes: int) -> tuple[list[str], list[str]]:
    """The items of the ``n_classes`` classes with the most items (ties by name), in their order."""
    counts = collections.Counter(labels)
    top = set(sorted(counts, key=lambda c: (-counts[c], c))[:n_classes])
    keep = [(t, lab) for t, lab in zip(texts, labels) if lab in top]
    return [t for t, _ in keep], [lab for _, lab in keep]


def csv_rows(path: Path, header: Sequence[str]) -> list[dict[str, str]]:
    """The rows of a CSV file (plain, .gz or .bz2) as dicts; the header must hold every column of ``header``.

    Raises:
        DataError: a column of ``header`` is missing.
    """
    import bz2
    import csv
    import io

    opener: Callable[..., Any] = {".gz": gzip.open, ".bz2": bz2.open}.get(path.suffix, open)
    with opener(path, "rt", encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(io.StringIO(fh.read())))
    have = set(rows[0]) if rows else set()
    if not rows or not set(header) <= have:
        raise DataError(f"{path}: expected the columns {list(header)}, got {sorted(have) or 'an empty file'}")
    return rows


def fresh_python(script: str, *args: str, env: dict[str, str | None] | None = None, what: str) -> str:
    """What ``script`` prints, run in a fresh isolated interpreter (``python -I``, the installed packages; an empty
    temporary working folder), so that nothing this process imported, patched or configured changes it. ``env``
    sets environment variables (``None``: removed).

    Raises:
        DataError: the script fails (its package is not installed); the message names ``what`` and its last line.
    """
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        got = subprocess.run([sys.executable, "-I", "-c", script, *args], capture_output=True, text=True, cwd=tmp,
                             env={k: v for k, v in {**os.environ, **(env or {})}.items() if v is not None})
    if got.returncode:
        last = (got.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise DataError(f"cannot read {what}: {last}: pip install -e '.[bench]'")
    return got.stdout


_DOCSTRINGS_SCRIPT = """
import importlib, inspect, json, sys, warnings
docs = {}
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # typing.io / typing.re warn when touched
    for name in sys.argv[1:]:
        mod = importlib.import_module(name)
        for attr in sorted(vars(mod)):
            obj = getattr(mod, attr)
            if attr.startswith("_") or not (inspect.isclass(obj) or inspect.isfunction(obj) or inspect.isbuiltin(obj)):
                continue
            if (getattr(obj, "__module__", None) or "").split(".")[0] != name.split(".")[0]:
                continue
            members = [obj] + ([getattr(obj, m) for m in sorted(vars(obj)) if not m.startswith("_")
                                and callable(getattr(obj, m, None))] if inspect.isclass(obj) else [])
            for o in members:
                d = inspect.getdoc(o)
                if d:
                    docs[d] = None
json.dump(list(docs), sys.stdout)
"""


def module_docstrings(modules: Sequence[str], site: bool = False) -> list[str]:
    """The docstrings (``inspect.getdoc``) of every public function and class of one of ``modules`` defined in that
    module's top-level package (``scipy.linalg``: anything under ``scipy``), and of each such class's public methods,
    in a fixed order; repeats once. Read in a fresh isolated interpreter, so that what this process imported or
    patched before (torch, site packages) changes nothing: ``python -I -S`` (the standard library alone), or with
    ``site`` ``python -I`` (the installed packages too, for a library's docstrings).

    Raises:
        DataError: a module cannot be imported there (its package is not installed).
    """
    import subprocess

    flags = ["-I"] if site else ["-I", "-S"]
    got = subprocess.run([sys.executable, *flags, "-c", _DOCSTRINGS_SCRIPT, *modules], capture_output=True, text=True)
    if got.returncode:
        last = (got.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise DataError(f"cannot read the docstrings of {', '.join(modules)}: {last}: pip install -e '.[bench]'")
    return [str(d) for d in json.loads(got.stdout)]

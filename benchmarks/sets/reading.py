"""What the dataset loaders share: a data file found inside an installed package, the rows of a CSV file, and
labelled pairs reduced to unique texts of one label each."""

from __future__ import annotations

import collections
import gzip
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

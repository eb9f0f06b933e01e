"""Datasets and candidate pools of the wider validity benchmark (issue 9), cached on disk.

Every dataset is real, labelled, and ships inside a package from the registry (nothing is downloaded
at run time). ``python -m benchmarks.validity_data --list`` prints them; without ``--list`` the script
writes, per dataset, the folder ``$EMBEDSELECT_BENCH_CACHE/pools/<dataset>/`` (default
``~/.cache/embedselect-bench/pools/<dataset>/``) with

- ``labels.npy``: int64, shape (n,), index into ``meta.json["classes"]``;
- ``items.json``: the n texts, or the n absolute paths of PNG files (images are written once under
  ``$EMBEDSELECT_BENCH_CACHE/images/<dataset>/``);
- ``meta.json``: name, modality, n, n_classes, classes (sorted class names), class_counts, n_total,
  source (package, version, file), licence, seed, max_items, sampling (the rule in words);
- ``<candidate>.npy``: float32, shape (n, d), row i embeds ``items[i]``;
- ``candidates.json``: a list of {name, kind, base_model, parent, relation, dims, seconds, how} in pool
  order, one per ``.npy`` present. ``kind`` is "transformer", "static", "cnn" or "baseline"; ``relation``
  is null for an independent model or one of "distilled", "truncated", "quantized-int8",
  "quantized-binary", "layer", "pooling", "resolution", "max_length" (the input cut to fewer tokens) for a
  variant derived from ``parent``. ``seconds``
  is the wall time that produced the file; outputs of one shared forward pass (poolings, layers) all
  carry that pass's time and name it in ``shared_pass``.

Every file is written atomically (temporary file + rename), and what exists is skipped, so a run that
was stopped resumes where it stopped. A folder written with another seed or ``--max-items`` is refused,
never overwritten.

The datasets are in ``benchmarks/sets/``, the candidates in ``candidates.py``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from benchmarks.bench_io import bench_cache, save_json, save_npy
from benchmarks.candidates import POOLS, Candidate, derive, producers_for
from benchmarks.sets.registry import DATASETS, MAX_ITEMS, SEED, installed_version, prepare_dataset, stratified_indices
from embedselect.errors import DataError

log = logging.getLogger("validity_data")


def build_pool(folder: Path, items: list[Any], pool: list[Candidate],
               producers: dict[str, Callable[[], dict[str, np.ndarray]]], *, only: set[str] | None = None) -> list[dict]:
    """Write each missing ``<candidate>.npy`` of ``pool`` in ``folder`` and keep ``candidates.json`` in
    step (rewritten after every file). Existing files are kept as they are (resume). Candidates of one
    producer are made by one call; derived ones ("derive") from their parent's stored vectors."""
    folder.mkdir(parents=True, exist_ok=True)
    cj = folder / "candidates.json"
    entries = {e["name"]: e for e in (json.loads(cj.read_text()) if cj.is_file() else [])}
    wanted = [c for c in pool if only is None or c.name in only]

    def have(c: Candidate) -> bool:
        return (folder / f"{c.name}.npy").is_file() and c.name in entries

    def record(c: Candidate, arr: np.ndarray, seconds: float, shared: str | None) -> None:
        arr = np.ascontiguousarray(arr, dtype=np.float32)
        if arr.ndim != 2 or arr.shape[0] != len(items) or not np.isfinite(arr).all():
            raise RuntimeError(f"{c.name}: got shape {arr.shape} (finite: {np.isfinite(arr).all()}), "
                               f"expected ({len(items)}, d) finite")
        save_npy(folder / f"{c.name}.npy", arr)
        e = {k: getattr(c, k) for k in ("name", "kind", "base_model", "parent", "relation", "how")}
        e.update(dims=int(arr.shape[1]), seconds=round(seconds, 2))
        if shared:
            e["shared_pass"] = shared
        entries[c.name] = e
        save_json(cj, [entries[p.name] for p in pool if p.name in entries])

    by_name = {c.name: c for c in pool}
    for c in wanted:
        if have(c):
            continue
        if c.source == "derive":
            parent = by_name[c.parent]
            if not have(parent):
                raise RuntimeError(f"{c.name} needs {parent.name}.npy first")
            t0 = time.perf_counter()
            arr = derive(c.name, np.load(folder / f"{parent.name}.npy"))
            record(c, arr, time.perf_counter() - t0, None)
            continue
        key = c.source if c.source.startswith("pass:") else c.name
        t0 = time.perf_counter()
        made = producers[key]()
        secs = time.perf_counter() - t0
        log.info("%s: %s in %.1f s", folder.name, key, secs)
        for name, arr in made.items():
            cand = by_name[name]
            if not have(cand) and (only is None or name in only):
                record(cand, arr, secs, key if key.startswith("pass:") else None)
    return [entries[p.name] for p in pool if p.name in entries]


def load_pool(name: str, root: Path | None = None) -> tuple[dict[str, Any], np.ndarray, list[Any], list[dict], dict[str, np.ndarray]]:
    """Read a written pool folder: (meta, labels int64 (n,), items, candidates.json entries,
    {candidate name: float32 (n, d)}). Only candidates listed in candidates.json are returned.

    Raises:
        DataError: the folder or one of its files is missing (run this script first).
    """
    folder = (root or bench_cache() / "pools") / name
    need = [folder / f for f in ("meta.json", "labels.npy", "items.json", "candidates.json")]
    missing = [p.name for p in need if not p.is_file()]
    if missing:
        raise DataError(f"{folder} lacks {missing}: run python -m benchmarks.validity_data --datasets {name}")
    meta = json.loads(need[0].read_text())
    labels = np.load(need[1])
    items = json.loads(need[2].read_text())
    entries = json.loads(need[3].read_text())
    vectors = {e["name"]: np.load(folder / f"{e['name']}.npy") for e in entries}
    return meta, labels, items, entries, vectors


def run(names: list[str], *, max_items: int, seed: int, only: set[str] | None) -> None:
    import torch

    torch.set_num_threads(2)
    root = bench_cache() / "pools"
    for name in names:
        ds = DATASETS[name]
        folder = root / name
        meta = prepare_dataset(ds, folder, max_items=max_items, seed=seed)
        items = json.loads((folder / "items.json").read_text())
        log.info("%s: n=%d, %d classes -> %s", name, meta["n"], meta["n_classes"], folder)
        entries = build_pool(folder, items, POOLS[ds.modality], producers_for(ds.modality, items, seed), only=only)
        log.info("%s: %d candidates: %s", name, len(entries), ", ".join(e["name"] for e in entries))


def list_datasets(max_items: int, seed: int) -> str:
    rows = ["| dataset | modality | n (of total) | classes | source package | licence |", "|---|---|---|---|---|---|"]
    for ds in DATASETS.values():
        items, labels = ds.load()
        n = len(stratified_indices(labels, max_items, seed))
        ver = installed_version(ds.package) or "not installed"
        rows.append(f"| {ds.name} | {ds.modality} | {n} ({len(items)}) | {len(set(labels))} | "
                    f"{ds.package} {ver} (`{ds.file}`) | {ds.licence} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--list", action="store_true", help="print the datasets and exit")
    ap.add_argument("--datasets", default=",".join(DATASETS), help="comma-separated subset of " + ",".join(DATASETS))
    ap.add_argument("--candidates", default=None, help="comma-separated subset of the pool's candidates")
    ap.add_argument("--max-items", type=int, default=MAX_ITEMS, help="stratified sample size per dataset")
    ap.add_argument("--seed", type=int, default=SEED)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if args.max_items < 10:
        ap.error("--max-items must be at least 10")
    if args.list:
        print(list_datasets(args.max_items, args.seed))
        return 0
    names = [d for d in args.datasets.split(",") if d]
    bad = [d for d in names if d not in DATASETS]
    if bad:
        ap.error(f"unknown dataset(s) {bad}; choose from {', '.join(DATASETS)}")
    only = set(args.candidates.split(",")) if args.candidates else None
    known = {c.name for p in POOLS.values() for c in p}
    if only and only - known:
        ap.error(f"unknown candidate(s) {sorted(only - known)}; choose from {', '.join(sorted(known))}")
    run(names, max_items=args.max_items, seed=args.seed, only=only)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

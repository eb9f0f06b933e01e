"""The cached folders of the retrieval sets: ``build`` writes a set's texts and every candidate's vectors (the
layout is in validity_retrieval.py), ``load_set`` reads them back, ``truth_of`` caches each candidate's retrieval
scores beside them."""

from __future__ import annotations

import dataclasses
import json
import logging
import sys
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from benchmarks.bench_io import bench_cache, save_json
from benchmarks.candidates import TEXT_POOL, Candidate, producers_for
from benchmarks.sets.registry import installed_version
from benchmarks.sets.retrieval_pairs import MAX_DOCS, SEED
from benchmarks.sets.retrieval_registry import SETS, RetrievalSet
from benchmarks.validity_data import build_pool
from embedselect.errors import DataError

log = logging.getLogger("validity_retrieval")


def root() -> Path:
    return bench_cache() / "retrieval"


def prepare(rs: RetrievalSet, folder: Path) -> dict[str, Any]:
    """Write docs.json, queries.json, relevant.json and meta.json (skipped when meta.json exists)."""
    meta_path = folder / "meta.json"
    if meta_path.is_file():
        return json.loads(meta_path.read_text())
    docs, queries, relevant = rs.load()
    if not docs or not queries:
        raise DataError(f"{rs.name}: no documents or no queries")
    version = sys.version.split()[0] if rs.package == "python" else installed_version(rs.package)
    meta = {"name": rs.name, "kind": rs.kind, "n_docs": len(docs), "n_queries": len(queries),
            "relevant_per_query": round(float(np.mean([len(r) for r in relevant])), 3),
            "source": {"package": rs.package, "version": version, "file": rs.file}, "licence": rs.licence,
            "seed": SEED, "max_docs": MAX_DOCS}
    folder.mkdir(parents=True, exist_ok=True)
    save_json(folder / "docs.json", docs)
    save_json(folder / "queries.json", queries)
    save_json(folder / "relevant.json", relevant)
    save_json(meta_path, meta)
    return meta


def int8_on_docs(x: np.ndarray, n_docs: int) -> np.ndarray:
    """sentence-transformers' int8 scalar quantisation with the per-dimension ranges of the documents' rows
    (``x[:n_docs]``); every row (queries too) clipped to 256 buckets, as float32 values in [-128, 127]."""
    docs = x[:n_docs].astype(np.float64)
    starts = docs.min(axis=0)
    steps = (docs.max(axis=0) - starts) / 255.0
    steps[steps == 0] = 1.0
    q = np.trunc((x.astype(np.float64) - starts) / steps - 128.0)
    return np.clip(q, -128, 127).astype(np.float32)


def pool_for(folder: Path, items: list[str], n_docs: int, seed: int) -> tuple[list[Candidate], dict]:
    """The text pool and its producers for a retrieval set: those of ``candidates``, with tfidf-svd fitted on the
    documents and every -int8 copy calibrated on them (its parent's vectors must be built first)."""
    from embedselect.models.backends.baselines import make_baseline

    producers = producers_for("text", items, seed)
    producers["tfidf-svd"] = lambda: {"tfidf-svd": make_baseline("tfidf-svd", modality="text", options={}, seed=seed,
                                                                 fit_items=items[:n_docs]).embed(items)}
    int8 = [c for c in TEXT_POOL if c.relation == "quantized-int8"]
    for c in int8:
        producers[c.name] = (lambda name, parent: lambda: {name: int8_on_docs(np.load(folder / f"{parent}.npy"),
                                                                               n_docs)})(c.name, c.parent)
    pool = [dataclasses.replace(c, source="int8-docs", how=c.how.replace("the dataset's own vectors",
                                                                          "the documents' vectors"))
            if c in int8 else c for c in TEXT_POOL]
    return pool, producers


def build(names: Sequence[str], only: set[str] | None) -> None:
    import torch

    torch.set_num_threads(1)
    for name in names:
        folder = root() / name
        meta = prepare(SETS[name], folder)
        docs = json.loads((folder / "docs.json").read_text())
        queries = json.loads((folder / "queries.json").read_text())
        items = docs + queries
        log.info("%s: %d documents, %d queries -> %s", name, meta["n_docs"], meta["n_queries"], folder)
        pool, producers = pool_for(folder, items, len(docs), SEED)
        entries = build_pool(folder, items, pool, producers, only=only)
        log.info("%s: %d candidates", name, len(entries))


def load_set(name: str) -> tuple[dict, list[list[int]], list[dict], dict[str, np.ndarray]]:
    folder = root() / name
    meta = json.loads((folder / "meta.json").read_text())
    relevant = json.loads((folder / "relevant.json").read_text())
    entries = json.loads((folder / "candidates.json").read_text())
    vectors = {e["name"]: np.load(folder / f"{e['name']}.npy") for e in entries}
    return meta, relevant, entries, vectors


def truth_of(name: str, relevant: list[list[int]], vectors: dict[str, np.ndarray], n_docs: int) -> dict[str, dict]:
    """candidate -> its retrieval scores (cached in the set's folder)."""
    from embedselect.validation.retrieval import retrieval_quality

    path = root() / name / "truth.json"
    cache = json.loads(path.read_text()) if path.is_file() else {}
    for c, v in vectors.items():
        if c not in cache:
            q = retrieval_quality(v[n_docs:], v[:n_docs], relevant, n_boot=1000, seed=SEED)
            cache[c] = q.to_dict()
            save_json(path, cache)
    return {c: cache[c] for c in vectors}

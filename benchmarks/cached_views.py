"""The views the default is chosen on, read from the caches ``validity_pools.py`` wrote (:func:`load_views`), and
one setting of the combination scored on one view as ``select()`` combines it (:func:`evaluate`)."""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

import numpy as np

from benchmarks.candidates import copy_pairs
from benchmarks.default_grid import needed_signals
from benchmarks.named_pools import POOLS, pool_roles
from benchmarks.scoring import correlations, family_violations, regret, top_pick
from benchmarks.sets.registry import stratified_indices
from benchmarks.signal_cache import cached_signal, central_of_view, view_cache_dir
from benchmarks.validity_data import load_pool
from embedselect.ranking.combine import combine_ranks, copies_below_parents


def load_views(datasets, max_items: int, seed: int, extra: Sequence[str] | Mapping[str, Sequence[str]] = (),
               pools: tuple[str, ...] = ("all", "issue"), metric_seed: int | None = None) -> list[dict[str, Any]]:
    """One entry per (dataset, pool) whose signals (and ``extra`` ones) are cached: truth, signals, copy pairs, pool
    entries. ``extra``: signals every view needs, or per modality the signals its views need (a dataset of a modality
    not named needs none). ``metric_seed``: the signals computed with this metric seed on the same items
    (``seed_stability.py``'s caches) instead of ``seed``'s."""
    views = []
    for d in datasets:
        meta, labels, _items, entries, vectors = load_pool(d)
        needs = needed_signals(extra, meta["modality"])
        n_cls = len(np.unique(labels))
        keep_all = len(labels) - max_items < n_cls  # the rule of validity_pools.run_dataset
        idx = np.arange(len(labels)) if keep_all else stratified_indices([str(v) for v in labels], max_items, seed)
        n = len(idx)
        truth_path = view_cache_dir(d, n, seed) / "truth_logistic_f5.json"
        if not truth_path.is_file():
            continue
        truth = {k: v["acc"] for k, v in json.loads(truth_path.read_text()).items()}
        for pool in pools:
            keys = sorted(set(POOLS[pool] if POOLS.get(pool) is not None else vectors))  # sorted: ties break by name
            if not set(keys) <= set(vectors):
                continue
            ms = seed if metric_seed is None else metric_seed
            cd = view_cache_dir(d, n, ms, pool)
            sub = {k: np.ascontiguousarray(vectors[k][idx], dtype=np.float32) for k in keys}
            refs, fams = pool_roles([e for e in entries if e["name"] in keys], sorted(keys))
            central = central_of_view(d, sub, refs, fams, n=n, seed=ms, pool=pool)
            files = {m: cached_signal(cd, m, central) for m in needs}
            if not all(f.is_file() for f in files.values()):
                continue
            sig = {m: json.loads(f.read_text())["scores"] for m, f in files.items()}
            if set(sig["task_prior"]) != set(keys):
                continue
            pairs = copy_pairs(entries, {k: vectors[k][idx] for k in keys}, seed)
            views.append({"dataset": d, "pool": pool, "modality": meta["modality"], "truth": {k: truth[k] for k in keys}, "signals": sig,
                          "pairs": pairs, "entries": [e for e in entries if e["name"] in keys]})
    return views


def view_families(view: Mapping[str, Any]) -> dict[str, str]:
    """The view's families as ``select()`` finds them (:func:`~benchmarks.named_pools.pool_roles`): each candidate's
    model, which the package's combination counts once."""
    return pool_roles(view["entries"], sorted(view["truth"]))[1]


def evaluate(view: dict[str, Any], weights: dict[str, float], method: str, copies: bool) -> dict[str, Any]:
    """One setting on one view, combined as ``select()`` combines it (each family once, copies below parents when
    ``copies``): Spearman ρ, Kendall τ, regret, top pick, copy violations."""
    comb = combine_ranks({m: view["signals"][m] for m in weights}, weights=weights, method=method,
                         families=view_families(view))
    if copies:
        comb, _ = copies_below_parents(comb, view["pairs"])
    rho, tau = correlations(comb, view["truth"])
    pick, _ = top_pick(comb)
    return {"rho": rho, "tau": tau, "regret": regret(comb, view["truth"]), "top": pick,
            "violations": len(family_violations(comb, view["truth"], view["entries"]))}


def evaluate_grid(views: list[dict[str, Any]], grid: list[tuple[dict[str, float], str]]) -> list[list[dict[str, Any]]]:
    """``table[i][j]``: setting ``grid[i]`` on ``views[j]`` (:func:`evaluate`, copies below parents)."""
    return [[evaluate(v, w, meth, True) for v in views] for w, meth in grid]

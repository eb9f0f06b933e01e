"""Choose the default combination by leave-one-dataset-out, from the signals ``validity_pools.py`` cached.

Views: every dataset's full pool (``--pool all``) and, for text, the issue pool (``--pool issue``); run both with
``validity_pools.py`` first. Grid: task_prior weight 1; sufficiency, nn_agreement, rankme and modularity weights from
:data:`GRID`; combination method mean rank or mean z-score; derived copies below their parents
(:func:`embedselect.ranking.combine.copies_below_parents`) in every setting.

Objective (fixed before looking at results): the number of views meeting both targets of issue 9 (Spearman ≥ 0.8
and top-pick regret ≤ 0.02), ties by mean Spearman (an undefined Spearman counts as -1). For each held-out dataset,
both its views are left out together and the setting with the best objective on the other datasets is chosen.

The grid, its option families and the package's default as a setting are in ``default_grid.py``, the views read from
the caches and one setting scored on one in ``cached_views.py``, the LODO and the reading of its held-out results in
``lodo.py``; this module holds the reports (``--variants``, ``--second-truth``, ``--placements``, ``--metric-seeds``)
and the command line.

    python -m benchmarks.validity_default            # prints the LODO choices and the old-vs-new default table

Every number is a benchmark result, never a test threshold.
"""

from __future__ import annotations

import argparse
import collections
import json
from typing import Any, Mapping, Sequence

import numpy as np

from benchmarks.cached_views import evaluate, evaluate_grid, load_views, view_families
from benchmarks.default_grid import (
    FAMILIES,
    GRID,
    METHODS,
    WITHIN_MODALITY_FAMILIES,
    default_extra,
    default_setting,
    default_weights,
    family_signals,
    label,
    settings,
)
from benchmarks.lodo import done_when, lodo, lodo_within_modality, objective, per_view_table, results_summary
from benchmarks.named_pools import DATASETS
from benchmarks.scoring import TARGETS
from benchmarks.sets.registry import DATASETS as ALL_DATASETS
from benchmarks.sets.registry import stratified_indices
from benchmarks.signal_cache import view_cache_dir
from benchmarks.validity_data import load_pool
from embedselect.ranking.combine import DEFAULT_METHOD, combine_ranks, copies_below_parents

OLD_DEFAULT = ({"task_prior": 1.0, "sufficiency": 1.0}, "mean-rank", False)
"""The default before 2026-11-23: task_prior + sufficiency, equal weights, mean rank, no copy rule."""
PREVIOUS_DEFAULT = ({"task_prior": 1.0, "sufficiency": 0.25, "nn_agreement": 0.5, "rankme": 0.5}, "mean-z")
"""The default chosen on 7 datasets (12 views) on 2026-11-23, replaced the same day when 3 sentence-level datasets and
mpnet's layer 1 joined the benchmark."""


VARIANT_SIGNALS = ("task_prior-all", "nn_agreement-all", "sufficiency-all", "sufficiency-normal_scores")
"""Signals with non-default options (``signal_cache.VARIANTS``), loaded with ``--variants`` (issue 23)."""
VIEW_POOLS = ("all", "issue", "width", "photo8")
"""The named pools of ``named_pools.POOLS`` read as views, where their signals are cached."""


def compare_variants(views: list[dict[str, Any]], families: Mapping[str, tuple[str, ...]] = FAMILIES) -> int:
    """Print, per option family of :data:`FAMILIES`, the held-out (LODO over :data:`GRID`) ρ and regret per view,
    LODO over the union of the families, LODO within each modality, and each family at the package's default weights
    (no fitting)."""
    if len({v["dataset"] for v in views}) < 2:
        raise SystemExit("need every variant signal cached for at least 2 datasets: run validity_pools.py --metrics "
                         + " ".join(family_signals(families)))
    print("Views: " + ", ".join(f"{v['dataset']}/{v['pool']} ({v['modality']}, {len(v['truth'])})" for v in views))
    results: dict[str, list[tuple[dict, str]]] = {}
    for fam, sigs in families.items():
        results[f"LODO, {fam}"] = lodo(views, settings(sigs))
    union = [s for sigs in families.values() for s in settings(sigs)]
    results["LODO, choosing the family too"] = lodo(views, union)
    results["LODO, family too, per modality"] = lodo_within_modality(views, {v["modality"]: union for v in views})
    pkg = default_weights()
    for fam, (tp, suff, nn) in families.items():
        for ws in (0.0, 0.25, 0.5):
            if ws == 0.0 and "normal" in fam:
                continue
            w = {tp: 1.0, **({suff: ws} if ws else {}),
                 **{(nn if m == "nn_agreement" else m): v for m, v in pkg.items() if m not in MISSION_NAMES}}
            results[f"fixed, {fam}, sufficiency {ws:g}"] = [(evaluate(v, w, DEFAULT_METHOD, True), label((w, DEFAULT_METHOD)))
                                                            for v in views]
    for kind in ("LODO", "fixed"):
        names = [n for n in results if n.startswith(kind)]
        print(f"\n{kind}: ρ / regret per view" + (" (held out)" if kind == "LODO" else
                                                 " (the package's nn_agreement / rankme weights, mean z; no fitting)"))
        print("\n| view | " + " | ".join(n.split(", ", 1)[1] for n in names) + " |")
        print("|---|" + "---|" * len(names))
        for j, v in enumerate(views):
            print(f"| {v['dataset']}/{v['pool']} ({v['modality']}, {len(v['truth'])}) | "
                  + " | ".join(f"{results[n][j][0]['rho']:.2f} / {results[n][j][0]['regret']:.3f}"
                               if results[n][j] is not None else "–" for n in names) + " |")
        for m in ("text", "image"):
            rows = {n: [r for r, v in zip(results[n], views) if v["modality"] == m and r is not None] for n in names}
            if rows[names[0]]:
                print(f"\n{kind}, {m} views:")
                for n in names:
                    if rows[n]:
                        print(f"- {n.split(', ', 1)[1]}: {results_summary([r for r, _ in rows[n]])}")
    print("\nSettings chosen without each dataset:")
    for name, rows in results.items():
        if name.startswith("LODO"):
            print(f"- {name}: " + "; ".join(f"{v['dataset']}/{v['pool']}: {r[1]}" for r, v in zip(rows, views)
                                            if r is not None))
    return 0


MISSION_NAMES = ("task_prior", "sufficiency")
BEFORE = ({"task_prior-all": 1.0, "nn_agreement-all": 1.0, "rankme": 1.0}, "mean-z")
"""The default before 2026-11-25: task_prior 1 + nn_agreement 1 + rankme 1 (mean z), sufficiency shown at weight 0, the
pool's baselines counted as evidence."""


def knn_truth(view: dict[str, Any], max_items: int, seed: int) -> dict[str, float]:
    """A second ground truth (issue 23): held-out accuracy of the k-NN probe (:data:`embedselect.validation.heldout.PROBES`),
    cached per dataset and candidate like the tuned logistic probe."""
    from embedselect.validation.heldout import probe_accuracies

    meta, labels, _items, _entries, vectors = load_pool(view["dataset"])
    n_cls = len(np.unique(labels))
    keep_all = len(labels) - max_items < n_cls
    idx = np.arange(len(labels)) if keep_all else stratified_indices([str(v) for v in labels], max_items, seed)
    path = view_cache_dir(view["dataset"], len(idx), seed) / "truth_knn_f5.json"
    cache = json.loads(path.read_text()) if path.is_file() else {}
    todo = [c for c in view["truth"] if c not in cache]
    if todo:
        df = probe_accuracies({c: vectors[c][idx] for c in todo}, labels[idx], cv=5, seed=seed, probes=("knn",), n_boot=0)
        cache.update({c: float(df.loc[c, "knn_acc"]) for c in todo})
        path.write_text(json.dumps(cache, indent=1))
    return {c: cache[c] for c in view["truth"]}


def second_truth(views: list[dict[str, Any]], max_items: int, seed: int) -> int:
    """The default before and now against the k-NN probe's accuracy instead of the tuned logistic probe's (no weight
    is refitted: the weights are the ones chosen on the logistic truth; now = the default of the view's modality)."""
    rows: dict[str, list[tuple[dict, dict]]] = {"text": [], "image": []}
    print("| view | before: ρ / regret vs k-NN truth | now: ρ / regret vs k-NN truth | best by k-NN |")
    print("|---|---|---|---|")
    for v in views:
        kv = dict(v, truth=knn_truth(v, max_items, seed))
        b, c = evaluate(kv, *BEFORE, True), evaluate(kv, *default_setting(v["modality"]), True)
        rows[v["modality"]].append((b, c))
        print(f"| {v['dataset']}/{v['pool']} | {b['rho']:.2f} / {b['regret']:.3f} | {c['rho']:.2f} / {c['regret']:.3f} | "
              f"{max(kv['truth'], key=kv['truth'].get)} |")
    for m, r in rows.items():
        if r:
            print(f"\n{m}: before {results_summary([b for b, _ in r])}; now {results_summary([c for _, c in r])}")
    return 0


WATCHED = ("all-mpnet-base-v2-layer1", "random-projection-1024", "m2v-MiniLM-raw", "all-MiniLM-L6-v2-len8",
           "all-mpnet-base-v2-len8", "all-mpnet-base-v2-first64", "all-mpnet-base-v2-int8", "all-mpnet-base-v2-binary",
           "efficientnet-lite0-untrained", "efficientnet-lite0-maxpool", "efficientnet-lite0-stage3", "pixel-pca",
           "random-projection")
"""--placements: the wide-but-weak, truncated and quantised candidates (and the image variants) whose place in the
default's ranking is compared with their place by accuracy (issue 23 items 2-4)."""


def placements(views: list[dict[str, Any]], weights: dict[str, float] | None = None) -> int:
    """Per view: the rank (1 = first) of each :data:`WATCHED` candidate under the package's default combination (copy
    rule applied) and by the ground truth, and whether the default puts it above a candidate that is more accurate
    and wider than it (width rewarded) or above its parent (copies, max_length variants). ``weights`` (mean rank for
    every view) replaces the default of each view's modality."""
    def setting_of(modality: str) -> tuple[dict[str, float], str]:
        return (weights, DEFAULT_METHOD) if weights else default_setting(modality)

    heads = [("Weights", "text")] if weights else [(f"Default ({m})", m) for m in ("text", "image")]
    print("\n".join(f"{head}: {label(setting_of(m))}" for head, m in heads) + "\n")
    print("| view | candidate | dims | rank by the default | rank by accuracy | accuracy | above its parent "
          "while less accurate |")
    print("|---|---|---|---|---|---|---|")
    for v in views:
        package = setting_of(v["modality"])
        comb = combine_ranks({m: v["signals"][m] for m in package[0]}, weights=package[0], method=package[1],
                             families=view_families(v))
        comb, _ = copies_below_parents(comb, v["pairs"])
        order = sorted(comb, key=lambda c: (-comb[c], c))  # ties by name, not by the hash order of a set
        truth = sorted(v["truth"], key=lambda c: (-v["truth"][c], c))
        parents = {e["name"]: e.get("parent") for e in v["entries"]}
        dims = {e["name"]: e.get("dims") for e in v["entries"]}
        for c in WATCHED:
            if c not in comb:
                continue
            p = parents.get(c)
            bad = p in comb and comb[c] > comb[p] and v["truth"][c] < v["truth"][p]
            print(f"| {v['dataset']}/{v['pool']} | {c} | {dims.get(c)} | {order.index(c) + 1} of {len(order)} | "
                  f"{truth.index(c) + 1} | {v['truth'][c]:.3f} | {('yes: ' + p) if bad else 'no'} |")
    return 0


def within_modality_over_seeds(datasets, max_items: int, seeds: int, pools: tuple[str, ...],
                               families: Mapping[str, Sequence[str]] = WITHIN_MODALITY_FAMILIES) -> int:
    """The LODO within each modality (:func:`lodo_within_modality`), each modality over the union of the grids of its
    ``families`` (modality -> family names; by default :data:`WITHIN_MODALITY_FAMILIES`), each view read once per
    metric seed: the choice behind ``embedselect.pipeline.defaults`` (docs/archive/benchmarks-diary.md §4i), and issue 23's
    targets read over every view of the run."""
    fams = {m: [FAMILIES[f] for f in names] for m, names in families.items()}
    views = [dict(v, metric_seed=s) for s in range(seeds)
             for v in load_views([d for d in datasets if ALL_DATASETS[d].modality in fams], max_items, 0,
                                 {m: family_signals(dict(enumerate(fs))) for m, fs in fams.items()}, pools,
                                 metric_seed=s)]
    best: dict[str, tuple[float, float, str]] = {}
    held = lodo_within_modality(views, {m: [x for f in fs for x in settings(f)] for m, fs in fams.items()}, best)
    for m in ("text", "image", None):
        rows = [(h, v) for h, v in zip(held, views) if m in (None, v["modality"]) and h is not None]
        if not rows:
            continue
        if m:
            print(f"LODO within {m}: " + "; ".join(f"{lab} ×{k}" for lab, k in collections.Counter(
                h[1] for h, _ in rows).most_common()))
        print(f"  held out, {m or 'all views'}: {results_summary([h[0] for h, _ in rows])}")
        print("    issue 23: " + done_when([h[0] for h, _ in rows], [f"{v['dataset']}/{v['pool']}" for _, v in rows]))
        if m:
            print(per_view_table(rows))
        if m in best:
            mean, low, lab = best[m]
            print(f"  in sample, the grid's best single setting for {m} (fitted on these views, a ceiling, not a "
                  f"result): mean ρ over views {mean:.3f}, lowest view {low:.2f}: {lab}")
    return 0


def over_metric_seeds(datasets, max_items: int, seeds: int, pools: tuple[str, ...]) -> int:
    """The LODO of :func:`lodo` over the default family's grid, with each view read once per metric seed (the same
    items; the signals of ``seed_stability.py``): a dataset's views under every seed are left out together, and the
    objective counts (view, seed) pairs, so one seed's noise cannot choose the setting."""
    views = [dict(v, metric_seed=s) for s in range(seeds)
             for v in load_views(datasets, max_items, 0, pools=pools, metric_seed=s)]
    print(f"{len(views)} (view, seed) pairs: " + ", ".join(sorted({f"{v['dataset']}/{v['pool']}" for v in views})))
    grid = settings()
    held = lodo(views, grid)
    print("Settings chosen without each dataset: " + "; ".join(
        f"{lab} ×{k}" for lab, k in collections.Counter(h[1] for h in held).most_common()))
    for w, meth in [(default_weights(), m) for m in METHODS]:
        fixed = [evaluate(v, w, meth, True) for v in views]
        for m in ("text", "image"):
            rows = [r for r, v in zip(fixed, views) if v["modality"] == m]
            if rows:
                print(f"fixed {label((w, meth))}, {m}: {results_summary(rows)}, regret ≤ 0.02 on "
                      f"{np.mean([r['regret'] <= 0.02 for r in rows]):.2f}")
    for m in ("text", "image"):
        rows = [h[0] for h, v in zip(held, views) if v["modality"] == m]
        if rows:
            print(f"LODO held out, {m}: {results_summary(rows)}, regret ≤ 0.02 on {np.mean([r['regret'] <= 0.02 for r in rows]):.2f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS),
                    help="default: the first 10 sets (validity_pools.DATASETS); 'all': every set of sets.registry.DATASETS "
                    "(16 in docs/archive/benchmarks-diary.md §4f-r, written '<the 16>' there; 17 since animal-shapes, §4s)")
    ap.add_argument("--max-items", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--pools", nargs="+", default=list(VIEW_POOLS), help="with --variants: the named pools read as views")
    ap.add_argument("--weights", nargs="+", help="with --placements: METRIC=W instead of the package's weights")
    ap.add_argument("--second-truth", action="store_true",
                    help="the default before and now against a k-NN probe's accuracy instead of the tuned logistic one")
    ap.add_argument("--placements", action="store_true",
                    help="where the default puts the wide, truncated and quantised candidates, against their accuracy")
    ap.add_argument("--variants", action="store_true",
                    help="compare the option families of FAMILIES by LODO (needs their signals cached) and exit")
    ap.add_argument("--families", nargs="+", choices=list(FAMILIES),
                    help="with --variants: the families compared (default: all); with --within-modality: the families "
                         "whose grids are searched for every modality (default: each modality's own, "
                         "WITHIN_MODALITY_FAMILIES)")
    ap.add_argument("--require-sufficiency", action="store_true",
                    help="leave sufficiency weight 0 out of the grid: the mission ranks by task prior statistics and "
                         "median information sufficiency, so a default without sufficiency is not a candidate")
    ap.add_argument("--metric-seeds", type=int, default=0,
                    help="LODO over the views read once per metric seed 0..K-1 (seed_stability.py's caches) and exit")
    ap.add_argument("--within-modality", action="store_true",
                    help="with --metric-seeds: LODO within each modality over both sufficiency estimators (§4i)")
    a = ap.parse_args(argv)
    if a.datasets == ["all"]:
        a.datasets = list(ALL_DATASETS)
    if a.require_sufficiency:
        GRID["sufficiency"] = tuple(w for w in GRID["sufficiency"] if w > 0)
    if a.metric_seeds and a.within_modality:
        fams = {m: a.families for m in WITHIN_MODALITY_FAMILIES} if a.families else WITHIN_MODALITY_FAMILIES
        return within_modality_over_seeds(a.datasets, a.max_items, a.metric_seeds, tuple(a.pools), fams)
    if a.metric_seeds:
        return over_metric_seeds(a.datasets, a.max_items, a.metric_seeds, tuple(a.pools))
    if a.second_truth:
        return second_truth(load_views(a.datasets, a.max_items, a.seed,
                                       {m: (*VARIANT_SIGNALS, *x) for m, x in default_extra().items()},
                                       tuple(a.pools)), a.max_items, a.seed)
    if a.placements:
        w = {k: float(v) for k, v in (x.split("=") for x in a.weights)} if a.weights else None
        return placements(load_views(a.datasets, a.max_items, a.seed, default_extra(), tuple(a.pools)), w)
    if a.variants:
        fams = {f: FAMILIES[f] for f in a.families or FAMILIES}
        return compare_variants(load_views(a.datasets, a.max_items, a.seed, family_signals(fams), tuple(a.pools)), fams)
    views = load_views(a.datasets, a.max_items, a.seed, default_extra())
    if len({v["dataset"] for v in views}) < 2:
        raise SystemExit("need the cached signals of at least 2 datasets: run validity_pools.py first")
    grid = settings()
    table = evaluate_grid(views, grid)
    names = sorted({v["dataset"] for v in views})
    print("Leave-one-dataset-out (both views of the held-out dataset left out together):")
    held = {"all": [], "issue": []}
    old = [evaluate(v, *OLD_DEFAULT[:2], True) for v in views]
    chosen = lodo(views, grid, table)
    for d in names:
        for j, v in enumerate(views):
            if v["dataset"] == d:
                (c, lab), o = chosen[j], old[j]
                held[v["pool"]].append((c, o))
                print(f"  {d:9s} {v['pool']:6s} chosen [{lab}]: rho {c['rho']:.2f} regret "
                      f"{c['regret']:.3f} | old weights + copy rule: rho {o['rho']:.2f} regret {o['regret']:.3f}")
    prev = {j: evaluate(v, *PREVIOUS_DEFAULT, True) for j, v in enumerate(views)}
    for pool in held:
        rows = [prev[j] for j, v in enumerate(views) if v["pool"] == pool]
        if rows:
            print(f"  {pool} pools, the previous default (tp 1 + suff 0.25 + nn 0.5 + rankme 0.5, mean z; chosen on 7 "
                  f"datasets): mean rho {np.mean([r['rho'] for r in rows]):.3f}, regret "
                  f"{np.mean([r['regret'] for r in rows]):.3f}, both targets on "
                  f"{sum(1 for r in rows if r['rho'] >= TARGETS['spearman_each'] and r['regret'] <= TARGETS['regret'])}"
                  f" of {len(rows)}")
    for pool, rows in held.items():
        if rows:
            print(f"  {pool} pools, held out: mean rho {np.mean([c['rho'] for c, _ in rows]):.3f} vs "
                  f"{np.mean([o['rho'] for _, o in rows]):.3f}, regret {np.mean([c['regret'] for c, _ in rows]):.3f} "
                  f"vs {np.mean([o['regret'] for _, o in rows]):.3f}")
    best_all = max(range(len(grid)), key=lambda i: (objective(table[i]), -i))
    print(f"\nIn-sample best (for information): {label(grid[best_all])}\n")
    print("The package's default now, each view under its modality's (in-sample where it was chosen on these views): "
          + "; ".join(f"{m} [{label(default_setting(m))}]" for m in ("text", "image")) + "\n")
    current = [evaluate(v, *default_setting(v["modality"]), True) for v in views]
    for pool in ("all", "issue"):
        rows = [c for v, c in zip(views, current) if v["pool"] == pool]
        if rows:
            hits = sum(1 for c in rows if c["rho"] >= TARGETS["spearman_each"] and c["regret"] <= TARGETS["regret"])
            print(f"  {pool} pools: mean rho {np.mean([c['rho'] for c in rows]):.3f}, mean regret "
                  f"{np.mean([c['regret'] for c in rows]):.3f}, both targets on {hits} of {len(rows)}")
    print()
    print("| dataset | pool | candidates | old default ρ | regret | top pick | copy viol. | new default ρ | regret | "
          "top pick | copy viol. | targets met (new) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for v, o, c in zip(views, [evaluate(v, *OLD_DEFAULT) for v in views], current):
        ok = "yes" if c["rho"] >= TARGETS["spearman_each"] and c["regret"] <= TARGETS["regret"] else "MISS"
        print(f"| {v['dataset']} | {v['pool']} | {len(v['truth'])} | {o['rho']:.2f} | {o['regret']:.3f} | {o['top']} | "
              f"{o['violations']} | {c['rho']:.2f} | {c['regret']:.3f} | {c['top']} | {c['violations']} | {ok} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

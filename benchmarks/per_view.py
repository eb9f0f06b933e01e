"""The package's default ranking per view, over metric seeds (issue 23): mean Spearman ρ, mean top-pick regret, the
share of seeds with regret ≤ 0.02 and how often the top pick is the same, for every view (dataset × named pool) whose
signals ``validity_pools.py`` / ``seed_stability.py`` cached for seeds 0..S-1.

    python -m benchmarks.per_view --seeds 5 --json after.json
    python -m benchmarks.per_view --compare before.json after.json      # the markdown table of docs/archive/benchmarks-diary.md §4h
    EMBEDSELECT_BENCH_CACHE=~/.cache/esb2000 python -m benchmarks.per_view --seeds 1 --max-items 2000 \
        --datasets mnist-5k photo-patches --json img2000.json               # §4i: the image default at more items

Run from a checkout's root it measures that checkout's default, so the same command inside a checkout of an older
commit (``git worktree add /tmp/before REV && cd /tmp/before && python -m benchmarks.per_view --json before.json``)
measures that commit's default on the same cached signals, as long as its metrics' code versions are cached.
Every number is a benchmark result, never a test threshold.
"""

from __future__ import annotations

import argparse
import collections
import json
from pathlib import Path

import numpy as np


from benchmarks.cached_views import evaluate, load_views
from benchmarks.default_grid import default_extra, default_setting
from benchmarks.sets.registry import DATASETS

POOL_ORDER = ("issue", "width", "all", "photo8")


def per_view(seeds: int, max_items: int = 300, datasets: list[str] | None = None) -> dict[str, dict]:
    """view -> {rho, tau (Kendall), regret, ok (share of seeds with regret <= 0.02), agree (share of the most frequent top pick),
    picks, modality} of the package default for the view's modality (its weights, method and sufficiency estimator,
    copies below parents), over ``datasets`` (default :data:`~benchmarks.sets.registry.DATASETS`)."""
    out: dict[str, list] = collections.defaultdict(list)
    for s in range(seeds):
        for v in load_views(datasets or list(DATASETS), max_items, 0, default_extra(), POOL_ORDER, metric_seed=s):
            r = evaluate(v, *default_setting(v["modality"]), True)
            out[f"{v['dataset']}/{v['pool']}"].append((r["rho"], r["regret"], r["top"], v["modality"], r["tau"]))
    res = {}
    for k, xs in out.items():
        picks = collections.Counter(x[2] for x in xs).most_common()
        res[k] = {"rho": float(np.mean([x[0] for x in xs])), "tau": float(np.mean([x[4] for x in xs])), "regret": float(np.mean([x[1] for x in xs])),
                  "ok": float(np.mean([x[1] <= 0.02 for x in xs])), "agree": picks[0][1] / len(xs), "picks": picks,
                  "modality": xs[0][3], "seeds": len(xs)}
    return res


def _cell(r: dict) -> str:
    return f"{r['rho']:.2f} / {r.get('tau', float('nan')):.2f} / {r['regret']:.3f} / {r['ok']:.1f} / {r['agree']:.1f}"


def compare(before: dict, after: dict) -> str:
    order = sorted(after, key=lambda k: (after[k]["modality"] != "text", POOL_ORDER.index(k.split("/")[1]), k))
    lines = ["| view | before: ρ / τ / regret / regret ≤ 0.02 / same pick | after: ρ / τ / regret / regret ≤ 0.02 / same "
             "pick | "
             "after: picks over the seeds |", "|---|---|---|---|"]
    for k in order:
        x, y = before.get(k), after[k]
        picks = ", ".join(f"{c} ×{n}" for c, n in y["picks"])
        lines.append(f"| {k} | {_cell(x) if x else '–'} | {_cell(y)} | {picks} |")
    for m in ("text", "image"):
        ks = [k for k in after if after[k]["modality"] == m]
        for name, d in (("before", before), ("after", after)):
            ks_d = [k for k in ks if k in d]
            if ks_d:
                lines.append(f"\n{m}, {name}: mean ρ {np.mean([d[k]['rho'] for k in ks_d]):.3f}, mean τ "
                             f"{np.mean([d[k].get('tau', np.nan) for k in ks_d]):.3f}, lowest "
                             f"{min(d[k]['rho'] for k in ks_d):.2f}, mean regret {np.mean([d[k]['regret'] for k in ks_d]):.3f}, "
                             f"regret ≤ 0.02 {np.mean([d[k]['ok'] for k in ks_d]):.2f}, views with one top pick "
                             f"{sum(d[k]['agree'] == 1 for k in ks_d)}/{len(ks_d)}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--max-items", type=int, default=300, help="the views' item count (validity_pools.py --max-items)")
    ap.add_argument("--datasets", nargs="+", default=None, help=f"default: {' '.join(DATASETS)}")
    ap.add_argument("--json", type=Path, help="write the per-view results here")
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"), help="print the table of two results")
    a = ap.parse_args(argv)
    if a.compare:
        print(compare(*(json.loads(p.read_text()) for p in a.compare)))
        return 0
    res = per_view(a.seeds, a.max_items, a.datasets)
    if a.json:
        a.json.write_text(json.dumps(res, indent=1))
    print(f"{len(res)} views; defaults: " + "; ".join(f"{m} {default_setting(m)}" for m in ("text", "image")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

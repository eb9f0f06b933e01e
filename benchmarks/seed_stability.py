"""Top-pick agreement over seeds (issue 23 item 6): does the default ranking pick the same candidate whatever the seed?

For every view (dataset x named pool of ``named_pools.POOLS``) the package's default metrics are computed with
seeds 0..S-1 on the same items (the pools hold 300 items; every seed keeps all of them), each cached by
``signal_cache.signals``. Per view it reports, for task_prior alone and for the default combination (the package's
weights and method for the view's modality, copies below their parents), the share of seeds whose top pick is the most
frequent one, and the mean regret against the seed-0 ground truth.

    python -m benchmarks.seed_stability --seeds 5 --pools issue width photo8

Every number is a benchmark result, never a test threshold.
"""

from __future__ import annotations

import argparse
import collections
import json
from typing import Any

import numpy as np
from scipy.stats import kendalltau, spearmanr

from benchmarks.candidates import copy_pairs
from benchmarks.default_grid import SIGNALS, default_setting
from benchmarks.named_pools import POOL_MODALITY, POOLS, pool_roles
from benchmarks.scoring import regret, top_pick
from benchmarks.sets.registry import DATASETS
from benchmarks.signal_cache import VARIANTS, signals, view_cache_dir
from benchmarks.validity_data import load_pool
from embedselect.ranking.combine import combine_ranks, copies_below_parents


def view_picks(name: str, pool: str, seeds: int, jobs: int, method: str | None = None,
               extra: tuple[str, ...] = ()) -> dict[str, Any] | None:
    """The top picks, regret and ρ over ``seeds`` metric seeds of task_prior alone and of the package's default for the
    view's modality (its weights and sufficiency estimator; its method unless ``method`` is given), copies below their
    parents; None when the pool's candidates or the truth are not cached."""
    meta, _labels, _items, entries, vectors = load_pool(name)
    if POOLS[pool] is not None:
        if any(c not in vectors for c in POOLS[pool]):
            return None
        vectors = {c: vectors[c] for c in POOLS[pool]}
    n = len(next(iter(vectors.values())))
    truth_path = view_cache_dir(name, n, 0) / "truth_logistic_f5.json"
    if not truth_path.is_file():
        return None
    truth = {k: v["acc"] for k, v in json.loads(truth_path.read_text()).items() if k in vectors}
    weights, default = default_setting(meta["modality"])
    method = method or default
    tp = next((m for m in weights if VARIANTS.get(m, (m, {}))[0] == "task_prior"), "task_prior")  # its task_prior
    references, families = pool_roles(entries, list(vectors))
    pairs = copy_pairs(entries, vectors, seed=0)
    tp_picks, picks, regrets, rhos, taus = [], [], [], [], []
    zs: dict[str, list[np.ndarray]] = collections.defaultdict(list)  # signal -> per seed, its z-scores over the pool
    for s in range(seeds):
        # what validity_default's LODO reads of every view (SIGNALS), the view's default and the extra signals
        sig = signals(name, vectors, n=n, seed=s, metrics=list(dict.fromkeys([*SIGNALS, *weights, *extra])), jobs=jobs,
                      pool=pool, references=references, families=families)
        scores = {m: sig[m]["scores"] for m in weights}
        for m, sc in scores.items():
            v = np.array([sc[c] for c in sorted(vectors)], dtype=np.float64)
            zs[m].append((v - np.nanmean(v)) / (np.nanstd(v) or 1.0))
        comb = combine_ranks(scores, weights=weights, method=method, families=families)
        comb, _ = copies_below_parents(comb, pairs)
        picks.append(top_pick(comb)[0])
        tp_picks.append(top_pick(sig[tp]["scores"])[0])
        regrets.append(regret(comb, truth))
        names = sorted(truth)
        rhos.append(float(spearmanr([comb[c] for c in names], [truth[c] for c in names])[0]))
        taus.append(float(kendalltau([comb[c] for c in names], [truth[c] for c in names])[0]))
    agree = lambda xs: collections.Counter(xs).most_common(1)[0][1] / len(xs)  # noqa: E731
    # how much each signal moves the combined score across seeds: weight x (mean over candidates of the std over
    # seeds of its z-score)
    noise = {m: float(weights[m] * np.nanmean(np.nanstd(np.array(z), axis=0))) for m, z in zs.items()}
    return {"view": f"{name}/{pool}", "modality": meta["modality"], "task_prior": agree(tp_picks), "noise": noise,
            "combined": agree(picks), "picks": picks, "task_prior_picks": tp_picks,
            "regret": float(np.mean(regrets)), "best": max(truth, key=truth.get), "rho": float(np.mean(rhos)),
            "tau": float(np.mean(taus)),
            "regret_ok": float(np.mean([r <= 0.02 for r in regrets]))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--pools", nargs="+", default=["issue", "width", "photo8"])
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--method", default=None, help="combination method (default: the package's for the view's modality)")
    ap.add_argument("--extra", nargs="+", default=[], help="more signals to compute and cache per seed (not in the "
                    "table), e.g. sufficiency-gaussian sufficiency-knife for validity_default.py's LODO")
    a = ap.parse_args(argv)
    rows = []
    for pool in a.pools:
        for d in a.datasets:
            if POOL_MODALITY.get(pool) not in (None, DATASETS[d].modality):
                continue
            r = view_picks(d, pool, a.seeds, a.jobs, a.method, tuple(a.extra))
            if r is not None:
                rows.append(r)
                print(f"{r['view']}: task_prior {r['task_prior']:.1f}, combined {r['combined']:.1f} "
                      f"(picks {collections.Counter(r['picks']).most_common()}; best {r['best']}), "
                      f"mean regret {r['regret']:.3f}", flush=True)
    print(f"\n| view | task_prior alone: top-pick agreement | default combination: top-pick agreement | its picks over "
          f"{a.seeds} seeds | mean regret |")
    print("|---|---|---|---|---|")
    for r in rows:
        picks = ", ".join(f"{c} ×{k}" for c, k in collections.Counter(r["picks"]).most_common())
        print(f"| {r['view']} | {r['task_prior']:.1f} | {r['combined']:.1f} | {picks} | {r['regret']:.3f} |")
    sigs = sorted({m for r in rows for m in r["noise"]})
    print("\nSeed noise each signal adds to the combined score (weight x mean over candidates of the std over seeds "
          "of its z-score), mean over views: " + ", ".join(
              f"{m} {np.mean([r['noise'][m] for r in rows if m in r['noise'] and np.isfinite(r['noise'][m])] or [0.0]):.3f}" for m in sigs))
    for m in ("text", "image"):
        sub = [r for r in rows if r["modality"] == m]
        if sub:
            print(f"\n{m}, the default combination, mean over seeds and views: ρ {np.mean([r['rho'] for r in sub]):.3f}, "
                  f"τ {np.mean([r['tau'] for r in sub]):.3f}, "
                  f"regret {np.mean([r['regret'] for r in sub]):.3f}, share of (view, seed) with regret ≤ 0.02 "
                  f"{np.mean([r['regret_ok'] for r in sub]):.2f}")
            print(f"{m}: views where the combined top pick is the same for every seed: "
                  f"{sum(r['combined'] == 1.0 for r in sub)}/{len(sub)}; task_prior alone: "
                  f"{sum(r['task_prior'] == 1.0 for r in sub)}/{len(sub)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

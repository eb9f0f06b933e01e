"""Benchmark: batched all-pairs information sufficiency vs one pair at a time.

Synthetic pool: 10 candidates, n = 5000, dims 64..768, each a noisy nonlinear view of a shared
32-d latent (noise grows with the index). Both modes run exactly the same optimiser steps
(early stopping disabled by patience > steps) with the same seed. Reports wall times, their ratio,
the Spearman rank agreement of the two sets of median scores, the largest |difference| of the IS
matrices, and the time to add an 11th candidate to a cached pool.

    .venv/bin/python benchmarks/bench_sufficiency.py [--steps 100] [--device cpu] [--n 5000]
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np
import torch
from scipy.stats import spearmanr

from embedselect.metrics.sufficiency import information_sufficiency

DIMS = [64, 96, 128, 192, 256, 320, 384, 512, 640, 768]


class DictCache:
    def __init__(self):
        self.data = {}

    def get_many(self, keys):
        return {k: self.data[k] for k in keys if k in self.data}

    def put_many(self, items):
        self.data.update(items)


def make_pool(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 32))
    pool = {}
    for k, d in enumerate(DIMS + [384]):
        a = rng.standard_normal((32, d)) / np.sqrt(32)
        pool[f"c{k:02d}_{d}"] = (np.tanh(x @ a) + (0.1 + 0.15 * k) * rng.standard_normal((n, d))).astype(np.float32)
    return pool


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    pool = make_pool(args.n)
    names = list(pool)
    ten = {k: pool[k] for k in names[:10]}
    opts = dict(max_steps=args.steps, patience=10**6, eval_every=max(args.steps // 4, 1))
    keys = {k: f"run-{k}" for k in names}
    cache = DictCache()
    t = time.perf_counter()
    rb = information_sufficiency(ten, seed=0, batched=True, device=args.device, run_keys=keys,
                                 pair_cache=cache, **opts)
    t_b = time.perf_counter() - t
    t = time.perf_counter()
    rs = information_sufficiency(ten, seed=0, batched=False, device=args.device, run_keys=keys, **opts)
    t_s = time.perf_counter() - t
    t = time.perf_counter()
    r11 = information_sufficiency(pool, seed=0, batched=True, device=args.device, run_keys=keys,
                                  pair_cache=cache, **opts)
    t_add = time.perf_counter() - t
    rho = spearmanr([rb.scores[k] for k in ten], [rs.scores[k] for k in ten]).statistic
    out = {
        "device": args.device if args.device != "cpu" else f"cpu ({torch.get_num_threads()} threads, {platform.processor() or platform.machine()})",
        "n": args.n, "candidates": 10, "pairs": 90, "dims": DIMS, "steps_per_pair": args.steps,
        "batched_s": round(t_b, 2), "one_pair_at_a_time_s": round(t_s, 2),
        "speedup": round(t_s / t_b, 2), "spearman_median_scores": round(float(rho), 4),
        "max_abs_matrix_diff": float(np.nanmax(np.abs(rb.matrix.to_numpy() - rs.matrix.to_numpy()))),
        "add_11th_s": round(t_add, 2), "add_11th_pairs_computed": r11.n_computed,
        "add_11th_pairs_cached": r11.n_cached,
        "scores_batched": {k: round(v, 4) for k, v in rb.scores.items()},
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()

"""Seed stability of median information sufficiency at small n, on synthetic pools with a known order.

Each pool: four noisy views of one latent (less noise = better, known order) and an independent random
candidate. For every n and settings variant, three seeds; prints Spearman between the scores and the known
order, how many of the 20 pairs stopped at step 0 (IS exactly 0), and the best candidate's score.

    PYTHONPATH=$PWD python -m lab.sufficiency_small_n --pool A --n 300,500,1000 \
        --configs '{"old": {"rows_per_pc": 10, "min_pcs": 2}, "new": {}}'

Pool A (the one the small-n rule was chosen on): 12-d latent, candidates tanh(latent A / 3) + noise, 32 dims.
Pool B (held out, checked after the choice): 4-d latent, linear, 64 dims. Results in docs/archive/benchmarks-diary.md §4b.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch
from scipy.stats import spearmanr

from embedselect.metrics.sufficiency.score import information_sufficiency


def pool_a(n: int, seed: int = 123) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    lat = rng.standard_normal((n, 12))
    out = {f"noise{sd}": np.tanh(lat @ rng.standard_normal((12, 32)) / 3) + sd * rng.standard_normal((n, 32))
           for sd in (0.2, 0.5, 1.0, 2.0)}
    out["random"] = rng.standard_normal((n, 32))
    return out


def pool_b(n: int, seed: int = 7) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    lat = rng.standard_normal((n, 4))
    out = {f"noise{sd}": lat @ rng.standard_normal((4, 64)) + sd * rng.standard_normal((n, 64))
           for sd in (0.3, 0.7, 1.5, 3.0)}
    out["random"] = rng.standard_normal((n, 64))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pool", choices=("A", "B"), default="A")
    ap.add_argument("--n", default="300,500,1000")
    ap.add_argument("--configs", default='{"default": {}}', help="JSON: name -> sufficiency options")
    ap.add_argument("--seeds", default="0,1,2")
    args = ap.parse_args()
    torch.set_num_threads(1)
    make = pool_a if args.pool == "A" else pool_b
    for n in (int(x) for x in args.n.split(",")):
        pool = make(n)
        names = list(pool)
        truth = list(range(len(names), 0, -1))
        for name, opts in json.loads(args.configs).items():
            rhos, zeros, tops = [], [], []
            t = time.time()
            for s in (int(x) for x in args.seeds.split(",")):
                r = information_sufficiency(pool, seed=s, **opts)
                sc = [r.scores[k] for k in names]
                rhos.append(round(float(spearmanr(sc, truth).statistic), 2) if np.ptp(sc) > 0 else float("nan"))
                zeros.append(sum(q["best_step"] == 0 for q in r.pairs))
                tops.append(round(r.scores[names[0]], 3))
            print(f"pool {args.pool} n={n} {name}: spearman {rhos} pairs stopped at 0 {zeros} "
                  f"best candidate's score {tops} ({time.time() - t:.0f}s)", flush=True)


if __name__ == "__main__":
    main()

"""Benchmark: batched all-pairs information sufficiency vs one pair at a time.

Synthetic pool: 10 candidates, n = 5000, dims 64..768, each a noisy nonlinear view of a shared
32-d latent (noise grows with the index). Both modes run exactly the same optimiser steps
(early stopping disabled by patience > steps) with the same seed. Reports wall times, their ratio,
the Spearman rank agreement of the two sets of median scores, the largest |difference| of the IS
matrices, the time to add an 11th candidate to a cached pool, and the wall time of the default
settings (early stopping on) for the first 6 candidates at n = 2 000.

    .venv/bin/python -m benchmarks.bench_sufficiency [--steps 100] [--device cpu] [--n 5000] [--threads 1]
    .venv/bin/python -m benchmarks.bench_sufficiency --prep 1000000 --threads 2   # one candidate's preparation

``--prep N`` times instead what every candidate costs before its pairs train, at N items x 384 dims read from a
memory map (as the store hands them): standardisation and principal axes from every training row against the
seeded sample of ``prep_max_items`` rows the estimator uses, two runs each.
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np
import torch
from scipy.stats import spearmanr

from embedselect.metrics import MemoryPairCache
from embedselect.metrics.sufficiency import knife
from embedselect.metrics.sufficiency.score import information_sufficiency
from testkit.tinymodels import latent_views

_TRAIN_S = [0.0]
_train_pairs = knife.train_pairs


def _timed_train_pairs(*a, **k):
    """knife.train_pairs, accumulating its wall time (training + held-out evaluation) in _TRAIN_S."""
    t = time.perf_counter()
    try:
        return _train_pairs(*a, **k)
    finally:
        _TRAIN_S[0] += time.perf_counter() - t


knife.train_pairs = _timed_train_pairs

DIMS = [64, 96, 128, 192, 256, 320, 384, 512, 640, 768]


def make_pool(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    """:func:`testkit.tinymodels.latent_views` of :data:`DIMS` and one more 384-d view, noise step 0.15, each named
    ``c<kk>_<d>`` (two-digit k, so that the names sort in candidate order)."""
    dims = DIMS + [384]
    views = latent_views(n, dims, seed, noise_step=0.15).values()
    return {f"c{k:02d}_{d}": v for k, (d, v) in enumerate(zip(dims, views))}


def prep_bench(n: int, device: str, dim: int = 384) -> dict:
    """Wall seconds of :meth:`knife.Prepared.fit` for one n x ``dim`` float32 candidate (a memory map in a temporary
    folder, correlated columns), on every training row and on the capped sample, holding the rows the estimate reads."""
    import tempfile

    from embedselect.metrics.sufficiency.rows import plan_rows
    from embedselect.metrics.sufficiency.settings import SufficiencySettings

    st = SufficiencySettings()
    rows = plan_rows(n, st, 0)
    rng = np.random.default_rng(0)
    mix = rng.standard_normal((dim, dim)).astype(np.float32) / np.sqrt(dim)
    out: dict = {"n": n, "dim": dim, "n_train": len(rows.train), "prep_max_items": st.prep_max_items,
                 "rows_held": n if rows.held is None else len(rows.held)}
    with tempfile.TemporaryDirectory() as tmp:
        x = np.lib.format.open_memmap(f"{tmp}/x.npy", mode="w+", dtype=np.float32, shape=(n, dim))
        for a in range(0, n, 100_000):
            x[a:a + 100_000] = rng.standard_normal((min(100_000, n - a), dim), dtype=np.float32) @ mix
        x.flush()
        x = np.load(f"{tmp}/x.npy", mmap_mode="r")
        for name, idx in (("every_training_row", rows.train), ("capped", rows.prep)):
            times = []
            for _ in range(2):
                t = time.perf_counter()
                knife.Prepared.fit(x, idx, st.source_pcs, torch.device(device), rows=rows.held)
                times.append(round(time.perf_counter() - t, 2))
            out[f"{name}_s"] = times
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--default-n", type=int, default=2000, help="n of the default-settings 6-candidate run")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch CPU threads (default 1: the 2-core dev box is shared; more threads than free "
                         "cores makes every small op spin and slows both modes several-fold)")
    ap.add_argument("--prep", type=int, metavar="N", help="time one candidate's preparation at N items instead")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.prep:
        print(json.dumps({"device": args.device, "threads": torch.get_num_threads(), **prep_bench(args.prep, args.device)},
                         indent=2))
        return
    pool = make_pool(args.n)
    names = list(pool)
    ten = {k: pool[k] for k in names[:10]}
    opts = dict(max_steps=args.steps, patience=10**6, eval_every=max(args.steps // 4, 1))
    keys = {k: f"run-{k}" for k in names}
    cache = MemoryPairCache()
    _TRAIN_S[0] = 0.0
    t = time.perf_counter()
    rb = information_sufficiency(ten, seed=0, batched=True, device=args.device, run_keys=keys,
                                 pair_cache=cache, **opts)
    t_b, tr_b = time.perf_counter() - t, _TRAIN_S[0]
    _TRAIN_S[0] = 0.0
    t = time.perf_counter()
    rs = information_sufficiency(ten, seed=0, batched=False, device=args.device, run_keys=keys, **opts)
    t_s, tr_s = time.perf_counter() - t, _TRAIN_S[0]
    t = time.perf_counter()
    r11 = information_sufficiency(pool, seed=0, batched=True, device=args.device, run_keys=keys,
                                  pair_cache=cache, **opts)
    t_add = time.perf_counter() - t
    # default settings (early stopping on, up to 1 500 steps) for a typical pool: 6 candidates, n = 2 000
    six = {k: v[: args.default_n] for k, v in list(pool.items())[:6]} if args.n >= args.default_n else None
    t_six, r6 = None, None
    if six is not None:
        t = time.perf_counter()
        r6 = information_sufficiency(six, seed=0, device=args.device)
        t_six = time.perf_counter() - t
    rho = spearmanr([rb.scores[k] for k in ten], [rs.scores[k] for k in ten]).statistic
    out = {
        "device": args.device if args.device != "cpu" else f"cpu ({torch.get_num_threads()} threads, {platform.processor() or platform.machine()})",
        "n": args.n, "candidates": 10, "pairs": 90, "dims": DIMS, "steps_per_pair": args.steps,
        "batched_s": round(t_b, 2), "one_pair_at_a_time_s": round(t_s, 2),
        "speedup": round(t_s / t_b, 2),
        "batched_train_s": round(tr_b, 2), "one_pair_train_s": round(tr_s, 2),
        "speedup_train_only": round(tr_s / tr_b, 2), "spearman_median_scores": round(float(rho), 4),
        "max_abs_matrix_diff": float(np.nanmax(np.abs(rb.matrix.to_numpy() - rs.matrix.to_numpy()))),
        "add_11th_s": round(t_add, 2), "add_11th_pairs_computed": r11.n_computed,
        "add_11th_pairs_cached": r11.n_cached,
        "scores_batched": {k: round(v, 4) for k, v in rb.scores.items()},
        "default_6_candidates_n": args.default_n, "default_6_candidates_s": None if t_six is None else round(t_six, 2),
        "default_6_steps_used": None if r6 is None else sorted({p["steps"] for p in r6.pairs}),
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()

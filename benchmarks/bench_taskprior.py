"""Speed and memory of the streamed Task Prior moments.

In one run:
  1. n = 8 192, d = 768: streamed moments (float64 and float32) vs a dense numpy float64 reference
     that materialises the n×n kernels: wall time and extra peak memory (RSS), plus the max relative
     difference of the results.
  2. Streamed time at n = 8 192, 32 768 and 100 000 (d = 768, one candidate vs one prior) against the
     GEMM floor: the bare tile products Z_I Z_Jᵀ it must do (candidate and prior, upper-triangle tiles,
     same dtype and tile). For large n the floor is timed on one full row of tiles and extrapolated
     by tile area (``--floor-rows``), which is exact up to timing noise since all tiles are alike.

Each case runs in a fresh subprocess so that its peak RSS is its own.

    .venv/bin/python -m benchmarks.bench_taskprior                      # full run
    .venv/bin/python -m benchmarks.bench_taskprior --sizes 8192 --threads 1   # quick
    .venv/bin/python -m benchmarks.bench_taskprior --prior-check        # synthetic prior comparison
    .venv/bin/python -m benchmarks.bench_taskprior --wide-pool          # the whole metric, 11 wide candidates, n = 300
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import resource
import time


def _rss_peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _data(n: int, d: int, seed: int):
    import numpy as np

    rng = np.random.default_rng(seed)
    # low-rank signal + noise, float32 like real embeddings
    basis = rng.normal(size=(64, d)).astype(np.float32)
    x = rng.normal(size=(n, 64)).astype(np.float32) @ basis + rng.normal(size=(n, d)).astype(np.float32)
    p = rng.normal(size=(n, 64)).astype(np.float32) @ basis + 2 * rng.normal(size=(n, d)).astype(np.float32)
    return x, p


def _case(kind: str, n: int, d: int, threads: int, tile: int, dtype: str, floor_rows: int, q) -> None:
    import numpy as np
    import torch

    torch.set_num_threads(threads)
    x, p = _data(n, d, seed=0)
    # warm up BLAS and torch on a small problem so one-off costs are not timed
    from embedselect.metrics.task_prior.score import task_prior_moments

    task_prior_moments(x[:300], p[:300], tile=128, dtype=dtype)
    base = _rss_peak_mib()
    out: dict = {"kind": kind, "n": n, "d": d, "dtype": dtype, "tile": tile}
    t0 = time.perf_counter()
    if kind == "streamed":
        r = task_prior_moments(x, p, tile=tile, dtype=dtype)
        out.update(mean=r.mean, var=r.var)
    elif kind == "dense":
        from embedselect.metrics.kernels import centered_cosine_kernel
        from embedselect.metrics.task_prior.score import resolve_temperature

        t = resolve_temperature(n)
        m = centered_cosine_kernel(x)
        k = centered_cosine_kernel(p)
        k /= t
        np.negative(k, out=k)
        np.exp(k, out=k)
        k += 1.0
        np.reciprocal(k, out=k)  # k is now σ(K/T)
        mean = float(np.sum(m * k))
        k *= 1.0 - k
        m *= m
        out.update(mean=mean, var=float(np.sum(m * k)))
    elif kind == "floor":
        from embedselect.metrics.kernels import kernel_factor

        tdt = getattr(torch, dtype)
        zx = torch.as_tensor(kernel_factor(x), dtype=tdt)
        zp = torch.as_tensor(kernel_factor(p), dtype=tdt)
        t0 = time.perf_counter()
        starts = list(range(0, n, tile))
        rows = starts[: max(1, floor_rows)] if floor_rows > 0 else starts
        area_done = 0
        for i0 in rows:
            for j0 in range(i0, n, tile):
                a = zx[i0 : i0 + tile] @ zx[j0 : j0 + tile].T
                b = zp[i0 : i0 + tile] @ zp[j0 : j0 + tile].T
                area_done += a.numel()
                del a, b
        el = time.perf_counter() - t0
        total_area = sum(min(tile, n - i0) * (n - i0) for i0 in starts)
        out.update(measured_s=el, extrapolated=len(rows) < len(starts))
        out["seconds"] = el * total_area / area_done
        out["peak_extra_mib"] = _rss_peak_mib() - base
        q.put(out)
        return
    out["seconds"] = time.perf_counter() - t0
    out["peak_extra_mib"] = _rss_peak_mib() - base
    q.put(out)


def run_case(*args) -> dict:
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    proc = ctx.Process(target=_case, args=(*args, q))
    proc.start()
    res = q.get()
    proc.join()
    return res


def prior_check(n: int = 1500, seed: int = 1) -> None:
    """Synthetic check of the prior choices (no timing): Spearman correlation between each score and
    the held-out accuracy of a probe on the true labels, for pools with known quality.

    Pools: "noise ladder" (one clustered signal seen through 6 increasing noise levels),
    "+k copies" (k near-duplicates of the second-worst model), and "nuisance family" (one clean model
    plus four models that share a strong label-free nuisance factor and a weaker copy of the signal).
    """
    import numpy as np
    import torch
    from scipy.stats import spearmanr

    from embedselect.metrics.base import MetricContext
    from embedselect.metrics.probes import probe_tasks
    from embedselect.metrics.task_prior.score import compute

    torch.set_num_threads(1)
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(10, 16)) * 1.5
    lab = rng.integers(0, 10, n)
    sig = centres[lab] + rng.normal(size=(n, 16))
    ladder = {}
    for noise in (0.5, 1, 2, 3, 5, 8):
        ladder[f"noise{noise}"] = (sig @ rng.normal(size=(16, 48)) + 3 * noise * rng.normal(size=(n, 48))).astype(np.float32)
    pools = {"noise ladder": ladder}
    for k in (2, 3):
        pool = dict(ladder)
        for j in range(k):
            pool[f"noise5_copy{j}"] = ladder["noise5"] + 0.05 * rng.normal(size=(n, 48)).astype(np.float32)
        pools[f"+{k} copies"] = pool
    nuis = rng.normal(size=(n, 4)) * 3
    fam = {"clean": (sig @ rng.normal(size=(16, 48)) + 3 * rng.normal(size=(n, 48))).astype(np.float32)}
    for j in range(4):
        fam[f"family{j}"] = (0.6 * sig @ rng.normal(size=(16, 48)) + nuis @ rng.normal(size=(4, 48))
                             + 4 * rng.normal(size=(n, 48))).astype(np.float32)
    pools["nuisance family"] = fam
    cols = ("task_prior_alignment", "probe_acc_mean", "probe_acc_p05", "agreement_mean")
    print(f"{'pool':16s} {'prior':10s} " + " ".join(f"{c:>20s}" for c in cols))
    for name, pool in pools.items():
        keys = list(pool)
        truth = [probe_tasks(pool[k], lab[None, :], seed=0, agreement=False).accuracy[0] for k in keys]
        for label, opts in PRIOR_CHECK_ROWS.items():
            r = compute(MetricContext(embeddings=pool, run_keys={k: k for k in keys}, labels=lab,
                                      options={"n_tasks": 32, **opts}))
            rho = [spearmanr([r.columns[c][k] for k in keys], truth).statistic for c in cols]
            print(f"{name:16s} {label:10s} " + " ".join(f"{v:>+20.2f}" for v in rho), flush=True)


PRIOR_CHECK_ROWS: dict[str, dict] = {
    **{prior: {"prior": prior} for prior in ("consensus", "balanced", "central", "loo", "labels")},
    "clusters": {"prior": "central", "tasks": "clusters", "leave_self_out": True},
}
"""The rows of :func:`prior_check`: task_prior's options; "clusters" is the image default (docs/archive/benchmarks-diary.md §4q)."""


WIDE_DIMS = (1280, 1280, 1280, 1408, 1280, 40, 112, 1280, 1280, 256, 256)
"""The widths of the 11-candidate image pool of docs/archive/benchmarks-diary.md §4d (EfficientNet-Lite0/1/2 and variants, an early
stage, pixel-pca, random projection)."""


def wide_pool(n: int = 300, seed: int = 0) -> None:
    """The whole ``task_prior`` metric (moments, central prior, probes) on 11 candidates whose widths sum to ~9 500 on
    ``n`` items (all of them for the moments and the probes), the shape of an image pool, with the sampled tasks of
    the text default and with the image default's cluster tasks (8 and 32 k-means restarts per class count), each
    candidate left out of its own prior."""
    import numpy as np

    from embedselect.metrics.task_prior import score as taskprior
    from embedselect.metrics.base import MetricContext

    rng = np.random.default_rng(seed)
    signal = rng.standard_normal((n, 64))
    embs = {f"c{i}": (signal @ rng.standard_normal((64, d)) + rng.standard_normal((n, d))).astype(np.float32)
            for i, d in enumerate(WIDE_DIMS)}
    clusters = {"tasks": "clusters", "leave_self_out": True}
    for label, opts in (("sampled tasks", {}), ("cluster tasks", clusters),
                        ("cluster tasks, 32 restarts", {**clusters, "cluster_restarts": 32})):
        t0 = time.perf_counter()
        taskprior.compute(MetricContext(embeddings=embs, run_keys={k: k for k in embs}, seed=seed,
                                        options={**opts, "max_items": n, "moments_max_items": n}))
        print(f"task_prior, {label}, {len(WIDE_DIMS)} candidates (widths {sum(WIDE_DIMS)} in all), n={n}: "
              f"{time.perf_counter() - t0:.1f} s", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="8192,32768,100000", help="n values for the scaling runs")
    ap.add_argument("--d", type=int, default=768)
    ap.add_argument("--threads", type=int, default=2, help="torch threads")
    ap.add_argument("--tile", type=int, default=2048)
    ap.add_argument("--scaling-dtype", default="float32", help="dtype of the scaling runs")
    ap.add_argument("--floor-rows", type=int, default=2,
                    help="row-blocks of tiles timed for the GEMM floor when n > 16384 (0 = all)")
    ap.add_argument("--no-dense", action="store_true", help="skip the dense comparison at n = 8192")
    ap.add_argument("--json", default=None, help="also write the results here")
    ap.add_argument("--prior-check", action="store_true",
                    help="instead of timing, run the synthetic check of the prior choices")
    ap.add_argument("--wide-pool", type=int, nargs="?", const=300, default=None, metavar="N",
                    help="instead, time the whole metric on an 11-candidate pool of wide embeddings at n = N (300)")
    a = ap.parse_args()
    if a.wide_pool is not None:
        wide_pool(a.wide_pool)
        return
    if a.prior_check:
        prior_check()
        return
    import torch

    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, "
          f"threads={a.threads}, tile={a.tile}, d={a.d}")
    results = []
    if not a.no_dense:
        n = 8192
        dense = run_case("dense", n, a.d, a.threads, a.tile, "float64", 0)
        results.append(dense)
        print(f"dense numpy float64  n={n}: {dense['seconds']:.2f} s, peak +{dense['peak_extra_mib']:.0f} MiB")
        for dt in ("float64", "float32"):
            s = run_case("streamed", n, a.d, a.threads, a.tile, dt, 0)
            results.append(s)
            rel = max(abs(s["mean"] - dense["mean"]) / abs(dense["mean"]), abs(s["var"] - dense["var"]) / dense["var"])
            print(f"streamed {dt:7s}     n={n}: {s['seconds']:.2f} s, peak +{s['peak_extra_mib']:.0f} MiB | "
                  f"time ratio dense/streamed {dense['seconds'] / s['seconds']:.2f}, "
                  f"memory ratio {dense['peak_extra_mib'] / max(s['peak_extra_mib'], 1):.1f}x, max rel diff {rel:.1e}")
    for n in (int(v) for v in a.sizes.split(",") if v):
        fr = 0 if n <= 16384 else a.floor_rows
        floor = run_case("floor", n, a.d, a.threads, a.tile, a.scaling_dtype, fr)
        s = run_case("streamed", n, a.d, a.threads, a.tile, a.scaling_dtype, 0)
        results += [floor, s]
        ex = " (extrapolated)" if floor["extrapolated"] else ""
        print(f"n={n:6d} {a.scaling_dtype}: streamed {s['seconds']:8.1f} s (peak +{s['peak_extra_mib']:.0f} MiB), "
              f"GEMM floor {floor['seconds']:8.1f} s{ex}, overhead {s['seconds'] / floor['seconds']:.2f}x")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()

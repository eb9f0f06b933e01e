"""FAISS exact k-NN vs a brute-force numpy k-NN, and the approximate (HNSW) index's recall@10.

  1. exact: for n in --sizes, m queries (all n for n <= --full-graph, else --queries sampled rows) against n
     rows of d dims (cosine, k = 10, self excluded): embedselect's FAISS path (`knn`) vs numpy (float32
     matmul in blocks + argpartition + sort). Same neighbours checked (fraction of equal ids).
  2. approximate: at --hnsw-n rows, the HNSW index (the one `knn` switches to above APPROX_THRESHOLD) built
     once; recall@10 of --queries queries against exact search, for several efSearch values; build time.

Data: a clustered synthetic set (200 Gaussian clusters in d dims, float32), seeded.

    .venv/bin/python benchmarks/bench_faiss.py                         # 10^4 and 10^5, HNSW at 10^5
    .venv/bin/python benchmarks/bench_faiss.py --sizes 2000 --hnsw-n 5000 --queries 200   # quick
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np


def data(n: int, d: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((200, d)).astype(np.float32)
    x = centers[rng.integers(0, 200, n)] + 0.8 * rng.standard_normal((n, d), dtype=np.float32)
    return x


def numpy_knn(x: np.ndarray, rows: np.ndarray, k: int, block: int = 2048) -> np.ndarray:
    """Brute force: cosine scores in float32 blocks, self excluded, top k by argpartition + sort."""
    xn = x / np.linalg.norm(x, axis=1, keepdims=True)
    out = np.empty((len(rows), k), dtype=np.int64)
    for s in range(0, len(rows), block):
        r = rows[s:s + block]
        sims = xn[r] @ xn.T
        sims[np.arange(len(r)), r] = -np.inf
        part = np.argpartition(-sims, k, axis=1)[:, :k]
        order = np.argsort(-np.take_along_axis(sims, part, 1), axis=1, kind="stable")
        out[s:s + block] = np.take_along_axis(part, order, 1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--d", type=int, default=384)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--full-graph", type=int, default=10000, help="largest n whose whole k-NN graph is timed")
    ap.add_argument("--queries", type=int, default=10000, help="sampled query rows above --full-graph")
    ap.add_argument("--hnsw-n", type=int, default=100000)
    ap.add_argument("--hnsw-queries", type=int, default=2000)
    ap.add_argument("--ef", default="32,64,128,256")
    a = ap.parse_args()

    import faiss

    from embedselect.metrics.neighbours import build_index, knn, prepare, search_index

    print(json.dumps({"faiss": faiss.__version__, "numpy": np.__version__, "threads": faiss.omp_get_max_threads(),
                      "cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
                      "load": os.getloadavg()}))  # fmt: skip
    rng = np.random.default_rng(1)
    for n in [int(s) for s in a.sizes.split(",") if s]:
        x = data(n, a.d)
        rows = np.arange(n) if n <= a.full_graph else np.sort(rng.choice(n, size=a.queries, replace=False))
        t0 = time.perf_counter()
        ref = numpy_knn(x, rows, a.k)
        t_np = time.perf_counter() - t0
        t0 = time.perf_counter()
        if len(rows) == n:
            nb = knn(x, a.k, exact=True)
            ids = nb.ids
        else:
            xs = prepare(x)
            index = build_index(xs, exact=True, prepared=True)
            _, ids = search_index(index, xs[rows], a.k, prepared=True, self_ids=rows)
        t_faiss = time.perf_counter() - t0
        same = float(np.mean([len(set(p) & set(q)) / a.k for p, q in zip(ids, ref)]))
        print(json.dumps({"case": "exact", "n": n, "d": a.d, "queries": len(rows), "numpy_s": round(t_np, 2),
                          "faiss_s": round(t_faiss, 2), "speedup": round(t_np / t_faiss, 2),
                          "same_neighbours": round(same, 5)}), flush=True)  # fmt: skip
    if a.hnsw_n:
        n = a.hnsw_n
        x = prepare(data(n, a.d, seed=2))
        rows = np.sort(rng.choice(n, size=a.hnsw_queries, replace=False))
        exact_index = build_index(x, exact=True, prepared=True)
        t0 = time.perf_counter()
        _, truth = search_index(exact_index, x[rows], a.k, prepared=True, self_ids=rows)
        t_exact = time.perf_counter() - t0
        t0 = time.perf_counter()
        hnsw = build_index(x, exact=False, prepared=True)
        t_build = time.perf_counter() - t0
        for ef in [int(e) for e in a.ef.split(",")]:
            hnsw.hnsw.efSearch = ef
            t0 = time.perf_counter()
            _, got = search_index(hnsw, x[rows], a.k, prepared=True, self_ids=rows)
            t_q = time.perf_counter() - t0
            recall = float(np.mean([len(set(p) & set(q)) / a.k for p, q in zip(got, truth)]))
            print(json.dumps({"case": "hnsw", "n": n, "d": a.d, "queries": len(rows), "M": hnsw.hnsw.nb_neighbors(1),
                              "efSearch": ef, "build_s": round(t_build, 1), "search_s": round(t_q, 3),
                              "exact_search_s": round(t_exact, 3), "recall_at_10": round(recall, 4)}),
                  flush=True)  # fmt: skip


if __name__ == "__main__":
    main()

"""FAISS exact k-NN vs a brute-force numpy k-NN, and the approximate (HNSW) index's recall@10.

  1. exact: for n in --sizes, m queries (all n for n <= --full-graph, else --queries sampled rows) against n
     rows of d dims (cosine, k = 10, self excluded): embedselect's FAISS path (`knn`) vs numpy (float32
     matmul in blocks + argpartition + sort). Same neighbours checked (fraction of equal ids).
  2. approximate: at --hnsw-n rows, the HNSW index (the one `knn` switches to above APPROX_THRESHOLD) built
     once; recall@10 of --queries queries against exact search, for several efSearch values; build time.

Data: a clustered synthetic set (200 Gaussian clusters in d dims, float32), seeded.

    .venv/bin/python -m benchmarks.bench_faiss                         # 10^4 and 10^5, HNSW at 10^5
    .venv/bin/python -m benchmarks.bench_faiss --sizes 2000 --hnsw-n 5000 --queries 200   # quick
    .venv/bin/python -m benchmarks.bench_faiss --sizes "" --hnsw-n 0 --e2e 100000   # end to end, n texts

  3. end to end (--e2e N): N synthetic texts (the bundled sample's sentences, words shuffled and mixed, 1 %
     exact copies), embedded with the tfidf-svd and random-projection baselines into a fresh cache, then
     `build_index` (from the cache), 100 searches, and `neighbours_view` with near-duplicates; wall time of each
     step and the process's peak RSS.
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
    ap.add_argument("--hnsw-data", choices=["clustered", "gaussian"], default="clustered",
                    help="gaussian: i.i.d. N(0, 1) rows, no structure (the hardest case for a graph index)")
    ap.add_argument("--ef", default="32,64,128,256")
    ap.add_argument("--e2e", type=int, default=0, help="end-to-end run on this many synthetic texts (0 = skip)")
    a = ap.parse_args()

    import faiss

    from embedselect.nn.knn import build_index, knn, prepare, search_index

    print(json.dumps({"faiss": faiss.__version__, "numpy": np.__version__, "threads": faiss.omp_get_max_threads(),
                      "cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
                      "load": os.getloadavg()}))
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
                          "same_neighbours": round(same, 5)}), flush=True)
    if a.hnsw_n:
        n = a.hnsw_n
        raw = data(n, a.d, seed=2) if a.hnsw_data == "clustered" else \
            np.random.default_rng(2).standard_normal((n, a.d), dtype=np.float32)
        x = prepare(raw)
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
            print(json.dumps({"case": "hnsw", "data": a.hnsw_data, "n": n, "d": a.d, "queries": len(rows), "M": hnsw.hnsw.nb_neighbors(1),
                              "efSearch": ef, "build_s": round(t_build, 1), "search_s": round(t_q, 3),
                              "exact_search_s": round(t_exact, 3), "recall_at_10": round(recall, 4)}),
                  flush=True)
    if a.e2e:
        e2e(a.e2e)


def e2e(n: int) -> None:
    import resource
    import tempfile
    from pathlib import Path

    from embedselect.pipeline import embed
    from embedselect.data import ReferenceData, sample_path
    from embedselect.config import Runtime
    from embedselect.search import build_index, neighbours_view

    def rss() -> float:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0

    rng = np.random.default_rng(5)
    base = [t.split() for t in ReferenceData.from_file(sample_path("texts"), column="text").items]
    texts = []
    for i in range(n):
        if texts and rng.random() < 0.01:
            texts.append(texts[int(rng.integers(len(texts)))])  # an exact copy
            continue
        a, b = base[int(rng.integers(len(base)))], base[int(rng.integers(len(base)))]
        words = a[: max(3, len(a) // 2)] + b[len(b) // 2:]
        rng.shuffle(words)
        texts.append(" ".join(words) + f" #{i % 997}")
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache"
        t0 = time.perf_counter()
        ref = ReferenceData.from_texts(texts)
        t_load = time.perf_counter() - t0
        t0 = time.perf_counter()
        embed(ref, ["tfidf-svd", "random-projection"], cache_dir=cache)
        t_embed = time.perf_counter() - t0
        t0 = time.perf_counter()
        idx = build_index(ref, "tfidf-svd", out=Path(tmp) / "idx", runtime=Runtime(cache_dir=cache))
        t_index = time.perf_counter() - t0
        t0 = time.perf_counter()
        hits = idx.search(texts[:100], k=10)
        t_search = time.perf_counter() - t0
        self_first = float(np.mean([h[0].item == q for h, q in zip(hits, texts[:100])]))
        t0 = time.perf_counter()
        view = neighbours_view(ref, ["tfidf-svd", "random-projection"], sample=5, k=5, runtime=Runtime(cache_dir=cache),
                               near_duplicate_threshold=0.99)
        t_view = time.perf_counter() - t0
        print(json.dumps({
            "case": "e2e", "n": n, "exact_copies": ref.report.n_duplicates, "load_s": round(t_load, 1),
            "embed_2_baselines_s": round(t_embed, 1), "build_index_s": round(t_index, 1),
            "index": f"{idx.manifest.index_type} {idx.manifest.n}x{idx.manifest.dim}",
            "search_100_queries_s": round(t_search, 2), "query_finds_itself_first": self_first,
            "neighbours_view_s": round(t_view, 1), "agreement": round(float(view.agreement.matrix[0, 1]), 4),
            "near_duplicates": {k: v["n_drop"] for k, v in view.near_duplicates.items()},
            "peak_rss_mib": round(rss()),
        }), flush=True)


if __name__ == "__main__":
    main()

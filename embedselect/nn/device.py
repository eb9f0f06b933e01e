"""Where FAISS runs: whether its GPU kernels work here (checked once, in a child process), one set of GPU
resources per GPU, moving an index onto one GPU or sharded over every visible GPU (and back), and the GPU's
approximate index (an inverted file: FAISS has no GPU HNSW), trained there and tuned to a recall target.

Device strings: ``"cpu"``; ``"cuda"`` = every visible GPU (the index sharded over them when there are several);
``"cuda:N"`` = GPU N only. What was used is reported as ``"cpu"``, ``"cuda:N"`` or ``"cuda:0,1,… (sharded)"``.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from embedselect.errors import ConfigError

log = logging.getLogger(__name__)

GPU_MAX_K = 2048
"""FAISS GPU indexes answer at most this many neighbours per query (GPU_MAX_SELECTION_K)."""
IVF_NPROBE = 64
"""Inverted lists an approximate GPU (IVF) index visits per query at first (:data:`IVF_RECALL` may raise it)."""
IVF_RECALL = 0.95
"""recall@10 an approximate GPU (IVF) index is tuned to when it is built: on :data:`RECALL_SAMPLE` seeded indexed
rows, ``nprobe`` doubles from :data:`IVF_NPROBE` until their exact 10 nearest rows are found this often, every
list is visited, or FAISS's GPU limit (:data:`~embedselect.nn.device.GPU_MAX_K`) is reached. Clustered vectors
(real embeddings) stay at 64; structureless ones (isotropic noise) need more (measured: n = 50 000, d = 32,
recall 0.78 at 64 lists of 894, 0.97 at 223)."""
RECALL_SAMPLE = 256
"""Queries on which an approximate :func:`embedselect.nn.knn.knn` measures its own recall against exact search."""


def faiss_module():
    """The ``faiss`` module (a typed error if it is missing)."""
    try:
        import faiss
    except ImportError as exc:  # pragma: no cover - faiss-cpu is a core dependency
        raise ConfigError(
            "FAISS is not installed: pip install faiss-cpu (or embedselect[gpu] for faiss-gpu)"
        ) from exc
    return faiss


def num_gpus() -> int:
    """GPUs FAISS sees (0 for a CPU-only FAISS build)."""
    faiss = faiss_module()
    if not hasattr(faiss, "StandardGpuResources"):
        return 0
    return int(getattr(faiss, "get_num_gpus", lambda: 0)())


def faiss_has_gpu() -> bool:
    """Whether the installed FAISS was built with GPU support, sees a GPU, and its GPU kernels run there.

    The last point is checked once per process by a tiny GPU search in a child process (:func:`gpu_smoke_test`):
    a FAISS build without kernels for this GPU's architecture aborts the whole process on its first GPU search
    (measured: faiss-gpu-cu12 1.14.1 on an H100, "CUDA error 209 no kernel image is available"), which no
    exception handler can catch. When the check fails, a warning says why and callers search on the CPU.
    ``scripts/check_faiss_wheel.py`` checks a wheel for the architectures before it is installed.
    """
    if num_gpus() < 1:
        return False
    return _gpu_kernels_run()


_GPU_SMOKE = (
    "import numpy as np, faiss\n"
    "x = np.random.default_rng(0).standard_normal((64, 8)).astype('float32')\n"
    "index = faiss.index_cpu_to_gpu(faiss.StandardGpuResources(), 0, faiss.IndexFlatL2(8))\n"
    "index.add(x)\n"
    "_, ids = index.search(x[:4], 2)\n"
    "assert (ids[:, 0] == np.arange(4)).all(), ids\n"
)


def gpu_smoke_test(code: str = _GPU_SMOKE, *, timeout_s: float = 120.0) -> tuple[bool, str]:
    """Run ``code`` (default: a 64-row FAISS GPU search) in a child Python process.

    Returns:
        ``(ok, reason)``: ``ok`` when the child exits 0; otherwise ``reason`` is its exit status (a signal such
        as SIGABRT is named) and the last line it wrote to stderr.
    """
    import signal
    import subprocess
    import sys

    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return False, f"the FAISS GPU check did not finish in {timeout_s:.0f} s"
    if proc.returncode == 0:
        return True, ""
    if proc.returncode < 0:
        try:
            status = f"killed by {signal.Signals(-proc.returncode).name}"
        except ValueError:
            status = f"killed by signal {-proc.returncode}"
    else:
        status = f"exit status {proc.returncode}"
    last = next((ln.strip() for ln in reversed(proc.stderr.splitlines()) if ln.strip()), "")
    return False, f"{status}" + (f": {last[:300]}" if last else "")


_GPU_CHECK: list[bool] = []  # the one answer of _gpu_kernels_run for this process


def _gpu_kernels_run() -> bool:
    if not _GPU_CHECK:
        ok, reason = gpu_smoke_test()
        if not ok:
            log.warning("FAISS has GPU support but its GPU kernels fail on this machine (%s); nearest-neighbour "
                        "search runs on the CPU. Install a FAISS build for this GPU's architecture "
                        "(scripts/check_faiss_wheel.py lists a wheel's).", reason)
        _GPU_CHECK.append(ok)
    return _GPU_CHECK[0]


_GPU_RESOURCES: dict[int, Any] = {}


def gpu_resources(dev_id: int):
    """One ``StandardGpuResources`` per GPU for the whole process (FAISS's advice: it holds the cuBLAS handle,
    streams and scratch memory; a GPU index must not outlive the resources it was built with)."""
    if dev_id not in _GPU_RESOURCES:
        _GPU_RESOURCES[dev_id] = faiss_module().StandardGpuResources()
    return _GPU_RESOURCES[dev_id]


def gpu_ids(device: str | None) -> list[int]:
    """The GPUs ``device`` asks for, as FAISS can serve them: ``[]`` for the CPU (asked for, or the fallback
    when FAISS has no working GPU support, with a warning), ``[N]`` for ``cuda:N``, every GPU for ``cuda``."""
    dev = str(device or "cpu")
    if not dev.startswith("cuda"):
        return []
    if not faiss_has_gpu():
        log.warning("device %s asked for, but this FAISS has no GPU support or sees no GPU: searching on CPU", dev)
        return []
    if ":" in dev:
        dev_id = int(dev.split(":", 1)[1])
        if dev_id >= num_gpus():
            raise ConfigError(f"device {dev}: FAISS sees {num_gpus()} GPU(s)")
        return [dev_id]
    return list(range(num_gpus()))


def auto_device(device: str | None) -> str:
    """The FAISS device for an embedding ``device`` setting: ``None``/``"auto"`` = ``"cuda"`` (every GPU) when FAISS's
    GPU kernels work here, else ``"cpu"``; ``cuda[:N]`` as given; anything else (``cpu``, ``mps``) = ``"cpu"``."""
    dev = str(device or "auto")
    if dev == "auto":
        return "cuda" if faiss_has_gpu() else "cpu"
    return dev if dev.startswith("cuda") else "cpu"


def describe(gpus: list[int]) -> str:
    """The device label of an index placed on ``gpus`` (see the module docstring)."""
    if not gpus:
        return "cpu"
    if len(gpus) == 1:
        return f"cuda:{gpus[0]}"
    return "cuda:" + ",".join(map(str, gpus)) + " (sharded)"


def to_gpus(index, gpus: list[int]):
    """A GPU copy of the CPU ``index`` on ``gpus``: one GPU via ``index_cpu_to_gpu``; several: sharded (each GPU
    holds 1/len(gpus) of the rows, ``GpuMultipleClonerOptions(shard=True)``), with this process's resources."""
    faiss = faiss_module()
    if len(gpus) == 1:
        return faiss.index_cpu_to_gpu(gpu_resources(gpus[0]), gpus[0], index)
    co = faiss.GpuMultipleClonerOptions()
    co.shard = True
    return faiss.index_cpu_to_gpu_multiple_py([gpu_resources(g) for g in gpus], index, co=co, gpus=list(gpus))


def to_cpu(index):
    """``index`` on the CPU (itself when it is there already): what ``faiss.write_index`` can write."""
    faiss = faiss_module()
    if getattr(index, "embedselect_device", "cpu") == "cpu":
        return index
    return faiss.index_gpu_to_cpu(index)


def tune_nprobe(index, xs: np.ndarray, ftype: int, gpu: int, *, start: int = IVF_NPROBE, seed: int) -> None:
    """Raise the ``nprobe`` of the filled IVF ``index`` (on the GPUs, sharded or not) from ``start`` until
    :data:`IVF_RECALL` is reached on sampled indexed rows (see there); the sample's exact neighbours come from
    brute-force FAISS on GPU ``gpu`` (RECALL_SAMPLE × n × d multiply-adds; on the CPU they cost 3–4 s at
    n = 10⁶, d = 384; docs/benchmarks.md, "GPU paths")."""
    faiss = faiss_module()
    n = xs.shape[0]
    k = min(10, n)
    rows, truth = sampled_truth(xs, xs, k, ftype, seed=[seed, 11], gpu=gpu)
    q = np.ascontiguousarray(xs[rows])
    space = getattr(faiss, "GpuParameterSpace", faiss.ParameterSpace)()  # it also sets a sharded index's parts
    nlist = ivf_nlist(n)
    nprobe = max(1, min(int(start), nlist))
    while True:
        try:
            space.set_index_parameter(index, "nprobe", nprobe)
        except RuntimeError as exc:  # an index type FAISS's parameter space does not know: keep what it has
            log.warning("could not set nprobe=%d on the GPU index (%s); it keeps %d", nprobe, exc, start)
            return
        got = recall(index.search(q, k)[1], truth)
        if got >= IVF_RECALL or nprobe >= min(nlist, GPU_MAX_K):
            break
        nprobe = min(2 * nprobe, nlist, GPU_MAX_K)
    log.debug("IVF over %d rows: nprobe %d of %d lists, recall@%d %.3f on %d indexed rows", n, nprobe, nlist, k,
              got, len(rows))


def sampled_truth(xs: np.ndarray, qs: np.ndarray, k: int, ftype: int, *, seed: Any, exclude_self: bool = False,
                  gpu: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A seeded sample of at most :data:`RECALL_SAMPLE` query rows (sorted indices into ``qs``) and their exact ``k``
    nearest rows of ``xs`` (int64 (m, k), brute-force FAISS with metric type ``ftype``, no index; on GPU ``gpu`` when
    given and ``k`` is within :data:`GPU_MAX_K`, else on the CPU), the query's own row left out with ``exclude_self`` (then ``qs`` are the rows of ``xs``):
    what an approximate search is checked against."""
    faiss = faiss_module()
    rows = np.sort(np.random.default_rng(seed).choice(qs.shape[0], size=min(RECALL_SAMPLE, qs.shape[0]), replace=False))
    q, kk = np.ascontiguousarray(qs[rows]), k + (1 if exclude_self else 0)
    if gpu is None or kk > GPU_MAX_K:
        _, truth = faiss.knn(q, xs, kk, metric=ftype)
    else:
        _, truth = faiss.knn_gpu(gpu_resources(gpu), q, xs, kk, metric=ftype, device=gpu)
    if exclude_self:
        truth = np.array([[j for j in t if j != r][:k] for r, t in zip(rows, truth)], dtype=np.int64)
    return rows, truth


def recall(got: np.ndarray, truth: np.ndarray) -> float:
    """The share of ``truth``'s ids (m, k) that ``got`` (m, k', the same queries) holds, row by row."""
    return sum(len(set(a) & set(b)) for a, b in zip(got.tolist(), truth.tolist())) / truth.size


def ivf_nlist(n: int) -> int:
    """Inverted lists of a GPU IVF index over n rows: about 4·sqrt(n), at least 39 training rows per list."""
    return int(max(1, min(4 * np.sqrt(n), n // 39)))


def trained_ivf(xs: np.ndarray, ftype: int, gpu: int, *, nprobe: int, seed: int):
    """A trained, empty CPU ``IndexIVFFlat`` (about 4·sqrt(n) lists, k-means on GPU ``gpu`` over a seeded sample of
    at most 64 rows per list), ready to be cloned onto the GPUs."""
    faiss = faiss_module()
    n, d = xs.shape
    nlist = ivf_nlist(n)
    quantizer = faiss.IndexFlatIP(d) if ftype == faiss.METRIC_INNER_PRODUCT else faiss.IndexFlatL2(d)
    ivf = faiss.IndexIVFFlat(quantizer, d, nlist, ftype)
    ivf.nprobe = int(min(nprobe, nlist))
    rows = np.random.default_rng(seed).choice(n, size=min(n, 64 * nlist), replace=False)
    on_gpu = to_gpus(ivf, [gpu])
    on_gpu.train(np.ascontiguousarray(xs[np.sort(rows)]))
    trained = faiss.index_gpu_to_cpu(on_gpu)
    trained.nprobe = ivf.nprobe
    return trained


__all__ = ["GPU_MAX_K", "IVF_NPROBE", "IVF_RECALL", "RECALL_SAMPLE", "auto_device", "describe", "faiss_has_gpu",
           "faiss_module", "gpu_ids", "gpu_resources", "gpu_smoke_test", "ivf_nlist", "num_gpus", "recall", "sampled_truth",
           "to_cpu", "to_gpus", "trained_ivf", "tune_nprobe"]

"""Nearest neighbours with FAISS: exact k-NN, an approximate index above a size threshold, k-NN voting,
mutual-nearest-neighbour agreement between candidates, and near-duplicate detection.

Pure array code (numpy + faiss): no store, no backends. Every nearest-neighbour computation of embedselect goes
through :func:`knn` (or :func:`build_index` + :func:`search_index`), so that one rule decides exact vs
approximate search and one rule breaks ties.

Conventions
-----------
- Inputs are ``(n, d)`` arrays, converted to contiguous ``float32`` (FAISS computes in float32).
- ``metric``: ``"cosine"`` (rows L2-normalised, then inner product; an all-zero row stays zero),
  ``"ip"`` (raw inner product) or ``"l2"``. Returned ``scores`` are similarities for ``cosine``/``ip``
  (higher is nearer) and *squared* Euclidean distances for ``l2`` (lower is nearer).
- Exact search (``IndexFlatIP`` / ``IndexFlatL2``) is the default. When the indexed set has more than
  ``threshold`` rows (:data:`APPROX_THRESHOLD`) and ``exact`` is not forced, an HNSW graph index
  (``IndexHNSWFlat``) is used; its recall@10 against exact search is measured in ``benchmarks/bench_faiss.py``
  (docs/benchmarks.md).
- Ties (exact search): neighbours are ordered by score, then by the lower row index, exactly as a stable
  brute-force sort would order them; a tie across the k-th place is resolved by fetching more candidates
  until the k-th score is strictly separated, so the result equals brute force even with duplicate rows.
- ``device="cuda"`` uses FAISS's GPU flat index when the installed FAISS has GPU support (``faiss-gpu``;
  ``pip install embedselect[gpu]``); otherwise a warning is logged and the CPU index is used.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from embedselect.errors import ConfigError, MetricError

log = logging.getLogger(__name__)

METRICS = ("cosine", "ip", "l2")
APPROX_THRESHOLD = 200_000
"""Indexed sets with more rows than this use the approximate HNSW index unless ``exact=True``."""
HNSW_M = 32
HNSW_EF_CONSTRUCTION = 80
HNSW_EF_SEARCH = 128
RECALL_SAMPLE = 256
"""Queries on which an approximate :func:`knn` measures its own recall against exact search."""
RECALL_WARN = 0.9
_QUERY_BLOCK = 16_384


def _faiss():
    try:
        import faiss
    except ImportError as exc:  # pragma: no cover - faiss-cpu is a core dependency
        raise ConfigError(
            "FAISS is not installed: pip install faiss-cpu (or embedselect[gpu] for faiss-gpu)"
        ) from exc
    return faiss


def faiss_has_gpu() -> bool:
    """Whether the installed FAISS was built with GPU support, sees a GPU, and its GPU kernels run there.

    The last point is checked once per process by a tiny GPU search in a child process (:func:`gpu_smoke_test`):
    a FAISS build without kernels for this GPU's architecture aborts the whole process on its first GPU search
    (measured: faiss-gpu-cu12 1.14.1 on an H100, "CUDA error 209 no kernel image is available"), which no
    exception handler can catch. When the check fails, a warning says why and callers search on the CPU.
    """
    faiss = _faiss()
    if not (hasattr(faiss, "StandardGpuResources") and int(getattr(faiss, "get_num_gpus", lambda: 0)()) > 0):
        return False
    return _gpu_kernels_run()


_GPU_SMOKE = (
    "import numpy as np, faiss\n"
    "x = np.random.default_rng(0).standard_normal((64, 8)).astype('float32')\n"
    "index = faiss.index_cpu_to_gpu(faiss.StandardGpuResources(), 0, faiss.IndexFlatIP(8))\n"
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
                        "search runs on the CPU. Install a FAISS build for this GPU's architecture.", reason)
        _GPU_CHECK.append(ok)
    return _GPU_CHECK[0]


_GPU_RESOURCES: dict[int, Any] = {}


def _gpu_resources(dev_id: int):
    """One ``StandardGpuResources`` per GPU for the whole process (FAISS's advice: it holds the cuBLAS handle,
    streams and scratch memory; a GPU index must not outlive the resources it was built with)."""
    if dev_id not in _GPU_RESOURCES:
        _GPU_RESOURCES[dev_id] = _faiss().StandardGpuResources()
    return _GPU_RESOURCES[dev_id]


def _check_metric(metric: str) -> str:
    if metric not in METRICS:
        raise ConfigError(f"unknown nearest-neighbour metric {metric!r}; choose one of {', '.join(METRICS)}")
    return metric


def prepare(x: Any, metric: str = "cosine") -> np.ndarray:
    """``x`` as a contiguous float32 (n, d) matrix ready for FAISS: rows L2-normalised for ``cosine``.

    Raises:
        MetricError: not a non-empty 2-D array of finite numbers.
    """
    _check_metric(metric)
    a = np.asarray(x)
    if a.ndim != 2 or a.shape[0] == 0 or a.shape[1] == 0:
        raise MetricError(f"nearest neighbours need a non-empty (n, d) matrix, got shape {a.shape}")
    a = np.array(a, dtype=np.float32, order="C", copy=True)
    if not np.isfinite(a).all():
        raise MetricError("the embedding matrix holds NaN or inf values; nearest neighbours are undefined")
    if metric == "cosine":
        norms = np.linalg.norm(a.astype(np.float64), axis=1, keepdims=True)
        a /= np.where(norms > 0, norms, 1.0).astype(np.float32)
    return a


def _higher_is_nearer(metric: str) -> bool:
    return metric in ("cosine", "ip")


def build_index(
    x: Any,
    *,
    metric: str = "cosine",
    exact: bool | None = None,
    threshold: int = APPROX_THRESHOLD,
    device: str = "cpu",
    hnsw_m: int = HNSW_M,
    ef_construction: int = HNSW_EF_CONSTRUCTION,
    ef_search: int = HNSW_EF_SEARCH,
    prepared: bool = False,
):
    """A FAISS index over the rows of ``x`` (n, d).

    Args:
        x: the vectors to index; row i gets id i.
        metric: ``cosine``, ``ip`` or ``l2`` (see the module docstring).
        exact: ``True`` flat (exact) index, ``False`` HNSW (approximate), ``None``: exact iff n <= ``threshold``.
        device: ``"cpu"``, or ``"cuda"``/``"cuda:N"`` for a GPU flat index (needs faiss-gpu; exact only).
        hnsw_m, ef_construction, ef_search: HNSW graph degree and beam widths (build, search).
        prepared: ``x`` already went through :func:`prepare` (skip the copy).

    Returns:
        a ``faiss.Index`` holding n vectors; ``index.metric_type`` and ``index.is_trained`` as FAISS sets them.
    """
    faiss = _faiss()
    metric = _check_metric(metric)
    xs = x if prepared else prepare(x, metric)
    n, d = xs.shape
    use_exact = (n <= threshold) if exact is None else bool(exact)
    ftype = faiss.METRIC_INNER_PRODUCT if _higher_is_nearer(metric) else faiss.METRIC_L2
    gpu = str(device).startswith("cuda")
    if gpu and not faiss_has_gpu():
        log.warning("device %s asked for, but this FAISS has no GPU support or sees no GPU: searching on CPU", device)
        gpu = False
    if use_exact or gpu:
        index = faiss.IndexFlatIP(d) if ftype == faiss.METRIC_INNER_PRODUCT else faiss.IndexFlatL2(d)
    else:
        index = faiss.IndexHNSWFlat(d, int(hnsw_m), ftype)
        index.hnsw.efConstruction = int(ef_construction)
        index.hnsw.efSearch = int(ef_search)
    if gpu:
        dev_id = int(str(device).split(":", 1)[1]) if ":" in str(device) else 0
        index = faiss.index_cpu_to_gpu(_gpu_resources(dev_id), dev_id, index)
    index.add(xs)
    return index


def is_exact(index) -> bool:
    """Whether ``index`` answers exactly (a flat index, on CPU or GPU)."""
    faiss = _faiss()
    if isinstance(index, (faiss.IndexFlat,)):
        return True
    return type(index).__name__.startswith("GpuIndexFlat")


def _order(scores: np.ndarray, ids: np.ndarray, higher: bool) -> np.ndarray:
    """Per-row permutation sorting by score (nearest first), then by the lower id; missing ids (-1) last."""
    key = -scores if higher else scores.copy()
    key = np.where(ids < 0, np.inf, key)
    ids_key = np.where(ids < 0, np.iinfo(np.int64).max, ids)
    # lexsort sorts by the last key first; per row via a row-offset trick
    rows = np.repeat(np.arange(scores.shape[0]), scores.shape[1]).reshape(scores.shape)
    perm = np.lexsort((ids_key.ravel(), key.ravel(), rows.ravel()))
    return (perm % scores.shape[1]).reshape(scores.shape)


def search_index(index, queries: Any, k: int, *, metric: str = "cosine", prepared: bool = False,
                 self_ids: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` nearest indexed rows of each query row.

    Args:
        index: from :func:`build_index` (or a loaded FAISS index) over n rows.
        queries: (m, d) query vectors (prepared like the indexed rows unless ``prepared``).
        k: neighbours per query (at most n, or n - 1 with ``self_ids``).
        metric: the metric the index was built with.
        self_ids: optional (m,) ids to leave out of each query's result (the query's own row in a self-join).

    Returns:
        ``(scores, ids)``: float32 (m, k) and int64 (m, k), nearest first (see the module docstring for the
        score's meaning and the tie rule). ``ids`` is -1 where an approximate index found fewer than k.
    """
    metric = _check_metric(metric)
    q = queries if prepared else prepare(queries, metric)
    n = int(index.ntotal)
    need = int(k) + (1 if self_ids is not None else 0)
    if k < 1 or need > n:
        raise ConfigError(f"k={k} neighbours asked for, but the index holds {n} items"
                          + (" (the query itself excluded)" if self_ids is not None else ""))
    if q.shape[1] != index.d:
        raise MetricError(f"query vectors have dimension {q.shape[1]}, the index {index.d}")
    higher = _higher_is_nearer(metric)
    exact = is_exact(index)
    out_s = np.empty((q.shape[0], k), dtype=np.float32)
    out_i = np.empty((q.shape[0], k), dtype=np.int64)
    for start in range(0, q.shape[0], _QUERY_BLOCK):
        qb = q[start:start + _QUERY_BLOCK]
        sb = None if self_ids is None else np.asarray(self_ids[start:start + _QUERY_BLOCK], dtype=np.int64)
        s, i = _search_block(index, qb, need, n, higher, exact)
        if sb is not None:
            keep = i != sb[:, None]
            pos = np.argsort(~keep, axis=1, kind="stable")  # kept entries first, order preserved
            s, i = np.take_along_axis(s, pos, 1), np.take_along_axis(i, pos, 1)
        out_s[start:start + len(qb)] = s[:, :k]
        out_i[start:start + len(qb)] = i[:, :k]
    return out_s, out_i


def _search_block(index, q: np.ndarray, need: int, n: int, higher: bool, exact: bool):
    """Search ``need`` neighbours, widening exact searches until ties across place ``need`` are resolved."""
    kk = min(n, need + 1) if exact else need
    s, i = index.search(q, kk)
    if exact:
        while kk < n:
            # a row is unresolved when its last fetched score ties the need-th one: more equal items may follow
            unresolved = s[:, kk - 1] == s[:, need - 1]
            if not unresolved.any():
                break
            kk = min(n, 2 * kk)
            rows = np.flatnonzero(unresolved)
            s2, i2 = index.search(q[rows], kk)
            pad = kk - s.shape[1]
            fill_s = np.float32(-np.inf if higher else np.inf)
            s = np.concatenate([s, np.full((len(s), pad), fill_s, np.float32)], axis=1)
            i = np.concatenate([i, np.full((len(i), pad), -1, np.int64)], axis=1)
            s[rows], i[rows] = s2, i2
    perm = _order(s, i, higher)
    s, i = np.take_along_axis(s, perm, 1), np.take_along_axis(i, perm, 1)
    return s, i


@dataclass
class Neighbours:
    """Result of :func:`knn`.

    Attributes:
        scores: float32 (m, k): similarities (``cosine``/``ip``) or squared L2 distances (``l2``), nearest first.
        ids: int64 (m, k): row indices into the indexed matrix (-1: not found by an approximate index).
        metric: the metric used.
        exact: whether the search was exact.
        recall: for an approximate search, recall@k measured against exact (brute-force FAISS) search on
            :data:`RECALL_SAMPLE` seeded queries; ``None`` for an exact search.
    """

    scores: np.ndarray
    ids: np.ndarray
    metric: str
    exact: bool
    recall: float | None = None


def knn(
    x: Any,
    k: int,
    *,
    queries: Any = None,
    metric: str = "cosine",
    exact: bool | None = None,
    threshold: int = APPROX_THRESHOLD,
    exclude_self: bool | None = None,
    device: str = "cpu",
    ef_search: int = HNSW_EF_SEARCH,
) -> Neighbours:
    """The ``k`` nearest rows of ``x`` (n, d) for each query row (default: each row of ``x`` itself).

    Args:
        x: (n, d) vectors to search among.
        k: neighbours per query.
        queries: (m, d) query vectors; ``None`` = the rows of ``x`` (a k-NN graph).
        metric: ``cosine`` (default), ``ip`` or ``l2``.
        exact: force exact (``True``) or approximate (``False``) search; ``None``: exact iff n <= ``threshold``.
        exclude_self: leave row i out of query i's neighbours; default ``True`` when ``queries`` is None.
        device: ``cpu`` or ``cuda[:N]`` (FAISS GPU, exact).
        ef_search: HNSW search beam width (approximate search only).

    Returns:
        :class:`Neighbours` with (m, k) scores and ids.
    """
    xs = prepare(x, metric)
    qs = xs if queries is None else prepare(queries, metric)
    if exclude_self is None:
        exclude_self = queries is None
    if exclude_self and qs.shape[0] != xs.shape[0]:
        raise ConfigError("exclude_self needs the queries to be the indexed rows (same number of rows)")
    index = build_index(xs, metric=metric, exact=exact, threshold=threshold, device=device, ef_search=ef_search,
                        prepared=True)
    self_ids = np.arange(xs.shape[0], dtype=np.int64) if exclude_self else None
    s, i = search_index(index, qs, k, metric=metric, prepared=True, self_ids=self_ids)
    nb = Neighbours(scores=s, ids=i, metric=metric, exact=is_exact(index))
    if not nb.exact:
        nb.recall = _sample_recall(xs, qs, nb.ids, k, metric, exclude_self, seed=0)
        if nb.recall < RECALL_WARN:
            log.warning(
                "approximate k-NN over %d rows: recall@%d %.2f on %d sampled queries (below %.2f); pass "
                "exact=True for exact search, or raise ef_search", xs.shape[0], k, nb.recall,
                min(RECALL_SAMPLE, qs.shape[0]), RECALL_WARN,
            )
    return nb


def _sample_recall(xs: np.ndarray, qs: np.ndarray, ids: np.ndarray, k: int, metric: str, exclude_self: bool,
                   *, seed: int) -> float:
    """recall@k of ``ids`` on a seeded sample of queries, against brute-force FAISS search (no index copy)."""
    faiss = _faiss()
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(qs.shape[0], size=min(RECALL_SAMPLE, qs.shape[0]), replace=False))
    ftype = faiss.METRIC_INNER_PRODUCT if _higher_is_nearer(metric) else faiss.METRIC_L2
    _, truth = faiss.knn(np.ascontiguousarray(qs[rows]), xs, k + (1 if exclude_self else 0), metric=ftype)
    hits = 0
    for r, t, got in zip(rows, truth, ids[rows]):
        t = [j for j in t if not (exclude_self and j == r)][:k]
        hits += len(set(t) & set(got.tolist()))
    return hits / (len(rows) * k)


def knn_predict(
    train_x: Any,
    train_y: Sequence[Any] | np.ndarray,
    test_x: Any,
    *,
    k: int = 5,
    metric: str = "l2",
    device: str = "cpu",
) -> np.ndarray:
    """k-nearest-neighbour classification by majority vote, with FAISS exact search.

    The vote matches scikit-learn's ``KNeighborsClassifier(weights="uniform")``: each of the ``k`` nearest
    training rows (``k`` capped at the training size) casts one vote; a tie between classes goes to the
    class that sorts first. Neighbour ties are broken by the lower training row.

    Args:
        train_x: (n, d) training vectors; train_y: (n,) labels; test_x: (m, d) vectors to classify.
        k: neighbours; metric: ``l2`` (default, as scikit-learn), ``cosine`` or ``ip``.

    Returns:
        (m,) array of predicted labels (dtype of ``np.unique(train_y)``).
    """
    y = np.asarray(train_y)
    if y.shape[0] != np.asarray(train_x).shape[0]:
        raise ConfigError(f"train_y has {y.shape[0]} labels for {np.asarray(train_x).shape[0]} training rows")
    classes, codes = np.unique(y, return_inverse=True)
    kk = max(1, min(int(k), y.shape[0]))
    nb = knn(train_x, kk, queries=test_x, metric=metric, exact=True, exclude_self=False, device=device)
    votes = np.zeros((nb.ids.shape[0], len(classes)), dtype=np.int64)
    np.add.at(votes, (np.repeat(np.arange(nb.ids.shape[0]), kk), codes[nb.ids.ravel()]), 1)
    return classes[np.argmax(votes, axis=1)]


def _sklearn_base():
    from sklearn.base import BaseEstimator, ClassifierMixin

    return BaseEstimator, ClassifierMixin


class FaissKNeighborsClassifier(*_sklearn_base()):  # type: ignore[misc]  # bases imported lazily: sklearn is slow to import
    """A drop-in for scikit-learn's ``KNeighborsClassifier(n_neighbors, weights="uniform")`` that searches
    with FAISS (:func:`knn_predict`): usable in pipelines, ``clone`` and cross-validation.

    Args:
        n_neighbors: k; metric: ``l2`` (scikit-learn's default Euclidean), ``cosine`` or ``ip``.
    """

    def __init__(self, n_neighbors: int = 5, metric: str = "l2") -> None:
        self.n_neighbors = n_neighbors
        self.metric = metric

    def fit(self, X: Any, y: Any) -> "FaissKNeighborsClassifier":
        self.X_ = prepare(X, "l2")  # validated float32 copy; the metric's own preparation happens at search
        self.y_ = np.asarray(y)
        self.classes_ = np.unique(self.y_)
        return self

    def predict(self, X: Any) -> np.ndarray:
        return knn_predict(self.X_, self.y_, X, k=self.n_neighbors, metric=self.metric)


@dataclass
class KnnAgreement:
    """Mutual k-NN agreement between candidates (:func:`mutual_knn_agreement`).

    Attributes:
        names: candidate names, in matrix order.
        matrix: float64 (c, c), symmetric, entry [a, b] = mean over items i of |N_a(i) ∩ N_b(i)| / k, where
            N_a(i) is the set of i's k nearest other items under candidate a. 1 on the diagonal; about k/(n-1)
            for unrelated embeddings.
        k: neighbours per item; n: items compared (all, or the sampled ``items``).
        exact: whether every k-NN search was exact.
    """

    names: list[str]
    matrix: np.ndarray
    k: int
    n: int
    exact: bool

    def to_dict(self) -> dict[str, Any]:
        return {"names": list(self.names), "matrix": self.matrix.tolist(), "k": self.k, "n": self.n,
                "exact": self.exact}

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame(self.matrix, index=self.names, columns=self.names)

    def communities(self, *, seed: int = 0) -> list[list[str]]:
        """Louvain communities (networkx, seeded) of the agreement graph (edge weight = agreement), largest
        first: candidates that agree on who is near whom, to set beside the information-sufficiency ones."""
        import networkx as nx
        from networkx.algorithms.community import louvain_communities

        g = nx.Graph()
        g.add_nodes_from(self.names)
        for a in range(len(self.names)):
            for b in range(a + 1, len(self.names)):
                if self.matrix[a, b] > 0:
                    g.add_edge(self.names[a], self.names[b], weight=float(self.matrix[a, b]))
        comms = louvain_communities(g, weight="weight", seed=int(seed) % (2**32))
        return sorted((sorted(c, key=self.names.index) for c in comms), key=lambda c: (-len(c), self.names.index(c[0])))


def mutual_knn_agreement(
    embeddings: Mapping[str, Any],
    *,
    k: int = 10,
    metric: str = "cosine",
    exact: bool | None = None,
    threshold: int = APPROX_THRESHOLD,
    device: str = "cpu",
    graphs: Mapping[str, Neighbours] | None = None,
) -> KnnAgreement:
    """How much the candidates agree on who is near whom: the mutual k-NN overlap of every pair.

    Args:
        embeddings: name -> (n, d_name) matrix; every matrix has the same n and row order.
        k: neighbours per item (at most n - 1).
        graphs: optional name -> self-join :class:`Neighbours` with at least k columns, computed already
            (their first k columns are used; the matrices are then not searched again).

    Returns:
        :class:`KnnAgreement`. Cost: one k-NN graph per candidate (n·k ids each, held at once) and
        O(c²·n·k²) integer comparisons.
    """
    names = list(embeddings)
    if not names:
        raise ConfigError("mutual_knn_agreement needs at least one candidate")
    sizes = {int(np.asarray(embeddings[nm]).shape[0]) for nm in names}
    if len(sizes) != 1:
        raise MetricError(f"candidates embed different numbers of items: {sorted(sizes)}")
    all_exact = True
    given = graphs or {}
    sorted_ids: list[np.ndarray] = []
    for nm in names:
        nb = given.get(nm)
        if nb is None or nb.ids.shape[1] < k:
            nb = knn(embeddings[nm], k, metric=metric, exact=exact, threshold=threshold, device=device)
        all_exact &= nb.exact
        sorted_ids.append(np.sort(nb.ids[:, :k], axis=1))
    c = len(names)
    m = np.eye(c, dtype=np.float64)
    for a in range(c):
        for b in range(a + 1, c):
            ga, gb = sorted_ids[a], sorted_ids[b]
            hits = np.zeros(ga.shape[0], dtype=np.int64)
            for j in range(k):
                hits += (ga == gb[:, j : j + 1]).any(axis=1) & (gb[:, j] >= 0)
            m[a, b] = m[b, a] = float(hits.sum(dtype=np.float64) / (ga.shape[0] * k))
    return KnnAgreement(names=names, matrix=m, k=int(k), n=int(sorted_ids[0].shape[0]), exact=bool(all_exact))


@dataclass
class NearDuplicates:
    """Near-duplicate items found by :func:`near_duplicates`.

    Attributes:
        pairs: int64 (p, 2), each row (i, j) with i < j and cosine similarity >= ``threshold``.
        similarities: float32 (p,), the pairs' cosine similarities.
        groups: connected groups of near-duplicates (each a sorted int64 array of >= 2 rows).
        keep: bool (n,): False for every group member but its first (lowest) row.
        threshold: the cosine similarity threshold; k: neighbours searched per item.
    """

    pairs: np.ndarray
    similarities: np.ndarray
    groups: list[np.ndarray] = field(repr=False)
    keep: np.ndarray = field(repr=False)
    threshold: float = 0.95
    k: int = 10

    @property
    def n_items(self) -> int:
        return int(self.keep.shape[0])

    @property
    def n_drop(self) -> int:
        """Items that dropping near-duplicates removes (every group member but the first)."""
        return int((~self.keep).sum())

    def to_dict(self, *, max_groups: int = 20) -> dict[str, Any]:
        return {
            "threshold": self.threshold,
            "k": self.k,
            "n_items": self.n_items,
            "n_pairs": int(self.pairs.shape[0]),
            "n_groups": len(self.groups),
            "n_drop": self.n_drop,
            "groups": [g.tolist() for g in self.groups[:max_groups]],
        }


def near_duplicates(
    x: Any,
    *,
    threshold: float = 0.95,
    k: int = 10,
    exact: bool | None = None,
    device: str = "cpu",
    graph: Neighbours | None = None,
    rescore: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
    margin: float = 0.05,
) -> NearDuplicates:
    """Items whose embeddings are near-identical (cosine similarity >= ``threshold``) to another item's.

    Each item's ``k`` nearest other items are searched; pairs above the threshold are linked and linked items
    form groups (connected components), so a group larger than k + 1 is still found as long as it is connected.
    Exact duplicates (identical rows) have similarity 1 and are always found.

    Args:
        x: (n, d) embeddings of the reference items (any one candidate's).
        threshold: cosine similarity in (0, 1]; 0.95 is strict for sentence embedders, tune per model.
        k: neighbours searched per item (at most n - 1).
        graph: optional cosine self-join :class:`Neighbours` of ``x`` with at least k columns, computed already.
        rescore: optional ``f(rows, cols) -> similarities`` (int64 (p,) pairs with rows < cols -> float (p,)) that
            decides instead of ``x``'s cosine: ``x`` then only proposes the pairs whose cosine is at least
            ``threshold - margin`` (e.g. ``x`` a random projection of sparse features, ``rescore`` their exact
            cosine), and ``similarities`` are the rescored values.
        margin: how far below the threshold a proposed pair may lie in ``x`` (only with ``rescore``).

    Returns:
        :class:`NearDuplicates`.
    """
    if not (0.0 < float(threshold) <= 1.0):
        raise ConfigError(f"near-duplicate threshold must be in (0, 1], got {threshold}")
    xs = prepare(x, "cosine")
    n = xs.shape[0]
    if n < 2:
        return NearDuplicates(np.empty((0, 2), np.int64), np.empty(0, np.float32), [], np.ones(n, bool),
                              float(threshold), int(k))
    kk = max(1, min(int(k), n - 1))
    if graph is not None and graph.metric == "cosine" and graph.ids.shape == (n, graph.ids.shape[1]) \
            and graph.ids.shape[1] >= kk:
        nb = Neighbours(graph.scores[:, :kk], graph.ids[:, :kk], "cosine", graph.exact)
    else:
        nb = knn(xs, kk, metric="cosine", exact=exact, device=device)
    # cosine of float32-normalised rows may exceed 1 by rounding; compare with a float32 tolerance
    tol = np.float32(1e-6)
    cut = np.float32(threshold) - (np.float32(margin) if rescore is not None else np.float32(0.0))
    hit = (nb.scores >= cut - tol) & (nb.ids >= 0)
    pairs, sims = _unique_pairs(np.repeat(np.arange(n), kk)[hit.ravel()], nb.ids.ravel()[hit.ravel()],
                                nb.scores.ravel()[hit.ravel()], n)
    if rescore is not None and pairs.size:
        sims = np.asarray(rescore(pairs[:, 0], pairs[:, 1]), dtype=np.float32).reshape(-1)
        ok = sims >= np.float32(threshold) - tol
        pairs, sims = pairs[ok], sims[ok]
    keep, groups = _groups(pairs, n)
    return NearDuplicates(pairs, sims, groups, keep, float(threshold), int(kk))


def _unique_pairs(rows: np.ndarray, cols: np.ndarray, sims: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (i, j), i < j, each once (int64 (p, 2), sorted), with the similarity of their first occurrence."""
    a, b = np.minimum(rows, cols).astype(np.int64), np.maximum(rows, cols).astype(np.int64)
    if not a.size:
        return np.empty((0, 2), np.int64), np.empty(0, np.float32)
    uniq, first = np.unique(a * n + b, return_index=True)
    return np.stack([uniq // n, uniq % n], axis=1).astype(np.int64), sims[first].astype(np.float32)


def _groups(pairs: np.ndarray, n: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """Connected components of the pair graph: the keep mask (bool (n,), False for every member of a group but
    its lowest row) and the groups of >= 2 rows (sorted int64 arrays, ordered by their first row)."""
    keep = np.ones(n, dtype=bool)
    groups: list[np.ndarray] = []
    if pairs.size:
        from scipy.sparse import coo_matrix
        from scipy.sparse.csgraph import connected_components

        g = coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(n, n))
        _, labels = connected_components(g, directed=False)
        order = np.argsort(labels, kind="stable")  # rows of each component together, ascending
        bounds = np.cumsum(np.bincount(labels))[:-1]
        for members in np.split(order, bounds):
            if members.size >= 2:
                groups.append(members.astype(np.int64))
                keep[members[1:]] = False
        groups.sort(key=lambda g: int(g[0]))
    return keep, groups


__all__ = [
    "APPROX_THRESHOLD",
    "FaissKNeighborsClassifier",
    "KnnAgreement",
    "NearDuplicates",
    "Neighbours",
    "build_index",
    "faiss_has_gpu",
    "knn",
    "knn_predict",
    "mutual_knn_agreement",
    "near_duplicates",
    "prepare",
    "search_index",
]

"""Nearest neighbours with FAISS, the one place every k-NN of embedselect goes through: exact k-NN, an approximate
index above a size threshold, and near-duplicate detection, on the CPU or the GPU (:mod:`embedselect.nn.device`).

Pure array code (numpy + faiss), below data, metrics and search: one rule decides exact vs approximate search and
one rule breaks ties.

Conventions
-----------
- Inputs are ``(n, d)`` arrays, converted to contiguous ``float32`` (FAISS computes in float32).
- ``metric``: ``"cosine"`` (rows L2-normalised, then inner product; an all-zero row stays zero),
  ``"ip"`` (raw inner product) or ``"l2"``. Returned ``scores`` are similarities for ``cosine``/``ip``
  (higher is nearer) and *squared* Euclidean distances for ``l2`` (lower is nearer).
- Exact search (``IndexFlatIP`` / ``IndexFlatL2``) is the default. When the indexed set has more than
  ``threshold`` rows (:data:`APPROX_THRESHOLD`) and ``exact`` is not forced, an approximate index is used: on the
  CPU an HNSW graph (``IndexHNSWFlat``), on the GPU an inverted file (``IndexIVFFlat``, FAISS has no GPU HNSW);
  recall@10 against exact search is measured in ``benchmarks/bench_faiss.py`` and ``benchmarks/gpu.py``.
- Ties (exact search): neighbours are ordered by score, then by the lower row index, exactly as a stable
  brute-force sort would order them; a tie across the k-th place is resolved by fetching more candidates
  until the k-th score is strictly separated, so the result equals brute force even with duplicate rows.
- ``device``: ``"cpu"`` (default), ``"cuda"`` (every visible GPU, the index sharded over them) or ``"cuda:N"``.
  Without a working FAISS GPU build a warning is logged and the CPU is used; the device actually used is on
  the result (``Neighbours.device``, ``index.embedselect_device``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from embedselect._util.arrays import check_embeddings
from embedselect.errors import ConfigError, MetricError
from embedselect.nn.device import (
    GPU_MAX_K,
    IVF_NPROBE,
    RECALL_SAMPLE,
    describe,
    faiss_has_gpu,
    faiss_module,
    gpu_ids,
    gpu_smoke_test,
    recall,
    sampled_truth,
    to_cpu,
    to_gpus,
    trained_ivf,
    tune_nprobe,
)

log = logging.getLogger(__name__)
_faiss = faiss_module

METRICS = ("cosine", "ip", "l2")
APPROX_THRESHOLD = 200_000
"""Indexed sets with more rows than this use an approximate index unless ``exact=True``."""
HNSW_M = 32
HNSW_EF_CONSTRUCTION = 80
HNSW_EF_SEARCH = 128
RECALL_WARN = 0.9
_QUERY_BLOCK = 16_384


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
    checked = check_embeddings(x, what="the matrix for nearest neighbours", min_rows=1, dtype=None, error=MetricError,
                               hint="; nearest neighbours are undefined")
    a = np.array(checked, dtype=np.float32, order="C", copy=True)
    if metric == "cosine":
        norms = np.linalg.norm(a.astype(np.float64), axis=1, keepdims=True)
        a /= np.where(norms > 0, norms, 1.0).astype(np.float32)
    return a


def _higher_is_nearer(metric: str) -> bool:
    return metric in ("cosine", "ip")


def _ftype(metric: str) -> int:
    """FAISS's metric type for ``metric``: inner product for ``cosine`` (prepared rows) and ``ip``, else L2."""
    faiss = _faiss()
    return faiss.METRIC_INNER_PRODUCT if _higher_is_nearer(metric) else faiss.METRIC_L2


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
    nprobe: int = IVF_NPROBE,
    prepared: bool = False,
    seed: int = 0,
):
    """A FAISS index over the rows of ``x`` (n, d).

    Args:
        x: the vectors to index; row i gets id i.
        metric: ``cosine``, ``ip`` or ``l2`` (see the module docstring).
        exact: ``True`` flat (exact) index, ``False`` approximate (CPU: HNSW; GPU: IVF), ``None``: exact iff
            n <= ``threshold``.
        device: ``"cpu"``, ``"cuda"`` (every visible GPU, sharded) or ``"cuda:N"``; CPU when FAISS has no GPU.
        hnsw_m, ef_construction, ef_search: HNSW graph degree and beam widths (build, search).
        nprobe: inverted lists visited per query (GPU IVF) at first; raised until the index reaches
            :data:`~embedselect.nn.device.IVF_RECALL` on sampled rows. seed: the IVF training and tuning samples' seed.
        prepared: ``x`` already went through :func:`prepare` (skip the copy).

    Returns:
        a ``faiss.Index`` holding n vectors, tagged ``embedselect_device`` (the device used, see
        :func:`embedselect.nn.device.describe`), ``embedselect_gpus`` (the GPU ids it is on, :func:`index_gpus`) and
        ``embedselect_exact``.
    """
    faiss = _faiss()
    metric = _check_metric(metric)
    xs = x if prepared else prepare(x, metric)
    n, d = xs.shape
    use_exact = (n <= threshold) if exact is None else bool(exact)
    ftype = _ftype(metric)
    gpus = gpu_ids(device)
    if use_exact:
        index = faiss.IndexFlatIP(d) if ftype == faiss.METRIC_INNER_PRODUCT else faiss.IndexFlatL2(d)
    elif gpus:
        index = trained_ivf(xs, ftype, gpus[0], nprobe=nprobe, seed=seed)
    else:
        index = faiss.IndexHNSWFlat(d, int(hnsw_m), ftype)
        index.hnsw.efConstruction = int(ef_construction)
        index.hnsw.efSearch = int(ef_search)
    if gpus:
        index = to_gpus(index, gpus)
    index.add(xs)
    if not use_exact and gpus:
        tune_nprobe(index, xs, ftype, gpus[0], start=nprobe, seed=seed)
    # plain Python attributes on the SWIG proxy (FAISS's own __setattr__ refuses names it does not know)
    object.__setattr__(index, "embedselect_device", describe(gpus))
    object.__setattr__(index, "embedselect_gpus", tuple(gpus))
    object.__setattr__(index, "embedselect_exact", use_exact)
    return index


def is_exact(index) -> bool:
    """Whether ``index`` answers exactly (a flat index, on CPU or GPU, sharded or not)."""
    tagged = getattr(index, "embedselect_exact", None)
    if tagged is not None:
        return bool(tagged)
    faiss = _faiss()
    if isinstance(index, (faiss.IndexFlat,)):
        return True
    return type(index).__name__.startswith("GpuIndexFlat")


def index_device(index) -> str:
    """The device ``index`` searches on (``"cpu"`` for an index this module did not place, e.g. one read from disk)."""
    return str(getattr(index, "embedselect_device", "cpu"))


def index_gpus(index) -> tuple[int, ...]:
    """The GPU ids ``index`` searches on, the first one first (empty on the CPU or for an index this module did not
    place)."""
    return tuple(getattr(index, "embedselect_gpus", ()))


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
    """Search ``need`` neighbours, widening exact searches until ties across place ``need`` are resolved (on the
    CPU past :data:`~embedselect.nn.device.GPU_MAX_K`, the most a GPU index answers)."""
    kk = min(n, need + 1) if exact else need
    if kk > GPU_MAX_K and index_device(index) != "cpu":
        index = to_cpu(index)
    s, i = index.search(q, kk)
    if exact:
        while kk < n:
            # a row is unresolved when its last fetched score ties the need-th one: more equal items may follow
            unresolved = s[:, kk - 1] == s[:, need - 1]
            if not unresolved.any():
                break
            kk = min(n, 2 * kk)
            if kk > GPU_MAX_K and index_device(index) != "cpu":
                index = to_cpu(index)
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
        device: where the search ran: ``"cpu"``, ``"cuda:N"`` or ``"cuda:0,1,… (sharded)"``.
    """

    scores: np.ndarray
    ids: np.ndarray
    metric: str
    exact: bool
    recall: float | None = None
    device: str = "cpu"


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
        device: ``cpu``, ``cuda`` (all GPUs, sharded) or ``cuda:N`` (see the module docstring).
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
    nb = Neighbours(scores=s, ids=i, metric=metric, exact=is_exact(index), device=index_device(index))
    if not nb.exact:
        gpus = index_gpus(index)
        rows, truth = sampled_truth(xs, qs, k, _ftype(metric), seed=0, exclude_self=exclude_self,
                                    gpu=gpus[0] if gpus else None)
        nb.recall = recall(nb.ids[rows], truth)
        if nb.recall < RECALL_WARN:
            log.warning(
                "approximate k-NN over %d rows: recall@%d %.2f on %d sampled queries (below %.2f); pass "
                "exact=True for exact search, or raise ef_search", xs.shape[0], k, nb.recall,
                min(RECALL_SAMPLE, qs.shape[0]), RECALL_WARN,
            )
    return nb


@dataclass
class NearDuplicates:
    """Near-duplicate items found by :func:`near_duplicates`.

    Attributes:
        pairs: int64 (p, 2), each row (i, j) with i < j and cosine similarity >= ``threshold``.
        similarities: float32 (p,), the pairs' cosine similarities.
        groups: connected groups of near-duplicates (each a sorted int64 array of >= 2 rows).
        keep: bool (n,): False for every group member but its first (lowest) row.
        threshold: the cosine similarity threshold; k: neighbours searched per item; device: where the k-NN ran.
    """

    pairs: np.ndarray
    similarities: np.ndarray
    groups: list[np.ndarray] = field(repr=False)
    keep: np.ndarray = field(repr=False)
    threshold: float = 0.95
    k: int = 10
    device: str = "cpu"

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
            "device": self.device,
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
                              float(threshold), int(k), "cpu")
    kk = max(1, min(int(k), n - 1))
    if graph is not None and graph.metric == "cosine" and graph.ids.shape == (n, graph.ids.shape[1]) \
            and graph.ids.shape[1] >= kk:
        nb = Neighbours(graph.scores[:, :kk], graph.ids[:, :kk], "cosine", graph.exact, device=graph.device)
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
    return NearDuplicates(pairs, sims, groups, keep, float(threshold), int(kk), nb.device)


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
    "METRICS",
    "NearDuplicates",
    "Neighbours",
    "build_index",
    "faiss_has_gpu",
    "gpu_smoke_test",
    "index_device",
    "index_gpus",
    "is_exact",
    "knn",
    "near_duplicates",
    "prepare",
    "search_index",
    "to_cpu",
]

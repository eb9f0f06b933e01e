"""``nn_agreement``: how much a candidate's nearest neighbours agree with the other candidates'.

A label-free comparator (a "wisdom of the pool" baseline, cf. mutual k-NN alignment, Huh et al.
2024): for every item, take its k nearest neighbours by cosine similarity in each candidate; the
agreement of candidates a and b is the mean over items of ``|N_a(i) ∩ N_b(i)| / k``. A candidate's
score is its mean agreement with the candidates that are evidence about the data — not the built-in baselines
(``MetricContext.references``), one head per family of variants and copies of one model (``MetricContext.families``),
and not its own family (:func:`~embedselect.metrics.pool.compared_with`) — (higher is better), in [0, 1].

The pairwise matrix is in ``details['agreement']``; reference points that agree with the models as much as the
models agree with each other are named in ``details['central_references']`` with a warning
(:func:`central_references`). Near-copies the families do not name (not declared, not found by the vectors) still
agree with each other and are favoured; this is the failure the benchmark measures, not a feature.
Computed on at most ``max_items`` items (seeded subsample): an O(n²) search per candidate in row blocks and O(n·k²)
per pair; with a pair cache (the store) each pair's agreement is kept, so a pool seen before searches nothing.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import numpy as np

from embedselect._util.arrays import check_embeddings
from embedselect.errors import ConfigError, MetricError, TooFewItemsError
from embedselect.metrics.base import MetricContext, MetricResult, compared_with, evidence, get_spec
from embedselect.metrics.kernels import as_matrix
from embedselect.metrics.sampling import checked_options, seeded_rows, usable_keys
from embedselect.nn.knn import knn
from embedselect.nn.device import faiss_has_gpu

_OPTION_DEFAULTS: dict[str, Any] = {"k": 10, "max_items": 2048, "compare_with": "models"}


def knn_indices(embeddings: Any, k: int, *, what: str = "embeddings") -> np.ndarray:
    """Indices (int64, (n, k)) of each row's k nearest other rows by cosine similarity (float64).

    Ties are broken by the lower index, so the result is deterministic: exactly the first k columns of a stable
    argsort of each row, found by :func:`_first_k` in O(n) per row instead of a full sort.
    """
    x = as_matrix(embeddings, what).astype(np.float64)
    n = x.shape[0]
    if not 1 <= k < n:
        raise ConfigError(f"nn_agreement option 'k' must be in [1, n − 1] = [1, {n - 1}], got {k}")
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    x /= np.where(norms > 1e-12, norms, 1.0)
    out = np.empty((n, k), dtype=np.int64)
    for i0 in range(0, n, 1024):
        s = x[i0:i0 + 1024] @ x.T
        s[np.arange(s.shape[0]), np.arange(i0, i0 + s.shape[0])] = -np.inf  # never its own neighbour
        out[i0:i0 + 1024] = _first_k(-s, k)
    return out


def _first_k(a: np.ndarray, k: int) -> np.ndarray:
    """``np.argsort(a, axis=1, kind="stable")[:, :k]`` (int64, (rows, k)) for a float (rows, n) array, 1 <= k < n,
    without sorting whole rows: a partition finds each row's k-th smallest value, every value below it is taken,
    and of the values equal to it the ones of lowest index, as the stable sort would; the k taken are then sorted
    stably. A row this cannot settle (NaN values) is sorted in full."""
    kth = np.partition(a, k - 1, axis=1)[:, k - 1:k]
    below = a < kth
    tied = a == kth
    take = below | tied
    more = np.flatnonzero(take.sum(axis=1) > k)  # rows with more ties at the k-th value than places left
    if more.size:
        need = k - below[more].sum(axis=1, keepdims=True)
        take[more] = below[more] | (tied[more] & (np.cumsum(tied[more], axis=1) <= need))
    ok = take.sum(axis=1) == k
    out = np.empty((a.shape[0], k), dtype=np.int64)
    if ok.any():
        idx = np.nonzero(take[ok])[1].reshape(-1, k)  # ascending column order within each row
        order = np.argsort(np.take_along_axis(a[ok], idx, axis=1), axis=1, kind="stable")
        out[ok] = np.take_along_axis(idx, order, axis=1)
    if not ok.all():
        out[~ok] = np.argsort(a[~ok], axis=1, kind="stable")[:, :k]
    return out


def neighbour_lists(ctx: MetricContext, keys: list[str], rows: np.ndarray, k: int, *,
                    centre: bool = False) -> tuple[list[np.ndarray], str]:
    """Each candidate's k nearest other rows among ``rows`` (int64, (len(rows), k), indices into ``rows``) by cosine
    similarity, in ``keys``' order, and the device that found them. ``centre``: the cosine of the vectors less their
    mean over ``rows`` (float64), so that a direction every item shares does not decide the neighbours. On a CUDA
    device with a working FAISS GPU build the search runs there (exact, float32); otherwise the float64 brute force
    of :func:`knn_indices`."""
    on_gpu = _knn_on_gpu(ctx)
    n = int(np.shape(ctx.embeddings[keys[0]])[0])
    out, device = [], "cpu"
    for key in keys:
        a = check_embeddings(ctx.embeddings[key], what=f"embeddings[{key!r}]", n=n, dtype=None, finite=False,
                             error=MetricError)
        x = as_matrix(a[rows], f"embeddings[{key!r}]")
        if centre:
            x = x.astype(np.float64) - x.mean(axis=0, dtype=np.float64)
        if on_gpu:
            nb = knn(x, k, exact=True, device=ctx.device)
            out.append(nb.ids)
            device = nb.device
        else:
            out.append(knn_indices(x, k, what=f"embeddings[{key!r}]"))
    return out, device


def agreement_matrix(neighbours: list[np.ndarray]) -> np.ndarray:
    """(m, m) float64 matrix of mean k-NN overlap fractions between candidates (diagonal 1); ``neighbours``: each
    candidate's (n, k) integer neighbour ids (:func:`overlap`), as :func:`neighbour_lists` gives them."""
    m = len(neighbours)
    g = np.eye(m)
    for i in range(m):
        for j in range(i + 1, m):
            g[i, j] = g[j, i] = overlap(neighbours[i], neighbours[j])
    return g


def overlap(a: np.ndarray, b: np.ndarray) -> float:
    """Mean over items of ``|a[i] ∩ b[i]| / k`` for two (n, k) integer arrays of neighbour ids, each row without
    repeats; a negative id (FAISS's "no neighbour found") matches nothing. O(n·k²) comparisons in row blocks of at
    most 2^24 of them (no n×n array); the count is exact."""
    n, k = a.shape
    step = max(1, (1 << 24) // (k * k))
    shared = sum(int(np.count_nonzero((a[i:i + step, :, None] == b[i:i + step, None, :]) & (a[i:i + step, :, None] >= 0)))
                 for i in range(0, n, step))
    return shared / (n * k)


def _knn_on_gpu(ctx: MetricContext) -> bool:
    """Whether :func:`neighbour_lists` searches with FAISS on a GPU (a CUDA device and a FAISS GPU build)."""
    return str(ctx.device).startswith("cuda") and faiss_has_gpu()


def _pool_agreement(ctx: MetricContext,
                    opt: dict[str, Any]) -> tuple[list[str], dict[str, str], int, int, np.ndarray, str]:
    """The usable candidates' pairwise k-NN agreement on the seeded subsample: (usable keys, unusable key -> why,
    rows used, k, the (m, m) float64 matrix of :func:`agreement_matrix`, the k-NN device)."""
    if int(opt["max_items"]) > 4096:
        raise ConfigError("nn_agreement option 'max_items' must be ≤ 4096 (an O(n²) search per candidate)")
    keys, excluded = usable_keys(ctx)  # an unusable candidate scores NaN and is not in the pool compared with
    if len(keys) < 2:
        raise MetricError("nn_agreement compares candidates with each other: give at least 2 usable candidates"
                          + "".join(f"; {k}: {v}" for k, v in excluded.items()))
    sub = seeded_rows(ctx, keys, "nn_agreement", int(opt["max_items"]), salt=12)
    k = min(int(opt["k"]), len(sub) - 1)
    g, knn_device = _agreement(ctx, keys, sub, k)
    return keys, excluded, len(sub), k, g, knn_device


def _agreement(ctx: MetricContext, keys: list[str], rows: np.ndarray, k: int) -> tuple[np.ndarray, str]:
    """:func:`agreement_matrix` of ``keys`` on ``rows`` with ``k`` neighbours, and the device of the search. With a
    ``ctx.pair_cache``, each pair's agreement is stored under :func:`_pair_keys` and read back, and only the
    candidates of pairs not stored are searched: the run stage's check of the reference points leaves nothing for the
    metric to search after it, and a run over data and candidates seen before searches nothing."""
    m = len(keys)
    pkeys = _pair_keys(ctx, keys, rows, k) if ctx.pair_cache is not None else {}
    cached = ctx.pair_cache.get_many(list(pkeys.values())) if ctx.pair_cache is not None and pkeys else {}
    pairs = [(i, j) for i in range(m) for j in range(i + 1, m)]
    todo = [p for p in pairs if pkeys.get(p) not in cached]
    need = sorted({i for p in todo for i in p})
    nbs, device = neighbour_lists(ctx, [keys[i] for i in need], rows, k) if need else ([], "")
    lists = dict(zip(need, nbs))
    g = np.eye(m)
    for i, j in pairs:
        got = cached.get(pkeys.get((i, j), ""))
        g[i, j] = g[j, i] = float(got["agreement"]) if got else overlap(lists[i], lists[j])
        device = device or (str(got["knn_device"]) if got else "")
    new = {pkeys[p]: {"agreement": float(g[p]), "knn_device": device} for p in todo if p in pkeys}
    if new and ctx.pair_cache is not None:
        ctx.pair_cache.put_many(new)
    return g, device


def _pair_keys(ctx: MetricContext, keys: list[str], rows: np.ndarray, k: int) -> dict[tuple[int, int], str]:
    """(i, j) -> the pair cache key of the agreement of ``keys[i]`` and ``keys[j]`` (i < j) on ``rows`` with ``k``
    neighbours: a hash of the metric's code version, the two embedding run keys in sorted order (the agreement is
    symmetric), the rows, k and the search (float64 brute force or FAISS on a GPU). Pairs whose candidates have no
    run key are not cached."""
    code = get_spec("nn_agreement").code_version()
    where = "faiss-gpu" if _knn_on_gpu(ctx) else "cpu-float64"
    rows_id = hashlib.sha256(np.ascontiguousarray(rows, dtype=np.int64).tobytes()).hexdigest()
    run = [ctx.run_keys.get(key) or "" for key in keys]
    out = {}
    for i in range(len(keys)):
        for j in range(i + 1, len(keys)):
            if run[i] and run[j]:
                a, b = sorted((run[i], run[j]))
                blob = json.dumps({"v": code, "a": a, "b": b, "rows": rows_id, "k": int(k), "knn": where})
                out[(i, j)] = "nn-agreement:" + hashlib.sha256(blob.encode()).hexdigest()[:40]
    return out


def compute(ctx: MetricContext) -> MetricResult:
    """The ``nn_agreement`` comparator metric.

    Options: k (10), max_items (2048), compare_with ("models": a candidate's score is its mean agreement with the
    heads of the other families that are not reference points, ``ctx.references`` — the built-in baselines — when at
    least two families are left, :func:`~embedselect.metrics.base.evidence`; "all": with the heads of every other
    family, reference points included).
    """
    opt = checked_options("nn_agreement", ctx.options, _OPTION_DEFAULTS, {"k": 1, "max_items": 3})
    if opt["compare_with"] not in ("models", "all"):
        raise ConfigError(f"nn_agreement option 'compare_with' must be 'models' or 'all', got {opt['compare_with']!r}")
    keys, excluded, n_items, k, g, knn_device = _pool_agreement(ctx, opt)
    members = (evidence(keys, ctx.references, ctx.families) if opt["compare_with"] == "models"
               else evidence(keys, frozenset(), ctx.families))  # one head per family
    scores = {key: float(np.mean([g[i, j] for j in compared_with(keys, i, members, ctx.families)]))
              for i, key in enumerate(keys)}
    details: dict[str, Any] = {"k": k, "n_items": n_items, "knn_device": knn_device,
               "compared_with": [keys[j] for j in members],
               "agreement": {a: {b: float(g[i, j]) for j, b in enumerate(keys)} for i, a in enumerate(keys)}}
    central = central_references(g, keys, members, ctx.references)
    if central:
        details["central_references"] = central
        details["warnings"] = [central_warning(central)]
    if excluded:
        details["excluded"] = excluded
        scores.update({key: float("nan") for key in excluded})
    return MetricResult(name="nn_agreement", scores=scores, details=details)


def central_in_pool(ctx: MetricContext) -> dict[str, float]:
    """The reference points of a pool that are as central as its models (:func:`central_references` on the k-NN
    agreement of ``nn_agreement``, with its ``k`` and ``max_items`` options from ``ctx.options``): reference -> the
    ratio of its mean agreement with the models to the models' mean agreement with each other (>= 1). Empty when the
    pool has no reference points or fewer than two models. The run stage makes such reference points evidence for
    every metric (:func:`embedselect.pipeline.scoring.metrics_stage`)."""
    opt = checked_options("nn_agreement", ctx.options, _OPTION_DEFAULTS, {"k": 1, "max_items": 3})
    if not set(ctx.references) & set(ctx.embeddings):
        return {}
    try:
        keys, _excluded, _n, _k, g, _device = _pool_agreement(ctx, opt)
    except (MetricError, TooFewItemsError):  # fewer than 2 usable candidates or too few items: no pool to check
        return {}
    return central_references(g, keys, evidence(keys, ctx.references, ctx.families), ctx.references)


def central_references(g: np.ndarray, keys: list[str], members: list[int],
                       references: frozenset[str] | set[str]) -> dict[str, float]:
    """The reference points (``references`` outside ``members``) whose mean agreement with the members is at least
    the members' mean agreement with each other: reference -> that ratio (>= 1). Empty when fewer than two members
    (one head per family, :func:`~embedselect.metrics.pool.evidence`).

    Why: the pool-relative metrics consult the models only, on the grounds that a built-in baseline learned nothing
    about the data. When a baseline's neighbourhoods are as close to every model's as the models' are to each other,
    that ground is gone: the models share little beyond what the baseline captures (the benchmark's 8x8 digits, where
    raw pixels are the most accurate representation and the label-free ranking is inverted; docs/validity.md,
    "Reference points").
    """
    if len(members) < 2:
        return {}
    among = float(np.mean([g[i, j] for i in members for j in members if i != j]))
    out = {}
    for r in (i for i, k in enumerate(keys) if k in references and i not in members):
        with_models = float(np.mean([g[r, j] for j in members]))
        if among > 0 and with_models >= among:
            out[keys[r]] = round(float(with_models / among), 3)
    return out


def central_warning(central: dict[str, float], *, counted: bool = False) -> str:
    """The warning for central reference points; ``counted``: the run stage made them evidence."""
    names = ", ".join(f"{k} ({v:.2f}×)" for k, v in central.items()) if counted else ", ".join(central)
    what = ("so they count as evidence in this ranking, like the models; the label-free ranking can still be wrong "
            "here" if counted else "and the label-free ranking can be wrong here")
    return (f"the reference point(s) {names} agree with the models' nearest neighbours at least as much as the models "
            f"agree with each other: the models may capture little about this data beyond what these baselines do, "
            f"{what}; check it with a few labels (embedselect validate)")

"""``nn_agreement``: how much a candidate's nearest neighbours agree with the other candidates'.

A label-free comparator (a "wisdom of the pool" baseline, cf. mutual k-NN alignment, Huh et al.
2024): for every item, take its k nearest neighbours by cosine similarity in each candidate; the
agreement of candidates a and b is the mean over items of ``|N_a(i) ∩ N_b(i)| / k``. A candidate's
score is its mean agreement with the other candidates that are evidence about the data — not the built-in
baselines (``MetricContext.references``), each family of variants and copies of one model counting once
(``MetricContext.families``) — (higher is better), in [0, 1].

The pairwise matrix is in ``details['agreement']``; reference points that agree with the models as much as the
models agree with each other are named in ``details['central_references']`` with a warning
(:func:`central_references`). With near-copies in the pool, a family of copies
agrees with itself and is favoured; this is the failure the benchmark measures, not a feature.
Computed on at most ``max_items`` items (seeded subsample), O(m·n²) time in row blocks.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from embedselect.arrays import check_embeddings
from embedselect.errors import ConfigError, MetricError, TooFewItemsError
from embedselect.metrics.base import MetricContext, MetricResult, evidence, family_weights
from embedselect.metrics.kernels import as_matrix
from embedselect.metrics.sampling import checked_options, seeded_rows, usable_keys
from embedselect.nn import knn
from embedselect.nn_device import faiss_has_gpu

_OPTION_DEFAULTS: dict[str, Any] = {"k": 10, "max_items": 2048, "compare_with": "models"}


def knn_indices(embeddings: Any, k: int, *, what: str = "embeddings") -> np.ndarray:
    """Indices (int64, (n, k)) of each row's k nearest other rows by cosine similarity.

    Ties are broken by the lower index (stable sort), so the result is deterministic.
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
        out[i0:i0 + 1024] = np.argsort(-s, axis=1, kind="stable")[:, :k]
    return out


def neighbour_lists(ctx: MetricContext, keys: list[str], rows: np.ndarray, k: int, *,
                    centre: bool = False) -> tuple[list[np.ndarray], str]:
    """Each candidate's k nearest other rows among ``rows`` (int64, (len(rows), k), indices into ``rows``) by cosine
    similarity, in ``keys``' order, and the device that found them. ``centre``: the cosine of the vectors less their
    mean over ``rows`` (float64), so that a direction every item shares does not decide the neighbours. On a CUDA
    device with a working FAISS GPU build the search runs there (exact, float32); otherwise the float64 brute force
    of :func:`knn_indices`."""
    on_gpu = str(ctx.device).startswith("cuda") and faiss_has_gpu()
    n = int(np.shape(ctx.embeddings[keys[0]])[0])
    out, device = [], "cpu"
    for key in keys:
        a = check_embeddings(ctx.embeddings[key], what=f"embeddings[{key!r}]", n=n, dtype=None, finite=False,
                             error=MetricError)  # fmt: skip
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
    """(m, m) float64 matrix of mean k-NN overlap fractions between candidates (diagonal 1)."""
    m = len(neighbours)
    n, k = neighbours[0].shape
    # item i's neighbour set as a row of a sparse-ish 0/1 matrix: overlap = row-wise dot product
    onehots = []
    for nb in neighbours:
        a = np.zeros((n, n), dtype=np.float32) if n <= 4096 else None
        if a is None:  # pragma: no cover - guarded by max_items
            raise MetricError("nn_agreement is limited to 4096 items; lower max_items")
        a[np.repeat(np.arange(n), k), nb.reshape(-1)] = 1.0
        onehots.append(a)
    g = np.eye(m)
    for i in range(m):
        for j in range(i + 1, m):
            g[i, j] = g[j, i] = float(np.einsum("ij,ij->", onehots[i], onehots[j], dtype=np.float64)) / (n * k)
    return g


def _pool_agreement(ctx: MetricContext,
                    opt: dict[str, Any]) -> tuple[list[str], dict[str, str], int, int, np.ndarray, str]:
    """The usable candidates' pairwise k-NN agreement on the seeded subsample: (usable keys, unusable key -> why,
    rows used, k, the (m, m) float64 matrix of :func:`agreement_matrix`, the k-NN device)."""
    if int(opt["max_items"]) > 4096:
        raise ConfigError("nn_agreement option 'max_items' must be ≤ 4096 (O(n²) memory per candidate)")
    keys, excluded = usable_keys(ctx)  # an unusable candidate scores NaN and is not in the pool compared with
    if len(keys) < 2:
        raise MetricError("nn_agreement compares candidates with each other: give at least 2 usable candidates"
                          + "".join(f"; {k}: {v}" for k, v in excluded.items()))
    sub = seeded_rows(ctx, keys, "nn_agreement", int(opt["max_items"]), salt=12)
    k = min(int(opt["k"]), len(sub) - 1)
    nbs, knn_device = neighbour_lists(ctx, keys, sub, k)
    return keys, excluded, len(sub), k, agreement_matrix(nbs), knn_device


def compute(ctx: MetricContext) -> MetricResult:
    """The ``nn_agreement`` comparator metric.

    Options: k (10), max_items (2048), compare_with ("models": a candidate's score is its mean agreement with the
    candidates that are not reference points, ``ctx.references`` — the built-in baselines — when at least two are
    left, :func:`~embedselect.metrics.base.evidence`; "all": with every other candidate, as before 2026-11-25).
    """
    opt = checked_options("nn_agreement", ctx.options, _OPTION_DEFAULTS, {"k": 1, "max_items": 3})
    if opt["compare_with"] not in ("models", "all"):
        raise ConfigError(f"nn_agreement option 'compare_with' must be 'models' or 'all', got {opt['compare_with']!r}")
    keys, excluded, n_items, k, g, knn_device = _pool_agreement(ctx, opt)
    members = evidence(keys, ctx.references) if opt["compare_with"] == "models" else list(range(len(keys)))
    weight = dict(zip(members, family_weights(keys, members, ctx.families)))  # one family, one vote
    scores = {key: float(np.average([g[i, j] for j in members if j != i], weights=[weight[j] for j in members if j != i]))
              for i, key in enumerate(keys)}
    details: dict[str, Any] = {"k": k, "n_items": n_items, "knn_device": knn_device,
               "compared_with": [keys[j] for j in members],
               "agreement": {a: {b: float(g[i, j]) for j, b in enumerate(keys)} for i, a in enumerate(keys)}}
    central = central_references(g, keys, members, weight)
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
    every metric (:func:`embedselect.pipeline.metrics.metrics_stage`)."""
    opt = checked_options("nn_agreement", ctx.options, _OPTION_DEFAULTS, {"k": 1, "max_items": 3})
    if not set(ctx.references) & set(ctx.embeddings):
        return {}
    try:
        keys, _excluded, _n, _k, g, _device = _pool_agreement(ctx, opt)
    except (MetricError, TooFewItemsError):  # fewer than 2 usable candidates or too few items: no pool to check
        return {}
    members = evidence(keys, ctx.references)
    return central_references(g, keys, members, dict(zip(members, family_weights(keys, members, ctx.families))))


def central_references(g: np.ndarray, keys: list[str], members: list[int],
                       weight: dict[int, float] | None = None) -> dict[str, float]:
    """The candidates outside ``members`` (the reference points) whose mean agreement with the members is at least
    the members' mean agreement with each other: reference -> that ratio (>= 1). Empty when fewer than two members.
    Means weigh each member by ``weight`` (index -> weight; default 1), pairs of members by the product.

    Why: the pool-relative metrics consult the models only, on the grounds that a built-in baseline learned nothing
    about the data. When a baseline's neighbourhoods are as close to every model's as the models' are to each other,
    that ground is gone: the models share little beyond what the baseline captures (the benchmark's 8x8 digits, where
    raw pixels are the most accurate representation and the label-free ranking is inverted, docs/benchmarks.md §4h).
    """
    if len(members) < 2:
        return {}
    w = weight or {j: 1.0 for j in members}
    pairs = {(i, j): w[i] * w[j] for i in members for j in members if i != j}
    among = sum(p * g[i, j] for (i, j), p in pairs.items()) / sum(pairs.values())
    out = {}
    for r in (i for i in range(len(keys)) if i not in members):
        with_models = float(np.average([g[r, j] for j in members], weights=[w[j] for j in members]))
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

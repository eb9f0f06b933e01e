"""Task Prior sampling: the prefix sampler (Algorithm 1) of labelings from a prior kernel."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from embedselect.errors import ConfigError
from embedselect.metrics.kernels import kernel_factor, sum_kernel_factor
from embedselect.metrics.task_prior.moments import positive, resolve_temperature


def _compress_factor(z: np.ndarray, max_rank: int) -> np.ndarray:
    """Best rank-``max_rank`` factor (n, max_rank) of ``Z Zᵀ``, or ``z`` itself if D ≤ max_rank.

    ``z`` is (n, D) float64. The eigendecomposition is of the smaller Gram matrix: ``ZᵀZ`` (D×D) when D ≤ n, else
    ``Z Zᵀ`` (n×n) — a balanced prior of eleven image models has D ≈ 10 000 columns on a few hundred items, where
    the D×D route took minutes. Both give ``U_r S_r`` (the same kernel approximation, up to column signs).
    """
    n, d = z.shape
    if d <= max_rank:
        return z
    if d <= n:
        evals, evecs = np.linalg.eigh(z.T @ z)
        return z @ evecs[:, ::-1][:, :max_rank]
    evals, evecs = np.linalg.eigh(z @ z.T)
    top = evals[::-1][:max_rank]
    return evecs[:, ::-1][:, :max_rank] * np.sqrt(np.clip(top, 0.0, None))


def sample_tasks_from_factor(
    z: np.ndarray,
    n_tasks: int,
    n_classes: int,
    *,
    temperature: float,
    seed: int = 0,
    max_rank: int = 256,
) -> np.ndarray:
    """Prefix sampler (Algorithm 1) on an explicit kernel factor ``K = Z Zᵀ``.

    Runs in numpy: the loop over points is sequential and each step is tiny (S·q·r multiply-adds),
    so per-step dispatch cost, not arithmetic, dominates; an accelerator would not help.

    Args:
        z: float array (n, D).
        n_tasks, n_classes: S tasks with q classes.
        temperature: absolute temperature T.
        seed: seeds the visiting orders and the categorical draws.
        max_rank: factors wider than this are replaced by their best rank-``max_rank`` approximation.

    Returns:
        int64 array (n_tasks, n) of labels in [0, n_classes).
    """
    n_tasks = positive_int(n_tasks, "n_tasks", 1)
    q = positive_int(n_classes, "n_classes", 2)
    max_rank = positive_int(max_rank, "max_rank", 1)
    t = positive(temperature, "temperature")
    zc = _compress_factor(np.asarray(z, dtype=np.float64), max_rank)
    n, r = zc.shape
    rng = np.random.default_rng(seed)
    perm = np.argsort(rng.random((n_tasks, n)), axis=1)  # one uniform visiting order per task
    gumbel = rng.gumbel(size=(n, n_tasks, q))
    zs = zc / t  # 1/T folded into the query row Z_i
    u = np.zeros((n_tasks, q, r), dtype=np.float64)  # class-wise prefix sums Σ_{j<i, y_j=c} Z_j
    labels = np.empty((n_tasks, n), dtype=np.int64)
    ar = np.arange(n_tasks)
    for i in range(n):
        idx = perm[:, i]
        h = np.matmul(u, zs[idx][:, :, None])[:, :, 0]  # (S, q) = Z_i U / T
        c = np.argmax(h + gumbel[i], axis=1)  # Gumbel-max: a draw from softmax(h)
        labels[ar, idx] = c
        u[ar, c] += zc[idx]
    return labels


def positive_int(v: Any, name: str, minimum: int) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < minimum:
        raise ConfigError(f"{name} must be an integer ≥ {minimum}, got {v!r}")
    return int(v)


def sample_tasks(
    prior_embeddings: Any,
    n_tasks: int,
    n_classes: int,
    *,
    temperature: float | None = None,
    tau: float | None = None,
    seed: int = 0,
    max_rank: int = 256,
) -> np.ndarray:
    """Sample ``n_tasks`` labelings with ``n_classes`` classes from the task prior (Algorithm 1).

    The prefix sampler approximates the Gibbs measure restricted to one-hot labelings,
    μ_K^q(G = YYᵀ) ∝ exp(Tr(YYᵀK)/T): it visits the points one by one and draws
    ``p(y_i = c | y_<i) ∝ exp(Σ_{j<i, y_j=c} K_ij / T)``, i.e. it conditions only on points already
    visited (a sequential, mean-field-free approximation; it is exact for the first point, which is
    uniform, and ignores the points not yet visited). Each task visits the points in its own uniformly
    random order (drawn from ``seed``), not in index order, so the result does not depend on how the
    data file is sorted and tasks differ in which points anchor the classes.

    Args:
        prior_embeddings: array (n, d) whose normalised centred cosine kernel is K, or a list of
            arrays (product of priors = kernel sum).
        n_tasks: number of tasks S (vectorised: all S are sampled in one pass over the points).
        n_classes: number of classes q ≥ 2.
        temperature: absolute T; overrides ``tau``.
        tau: scale-free temperature, T = tau / n (default :data:`DEFAULT_TAU`). T → ∞ gives uniform,
            independent labels.
        seed: root seed; same seed, same inputs → same labels (numpy only, so on any machine).
        max_rank: the factor is truncated to its top ``max_rank`` eigen-directions when wider.

    Returns:
        int64 array (n_tasks, n) of labels in [0, n_classes).
    """
    priors = list(prior_embeddings) if isinstance(prior_embeddings, (list, tuple)) else [prior_embeddings]
    z = sum_kernel_factor([kernel_factor(x, what=f"prior_embeddings[{i}]") for i, x in enumerate(priors)])
    t = resolve_temperature(z.shape[0], temperature=temperature, tau=tau)
    return sample_tasks_from_factor(
        z, n_tasks, n_classes, temperature=t, seed=seed, max_rank=max_rank
    )


# --------------------------------------------------------------------------------------------------


EXACT_EIGH_MAX = 1024
"""Up to this many items the cluster tasks' eigenvectors come from a dense partial eigendecomposition (LAPACK);
above it from Lanczos iterations (ARPACK), which touch the kernel only through products with it."""


def cluster_tasks_from_kernel(k: np.ndarray, classes: Sequence[int], restarts: int, *,
                              seed: int = 0) -> dict[int, np.ndarray]:
    """The prior's most likely labelings: k-means partitions of its spectral embedding.

    The Gibbs measure μ_K(G) ∝ exp(Tr(GK)/T) puts its mass, as T → 0, on the labelings that maximise Tr(GK), the
    within-class similarity; relaxed to the top q eigen-directions of K, that is spectral clustering. For each class
    count q the embedding is ``V_q Λ_q^½`` (the exact top eigenpairs of K, at the largest q), its rows scaled to unit
    length; each restart is one k-means run (Lloyd, k-means++ start) from its own seed, so the tasks differ where
    the partition is not clear-cut. The embedding does not depend on ``seed`` (Lanczos' start vector moves it only
    by its tolerance) nor on the kernel's positive scale.

    Args:
        k: float array (n, n), the prior kernel (symmetric positive semi-definite), any positive scale.
        classes: class counts q, each ≥ 2 and at most n.
        restarts: S ≥ 1 partitions per class count.
        seed: seeds the restarts (and Lanczos' start vector above :data:`EXACT_EIGH_MAX` items).

    Returns:
        class count q -> int64 array (restarts, n) of labels in [0, q).
    """
    from scipy.linalg import eigh
    from scipy.sparse.linalg import eigsh
    from sklearn.cluster import KMeans

    k = np.asarray(k, dtype=np.float64)
    qs = sorted({positive_int(q, "n_classes", 2) for q in classes})
    s_tasks = positive_int(restarts, "restarts", 1)
    n = k.shape[0]
    if k.ndim != 2 or k.shape[1] != n:
        raise ConfigError(f"the prior kernel must be a square matrix, got shape {k.shape}")
    if not qs or qs[-1] > n:
        raise ConfigError(f"class counts must be given, each at most the number of items ({n}); got {list(classes)}")
    top = qs[-1]
    if n <= EXACT_EIGH_MAX or top >= n - 1:
        evals, evecs = eigh(k, subset_by_index=[n - top, n - 1])
    else:
        evals, evecs = eigsh(k, k=top, v0=np.random.default_rng([seed, 13]).standard_normal(n))
    order = np.argsort(evals)[::-1]
    spectral = evecs[:, order] * np.sqrt(np.clip(evals[order], 0.0, None))
    out = {}
    for q in qs:
        e = spectral[:, :q]
        norms = np.linalg.norm(e, axis=1, keepdims=True)
        e = e / np.where(norms > 1e-12, norms, 1.0)
        seeds = np.random.default_rng([seed, 13, q]).integers(2**31, size=s_tasks)
        out[q] = np.stack([KMeans(q, n_init=1, random_state=int(r)).fit_predict(e) for r in seeds]).astype(np.int64)
    return out

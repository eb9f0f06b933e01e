"""Task Priors (Bhattacharjee et al., "Task Priors", sections 2.2–2.4 and 3).

A prior kernel K (n×n) defines a Gibbs measure over label graphs G, μ_K(G) ∝ exp(Tr(GK)/T), under
which the edges are independent Bernoulli(σ(K_ij/T)) variables (Lemma 2.5). For a candidate's kernel
M, Theorem 2.6 gives, summing over all i, j including the diagonal,

    E[Tr(MG)]   = Σ_ij M_ij σ(K_ij/T)
    Var(Tr(MG)) = Σ_ij M_ij² σ(K_ij/T) (1 − σ(K_ij/T)).

Kernels are normalised double-centred cosine kernels (:mod:`embedselect.metrics.kernels`), given by
exact factors ``K = Z Zᵀ``. :func:`task_prior_moments` streams symmetric tiles ``Z_I Z_Jᵀ`` (upper
triangle, off-diagonal tiles counted twice) with torch on CPU or CUDA and accumulates in float64, so
memory is O(n·d + tile²) and no n×n matrix is formed.

:func:`sample_tasks` implements Algorithm 1 (prefix sampler), vectorised over many tasks.
:func:`compute` is the ``task_prior`` metric used by ``embedselect.select``.

See ``docs/task_prior.md`` for the method notes (temperature scaling, defaults, prior choices).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import torch

from embedselect.errors import ConfigError, MetricError, TooFewItemsError
from embedselect.metrics.base import MIN_ITEMS, MetricContext, MetricResult, unusable_reason
from embedselect.metrics.kernels import kernel_factor, kernel_factor_on, label_factor, sum_kernel_factor, torch_device

#: Scale-free temperature: T = tau / n. The Task Priors paper used T = 1e-5 at n = 8192, i.e.
#: tau = 0.08192 (see docs/task_prior.md for the calibration behind keeping it).
DEFAULT_TAU = 0.08192

_DTYPES = {"float64": "float64", "float32": "float32"}


# --------------------------------------------------------------------------------------------------
# temperature
# --------------------------------------------------------------------------------------------------
def resolve_temperature(n: int, *, temperature: float | None = None, tau: float | None = None) -> float:
    """Absolute temperature T for a kernel on ``n`` items.

    ``temperature`` (absolute) wins when given; otherwise ``T = tau / n`` (``tau`` defaults to
    :data:`DEFAULT_TAU`). Unit-Frobenius kernels have entries of order 1/n, so ``K_ij / T`` is of
    order ``1 / tau`` at every n.

    Raises:
        ConfigError: a non-positive or non-finite value.
    """
    if temperature is not None:
        t = _positive(temperature, "temperature")
        return t
    t = _positive(DEFAULT_TAU if tau is None else tau, "tau")
    return t / n


def _positive(v: Any, name: str) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a positive number, got {v!r}") from None
    if not (math.isfinite(f) and f > 0):
        raise ConfigError(f"{name} must be a positive finite number, got {v!r}")
    return f


# --------------------------------------------------------------------------------------------------
# closed-form moments
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TaskPriorMoments:
    """Moments of Tr(MG) under the task prior μ_K (Theorem 2.6), all i, j including the diagonal.

    Attributes:
        mean: E[Tr(MG)] (dimensionless; M has unit Frobenius norm).
        var: Var(Tr(MG)).
        p_fro: ‖σ(K/T)‖_F, the Frobenius norm of the edge-probability matrix.
        temperature: the absolute temperature T used.
        n: number of items.
    """

    mean: float
    var: float
    p_fro: float
    temperature: float
    n: int

    @property
    def std(self) -> float:
        """Standard deviation of Tr(MG)."""
        return math.sqrt(max(self.var, 0.0))

    @property
    def alignment(self) -> float:
        """mean / ‖σ(K/T)‖_F: cosine between M and the expected label graph, in [-1, 1]."""
        return self.mean / self.p_fro if self.p_fro > 0 else 0.0

    @property
    def tau(self) -> float:
        """The scale-free temperature T·n."""
        return self.temperature * self.n


def _default_tile(dev) -> int:
    return 8192 if dev.type == "cuda" else 2048


class _Prior:
    """How the prior tile is obtained from the model tiles (internal).

    kind: "ext" (own factor ``z``), "sum" (scale·Σ_k weights_k M_k), "loo" (scale_c·(Σ_k M_k − M_c)),
    "model" (M_index).
    """

    def __init__(self, kind: str, *, z=None, scale=1.0, scales=None, weights=None, index: int = -1) -> None:
        self.kind, self.z, self.scale, self.scales, self.index = kind, z, scale, scales, index
        self.weights = weights


def _stream_moments(
    model_z: list,
    prior: _Prior,
    temperature: float,
    *,
    tile: int,
) -> list[tuple[float, float, float]]:
    """Stream the moments. ``model_z``: torch tensors (n, d_k) on one device, one dtype.

    Returns a list of (mean, var, sum of σ²) per model, float64 sums.
    """
    n = model_z[0].shape[0]
    m = len(model_z)
    inv_t = 1.0 / temperature
    acc = torch.zeros((m, 3), dtype=torch.float64, device=model_z[0].device)
    # 1/T is folded into the prior: the prior tiles below are the logits K_IJ / T
    pz = prior.z * math.sqrt(inv_t) if prior.kind == "ext" else None
    for i0 in range(0, n, tile):
        i1 = min(n, i0 + tile)
        rows = [z[i0:i1] for z in model_z]
        prow = pz[i0:i1] if pz is not None else None
        for j0 in range(i0, n, tile):
            j1 = min(n, j0 + tile)
            w = 1.0 if j0 == i0 else 2.0  # symmetric: off-diagonal tiles stand for (I,J) and (J,I)
            mt = [r @ z[j0:j1].T for r, z in zip(rows, model_z)]
            if prior.kind == "ext":
                assert pz is not None and prow is not None
                xs = [prow @ pz[j0:j1].T]
            elif prior.kind == "model":
                xs = [mt[prior.index] * inv_t]
            else:
                wts = prior.weights if prior.kind == "sum" else [1.0] * m
                s = mt[0] * wts[0]
                for t_, wk in zip(mt[1:], wts[1:]):
                    s.add_(t_, alpha=wk)
                if prior.kind == "sum":
                    xs = [s.mul_(prior.scale * inv_t)]
                else:
                    xs = [(s - mc).mul_(sc * inv_t) for mc, sc in zip(mt, prior.scales)]
            shared = len(xs) == 1
            p = q = None
            pp = 0.0  # assigned with p before its first use
            for c in range(m):
                if p is None or not shared:
                    x = xs[0 if shared else c]  # owned logit tile, consumed in place
                    p = torch.sigmoid(x)
                    q = x.neg_().sigmoid_().mul_(p)  # σ(1−σ) = σ(x)σ(−x), no cancellation as σ → 1
                    pp = _dot(p, p)
                mc = mt[c]
                acc[c, 0] += w * _dot(mc, p)
                acc[c, 1] += w * _dot(mc.square_(), q)  # mt[c] is not needed after this
                acc[c, 2] += w * pp
    out = acc.cpu().numpy()
    return [(float(a), float(b), float(c)) for a, b, c in out]


def _dot(a, b):
    """Σ a∘b of two same-shape tiles as a float64 0-d tensor (BLAS dot; no temporary tile)."""
    return torch.dot(a.reshape(-1), b.reshape(-1)).to(torch.float64)


def _to_torch(z: np.ndarray, dev, dtype: str):
    return torch.as_tensor(np.ascontiguousarray(z), dtype=getattr(torch, dtype)).to(dev)


def _check_dtype(dtype: str) -> str:
    if dtype not in _DTYPES:
        raise ConfigError(f"dtype must be 'float64' (exact) or 'float32' (faster GEMMs), got {dtype!r}")
    return dtype


def task_prior_moments(
    model_embeddings: Any,
    prior_embeddings: Any,
    *,
    temperature: float | None = None,
    tau: float | None = None,
    device: str | None = "cpu",
    tile: int | None = None,
    dtype: str = "float64",
) -> Any:
    """Closed-form E[Tr(MG)] and Var(Tr(MG)) under the task prior of ``prior_embeddings``.

    Args:
        model_embeddings: the candidate, array (n, d); or a mapping key -> array (n, d_k), or a
            list of arrays, to evaluate several candidates against the same prior in one pass (the
            prior tile is computed once per tile).
        prior_embeddings: array (n, d_p) whose normalised centred cosine kernel is K; or a list of
            arrays, meaning the product of their priors μ_K1·μ_K2·… ∝ μ_(K1+K2+…), i.e. the kernel
            sum (not renormalised).
        temperature: absolute temperature T; overrides ``tau``.
        tau: scale-free temperature, T = tau / n (default :data:`DEFAULT_TAU`).
        device: torch device for the tiles ("cpu", "cuda", "cuda:1").
        tile: tile edge in rows (default 2048 on CPU, 8192 on CUDA). Memory is O(n·d + tile²).
        dtype: "float64" (default; matches a dense float64 computation to ~1e-14 relative) or
            "float32" (GEMMs and elementwise work in float32, tile sums accumulated in float64;
            ~2e-5 relative at n = 8192, about 2× faster on CPU).

    Returns:
        :class:`TaskPriorMoments` for a single matrix; a dict key -> moments for a mapping; a list
        for a list.

    Raises:
        MetricError: malformed matrices or different numbers of rows.
        ConfigError: bad temperature, tau, tile, dtype or device.
    """
    dtype = _check_dtype(dtype)
    if isinstance(model_embeddings, Mapping):
        keys = list(model_embeddings)
        mats = [model_embeddings[k] for k in keys]
    elif isinstance(model_embeddings, (list, tuple)):
        keys, mats = None, list(model_embeddings)
    else:
        keys, mats = None, [model_embeddings]
    if not mats:
        raise MetricError("no model embeddings given; pass an (n, d) array or a mapping of them")
    priors = list(prior_embeddings) if isinstance(prior_embeddings, (list, tuple)) else [prior_embeddings]
    n = np.shape(mats[0])[0] if np.ndim(mats[0]) == 2 else -1
    for x in mats + priors:
        if np.ndim(x) == 2 and np.shape(x)[0] != n:
            raise MetricError(
                f"all matrices must embed the same n items in the same order; got {n} and {np.shape(x)[0]} rows"
            )
    t = resolve_temperature(max(n, 1), temperature=temperature, tau=tau)
    dev = torch_device(device)
    tile_ = _check_tile(tile, dev)
    # one factor at a time, so that float64 host copies do not pile up next to the device copies
    # the factors are computed on the device (on CUDA the host would otherwise spend longer on them than the GPU
    # on the whole stream), one at a time so that float64 copies do not pile up next to the working ones
    tdt = getattr(torch, dtype)
    zs = [kernel_factor_on(x, dev, what=f"model_embeddings[{keys[i] if keys else i}]").to(tdt)
          for i, x in enumerate(mats)]
    # the product of the priors is the kernel sum: its factor is the column-wise concatenation (sum_kernel_factor)
    pz = torch.cat([kernel_factor_on(x, dev, what=f"prior_embeddings[{i}]").to(tdt) for i, x in enumerate(priors)],
                   dim=1)
    prior = _Prior("ext", z=pz)
    res = _stream_moments(zs, prior, t, tile=tile_)
    out = [TaskPriorMoments(mean=e, var=v, p_fro=math.sqrt(max(pp, 0.0)), temperature=t, n=n) for e, v, pp in res]
    if keys is not None:
        return dict(zip(keys, out))
    if isinstance(model_embeddings, (list, tuple)):
        return out
    return out[0]


def _check_tile(tile: int | None, dev) -> int:
    if tile is None:
        return _default_tile(dev)
    if not isinstance(tile, (int, np.integer)) or tile < 1:
        raise ConfigError(f"tile must be a positive integer (rows per tile), got {tile!r}")
    return int(tile)


# --------------------------------------------------------------------------------------------------
# task sampler (Algorithm 1)
# --------------------------------------------------------------------------------------------------
def _compress_factor(z: np.ndarray, max_rank: int) -> np.ndarray:
    """Best rank-``max_rank`` factor of ``Z Zᵀ`` (via the D×D Gram), or ``z`` itself if D ≤ max_rank."""
    if z.shape[1] <= max_rank:
        return z
    evals, evecs = np.linalg.eigh(z.T @ z)
    top = evecs[:, ::-1][:, :max_rank]
    return z @ top


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
    n_tasks = _positive_int(n_tasks, "n_tasks", 1)
    q = _positive_int(n_classes, "n_classes", 2)
    max_rank = _positive_int(max_rank, "max_rank", 1)
    t = _positive(temperature, "temperature")
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


def _positive_int(v: Any, name: str, minimum: int) -> int:
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
# the `task_prior` metric
# --------------------------------------------------------------------------------------------------
_OPTION_DEFAULTS: dict[str, Any] = {
    "prior": "balanced",
    "tau": DEFAULT_TAU,
    "temperature": None,
    "n_tasks": 64,
    "n_classes": 2,
    "probes": True,
    "agreement": True,
    "headline": "probes",
    "max_items": 4096,
    "moments_max_items": 16384,
    "test_fraction": 0.3,
    "dtype": "float64",
    "tile": None,
}

_SMALL_POOL = 4
_BALANCE_POWER = 8.0


def _cross_gram(zs: list[np.ndarray]) -> np.ndarray:
    """G[k, l] = ‖Z_kᵀ Z_l‖_F² = Σ_ij (M_k)_ij (M_l)_ij, float64 (m, m); from d_k×d_l products."""
    m = len(zs)
    g = np.empty((m, m), dtype=np.float64)
    for k in range(m):
        for l_ in range(k, m):
            c = zs[k].T @ zs[l_]
            g[k, l_] = g[l_, k] = float(np.sum(c * c))
    return g


def _balanced_weights(g: np.ndarray, power: float = _BALANCE_POWER) -> np.ndarray:
    """Redundancy weights w_k = 1 / Σ_l CKA_kl^power (float64, (m,)).

    ``g`` is the cross Gram matrix of unit-Frobenius kernels, so g_kl = ⟨M_k, M_l⟩_F is their linear
    CKA in [0, 1]. A group of near-copies (CKA ≈ 1) shares the weight of one member; models that are
    merely similar (CKA 0.6 → 0.6^8 ≈ 0.02) barely discount each other.
    """
    cka = np.clip(g / np.sqrt(np.outer(np.diag(g), np.diag(g))), 0.0, 1.0)
    return 1.0 / np.sum(cka**power, axis=1)


def _prior_factor(kind: str, zs: list[np.ndarray], c: int | None, labels_z: np.ndarray | None) -> np.ndarray:
    """Factor (n, D) of the unit-Frobenius prior kernel used for candidate ``c``."""
    if kind == "labels":
        assert labels_z is not None, "kind 'labels' comes with the label factor"
        return labels_z
    if kind.startswith("candidate:"):
        return zs[int(kind.split(":", 1)[1])]
    if kind == "balanced":
        w = _balanced_weights(_cross_gram(zs))
        return sum_kernel_factor([z * math.sqrt(wk) for z, wk in zip(zs, w)], normalize=True)
    members = [z for k, z in enumerate(zs) if not (kind == "loo" and k == c)]
    return sum_kernel_factor(members, normalize=True)


def compute(ctx: MetricContext) -> MetricResult:
    """The ``task_prior`` metric: closed-form moments plus probes on sampled tasks.

    Options (``ctx.options``):
        prior: "balanced" (default; the candidates' kernels summed with redundancy weights
            w_k = 1 / Σ_l CKA_kl^8, so a group of near-copies counts about once, then renormalised
            to unit Frobenius norm; the weights are in ``details['prior_weights']``), "consensus"
            (plain sum, renormalised), "loo" (leave-one-out consensus: each candidate is scored
            under the sum of the *other* candidates' kernels), a candidate key (that candidate's
            kernel; self-biased), or "labels" (centred same-label graph of ``ctx.labels``; the only
            case labels are read).
        tau: scale-free temperature, T = tau / n (default :data:`DEFAULT_TAU`).
        temperature: absolute temperature; overrides tau (used for the moments at n and for the
            sampler on the probe subsample alike).
        n_tasks (64), n_classes (2): sampled tasks for the probes.
        probes (True): sample tasks and train probes; False gives the closed-form moments only.
        agreement (True): also compute the agreement score.
        max_items (4096): items (seeded subsample) used for sampling and probes.
        moments_max_items (16384): items (a seeded subsample, drawn apart from the probes') for the closed-form
            moments, whose cost is O(n²·d) time (O(n·d) memory): at n = 100 000 on two CPU cores they alone
            took about 4-6 minutes per candidate (docs/benchmarks.md, sections 2 and 8). ``None``: all items.
            When it bites, ``details['subsampled']['moments']`` says how many were used, and the temperature
            follows the subsample (T = tau / n_used).
        test_fraction (0.3): held-out share for the probes.
        dtype ("float64"), tile (None = device default): precision and tile of the streamed moments.

        headline ("probes"): the score used for ranking: "probes", the mean held-out probe accuracy
            over the sampled tasks, or "alignment", the closed-form E[Tr(MG)] / ‖σ(K/T)‖_F (exact,
            deterministic, cheap to bootstrap). The other one is still reported in ``columns`` and named
            in ``details['secondary']``, so that validation with labels measures both. "probes" is the
            default because it tracked held-out label accuracy better on the real datasets of the validity
            benchmark (Spearman 0.90 vs 0.50 on polarity, 0.70 vs 0.60 on analogy, equal on digits;
            docs/benchmarks.md); the closed form did better on the bundled demo sample (0.8 vs 0.7) and on
            a synthetic pool of near-duplicates. With ``probes=False`` the headline is the alignment.

    Headline score: higher is better (see ``headline``).

    Raises:
        ConfigError: unknown option or bad value; ``prior='labels'`` without labels.
        TooFewItemsError: fewer than ``MIN_ITEMS['task_prior']`` items.
        MetricError: no candidate's embeddings can be used. A candidate whose embeddings cannot be (see
            :func:`~embedselect.metrics.base.unusable_reason`, or a zero kernel) gets score NaN and its reason in
            ``details['excluded']``; the others are scored without it.
    """
    unknown = set(ctx.options) - set(_OPTION_DEFAULTS)
    if unknown:
        raise ConfigError(
            f"unknown task_prior option(s) {sorted(unknown)}; known: {', '.join(sorted(_OPTION_DEFAULTS))}"
        )
    opt = {**_OPTION_DEFAULTS, **dict(ctx.options)}
    if opt["headline"] not in ("alignment", "probes"):
        raise ConfigError(f"task_prior option 'headline' must be 'alignment' or 'probes', got {opt['headline']!r}")
    if not opt["probes"]:
        opt["headline"] = "alignment"
    for flag in ("probes", "agreement"):
        if not isinstance(opt[flag], (bool, np.bool_)):
            raise ConfigError(f"task_prior option {flag!r} must be True or False, got {opt[flag]!r}")
    keys = list(ctx.embeddings)
    if not keys:
        raise MetricError("task_prior needs at least one candidate's embeddings")
    n = int(np.asarray(ctx.embeddings[keys[0]]).shape[0]) if np.ndim(ctx.embeddings[keys[0]]) == 2 else -1
    need = MIN_ITEMS["task_prior"]
    if 0 <= n < need:
        raise TooFewItemsError(f"task_prior needs at least {need} reference items, got {n}; add more data",
                               needed=need, got=n)
    for k in keys:  # the contract: every candidate embeds the same n items
        rows_k = int(np.asarray(ctx.embeddings[k]).shape[0]) if np.ndim(ctx.embeddings[k]) == 2 else -1
        if rows_k != n:
            raise MetricError(f"embeddings[{k!r}] has {rows_k} rows, expected {n} (same items, same order)")
    n_all = n
    cap = opt["moments_max_items"]
    moment_rows = None
    if cap is not None and n > _positive_int(cap, "moments_max_items", need):
        rng_m = np.random.default_rng([ctx.seed, 5])
        moment_rows = np.sort(rng_m.choice(n, size=int(cap), replace=False))
        n = int(cap)

    def moment_input(a):
        return np.asarray(a) if moment_rows is None else np.asarray(a)[moment_rows]

    if opt["probes"]:  # the seeded subsample of the probes, drawn before any candidate is looked at
        max_items = _positive_int(opt["max_items"], "max_items", need)
        rng = np.random.default_rng([ctx.seed, 3])
        sub = np.sort(rng.choice(n_all, size=max_items, replace=False)) if n_all > max_items else np.arange(n_all)
    # a candidate whose embeddings cannot be used (non-finite, one repeated vector, a zero kernel on the moments'
    # rows or on the probes' subsample) is left out with its reason (score NaN); the others are scored without it
    excluded: dict[str, str] = {}
    zs: list[np.ndarray] = []
    zsub: list = []  # the probe-subsample factors (None when probes are off)
    for k in keys:
        why = unusable_reason(k, ctx.embeddings[k])
        if why is None:
            try:
                z = kernel_factor(moment_input(ctx.embeddings[k]), what=f"embeddings[{k!r}]")
                zk = kernel_factor(np.asarray(ctx.embeddings[k])[sub], what=f"embeddings[{k!r}] (probe subsample)") \
                    if opt["probes"] else None
            except MetricError as exc:
                why = str(exc)
        if why is not None:
            excluded[k] = why
            continue
        zs.append(z)
        zsub.append(zk)
    if excluded:
        keys = [k for k in keys if k not in excluded]
        if not keys:
            raise MetricError(
                "task_prior could not score any candidate: " + "; ".join(f"{k}: {v}" for k, v in excluded.items())
            )
    m = len(keys)
    warnings: list[str] = []

    # --- resolve the prior --------------------------------------------------------------------
    prior_opt = opt["prior"]
    labels_z = None
    if prior_opt == "labels":
        if ctx.labels is None:
            raise ConfigError("prior='labels' needs labels; pass labels to select() or choose prior='consensus'")
        if len(ctx.labels) != n_all:
            raise ConfigError(f"labels has length {len(ctx.labels)}, expected {n_all} (one per reference item)")
        labels_z = label_factor(moment_input(ctx.labels))
        kind = "labels"
    elif prior_opt in ("consensus", "loo", "balanced"):
        kind = prior_opt
        if m == 1:
            kind = "candidate:0"
            warnings.append(f"only one candidate: prior '{prior_opt}' falls back to the candidate's own kernel")
        elif kind == "loo" and m == 2:
            warnings.append("prior 'loo' with two candidates scores each under the other's kernel")
    elif prior_opt in excluded:
        raise MetricError(f"the prior candidate {prior_opt!r} cannot be used: {excluded[prior_opt]}")
    elif prior_opt in ctx.embeddings:
        kind = f"candidate:{keys.index(prior_opt)}"
        warnings.append(f"prior is candidate {prior_opt!r}: it and its relatives are favoured (self-bias)")
    else:
        raise ConfigError(
            f"prior must be 'consensus', 'balanced', 'loo', 'labels' or a candidate key ({', '.join(map(repr, keys))}); "
            f"got {prior_opt!r}"
        )
    pool_warning = None
    if m < _SMALL_POOL and kind in ("consensus", "loo", "balanced"):
        pool_warning = f"pool is small ({m} candidates): consensus-based scores are unreliable"
        warnings.append(pool_warning)
    prior_name = kind if not kind.startswith("candidate:") else f"candidate:{keys[int(kind.split(':')[1])]}"

    # --- closed-form moments ------------------------------------------------------------------
    temperature = resolve_temperature(n, temperature=opt["temperature"], tau=opt["tau"])
    dtype = _check_dtype(opt["dtype"])
    dev = torch_device(ctx.device)
    tile = _check_tile(opt["tile"], dev)
    if kind in ("consensus", "loo", "balanced"):
        g = _cross_gram(zs)
        if kind in ("consensus", "balanced"):
            wts = _balanced_weights(g) if kind == "balanced" else np.ones(m)
            prior = _Prior("sum", weights=[float(v) for v in wts], scale=1.0 / math.sqrt(float(wts @ g @ wts)))
            if kind == "balanced":
                details_weights = {k: float(v / wts.sum()) for k, v in zip(keys, wts)}
        else:
            tot = g.sum()
            scales = [1.0 / math.sqrt(tot - 2 * g[c].sum() + g[c, c]) for c in range(m)]
            prior = _Prior("loo", scales=scales)
    elif kind == "labels":
        assert labels_z is not None  # set with kind = "labels" above
        prior = _Prior("ext", z=_to_torch(labels_z, dev, dtype))
    else:
        prior = _Prior("model", index=int(kind.split(":")[1]))
    res = _stream_moments([_to_torch(z, dev, dtype) for z in zs], prior, temperature, tile=tile)
    moments = {
        k: TaskPriorMoments(mean=e, var=v, p_fro=math.sqrt(max(pp, 0.0)), temperature=temperature, n=n)
        for k, (e, v, pp) in zip(keys, res)
    }
    columns: dict[str, dict[str, float]] = {
        "task_prior_mean": {k: mo.mean for k, mo in moments.items()},
        "task_prior_var": {k: mo.var for k, mo in moments.items()},
        "task_prior_alignment": {k: mo.alignment for k, mo in moments.items()},
    }
    details: dict[str, Any] = {
        "prior": prior_name,
        "temperature": temperature,
        "tau": temperature * n,
        "n_items": n_all,
        "n_moment_items": n,
        "dtype": dtype,
        "device": str(dev),
        "headline": "task_prior_alignment",
    }
    if kind == "balanced":
        details["prior_weights"] = details_weights
    if moment_rows is not None:
        details["subsampled"] = {"moments": n}

    # --- probes on sampled tasks ----------------------------------------------------------------
    if opt["probes"]:
        from embedselect.metrics.probes import probe_tasks

        n_tasks = _positive_int(opt["n_tasks"], "n_tasks", 1)
        q = _positive_int(opt["n_classes"], "n_classes", 2)
        ns = len(sub)
        t_sub = resolve_temperature(ns, temperature=opt["temperature"], tau=opt["tau"])
        lz = label_factor(np.asarray(ctx.labels)[sub]) if kind == "labels" else None
        per_cand_prior = kind == "loo"
        tasks_shared = None
        summaries: dict[str, dict[str, float]] = {}
        task_acc: dict[str, list[float]] = {}  # candidate -> held-out accuracy per sampled task (for plots)
        for c, k in enumerate(keys):
            if per_cand_prior or tasks_shared is None:
                zp = _prior_factor(kind, zsub, c, lz)
                tasks = sample_tasks_from_factor(zp, n_tasks, q, temperature=t_sub,
                                                 seed=int(np.random.default_rng([ctx.seed, 4, c if per_cand_prior else 0]).integers(2**31)))
                if not per_cand_prior:
                    tasks_shared = tasks
            else:
                tasks = tasks_shared
            rep = probe_tasks(np.asarray(ctx.embeddings[k])[sub], tasks, n_classes=q,
                              test_fraction=opt["test_fraction"], agreement=bool(opt["agreement"]),
                              seed=ctx.seed, device=str(dev))
            summaries[k] = rep.summary()
            task_acc[k] = [round(float(a), 4) for a in rep.accuracy]
        for col in next(iter(summaries.values())):
            columns[col] = {k: summaries[k][col] for k in keys}
        if ns < n_all:
            details.setdefault("subsampled", {})["probes"] = ns
        details.update(n_probe_items=ns, n_tasks=n_tasks, n_classes=q, probe_temperature=t_sub,
                       test_fraction=float(opt["test_fraction"]), task_accuracy=task_acc)
    if opt["headline"] == "probes":
        details.update(headline="probe_acc_mean", secondary=["task_prior_alignment"])
        scores = dict(columns["probe_acc_mean"])
    else:
        details.update(headline="task_prior_alignment", secondary=["probe_acc_mean"] if opt["probes"] else [])
        scores = dict(columns["task_prior_alignment"])
    if excluded:
        details["excluded"] = excluded
        for k in excluded:
            scores[k] = math.nan
            for values in columns.values():
                values[k] = math.nan
    if warnings:
        details["warnings"] = warnings
    if pool_warning:
        details["pool_warning"] = pool_warning
    return MetricResult(name="task_prior", scores=scores, columns=columns, details=details)

"""Task Prior closed-form moments (Theorem 2.6), streamed over kernel tiles, and the temperature rule."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import torch

from embedselect.errors import ConfigError, MetricError
from embedselect.metrics.kernels import kernel_factor_on, torch_device

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
        t = positive(temperature, "temperature")
        return t
    t = positive(DEFAULT_TAU if tau is None else tau, "tau")
    return t / n


def positive(v: Any, name: str) -> float:
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


class Prior:
    """How the prior tile is obtained from the model tiles (internal).

    kind: "ext" (own factor ``z``), "sum" (scale·Σ_k weights_k M_k), "loo" (scale_c·(Σ_k weights_k M_k −
    weights_d M_d) with d = drop[c], c itself by default, nothing when d < 0; weights default to 1), "model"
    (M_index).
    """

    def __init__(self, kind: str, *, z=None, scale=1.0, scales=None, weights=None, index: int = -1,
                 drop=None) -> None:
        self.kind, self.z, self.scale, self.scales, self.index = kind, z, scale, scales, index
        self.weights, self.drop = weights, drop


def stream_moments(
    model_z: list,
    prior: Prior,
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
                wts = prior.weights if prior.weights is not None else [1.0] * m
                s = mt[0] * wts[0]
                for t_, wk in zip(mt[1:], wts[1:]):
                    s.add_(t_, alpha=wk)
                if prior.kind == "sum":
                    xs = [s.mul_(prior.scale * inv_t)]
                else:
                    drop = prior.drop if prior.drop is not None else range(m)
                    xs = [(s - mt[d] * wts[d] if d >= 0 else s.clone()).mul_(sc * inv_t)
                          for d, sc in zip(drop, prior.scales)]
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


def to_torch(z: np.ndarray, dev, dtype: str):
    return torch.as_tensor(np.ascontiguousarray(z), dtype=getattr(torch, dtype)).to(dev)


def check_dtype(dtype: str) -> str:
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
    dtype = check_dtype(dtype)
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
    tile_ = check_tile(tile, dev)
    # one factor at a time, so that float64 host copies do not pile up next to the device copies
    # the factors are computed on the device (on CUDA the host would otherwise spend longer on them than the GPU
    # on the whole stream), one at a time so that float64 copies do not pile up next to the working ones
    tdt = getattr(torch, dtype)
    zs = [kernel_factor_on(x, dev, what=f"model_embeddings[{keys[i] if keys else i}]").to(tdt)
          for i, x in enumerate(mats)]
    # the product of the priors is the kernel sum: its factor is the column-wise concatenation (sum_kernel_factor)
    pz = torch.cat([kernel_factor_on(x, dev, what=f"prior_embeddings[{i}]").to(tdt) for i, x in enumerate(priors)],
                   dim=1)
    prior = Prior("ext", z=pz)
    res = stream_moments(zs, prior, t, tile=tile_)
    out = [TaskPriorMoments(mean=e, var=v, p_fro=math.sqrt(max(pp, 0.0)), temperature=t, n=n) for e, v, pp in res]
    if keys is not None:
        return dict(zip(keys, out))
    if isinstance(model_embeddings, (list, tuple)):
        return out
    return out[0]


def check_tile(tile: int | None, dev) -> int:
    if tile is None:
        return _default_tile(dev)
    if not isinstance(tile, (int, np.integer)) or tile < 1:
        raise ConfigError(f"tile must be a positive integer (rows per tile), got {tile!r}")
    return int(tile)


# --------------------------------------------------------------------------------------------------
# task sampler (Algorithm 1)

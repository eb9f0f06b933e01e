"""Centred cosine kernels in factorised form.

The Task Priors kernel of an embedding matrix ``X`` (n×d) is the cosine-similarity matrix, double
centred and divided by its Frobenius norm (the normalisation the Task Priors authors used):

    C = X̂ X̂ᵀ                with X̂ the rows of X scaled to unit L2 norm
    K = H C H / ‖H C H‖_F    with H = I − 11ᵀ/n

Because ``H C H = (H X̂)(H X̂)ᵀ``, the kernel has the exact factor ``Z = H X̂ / sqrt(‖(H X̂)ᵀ(H X̂)‖_F)``
(n×d): ``K = Z Zᵀ`` and ``‖K‖_F = ‖ZᵀZ‖_F = 1``. Centring is a column-mean subtraction and the
Frobenius norm comes from the d×d Gram matrix, so no n×n matrix is ever needed; :mod:`taskprior`
streams tiles of ``Z_I Z_Jᵀ`` instead. A sum of such kernels is again a factorised kernel: the factors
are concatenated column-wise.

Since ``‖K‖_F = 1`` spreads over n² entries, a typical entry is of order 1/n; see
``docs/task_prior.md`` for why the temperature must scale like 1/n as a consequence.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from embedselect.errors import ConfigError, MetricError
from embedselect._util.arrays import check_embeddings

_ZERO_NORM = 1e-12


def as_matrix(x: object, what: str) -> np.ndarray:
    """Validate one embedding matrix: 2-D, numeric, finite, at least 2 rows and 1 column."""
    return check_embeddings(x, what=what, min_rows=2, dtype=None, error=MetricError)


def host_tensor(a: np.ndarray):
    """A torch CPU tensor that shares ``a``'s memory (a C-contiguous copy only when ``a`` is not contiguous).

    For arrays that are only read or copied: ``a`` may be read-only (a memory map of a cached vector file), which
    torch would otherwise warn about; writing into the tensor in place is the caller's error."""
    import warnings

    import torch

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable", category=UserWarning)
        return torch.as_tensor(np.ascontiguousarray(a))


def kernel_factor(embeddings: object, *, what: str = "embeddings") -> np.ndarray:
    """Exact factor Z of the normalised, double-centred cosine kernel: ``K = Z Zᵀ``, ``‖K‖_F = 1``.

    Args:
        embeddings: array-like of shape (n, d), any real dtype. All-zero rows are kept as zero
            vectors (their cosine with every item is taken as 0 before centring).
        what: name used in error messages.

    Returns:
        float64 array of shape (n, d).

    Raises:
        MetricError: not 2-D, non-finite values, fewer than 2 rows, or a kernel that is zero after
            centring (all rows point the same way).
    """
    return kernel_factor_on(embeddings, "cpu", what=what).numpy()


def kernel_factor_on(embeddings: object, device: object, *, what: str = "embeddings"):
    """:func:`kernel_factor` computed on a torch device (the same arithmetic; on CUDA the O(n·d²) Gram and the
    O(n·d) passes run on the GPU instead of the host).

    Args:
        embeddings: array-like of shape (n, d), any real dtype (validated on the host).
        device: a torch device or its name (``"cpu"``, ``"cuda[:k]"``).
        what: name used in error messages.

    Returns:
        torch float64 tensor of shape (n, d) on ``device``.

    Raises:
        MetricError: as :func:`kernel_factor`.
    """
    import torch

    a = as_matrix(embeddings, what)
    x = host_tensor(a).to(device=device, dtype=torch.float64, copy=True)
    norms = torch.linalg.vector_norm(x, dim=1, keepdim=True)
    x /= torch.where(norms > _ZERO_NORM, norms, torch.ones_like(norms))
    x -= x.mean(dim=0, keepdim=True)
    gram = x.T @ x  # d×d, float64
    fro = float(torch.linalg.matrix_norm(gram))
    if not fro > _ZERO_NORM:
        raise MetricError(
            f"{what}: the centred cosine kernel is zero (all {x.shape[0]} rows point in the same "
            "direction); this embedding carries no information about these items"
        )
    x /= math.sqrt(fro)
    return x


def sum_kernel_factor(factors: Sequence[np.ndarray], *, normalize: bool = False) -> np.ndarray:
    """Factor of the kernel sum ``Σ_k Z_k Z_kᵀ``: the column-wise concatenation of the factors.

    Args:
        factors: factors of shape (n, d_k) (e.g. from :func:`kernel_factor`), same n.
        normalize: if True, scale the result so that the summed kernel has unit Frobenius norm
            (computed exactly from the d_k×d_l cross Gram matrices, never n×n).

    Returns:
        float64 array of shape (n, Σ d_k).
    """
    if len(factors) == 0:
        raise MetricError("no prior kernels given; pass at least one embedding matrix")
    n = factors[0].shape[0]
    for f in factors:
        if f.shape[0] != n:
            raise MetricError(f"prior matrices have different numbers of rows ({n} vs {f.shape[0]}); "
                              "all must embed the same items in the same order")
    if len(factors) == 1:
        z = np.asarray(factors[0], dtype=np.float64)
    else:
        z = np.concatenate([np.asarray(f, dtype=np.float64) for f in factors], axis=1)
    if normalize:
        z = z / np.sqrt(factor_frobenius_norm(z))
    return z


def factor_frobenius_norm(z: np.ndarray) -> float:
    """‖Z Zᵀ‖_F of a factor ``z`` (n, D), float64: from the smaller of ZᵀZ (D×D) and Z Zᵀ (n×n), equal norms."""
    z64 = np.asarray(z, dtype=np.float64)
    g = z64.T @ z64 if z64.shape[1] <= z64.shape[0] else z64 @ z64.T
    return float(np.sqrt(np.sum(g * g)))


def centered_cosine_kernel(embeddings: object) -> np.ndarray:
    """Dense normalised, double-centred cosine kernel ``H C H / ‖H C H‖_F``.

    Materialises n×n float64: for small n, tests and references only. The metric code uses
    :func:`kernel_factor` and streams tiles instead.

    Args:
        embeddings: array-like of shape (n, d).

    Returns:
        float64 array of shape (n, n), symmetric, rows and columns summing to 0, Frobenius norm 1.
    """
    z = kernel_factor(embeddings)
    return z @ z.T


def label_factor(labels: object, *, what: str = "labels") -> np.ndarray:
    """Factor of the label prior: the centred, normalised same-label graph.

    The same-label graph ``Y Yᵀ`` (Y one-hot, n×q) is the cosine kernel of the one-hot rows, so it goes
    through the same centring and Frobenius normalisation as embedding kernels (uncentred, every
    entry would be ≥ 0 and the Gibbs edge probabilities could not fall below 1/2).

    Args:
        labels: length-n array of hashable labels (ints or strings); at least two distinct values.

    Returns:
        float64 array of shape (n, q).
    """
    y = np.asarray(labels)
    if y.ndim != 1:
        raise MetricError(f"{what}: expected a 1-D array of length n, got shape {y.shape}")
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise MetricError(f"{what}: contains NaN or inf; every item needs a label for the label prior")
    classes, codes = np.unique(y, return_inverse=True)
    if len(classes) < 2:
        raise MetricError(f"{what}: need at least 2 distinct labels for a label prior, got {len(classes)}")
    onehot = np.zeros((len(y), len(classes)), dtype=np.float64)
    onehot[np.arange(len(y)), codes] = 1.0
    return kernel_factor(onehot, what=what)


def torch_device(device: str | None):
    """The torch device for metric computations (``"cpu"``, ``"cuda[:k]"``; None = CPU), checked: a typed error
    for an unknown name or for CUDA without a GPU."""
    import torch

    try:
        dev = torch.device(device or "cpu")
    except (RuntimeError, TypeError):
        raise ConfigError(f"device {device!r} is not a torch device; use 'cpu' or 'cuda[:k]'") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"device {device!r} requested but CUDA is not available; use device='cpu'")
    return dev

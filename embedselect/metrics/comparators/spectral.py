"""Label-free comparators from the literature: spectra and uniformity of one embedding at a time.

These are the simple baselines the validity benchmark scores next to ``task_prior`` and
``sufficiency`` (docs/validity.md, "Protocol"). Each one looks at a single candidate's geometry:

- ``rankme`` — RankMe effective rank (Garrido et al., ICML 2023): ``exp(H(p))`` with
  ``p_k = σ_k / Σ σ`` the normalised singular values of the (n, d) embedding matrix. Higher is better;
  in [1, min(n, d)]. When every candidate has at least n − 1 dimensions, all of them are capped by the item
  count and only spectral flatness is left to compare (noise wins): the values are kept as a column but not scored
  (:func:`rankme_not_comparable`).
- ``alpha_req`` — α-ReQ (Agrawal et al., NeurIPS 2022): the eigenvalues of the covariance decay like
  ``λ_k ∝ k^(−α)``; the paper finds α ≈ 1 best. The score is ``−|α − 1|`` (higher is better) and the
  fitted α is reported in the column ``alpha``.
- ``uniformity`` — Wang & Isola (ICML 2020): ``log E_{i≠j} exp(−t ‖x̂_i − x̂_j‖²)`` with t = 2 on unit
  rows. Lower is more uniform; the score is its negative (higher is better). The paper's companion
  *alignment* term needs positive pairs (augmentations of the same item), which a plain list of
  reference items does not have, so it is not computed.

All three use the same cosine geometry as the task prior kernel: rows scaled to unit L2 norm, then
(for the spectra) column-centred — i.e. the factor of :func:`embedselect.metrics.kernels.kernel_factor`.
Computed in float64 on at most ``max_items`` items (seeded subsample).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping

import numpy as np

from embedselect._util.arrays import check_embeddings
from embedselect.errors import MetricError
from embedselect.metrics.base import MetricContext, MetricResult, unusable_reason
from embedselect.metrics.kernels import as_matrix, kernel_factor
from embedselect.metrics.sampling import checked_options, seeded_rows

_OPTION_DEFAULTS: dict[str, Any] = {"max_items": 4096}

#: eigenvalues below this fraction of the largest are numerical zeros and left out of the α fit
_REL_EIG_FLOOR = 1e-10


def singular_values(embeddings: Any, *, what: str = "embeddings") -> np.ndarray:
    """Singular values (float64, descending, length min(n, d)) of the row-normalised, centred matrix."""
    z = kernel_factor(embeddings, what=what)
    return np.linalg.svd(z, compute_uv=False)


def rankme(embeddings: Any, *, eps: float = 1e-12) -> float:
    """RankMe effective rank of an (n, d) embedding matrix: exp of the entropy of σ / Σσ.

    Returns a float in [1, min(n, d)]: 1 for rank-1 embeddings, ≈ d for isotropic ones (n ≫ d).
    """
    s = singular_values(embeddings)
    p = s / max(float(s.sum()), eps) + eps
    return float(np.exp(-np.sum(p * np.log(p))))


def alpha_req(embeddings: Any) -> float:
    """α of the power-law fit ``λ_k ∝ k^(−α)`` to the covariance eigenvalues (least squares in log-log).

    Eigenvalues below 1e-10 of the largest are dropped. Returns 0.0 when fewer than 2 eigenvalues
    remain (rank-1: no decay can be measured).
    """
    lam = singular_values(embeddings) ** 2
    lam = lam[lam > lam[0] * _REL_EIG_FLOOR] if lam.size and lam[0] > 0 else lam[:0]
    if lam.size < 2:
        return 0.0
    k = np.log(np.arange(1, lam.size + 1, dtype=np.float64))
    slope = np.polyfit(k, np.log(lam), 1)[0]
    return float(-slope)


def uniformity(embeddings: Any, *, t: float = 2.0) -> float:
    """Wang & Isola uniformity ``log mean_{i≠j} exp(−t‖x̂_i − x̂_j‖²)`` on unit rows (lower = more uniform).

    O(n²) time in blocks of 1024 rows, O(n·d) memory; the log-mean-exp is computed stably in float64.
    """
    x = np.asarray(embeddings, dtype=np.float64)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    x = x / np.where(norms > 1e-12, norms, 1.0)
    n = x.shape[0]
    sq = np.sum(x * x, axis=1)
    # ‖a−b‖² ≥ 0, so exp(−t d²) ≤ 1: sum directly, no overflow; the diagonal (d = 0) is removed.
    total = 0.0
    for i0 in range(0, n, 1024):
        g = x[i0:i0 + 1024] @ x.T
        d2 = np.maximum(sq[i0:i0 + 1024, None] + sq[None, :] - 2 * g, 0.0)
        total += float(np.exp(-t * d2).sum())
    total -= n  # the n diagonal terms, exp(0) = 1 each
    return float(np.log(max(total, 1e-300) / (n * (n - 1))))


def _subsample(ctx: MetricContext, name: str) -> tuple[list[str], dict[str, np.ndarray], int]:
    opt = checked_options(name, ctx.options, _OPTION_DEFAULTS, {"max_items": 2})
    keys = list(ctx.embeddings)
    if not keys:
        raise MetricError(f"{name} needs at least one candidate's embeddings")
    n = int(np.shape(ctx.embeddings[keys[0]])[0])
    sub = seeded_rows(ctx, keys, name, int(opt["max_items"]), salt=11)
    out = {}
    for k in keys:
        a = check_embeddings(ctx.embeddings[k], what=f"embeddings[{k!r}]", n=n, dtype=None, finite=False,
                             error=MetricError)
        out[k] = a[sub]
    return keys, out, len(sub)


def rankme_not_comparable(n_items: int, dims: Mapping[str, int]) -> str | None:
    """Why RankMe cannot compare these candidates on ``n_items`` items, or None when it can.

    The effective rank of a centred (n, d) matrix is at most min(n − 1, d). When every candidate has at least
    n − 1 dimensions, every one is capped by the item count rather than by its own width, and what is left to
    compare is only how flat each n-item spectrum is, which noise-like embeddings (random projections, TF-IDF of
    short texts) win: on the bundled 240-item sample it ranked TF-IDF (probe accuracy 0.50) first, above
    all-MiniLM-L6-v2 (0.95).
    """
    if len(dims) == 0 or n_items - 1 > min(dims.values()):
        return None
    return (f"left out of the score: every candidate has at least n - 1 = {n_items - 1} dimensions, so each "
            "effective rank is capped by the number of items and compares only how flat the spectra are, not the "
            f"embeddings' capacity; rank at least {min(dims.values()) + 2} items to use it")


def _single(name: str, fn: Callable[[np.ndarray], float], sign: float, column: str | None = None,
            comparable: Callable[[int, Mapping[str, int]], str | None] | None = None):
    def compute(ctx: MetricContext) -> MetricResult:
        keys, emb, ns = _subsample(ctx, name)
        raw: dict[str, float] = {}
        excluded: dict[str, str] = {}
        for k in keys:
            # the one rule for unusable embeddings (metrics.base.unusable_reason): that candidate scores NaN
            why = unusable_reason(k, ctx.embeddings[k])
            if why is not None:
                excluded[k] = why
                raw[k] = math.nan
                continue
            as_matrix(emb[k], f"embeddings[{k!r}]")  # typed error for bad shapes
            raw[k] = fn(emb[k])
        if len(excluded) == len(keys):
            raise MetricError(f"{name} could not score any candidate: "
                              + "; ".join(f"{k}: {v}" for k, v in excluded.items()))
        scores = {k: sign * v if column is None else -abs(v - 1.0) for k, v in raw.items()}
        cols = {column or name: raw}
        details: dict[str, Any] = {"n_items": ns}
        why = comparable(ns, {k: int(emb[k].shape[1]) for k in keys if k not in excluded}) if comparable else None
        if why is not None:  # shown as a column, but no score: it would rank flatness, not the candidates
            scores = {k: math.nan for k in scores}
            details["warnings"] = [f"{name} {why}"]
            details["not_comparable"] = why
        if excluded:
            details["excluded"] = excluded
        return MetricResult(name=name, scores=scores, columns=cols, details=details)

    compute.__name__ = f"compute_{name}"
    compute.__doc__ = f"The ``{name}`` comparator metric (higher is better); see the module docstring."
    return compute


compute_rankme = _single("rankme", rankme, 1.0, comparable=rankme_not_comparable)
compute_alpha_req = _single("alpha_req", alpha_req, 1.0, column="alpha")
compute_uniformity = _single("uniformity", uniformity, -1.0)

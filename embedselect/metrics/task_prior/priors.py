"""Task Prior's pool priors: the weights of the members' kernels in a prior built from the pool, and the prior's
kernel (or its factor) for one candidate (:mod:`embedselect.metrics.task_prior.score`'s ``prior`` option)."""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from embedselect.metrics.kernels import sum_kernel_factor

POOL_PRIORS = ("consensus", "loo", "balanced", "central")
"""The priors built from the pool's kernels (its members'); the others are one candidate's kernel or the labels'."""
WEIGHED_PRIORS = ("balanced", "central")
"""The pool priors whose members' weights depend on their kernels (:func:`pool_weights`)."""
BALANCE_POWER = 8.0


def cross_gram(zs: list[np.ndarray]) -> np.ndarray:
    """G[k, l] = ‖Z_kᵀ Z_l‖_F² = Σ_ij (M_k)_ij (M_l)_ij, float64 (m, m).

    Each entry comes from the cheaper of the d_k×d_l product Z_kᵀ Z_l (n·d_k·d_l) and the two n×n kernels
    M_k = Z_k Z_kᵀ (computed once per candidate, n²·d_k): wide embeddings of a few hundred items take the kernels.
    """
    m = len(zs)
    n = zs[0].shape[0] if m else 0
    kernels: dict[int, np.ndarray] = {}

    def kernel(k: int) -> np.ndarray:
        if k not in kernels:
            kernels[k] = zs[k] @ zs[k].T
        return kernels[k]

    g = np.empty((m, m), dtype=np.float64)
    for k in range(m):
        for l_ in range(k, m):
            if n * n < zs[k].shape[1] * zs[l_].shape[1]:
                g[k, l_] = g[l_, k] = float(np.sum(kernel(k) * kernel(l_)))
            else:
                c = zs[k].T @ zs[l_]
                g[k, l_] = g[l_, k] = float(np.sum(c * c))
    return g


def cka(g: np.ndarray) -> np.ndarray:
    """Linear CKA (float64 (m, m), in [0, 1]) of the kernels whose cross Gram matrix is ``g`` (:func:`cross_gram`):
    g_kl / sqrt(g_kk g_ll), which is g_kl itself for unit-Frobenius kernels, clipped against rounding."""
    return np.clip(g / np.sqrt(np.outer(np.diag(g), np.diag(g))), 0.0, 1.0)


def balanced_weights(g: np.ndarray, power: float = BALANCE_POWER) -> np.ndarray:
    """Redundancy weights w_k = 1 / Σ_l CKA_kl^power (float64, (m,)).

    ``g`` is the cross Gram matrix of unit-Frobenius kernels, so g_kl = ⟨M_k, M_l⟩_F is their linear
    CKA in [0, 1]. A group of near-copies (CKA ≈ 1) shares the weight of one member; models that are
    merely similar (CKA 0.6 → 0.6^8 ≈ 0.02) barely discount each other.
    """
    return 1.0 / np.sum(cka(g) ** power, axis=1)


def central_weights(g: np.ndarray) -> np.ndarray:
    """Centrality times redundancy weights (float64, (m,)): w_k = r_k · c_k with r the redundancy weights of
    :func:`balanced_weights` and c_k = Σ_{l≠k} r_l CKA_kl / Σ_{l≠k} r_l a member's mean linear CKA with the others,
    each weighed by its redundancy weight (a group of near-copies counts once). A kernel no other member shares (an
    untrained network, a broken copy) is a weak witness of the data's tasks and weighs little, and near-copies still
    share one weight. All ones times r when fewer than two members or when no two kernels share anything."""
    m = len(g)
    r = balanced_weights(g)
    if m < 2:
        return r
    others = np.outer(np.ones(m), r) * (1.0 - np.eye(m))
    c = np.sum(others * cka(g), axis=1) / np.sum(others, axis=1)
    return r * c if np.any(c > 0) else r


def pool_weights(kind: str, g: np.ndarray | None, m: int) -> np.ndarray:
    """Weights (m,) of the ``m`` members' kernels in a pool prior (one head per family,
    :func:`~embedselect.metrics.pool.evidence`), from their cross Gram matrix ``g`` (members × members,
    :func:`cross_gram`; needed only for the priors in :data:`WEIGHED_PRIORS`): all ones, the redundancy weights for
    "balanced", the redundancy and centrality weights for "central"."""
    if kind not in WEIGHED_PRIORS:
        return np.ones(m, dtype=np.float64)
    assert g is not None, "a weighed prior needs its members' cross Gram matrix"
    return balanced_weights(g) if kind == "balanced" else central_weights(g)


def prior_factors(kind: str, zs: list[np.ndarray], labels_z: np.ndarray | None, members: list[int],
                  g: np.ndarray | None = None) -> Callable[[int | None], np.ndarray]:
    """``factor(c)``: the factor (n, D) of the unit-Frobenius prior kernel left without member ``c`` (an index into
    ``zs``; None: nobody left out; a candidate leaves its own family's head out, "loo" gives every candidate). A
    pool prior sums the kernels of ``members`` only (one head per family among the candidates that are evidence,
    :func:`~embedselect.metrics.base.evidence`), weighted by :func:`pool_weights`. The members' cross Gram matrix
    and weights are computed once, here: each factor is then a concatenation, normalised from them
    (‖Σ w_i M_i‖_F² = Σ w_i w_j g_ij) without an n×n product. ``g``: that matrix (members × members) when the
    caller has it already."""
    if kind == "labels":
        assert labels_z is not None, "kind 'labels' comes with the label factor"
        return lambda c: labels_z
    if kind.startswith("candidate:"):
        own = zs[int(kind.split(":", 1)[1])]
        return lambda c: own
    g = cross_gram([zs[i] for i in members]) if g is None else g
    w = pool_weights(kind, g, len(members))

    def factor(c: int | None) -> np.ndarray:
        keep = [j for j, i in enumerate(members) if i != c]
        norm = float(w[keep] @ g[np.ix_(keep, keep)] @ w[keep])
        z = sum_kernel_factor([zs[members[j]] * math.sqrt(w[j]) for j in keep])
        return z / norm ** 0.25

    return factor


def prior_kernels(kind: str, zs: list[np.ndarray], labels_z: np.ndarray | None, members: list[int],
                  g: np.ndarray | None = None) -> Callable[[int | None], np.ndarray]:
    """``kernel(c)``: the prior kernel (n, n) float64 of :func:`prior_factors`'s ``factor(c)``, up to a positive
    scale. A pool prior's weighted kernel sum over every member is formed once (n²·D); leaving member ``c`` out then
    subtracts its own weighted kernel (n²·d_c), so each prior costs one n×n product with one factor instead of a
    product with the D columns of all the others. ``g`` as in :func:`prior_factors` (needed only for the weighed
    priors)."""
    if kind == "labels" or kind.startswith("candidate:"):
        z = prior_factors(kind, zs, labels_z, members, g)(None)
        fixed = z @ z.T
        return lambda c: fixed
    if g is None and kind in WEIGHED_PRIORS:
        g = cross_gram([zs[i] for i in members])
    w = pool_weights(kind, g, len(members))
    total = np.zeros((zs[members[0]].shape[0],) * 2, dtype=np.float64)
    for j, i in enumerate(members):
        total += w[j] * (zs[i] @ zs[i].T)
    where = {i: j for j, i in enumerate(members)}

    def kernel(c: int | None) -> np.ndarray:
        if c is None or c not in where:
            return total
        return total - w[where[c]] * (zs[c] @ zs[c].T)

    return kernel

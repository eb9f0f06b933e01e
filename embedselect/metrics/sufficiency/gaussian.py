"""Information sufficiency with a linear-Gaussian conditional, cross-fitted: the ``estimator="gaussian"`` of
:mod:`embedselect.metrics.sufficiency.score`.

IS(U -> Z) = [H(Z) - H(Z|U)] / dim(Z) (Darrin et al., appendix E) with the lowest-capacity member of the estimator
family: Z's top principal coordinates (whitened), and a conditional N(W u, diag(s^2)) whose mean is a ridge
regression on U's principal coordinates. For whitened target coordinates this is

    IS(U -> Z) = -1/2 * mean_k log( SS_res,k / SS_tot,k )          (nats per target coordinate)

where SS_res,k is the squared error of the ridge prediction of coordinate k and SS_tot,k its squared deviation from
the training mean, both summed over held-out rows. Every item is held out exactly once (``folds``-fold
cross-fitting: principal axes, ridge penalty and weights are fitted on the other folds), so at small n every item
counts towards the estimate instead of a test split of a few dozen, and the estimate has no training schedule, early
stopping or initialisation to vary: the fold assignment is its only random choice.

Why: at the few hundred items a user ranks with, the KNIFE estimate is dominated by its 60-item test split and by
pairs that never improve on their marginal (IS exactly 0); this estimator keeps its top pick over seeds, and the
image default uses it (docs/validity.md, "Current defaults").

Pure array code (torch, float64 accumulations, on the metric's device); no caching of its own (the whole matrix of
P candidates costs ``folds`` eigendecompositions per candidate and one (r x m) @ (m x P·k) product per source).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from embedselect.errors import ConfigError, MetricError
from embedselect.metrics.sufficiency.inputs import pool_caveats, too_few_usable, torch_device, validate
from embedselect.metrics.sufficiency.result import SufficiencyResult, communities

__all__ = ["GaussianSettings", "gaussian_is_matrix", "gaussian_sufficiency"]

ALPHAS = tuple(float(a) for a in np.logspace(-4, 3, 15))
"""Ridge penalties tried (generalised cross-validation per pair), as multiples of the source's mean eigenvalue."""

NULL_EIG = 1e-3
"""Principal directions with an eigenvalue at most this times the mean eigenvalue are dropped (a near-collinearity
of the training rows, as in :data:`embedselect.metrics.sufficiency.knife.prepare.NULL_EIG`)."""

RATIO_FLOOR = 1e-6
"""Smallest residual share of a target coordinate's variance counted (at most 6.9 nats per coordinate): a target
that is an exact function of the source would otherwise score infinity."""

BLOCK_ELEMENTS = 1 << 24
"""Target coordinates are regressed in column blocks of at most this many (rows x columns) elements."""


@dataclass(frozen=True)
class GaussianSettings:
    """Settings of the linear-Gaussian estimator (options of ``sufficiency`` with ``estimator="gaussian"``).

    Attributes:
        folds: cross-fitting folds (each item is held out once).
        target_pcs: the target enters as its top principal coordinates, whitened on the training rows.
        source_pcs: the source enters as its top principal coordinates (not whitened: the ridge penalty then
            shrinks the low-variance directions most).
        rows_per_pc: small-n rule: at most max(min_pcs, n_train / rows_per_pc) source coordinates.
        min_pcs: floor of that cap.
        max_items: above this many items, a seeded sample of that many rows is used (stated in the result).
    """

    folds: int = 5
    target_pcs: int = 32
    source_pcs: int = 128
    rows_per_pc: int = 4
    min_pcs: int = 8
    max_items: int = 10000

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ConfigError(f"sufficiency option {f.name} must be a positive integer, got {v!r}")
        if self.folds < 2:
            raise ConfigError(f"sufficiency option folds must be at least 2, got {self.folds}")

    def source_rank(self, n_train: int) -> int:
        """Most source coordinates for ``n_train`` training rows."""
        return min(self.source_pcs, max(self.min_pcs, n_train // self.rows_per_pc))


def settings_from(options: Mapping[str, Any]) -> GaussianSettings:
    """:class:`GaussianSettings` from a metric's options (unknown names are a :class:`ConfigError`)."""
    known = {f.name for f in dataclasses.fields(GaussianSettings)}
    unknown = set(options) - known
    if unknown:
        raise ConfigError(f"unknown option(s) {sorted(unknown)} for sufficiency's gaussian estimator; known: {sorted(known)}")
    return GaussianSettings(**dict(options))


def fold_ids(n: int, folds: int, seed: int) -> np.ndarray:
    """int64 (n,): the fold (0..folds-1) each item is held out in, a seeded balanced assignment."""
    perm = np.random.default_rng(seed).permutation(n)
    out = np.empty(n, dtype=np.int64)
    out[perm] = np.arange(n) % folds
    return out


def _unit_rows(x: np.ndarray, device: Any):
    """float64 tensor (n, d): rows scaled to unit L2 norm (all-zero rows stay zero), the package's cosine geometry
    (:mod:`embedselect.metrics.kernels`)."""
    import torch

    from embedselect.metrics.kernels import host_tensor

    t = host_tensor(np.asarray(x, dtype=np.float32)).to(device).double()
    norm = t.norm(dim=1, keepdim=True)
    return t / torch.where(norm > 0, norm, torch.ones_like(norm))


def _principal(x, train, width: int):
    """Principal coordinates of every row of ``x`` (n, d) on the axes of the rows ``train`` (centred on their mean):
    float64 (n, k) with k <= width non-null axes, and the per-axis variance on the training rows (k,)."""
    import torch

    xt = x[train]
    mean = xt.mean(0, keepdim=True)
    xc = xt - mean
    m, d = xc.shape
    floor = NULL_EIG * float((xc * xc).sum()) / (m * d)  # NULL_EIG x the covariance's mean eigenvalue
    if d <= m:
        evals, evecs = torch.linalg.eigh(xc.T @ xc / m)
        evals, evecs = evals.flip(0), evecs.flip(1)
        ok = evals > floor
        var = evals[ok][:width]
        axes = evecs[:, ok][:, :width]
    else:  # through the (m, m) Gram matrix, which has the same non-zero eigenvalues: axes = X^T u / sqrt(m * eval)
        evals, u = torch.linalg.eigh(xc @ xc.T / m)
        evals, u = evals.flip(0), u.flip(1)
        ok = evals > floor
        var = evals[ok][:width]
        axes = xc.T @ u[:, ok][:, :width] / torch.sqrt(var * m)
    return (x - mean) @ axes, var


def gaussian_is_matrix(
    embeddings: Mapping[str, np.ndarray], *, seed: int, settings: GaussianSettings, device: Any = "cpu",
) -> tuple[list[str], np.ndarray, dict[str, Any]]:
    """IS(U -> Z) for every ordered pair of candidates, cross-fitted (see the module docstring).

    Args:
        embeddings: candidate -> array (n, d_candidate), any real dtype, finite, the same n rows in the same order
            (checked by the caller, :func:`embedselect.metrics.sufficiency.inputs.validate`).
        seed: the fold assignment (and the row sample above ``max_items``) derive from it.
        settings: :class:`GaussianSettings`.
        device: torch device of the computation.

    Returns:
        (names, matrix, info): ``matrix`` float64 (P, P), row = source, column = target, IS in nats per target
        coordinate (NaN diagonal); ``info``: ``h_z`` / ``h_z_given_u`` (candidate -> nats per coordinate, Gaussian
        entropies of the held-out target coordinates, marginal and given each source), ``dims`` (target coordinates
        used per candidate), ``n_used`` (rows), ``excluded`` (candidate -> why it could not be used).

    Raises:
        MetricError: fewer than ``folds`` * 2 rows.
    """
    import torch

    from embedselect.metrics.sufficiency.settings import derive_seed

    st = settings
    names = list(embeddings)
    n = next(iter(embeddings.values())).shape[0]
    rows = np.arange(n)
    if n > st.max_items:
        rows = np.sort(np.random.default_rng(derive_seed(seed, "gaussian-rows", n)).choice(n, st.max_items, replace=False))
    m_all = len(rows)
    if m_all < 2 * st.folds:
        raise MetricError(f"the gaussian sufficiency estimator needs at least {2 * st.folds} items for {st.folds} folds")
    fold = fold_ids(m_all, st.folds, derive_seed(seed, "gaussian-folds", m_all))
    dev = torch.device(device)
    x = {c: _unit_rows(embeddings[c] if m_all == n else np.asarray(embeddings[c][rows]), dev) for c in names}
    p = len(names)
    k_max = st.target_pcs
    res = torch.zeros(p, p, k_max, dtype=torch.float64, device=dev)  # squared held-out error, source x target x coord
    tot = torch.zeros(p, k_max, dtype=torch.float64, device=dev)  # squared held-out deviation, target x coord
    width = torch.full((p,), k_max, dtype=torch.long)  # target coordinates present in every fold
    excluded: dict[str, str] = {}
    for f in range(st.folds):
        te = torch.from_numpy(np.flatnonzero(fold == f)).to(dev)
        tr = torch.from_numpy(np.flatnonzero(fold != f)).to(dev)
        m = len(tr)
        r = st.source_rank(m)
        src, tgt = [], []
        for j, c in enumerate(names):
            coords, var = _principal(x[c], tr, max(r, k_max))
            if coords.shape[1] == 0:
                excluded.setdefault(c, "no non-null principal direction on the training rows")
                coords, var = torch.zeros(x[c].shape[0], 1, dtype=torch.float64, device=dev), torch.ones(1, dtype=torch.float64, device=dev)
            src.append(coords[:, :r])
            t = coords[:, :k_max] / torch.sqrt(var[:k_max])
            width[j] = min(int(width[j]), t.shape[1])
            t = torch.nn.functional.pad(t, (0, k_max - t.shape[1]))  # absent coordinates: zero columns
            tgt.append(t)
            tot[j] += (t[te] ** 2).sum(0)  # the training mean of every coordinate is 0
        targets = torch.cat(tgt, 1)  # (n, p * k_max)
        t_tr, t_te = targets[tr], targets[te]
        tss = (t_tr ** 2).sum(0)  # (p * k,) training sum of squares per target coordinate
        alphas = torch.tensor(ALPHAS, dtype=torch.float64, device=dev)
        block = max(1, BLOCK_ELEMENTS // max(1, m * k_max))
        for i in range(p):
            u_tr, u_te = src[i][tr], src[i][te]
            s2 = (u_tr ** 2).sum(0)  # (r_i,) the coordinates are orthogonal on the training rows
            keep = s2 > 0
            u_tr, u_te, s2 = u_tr[:, keep], u_te[:, keep], s2[keep]
            lam = alphas[:, None] * s2.mean()  # (A, 1)
            shrink = s2[None, :] / (s2[None, :] + lam)  # (A, r)
            dof = (1.0 - shrink.sum(1) / m) ** 2  # (A,)
            for a in range(0, p, block):
                b_ = min(p, a + block)
                cols = slice(a * k_max, b_ * k_max)
                b = u_tr.T @ t_tr[:, cols]  # (r, q * k)
                explained = b * b / s2[:, None]  # (r, q * k) at lambda = 0
                rss = tss[cols][None, :] - (1 - (1 - shrink) ** 2) @ explained  # (A, q * k)
                gcv = rss / dof.clamp_min(1e-12)[:, None]
                best = lam[gcv.argmin(0), 0]  # (q * k,) penalty per target coordinate
                coef = b / (s2[:, None] + best[None, :])
                err = ((t_te[:, cols] - u_te @ coef) ** 2).sum(0).view(b_ - a, k_max)
                res[i, a:b_] += err
    ratio = (res / tot.clamp_min(1e-300)[None]).clamp(RATIO_FLOOR, 1.0)
    mat = np.full((p, p), math.nan)
    h_zu: dict[str, dict[str, float]] = {}
    h_z: dict[str, float] = {}
    dims: dict[str, int] = {}
    for j, c in enumerate(names):
        k = int(width[j])
        dims[c] = k
        h_z[c] = float(0.5 * torch.log(2 * math.pi * math.e * tot[j, :k] / m_all).mean()) if k else math.nan
        for i, s in enumerate(names):
            if i != j and k:
                mat[i, j] = float(-0.5 * torch.log(ratio[i, j, :k]).mean())
                h_zu.setdefault(s, {})[c] = h_z[c] - mat[i, j]
    info = {"h_z": h_z, "h_z_given_u": h_zu, "dims": dims, "n_used": m_all, "excluded": excluded}
    return names, mat, info


def gaussian_sufficiency(
    embeddings: Mapping[str, Any], *, seed: int = 0, settings: GaussianSettings | None = None, device: str = "cpu",
    **options: Any,
) -> SufficiencyResult:
    """Pairwise information sufficiency of a pool of embedders with the linear-Gaussian estimator.

    Args:
        embeddings: candidate name -> array (n, d_candidate), the same n items in the same order; n >= 50.
        seed: the fold assignment derives from it (and the row sample above ``max_items``).
        settings: :class:`GaussianSettings`; or give any of its fields as a keyword (overrides ``settings``).
        device: torch device ("cpu", "cuda", "cuda:1").

    Returns:
        :class:`~embedselect.metrics.sufficiency.result.SufficiencyResult`: the matrix in nats per target
        coordinate, median scores, communities; ``settings["estimator"] == "gaussian"``.

    Raises:
        MetricError: fewer than 2 usable candidates, mismatched rows. TooFewItemsError: n < 50.
        ConfigError: an unknown option or an invalid setting, or a device that is not available.
    """
    import pandas as pd

    st = settings_from({**(dataclasses.asdict(settings) if settings else {}), **options})
    embs, excluded = validate(embeddings)
    if len(embs) < 2:
        raise too_few_usable(excluded, list(embs))
    n = next(iter(embs.values())).shape[0]
    names, mat, info = gaussian_is_matrix(embs, seed=seed, settings=st, device=torch_device(device))
    excluded.update(info["excluded"])
    usable = [c for c in names if c not in excluded]
    if len(usable) < 2:
        raise too_few_usable(excluded, usable)
    every = list(embeddings)
    frame = pd.DataFrame(np.nan, index=pd.Index(every, name="source"), columns=pd.Index(every, name="target"))
    pos = {c: i for i, c in enumerate(names)}
    for s in usable:
        for t in usable:
            if s != t:
                frame.loc[s, t] = mat[pos[s], pos[t]]
    scores = {s: float(np.median([frame.loc[s, t] for t in usable if t != s])) if s in usable else math.nan
              for s in every}
    warnings, pool_warning = pool_caveats(usable, excluded)
    dims, h_z = info["dims"], info["h_z"]
    pairs = [{"source": s, "target": t, "is": float(frame.loc[s, t]), "h_z": h_z[t] * dims[t],
              "h_z_given_u": info["h_z_given_u"][s][t] * dims[t], "dim": dims[t], "cached": False}
             for s in usable for t in usable if s != t]
    settings_out = {**dataclasses.asdict(st), "estimator": "gaussian", "seed": int(seed), "n_items": n,
                    "n_used": info["n_used"], "units": "nats per target coordinate"}
    return SufficiencyResult(
        matrix=frame,
        scores=scores,
        communities=communities(frame, seed),
        marginal_entropy={t: h_z[t] for t in usable},
        pairs=pairs,
        settings=settings_out,
        warnings=warnings,
        excluded=dict(excluded),
        pool_warning=pool_warning,
    )

"""Diagonal Gaussian mixtures: the per-target marginal (EM), its shared tables, and the conditional log density."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from embedselect.metrics.sufficiency.knife.prepare import Prepared

LOG_2PI = math.log(2.0 * math.pi)

#: Documented bounds on log component scales (standardised units): sigma in [9.1e-4, 1.1e3].
#: KNIFE's published code squashes log-variances with tanh (sigma in [0.61, 1.65]); these bounds
#: only guard against numerical collapse onto single training points.
LOG_SCALE_MIN = -7.0
LOG_SCALE_MAX = 7.0
#: EM variance floor (standardised units), the same order as exp(2 * LOG_SCALE_MIN).
VAR_FLOOR = 1e-6


@dataclass
class Marginal:
    """Diagonal Gaussian mixture over a prepared target.

    Attributes: log_w (C,), mean (C, d), log_scale (C, d); float64 tensors (natural log, standardised
    principal coordinates).
    """

    log_w: torch.Tensor
    mean: torch.Tensor
    log_scale: torch.Tensor

    def to_json(self) -> dict:
        return {
            "log_w": self.log_w.cpu().tolist(),
            "mean": self.mean.cpu().tolist(),
            "log_scale": self.log_scale.cpu().tolist(),
        }

    @classmethod
    def from_json(cls, d: dict, device: torch.device) -> "Marginal":
        t = lambda v: torch.tensor(v, dtype=torch.float64, device=device)  # noqa: E731
        return cls(t(d["log_w"]), t(d["mean"]), t(d["log_scale"]))


@dataclass
class TargetTables:
    """What every pair predicting one target shares.

    Attributes:
        z_top: float32 (n, k) the top-k principal coordinates.
        rest_quad: float32 (n, C) sum over the other coordinates of ((z - m_c) / s_c)^2.
        rest_logdet: float32 (C,) sum over the other coordinates of log s_c.
        d_rest: number of other coordinates; dim: total kept dimensions.
    """

    z_top: torch.Tensor
    rest_quad: torch.Tensor
    rest_logdet: torch.Tensor
    d_rest: int
    dim: int

    @classmethod
    def build(cls, prep: Prepared, m: Marginal, k: int, chunk: int = 8192) -> "TargetTables":
        k = min(k, prep.dim)
        mu, ls = m.mean[:, k:], torch.clamp(m.log_scale[:, k:], LOG_SCALE_MIN, LOG_SCALE_MAX)
        q = torch.exp(-2.0 * ls)
        quads = []
        for a in range(0, prep.z.shape[0], chunk):
            zr = prep.z[a : a + chunk, k:].double()
            quads.append(((zr * zr) @ q.T - 2.0 * zr @ (mu * q).T + (mu * mu * q).sum(1)).clamp_min(0.0))
        rest = torch.cat(quads).float() if quads else prep.z.new_zeros(0, mu.shape[0])
        return cls(prep.z[:, :k].contiguous(), rest, ls.sum(1).float(), prep.dim - k, prep.dim)


def cond_loglik(
    z_top: torch.Tensor,
    rest_quad: torch.Tensor,
    rest_logdet: torch.Tensor,
    d_rest: torch.Tensor,
    dim: torch.Tensor,
    logit: torch.Tensor,
    mean: torch.Tensor,
    log_scale: torch.Tensor,
    rest_shift: torch.Tensor,
    shift: torch.Tensor,
    scale_shift: torch.Tensor,
    mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """Log density (nats, whole target) of the conditional mixtures of P pairs at B rows each.

    Args:
        z_top: float32 (P, B, K) the rows' top principal coordinates of each pair's target (zero-padded
            to K when ``mask`` is given).
        rest_quad: float32 (P, B, C) the target's per-component quadratic form over its other coordinates.
        rest_logdet: float32 (P, 1, C) sum of the marginal's log-scales over the other coordinates.
        d_rest, dim: float32 (P, 1, 1) number of other coordinates / of all kept coordinates.
        logit: (P, B or 1, C) unnormalised component log weights.
        mean, log_scale: (P, C, K) base components on the top coordinates.
        rest_shift: (P, B or 1, 1) log-scale shift of the other coordinates.
        shift, scale_shift: (P, B, K) per-row mean and log-scale shifts of the top coordinates.
        mask: optional float32 (P, 1, K), 1 on a pair's real top coordinates and 0 on padding; padded
            coordinates then contribute exactly nothing (value and gradient).
    Base log-scales and all scale shifts are clamped to [LOG_SCALE_MIN, LOG_SCALE_MAX].

    Returns:
        float32 (P, B) log p(z | u).
    """
    # Expanded quadratic form: three (P, B, K) @ (P, K, C) products instead of a (P, B, C, K) tensor;
    # means are centred per pair first to limit float32 cancellation.
    ls = torch.clamp(log_scale, LOG_SCALE_MIN, LOG_SCALE_MAX)  # (P, C, K)
    b = torch.clamp(scale_shift, LOG_SCALE_MIN, LOG_SCALE_MAX)  # (P, B, K)
    q = torch.exp(-2.0 * ls)
    if mask is not None:
        q = q * mask
        ls = ls * mask
        b = b * mask
    center = mean.mean(1, keepdim=True)  # (P, 1, K)
    mc = mean - center
    y = z_top - center - shift  # (P, B, K)
    rr = torch.exp(-2.0 * b)
    yr = y * rr
    qt = q.transpose(1, 2)
    quad = (
        torch.bmm(y * yr, qt)
        - 2.0 * torch.bmm(yr, (mc * q).transpose(1, 2))
        + torch.bmm(rr, (mc * mc * q).transpose(1, 2))
    )
    logdet = ls.sum(-1)[:, None, :] + b.sum(-1, keepdim=True)  # (P, B, C)
    g = torch.clamp(rest_shift, LOG_SCALE_MIN, LOG_SCALE_MAX)  # (P, B or 1, 1)
    comp = (
        -0.5 * torch.clamp(quad, min=0.0) - logdet
        - 0.5 * rest_quad * torch.exp(-2.0 * g) - rest_logdet - d_rest * g
        - 0.5 * LOG_2PI * dim
    )
    return torch.logsumexp(torch.log_softmax(logit, -1) + comp, -1)


def fit_marginal(
    z: torch.Tensor, n_components: int, *, seed: int, max_iter: int = 200, tol: float = 1e-5
) -> Marginal:
    """Fit a diagonal GMM to standardised rows ``z`` (float tensor (n, d)) by EM in float64.

    Initial means are ``n_components`` distinct rows drawn with ``seed``; variances start at 1.
    Stops when the mean train log-likelihood per item and dimension improves by less than ``tol`` nats
    (1e-5 moves the held-out entropy by ~1e-4 nats/dim vs 1e-7, at about a fifth of the iterations).
    """
    z = z.double()
    n, d = z.shape
    c = min(n_components, n)
    g = torch.Generator().manual_seed(int(seed))
    pick = torch.randperm(n, generator=g)[:c].to(z.device)
    mean = z[pick].clone()
    var = torch.ones(c, d, dtype=torch.float64, device=z.device)
    log_w = torch.full((c,), -math.log(c), dtype=torch.float64, device=z.device)
    z2 = z * z
    prev = -math.inf
    for _ in range(max_iter):
        inv = 1.0 / var
        # log N(z; m, v) summed over dims, via matmuls: (n, C)
        lp = (
            -0.5 * (z2 @ inv.T - 2.0 * z @ (mean * inv).T + (mean * mean * inv).sum(1))
            - 0.5 * torch.log(var).sum(1)
            - 0.5 * d * LOG_2PI
            + log_w
        )
        ll = torch.logsumexp(lp, 1)
        cur = float(ll.mean()) / d
        resp = torch.exp(lp - ll[:, None])
        nk = resp.sum(0) + 1e-12
        mean = (resp.T @ z) / nk[:, None]
        var = torch.clamp((resp.T @ z2) / nk[:, None] - mean * mean, min=VAR_FLOOR)
        log_w = torch.log(nk / n)
        if cur - prev < tol:
            break
        prev = cur
    return Marginal(log_w, mean, 0.5 * torch.log(var))


@torch.no_grad()
def marginal_nll(tab: TargetTables, m: Marginal, idx: np.ndarray, device, chunk: int = 4096) -> float:
    """Mean NLL (nats per item, whole target) of the marginal on rows ``idx``: the conditional's code
    path with zero shifts (so a conditional still at its initial state scores IS = 0 exactly)."""
    it = torch.from_numpy(idx).to(device)
    k = tab.z_top.shape[1]
    f32 = dict(dtype=torch.float32, device=device)
    tot = 0.0
    for a in range(0, it.numel(), chunk):
        rows = it[a : a + chunk]
        zero = torch.zeros(1, rows.numel(), k, **f32)
        ll = cond_loglik(
            tab.z_top[rows][None], tab.rest_quad[rows][None], tab.rest_logdet[None, None],
            torch.tensor(float(tab.d_rest), **f32).view(1, 1, 1), torch.tensor(float(tab.dim), **f32).view(1, 1, 1),
            m.log_w.float()[None, None], m.mean[:, :k].float()[None], m.log_scale[:, :k].float()[None],
            torch.zeros(1, 1, 1, **f32), zero, zero,
        )
        tot -= float(ll.double().sum())
    return tot / it.numel()

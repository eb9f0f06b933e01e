"""KNIFE-style mixture estimators of H(Z) and H(Z|U), trained for many (source, target) pairs at once.

Pure torch; no store, no backends. Used by :mod:`embedselect.metrics.sufficiency`.

Coordinates. Each embedding is standardised per dimension (train-split statistics) and rotated into
its principal axes (train-split PCA). The rotation is orthogonal, so entropies and IS are unchanged,
while a *diagonal* mixture fits much better in that basis. Constant and numerically null directions
(eigenvalue <= 1e-6 x the largest) are dropped; dim(Z) counts the kept ones.

Model (per pair U -> Z, C components, hidden width H):

* marginal p(z) = sum_c w_c N(z; m_c, diag(s_c^2)), fitted once per target by EM (float64);
* conditional p(z|u): the source enters through its top ``source_pcs`` whitened principal
  components, ``h = tanh(W1 u + b1)``, and ``h @ Wout`` gives a shift of the component logits (C),
  a mean shift a(u) and a log-scale shift b(u) for the target's top ``target_pcs`` principal
  coordinates (k each), and one log-scale shift g(u) for the remaining coordinates. Base
  parameters (log w_c, and m_c, log s_c on the top k coordinates, and a scalar scale offset on the
  rest) are trainable per pair and start at the marginal; the rest coordinates keep the marginal's
  component means and scales, so their per-component quadratic forms are computed once per target.
  ``Wout`` starts at zero: at step 0 the conditional *is* the marginal (IS = 0 exactly) and training
  moves away from it only while the held-out loss improves.

Batching: pairs are grouped by source (one GEMM computes the first layer of every pair that reads the
same source) and by target (one ``bmm`` computes every head that predicts the same target), so nothing
is padded. All pairs see the same minibatch rows at a given step (drawn from the root seed, never from
the batching), each pair's initial weights come from its own seed, the loss is a sum of per-pair
losses and Adam is elementwise: a pair trained alone or inside a batch gives the same numbers up to
float summation order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

LOG_2PI = math.log(2.0 * math.pi)

#: Documented bounds on log component scales (standardised units): sigma in [9.1e-4, 1.1e3].
#: KNIFE's published code squashes log-variances with tanh (sigma in [0.61, 1.65]); these bounds
#: only guard against numerical collapse onto single training points.
LOG_SCALE_MIN = -7.0
LOG_SCALE_MAX = 7.0
#: EM variance floor (standardised units), the same order as exp(2 * LOG_SCALE_MIN).
VAR_FLOOR = 1e-6
#: Principal directions with eigenvalue <= NULL_EIG x the largest are dropped (numerically null).
NULL_EIG = 1e-6


@dataclass
class Prepared:
    """One candidate in standardised principal coordinates.

    Attributes:
        z: float32 (n, dim) rotated standardised rows, columns by decreasing train variance.
        u: float32 (n, r) whitened top-r principal scores (unit train variance), the source input.
    """

    z: torch.Tensor
    u: torch.Tensor

    @property
    def dim(self) -> int:
        """Number of kept dimensions (the ``dim(Z)`` of the per-dimension normalisation)."""
        return int(self.z.shape[1])

    @classmethod
    def fit(cls, x: np.ndarray, train_idx: np.ndarray, source_pcs: int, device: torch.device) -> "Prepared":
        """Standardise ``x`` (n, d) per dimension and rotate it to its principal axes, both from the
        rows ``train_idx`` (statistics in float64)."""
        xt = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)).to(device)
        tr = xt[torch.from_numpy(train_idx).to(device)].double()
        mean = tr.mean(0)
        sd = tr.std(0, unbiased=False)
        keep = sd > 1e-7 * torch.clamp(tr.abs().max(0).values, min=1e-30)
        tr = (tr[:, keep] - mean[keep]) / sd[keep]
        evals, evecs = torch.linalg.eigh(tr.T @ tr / tr.shape[0])
        evals, evecs = evals.flip(0), evecs.flip(1)
        ok = evals > NULL_EIG * evals[0]
        evals, evecs = evals[ok], evecs[:, ok]
        # deterministic signs: largest-magnitude entry of each axis positive
        sign = torch.sign(evecs.gather(0, evecs.abs().argmax(0, keepdim=True)))
        evecs = evecs * sign
        z = ((xt[:, keep] - mean[keep].float()) / sd[keep].float()) @ evecs.float()
        r = min(source_pcs, z.shape[1])
        u = z[:, :r] / torch.sqrt(evals[:r]).float()
        return cls(z.contiguous(), u.contiguous())


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
    tab: TargetTables,
    idx: torch.Tensor,
    logit: torch.Tensor,
    mean: torch.Tensor,
    log_scale: torch.Tensor,
    rest_shift: torch.Tensor,
    shift: torch.Tensor | None = None,
    scale_shift: torch.Tensor | None = None,
) -> torch.Tensor:
    """Log density (nats, whole target) of the conditional mixtures of P pairs at rows ``idx``.

    Args:
        tab: the target's shared tables.
        idx: int64 (B,) rows.
        logit: (P, B or 1, C) unnormalised component log weights.
        mean, log_scale: (P, C, k) base components on the top-k coordinates.
        rest_shift: (P, B or 1, 1) log-scale shift of the other coordinates.
        shift, scale_shift: optional (P, B, k) per-row mean and log-scale shifts (top-k coordinates);
            base log-scales and scale shifts are each clamped to the documented bounds.
    Returns:
        float32 (P, B) log p(z | u).
    """
    # Expanded quadratic form: three (P, B, k) @ (P, k, C) products instead of a (P, B, C, k) tensor;
    # means are centred per pair first to limit float32 cancellation.
    p_, c_ = mean.shape[0], mean.shape[1]
    ls = torch.clamp(log_scale, LOG_SCALE_MIN, LOG_SCALE_MAX)  # (P, C, k)
    q = torch.exp(-2.0 * ls)
    center = mean.mean(1, keepdim=True)  # (P, 1, k)
    mc = mean - center
    y = tab.z_top[idx][None] - center  # (P, B, k)
    if shift is not None:
        y = y - shift
    if scale_shift is not None:
        b = torch.clamp(scale_shift, LOG_SCALE_MIN, LOG_SCALE_MAX)  # (P, B, k)
        rr = torch.exp(-2.0 * b)
        yr = y * rr
        const = torch.bmm(rr, (mc * mc * q).transpose(1, 2))
        logdet = ls.sum(-1)[:, None, :] + b.sum(-1, keepdim=True)
    else:
        yr = y
        const = (mc * mc * q).sum(-1)[:, None, :]
        logdet = ls.sum(-1)[:, None, :]
    quad = torch.bmm(y * yr, q.transpose(1, 2)) - 2.0 * torch.bmm(yr, (mc * q).transpose(1, 2)) + const
    comp = -0.5 * torch.clamp(quad, min=0.0) - logdet  # (P, B, C)
    if tab.d_rest:
        g = torch.clamp(rest_shift, LOG_SCALE_MIN, LOG_SCALE_MAX)  # (P, B or 1, 1)
        comp = comp - 0.5 * tab.rest_quad[idx][None] * torch.exp(-2.0 * g) - tab.rest_logdet - tab.d_rest * g
    comp = comp - 0.5 * tab.dim * LOG_2PI
    return torch.logsumexp(torch.log_softmax(logit, -1) + comp, -1)


def fit_marginal(
    z: torch.Tensor, n_components: int, *, seed: int, max_iter: int = 200, tol: float = 1e-7
) -> Marginal:
    """Fit a diagonal GMM to standardised rows ``z`` (float tensor (n, d)) by EM in float64.

    Initial means are ``n_components`` distinct rows drawn with ``seed``; variances start at 1.
    Stops when the mean log-likelihood per dimension improves by less than ``tol`` nats.
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


@dataclass
class PairSpec:
    """One (source, target) pair to train: names index the prepared candidates; ``seed`` sets its init."""

    source: str
    target: str
    seed: int


@dataclass
class PairFit:
    """Training outcome of one pair. NLLs are mean nats per item over the whole target (not per dim)."""

    val_nll: float
    test_nll: float
    best_step: int
    steps: int
    history: list[float] = field(default_factory=list)


class _Engine:
    """Stacked parameters and Adam state for a list of pairs (see module docstring)."""

    def __init__(self, pairs, prep, tables, marginals, hidden, device):
        self.pairs = pairs
        self.h = hidden
        self.tables = tables
        self.src_members: dict[str, list[int]] = {}
        self.tgt_members: dict[str, list[int]] = {}
        for i, p in enumerate(pairs):
            self.src_members.setdefault(p.source, []).append(i)
            self.tgt_members.setdefault(p.target, []).append(i)
        self.params: dict[str, torch.Tensor] = {}
        for s, mem in self.src_members.items():
            r = prep[s].u.shape[1]
            w = []
            for i in mem:
                g = torch.Generator().manual_seed(pairs[i].seed)
                w.append(torch.randn(r, hidden, generator=g, dtype=torch.float64) / math.sqrt(r))
            self.params[f"W1:{s}"] = torch.cat(w, 1).float().to(device)
            self.params[f"b1:{s}"] = torch.zeros(len(mem) * hidden, device=device)
        for t, mem in self.tgt_members.items():
            m, k = marginals[t], tables[t].z_top.shape[1]
            c = m.log_w.shape[0]
            p = len(mem)
            self.params[f"Wo:{t}"] = torch.zeros(p, hidden, c + 2 * k + 1, device=device)
            self.params[f"lw:{t}"] = m.log_w.float().expand(p, c).clone()
            self.params[f"mu:{t}"] = m.mean[:, :k].float().expand(p, c, k).clone()
            self.params[f"ls:{t}"] = m.log_scale[:, :k].float().expand(p, c, k).clone()
            self.params[f"rs:{t}"] = torch.zeros(p, 1, 1, device=device)
        for v in self.params.values():
            v.requires_grad_(True)
        self.m1 = {k: torch.zeros_like(v) for k, v in self.params.items()}
        self.m2 = {k: torch.zeros_like(v) for k, v in self.params.items()}
        self.t = 0
        self.best = {k: v.detach().clone() for k, v in self.params.items()}

    def loglik(self, idx, prep, params=None) -> torch.Tensor:
        """Conditional log-likelihood of rows ``idx`` for every pair: float32 (P, len(idx))."""
        prm = self.params if params is None else params
        hid: dict[int, torch.Tensor] = {}
        for s, mem in self.src_members.items():
            hs = torch.tanh(prep[s].u[idx] @ prm[f"W1:{s}"] + prm[f"b1:{s}"])
            for j, i in enumerate(mem):
                hid[i] = hs[:, j * self.h : (j + 1) * self.h]
        order, outs = [], []
        for t, mem in self.tgt_members.items():
            tab = self.tables[t]
            c, k = prm[f"lw:{t}"].shape[1], tab.z_top.shape[1]
            o = torch.bmm(torch.stack([hid[i] for i in mem]), prm[f"Wo:{t}"])  # (P, B, C + 2k + 1)
            outs.append(cond_loglik(
                tab, idx, prm[f"lw:{t}"][:, None, :] + o[..., :c], prm[f"mu:{t}"], prm[f"ls:{t}"],
                prm[f"rs:{t}"] + o[..., -1:], shift=o[..., c : c + k], scale_shift=o[..., c + k : c + 2 * k],
            ))
            order.extend(mem)
        stacked = torch.cat(outs, 0)
        inv = torch.empty(len(order), dtype=torch.long)
        inv[torch.tensor(order)] = torch.arange(len(order))
        return stacked[inv.to(stacked.device)]

    def step(self, idx, prep, lr, betas=(0.9, 0.999), eps=1e-8) -> None:
        loss = -self.loglik(idx, prep).mean(1).sum()  # sum of per-pair means: per-pair gradients
        grads = torch.autograd.grad(loss, list(self.params.values()), allow_unused=True)
        self.t += 1
        b1, b2 = betas
        c1 = 1 - b1**self.t
        c2 = 1 - b2**self.t
        with torch.no_grad():
            for (k, p), g in zip(self.params.items(), grads):
                if g is None:  # e.g. the rest-scale offset of a target with no rest coordinates
                    continue
                m1, m2 = self.m1[k], self.m2[k]
                m1.mul_(b1).add_(g, alpha=1 - b1)
                m2.mul_(b2).addcmul_(g, g, value=1 - b2)
                p.sub_(lr / c1 * m1 / (torch.sqrt(m2 / c2) + eps))

    @torch.no_grad()
    def mean_nll(self, idx, prep, chunk, params=None) -> np.ndarray:
        """Mean NLL (nats per item, float64 accumulation) of rows ``idx`` for every pair: (P,)."""
        tot = torch.zeros(len(self.pairs), dtype=torch.float64, device=idx.device)
        for a in range(0, idx.numel(), chunk):
            tot -= self.loglik(idx[a : a + chunk], prep, params).double().sum(1)
        return (tot / idx.numel()).cpu().numpy()

    @torch.no_grad()
    def keep_best(self, improved: np.ndarray) -> None:
        """Copy current parameters into the best snapshot for pairs where ``improved`` (bool (P,))."""
        dev = next(iter(self.params.values())).device
        for s, mem in self.src_members.items():
            cols = torch.from_numpy(improved[mem]).to(dev).repeat_interleave(self.h)
            for k in (f"W1:{s}", f"b1:{s}"):
                self.best[k] = torch.where(cols, self.params[k], self.best[k])
        for t, mem in self.tgt_members.items():
            mask = torch.from_numpy(improved[mem]).to(dev)
            for k in (f"Wo:{t}", f"lw:{t}", f"mu:{t}", f"ls:{t}", f"rs:{t}"):
                shape = (-1,) + (1,) * (self.params[k].dim() - 1)
                self.best[k] = torch.where(mask.view(shape), self.params[k], self.best[k])


def batch_schedule(train_idx: np.ndarray, batch_size: int, steps: int, seed: int) -> np.ndarray:
    """Minibatch rows for ``steps`` optimiser steps: int64 (steps, min(batch_size, n_train)).

    Consecutive seeded permutations of the training rows (epochs), so every row is used equally often;
    depends only on the training rows, ``batch_size``, ``steps`` and ``seed`` (never on the pairs)."""
    b = min(batch_size, len(train_idx))
    rng = np.random.default_rng(seed)
    need = steps * b
    parts, have = [], 0
    while have < need:
        parts.append(rng.permutation(train_idx))
        have += len(train_idx)
    return np.concatenate(parts)[:need].reshape(steps, b)


def train_pairs(
    pairs: list[PairSpec],
    prep: dict[str, Prepared],
    tables: dict[str, TargetTables],
    marginals: dict[str, Marginal],
    schedule: np.ndarray,
    val_idx: np.ndarray,
    test_idx: np.ndarray,
    *,
    hidden: int,
    lr: float,
    eval_every: int,
    patience: int,
    device: torch.device,
    eval_chunk: int = 1024,
) -> list[PairFit]:
    """Train the conditional mixtures of ``pairs`` together, with early stopping per pair.

    Every ``eval_every`` steps (and at step 0) each pair's mean NLL on ``val_idx`` is computed; a pair
    keeps the parameters of its best evaluation and stops after ``patience`` evaluations without
    improvement (later updates are ignored, so the result equals training it alone). Training ends when
    every pair has stopped or the schedule (``schedule.shape[0]`` steps) is used up. ``test_nll`` is the
    best snapshot's mean NLL on ``test_idx`` (nats per item, whole target).
    """
    eng = _Engine(pairs, prep, tables, marginals, hidden, device)
    p = len(pairs)
    val_t = torch.from_numpy(val_idx).to(device)
    test_t = torch.from_numpy(test_idx).to(device)
    sched = torch.from_numpy(schedule).to(device)
    best = eng.mean_nll(val_t, prep, eval_chunk)
    history = [[float(v)] for v in best]
    best_step = np.zeros(p, dtype=int)
    stopped_at = np.full(p, -1)
    bad = np.zeros(p, dtype=int)
    steps = schedule.shape[0]
    s = 0
    for s in range(steps):
        eng.step(sched[s], prep, lr)
        if (s + 1) % eval_every == 0 or s + 1 == steps:
            v = eng.mean_nll(val_t, prep, eval_chunk)
            active = stopped_at < 0
            improved = active & (v < best)
            eng.keep_best(improved)
            best = np.where(improved, v, best)
            best_step = np.where(improved, s + 1, best_step)
            bad = np.where(improved, 0, bad + active)
            for i in np.nonzero(active)[0]:
                history[i].append(float(v[i]))
            stopped_at = np.where(active & (bad >= patience), s + 1, stopped_at)
            if (stopped_at >= 0).all():
                break
    stopped_at = np.where(stopped_at < 0, s + 1, stopped_at)
    test = eng.mean_nll(test_t, prep, eval_chunk, params=eng.best)
    return [
        PairFit(float(best[i]), float(test[i]), int(best_step[i]), int(stopped_at[i]), history[i])
        for i in range(p)
    ]


@torch.no_grad()
def marginal_nll(tab: TargetTables, m: Marginal, idx: np.ndarray, device, chunk: int = 4096) -> float:
    """Mean NLL (nats per item, whole target) of the marginal on rows ``idx``: the conditional's code
    path with zero shifts (so a conditional still at its initial state scores IS = 0 exactly)."""
    it = torch.from_numpy(idx).to(device)
    k = tab.z_top.shape[1]
    tot = 0.0
    for a in range(0, it.numel(), chunk):
        ll = cond_loglik(
            tab, it[a : a + chunk], m.log_w.float()[None, None], m.mean[:, :k].float()[None],
            m.log_scale[:, :k].float()[None], torch.zeros(1, 1, 1, device=device),
            shift=torch.zeros(1, min(chunk, it.numel() - a), k, device=device),
            scale_shift=torch.zeros(1, min(chunk, it.numel() - a), k, device=device),
        )
        tot -= float(ll.double().sum())
    return tot / it.numel()

"""The stacked batched model of many pairs (parameters, hand-written gradients, Adam) and its early-stopping training loop."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

import numpy as np
import torch

from embedselect.errors import MetricError
from embedselect.metrics.sufficiency.knife.mixture import LOG_SCALE_MAX, LOG_SCALE_MIN, Marginal, TargetTables, cond_loglik
from embedselect.metrics.sufficiency.knife.prepare import Prepared

log = logging.getLogger(__name__)


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


CUDA_GRAPHS = True
"""Whether training steps on a CUDA device run as a captured CUDA graph (:meth:`_Engine.step`); ``False`` runs
them eagerly, as on the CPU (what the graphs are checked against in ``tests/test_knife_gpu.py`` and timed against
in ``benchmarks/gpu.py``)."""


def _stack_padded(mats: list[torch.Tensor], width: int) -> torch.Tensor:
    """Stack (n, w_i) matrices into (len, n, width), zero-padding the columns."""
    out = mats[0].new_zeros(len(mats), mats[0].shape[0], width)
    for i, m in enumerate(mats):
        out[i, :, : m.shape[1]] = m
    return out


class _Engine:
    """All pairs as ONE batched model: stacked parameters and Adam state (see module docstring).

    Sources are zero-padded to the widest source input R and targets to the widest top block K (with a
    mask), so every step is a fixed handful of batched ops whatever the number of pairs. Pairs that
    stop early are dropped from the stacked tensors (their best snapshot is kept).
    """

    PARAMS = ("W1", "b1", "Wo", "lw", "mu", "ls", "rs")
    #: On CPU a training step handles the stacked pairs in chunks whose widest (pairs, batch, width)
    #: float32 activation is about this size, so a chunk's elementwise passes stay in cache (4 MiB: ~21
    #: pairs at batch 256 and the default widths; ~1.5x faster than one 90-pair chunk).
    #: Exact: pairs never interact.
    CHUNK_BYTES = 4 * 1024**2

    def __init__(self, pairs, prep, tables, marginals, hidden, device):
        self.pairs = pairs
        self.h = hidden
        srcs = list(dict.fromkeys(p.source for p in pairs))
        tgts = list(dict.fromkeys(p.target for p in pairs))
        r_of = {s: prep[s].u.shape[1] for s in srcs}
        k_of = {t: tables[t].z_top.shape[1] for t in tgts}
        self.R, self.K = max(r_of.values()), max(k_of.values())
        c_ = marginals[tgts[0]].log_w.shape[0]
        if any(marginals[t].log_w.shape[0] != c_ for t in tgts):
            raise MetricError("all target marginals in one batch must have the same number of components")
        self.C = c_
        # shared per-source / per-target data (never copied per pair)
        self.U = _stack_padded([prep[s].u for s in srcs], self.R)  # (S, n, R)
        self.Z = _stack_padded([tables[t].z_top for t in tgts], self.K)  # (T, n, K)
        self.RQ = torch.stack([tables[t].rest_quad for t in tgts])  # (T, n, C)
        f32 = dict(dtype=torch.float32, device=device)
        self.RL = torch.stack([tables[t].rest_logdet for t in tgts])[:, None, :]  # (T, 1, C)
        self.DR = torch.tensor([float(tables[t].d_rest) for t in tgts], **f32).view(-1, 1, 1)
        self.DIM = torch.tensor([float(tables[t].dim) for t in tgts], **f32).view(-1, 1, 1)
        self.MASK = torch.stack([(torch.arange(self.K, device=device) < k_of[t]).float() for t in tgts])[:, None, :]
        self.pad = any(k != self.K for k in k_of.values())
        # per-pair (active) index arrays
        self.si = torch.tensor([srcs.index(p.source) for p in pairs], dtype=torch.long, device=device)
        self.ti = torch.tensor([tgts.index(p.target) for p in pairs], dtype=torch.long, device=device)
        self.active = np.arange(len(pairs))
        w1 = torch.zeros(len(pairs), self.R, hidden, dtype=torch.float64)
        for i, p in enumerate(pairs):
            r = r_of[p.source]
            g = torch.Generator().manual_seed(p.seed)
            w1[i, :r] = torch.randn(r, hidden, generator=g, dtype=torch.float64) / math.sqrt(r)
        c, k = self.C, self.K
        lw = torch.stack([marginals[p.target].log_w for p in pairs]).float()
        mu = torch.zeros(len(pairs), c, k, dtype=torch.float64, device=device)
        ls = torch.zeros(len(pairs), c, k, dtype=torch.float64, device=device)
        for i, p in enumerate(pairs):
            kt = k_of[p.target]
            mu[i, :, :kt] = marginals[p.target].mean[:, :kt]
            ls[i, :, :kt] = marginals[p.target].log_scale[:, :kt]
        self.params: dict[str, torch.Tensor] = {
            "W1": w1.float().to(device),
            "b1": torch.zeros(len(pairs), 1, hidden, **f32),
            # output head h @ Wo = [logit shift (C) | mean shift (K) | log-scale shift (K) | rest
            # log-scale shift (1)]; split (not sliced) so the backward is one concatenation
            "Wo": torch.zeros(len(pairs), hidden, c + 2 * k + 1, **f32),
            "lw": lw.to(device),
            "mu": mu.float(),
            "ls": ls.float(),
            "rs": torch.zeros(len(pairs), 1, 1, **f32),
        }
        for v in self.params.values():
            v.requires_grad_(True)
        self.m1 = {n: torch.zeros_like(v) for n, v in self.params.items()}
        self.m2 = {n: torch.zeros_like(v) for n, v in self.params.items()}
        self.t = 0
        self.best = {n: v.detach().clone() for n, v in self.params.items()}
        self.graphs = CUDA_GRAPHS
        self._graph: torch.cuda.CUDAGraph | None = None  # the captured step for the current active pairs
        self._graph_warm = False  # an eager step ran since the active pairs last changed
        self._lr_t = torch.zeros((), dtype=torch.float32, device=device)  # Adam's step size, see _set_step_sizes
        self._corr_t = torch.ones((), dtype=torch.float32, device=device)

    def loglik(self, idx, params=None, si=None, ti=None) -> torch.Tensor:
        """Conditional log-likelihood of rows ``idx`` for the active pairs: float32 (P_active, len(idx))."""
        prm = self.params if params is None else params
        si = self.si if si is None else si
        ti = self.ti if ti is None else ti
        rows = idx[None, :]
        u = self.U[si[:, None], rows]  # (P, B, R)
        h = torch.tanh(torch.baddbmm(prm["b1"], u, prm["W1"]))  # (P, B, H)
        o_logit, o_shift, o_scale, o_rest = torch.bmm(h, prm["Wo"]).split([self.C, self.K, self.K, 1], -1)
        return cond_loglik(
            self.Z[ti[:, None], rows], self.RQ[ti[:, None], rows], self.RL[ti], self.DR[ti], self.DIM[ti],
            prm["lw"][:, None, :] + o_logit, prm["mu"], prm["ls"], prm["rs"] + o_rest, o_shift, o_scale,
            self.MASK[ti] if self.pad else None,
        )

    def step_rows(self, idx) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Rows ``idx`` of the per-source inputs and per-target tables in feature-major layout:
        (S, R, B), (T, K, B) and (T, C, B) (pairs gather from these, never from the full tables)."""
        u, z, rq = (
            a.index_select(1, idx).transpose(1, 2).contiguous() for a in (self.U, self.Z, self.RQ)
        )
        return u, z, rq

    @torch.no_grad()
    def loss_grads(self, rows, n_b: int, lo_p: int = 0, hi_p: int | None = None) -> dict[str, torch.Tensor]:
        """Gradients of the training loss (sum over pairs of the mean NLL of the step's rows) for every
        stacked parameter of the active pairs ``lo_p:hi_p``, derived by hand (no autograd graph).

        ``rows`` is :meth:`step_rows` of the step's ``n_b`` rows. The model is exactly :meth:`loglik` /
        :func:`cond_loglik`; the step works feature-major ((P, features, B) tensors) so the mixture's
        softmaxes reduce over a non-innermost axis of C and every small-C product is a well-shaped
        ``bmm``: the three quadratic-form products are one ``bmm`` on ``[v^2 r, v r, r]`` (P, 3K, B)
        with v = shift + centre - z and r = exp(-2 b). Checked against autograd in the tests.
        """
        prm = self.params
        C, K = self.C, self.K
        lo, hi = LOG_SCALE_MIN, LOG_SCALE_MAX
        si, ti = self.si[lo_p:hi_p], self.ti[lo_p:hi_p]
        inv_b = 1.0 / n_b
        W1, b1, Wo, lw, mu, ls, rs = (prm[n].detach()[lo_p:hi_p] for n in self.PARAMS)
        mask = self.MASK[ti].transpose(1, 2) if self.pad else None  # (P, K, 1)
        u_rows, z_rows, rq_rows = rows
        u = u_rows.index_select(0, si)  # (P, R, B)
        rq = rq_rows.index_select(0, ti)  # (P, C, B)
        h = torch.baddbmm(b1.transpose(1, 2), W1.transpose(1, 2), u).tanh_()  # (P, H, B)
        o = torch.bmm(Wo.transpose(1, 2), h)  # (P, C + 2K + 1, B)
        o_logit, o_shift, o_scale, o_rest = o.split([C, K, K, 1], 1)
        # base components (P, C, K): quadratic-form weights of x = [v^2 r, v r, r]
        lsc = ls.clamp(lo, hi)
        q = torch.exp(-2.0 * lsc)
        if mask is not None:
            q = q * mask.transpose(1, 2)
            lsc = lsc * mask.transpose(1, 2)
        center = mu.mean(1, keepdim=True)  # (P, 1, K)
        mc = mu - center
        qm = mc * q
        wq = torch.cat([q, 2.0 * qm, mc * qm], 2)  # (P, C, 3K)
        # per-row part (P, *, B)
        bsc = o_scale.clamp(lo, hi)
        if mask is not None:
            bsc.mul_(mask)
        x = torch.empty(o.shape[0], 3 * K, n_b, dtype=o.dtype, device=o.device)
        xa, xv, xr = x.split(K, 1)
        torch.mul(bsc, -2.0, out=xr)
        xr.exp_()  # r = exp(-2 b)
        v = torch.sub(o_shift, z_rows.index_select(0, ti))  # v = shift + centre - z
        v.add_(center.transpose(1, 2))
        torch.mul(v, xr, out=xv)
        torch.mul(v, xv, out=xa)
        quad = torch.bmm(wq, x)  # (P, C, B)
        g_raw = rs + o_rest  # (P, 1, B)
        g = g_raw.clamp(lo, hi)
        eg = torch.exp(-2.0 * g)
        comp = (
            -0.5 * quad.clamp(min=0.0) - lsc.sum(-1)[:, :, None] - bsc.sum(1, keepdim=True)
            - 0.5 * rq * eg - self.RL[ti].transpose(1, 2) - self.DR[ti] * g
        )
        logit = lw[:, :, None] + o_logit  # (P, C, B)
        pi = torch.softmax(logit, 1)
        resp = torch.softmax(comp.add_(logit), 1)  # d log p(z|u) / d comp
        # ---- backward; the upstream gradient of each row's log-likelihood is -1/B
        d_o = torch.empty_like(o)
        d_logit, d_shift, d_scale, d_rest = d_o.split([C, K, K, 1], 1)
        torch.sub(pi, resp, out=d_logit).mul_(inv_b)
        d_quad = resp * (quad >= 0.0)
        d_quad.mul_(0.5 * inv_b)
        d_x = torch.bmm(wq.transpose(1, 2).contiguous(), d_quad)  # (P, 3K, B)
        d_wq = torch.bmm(d_quad, x.transpose(1, 2))  # (P, C, 3K)
        d_a, d_v, d_r = d_x.split(K, 1)
        t = v * d_a
        torch.add(d_v, t, alpha=2.0, out=d_shift).mul_(xr)  # d loss / d v = d loss / d shift
        t.add_(d_v).mul_(v).add_(d_r)  # d loss / d r
        torch.addcmul(t.new_full((), inv_b), t, xr, value=-2.0, out=d_scale)  # no host copy: CUDA-graph safe
        if mask is not None:
            d_scale.mul_(mask)
        d_scale.masked_fill_(bsc != o_scale if mask is None else (o_scale < lo) | (o_scale > hi), 0.0)
        dg = (resp * rq).sum(1, keepdim=True).mul_(-eg).add_(self.DR[ti]).mul_(inv_b)
        dg.masked_fill_(g != g_raw, 0.0)
        d_rest.copy_(dg)
        # base components
        dwa, dwv, dwr = d_wq.split(K, -1)
        dq = dwa + 2.0 * mc * dwv + mc * mc * dwr
        dmc = 2.0 * q * (mc * dwr + dwv)
        dls = -2.0 * q * dq + (resp.sum(2) * inv_b)[:, :, None]
        if mask is not None:
            dls = dls * mask.transpose(1, 2)
        dls.masked_fill_((ls < lo) | (ls > hi), 0.0)
        d_center = d_shift.sum(2)[:, None, :] - dmc.sum(1, keepdim=True)
        dmu = dmc.add_(d_center, alpha=1.0 / C)
        # output head and hidden layer
        d_wo = torch.bmm(h, d_o.transpose(1, 2))  # (P, H, C + 2K + 1)
        da = torch.bmm(Wo, d_o)  # d loss / d h: (P, H, B)
        torch.addcmul(da, h.mul_(h), da, value=-1.0, out=da)  # tanh' = 1 - h^2
        d_w1 = torch.bmm(u, da.transpose(1, 2))  # (P, R, H)
        return {
            "W1": d_w1, "b1": da.sum(2)[:, None, :], "Wo": d_wo, "lw": d_logit.sum(2),
            "mu": dmu, "ls": dls, "rs": dg.sum(2, keepdim=True),
        }

    def step(self, idx, lr, betas=(0.9, 0.999), eps=1e-8) -> None:
        """One Adam step of every active pair on rows ``idx`` (int64 (B,) on the engine's device): on a CUDA device
        the replay of a captured CUDA graph (:meth:`_graph_step`), elsewhere :meth:`_eager_step`."""
        if self.graphs and idx.device.type == "cuda":
            with torch.cuda.device(idx.device):  # a graph is captured and replayed on the current device's streams
                self._graph_step(idx, lr, betas, eps)
        else:
            self._eager_step(idx, lr, betas, eps)

    def _graph_step(self, idx, lr, betas, eps) -> None:
        """:meth:`_eager_step` as one CUDA graph: a step is about a hundred small kernels, launch-bound from Python
        (docs/benchmarks.md, "GPU paths"). The graph is captured on the first step after the active pairs change (that step
        runs eagerly first, on a side stream, so lazy CUDA and cuBLAS set-up happens outside the capture) and
        replayed with the step's rows and Adam's step sizes written into its static inputs. The kernels are the
        eager step's, so the results are too."""
        if self._graph is None and not self._graph_warm:
            side = torch.cuda.Stream(device=idx.device)
            side.wait_stream(torch.cuda.current_stream(idx.device))
            with torch.cuda.stream(side):
                self._eager_step(idx, lr, betas, eps)
            torch.cuda.current_stream(idx.device).wait_stream(side)
            self._graph_warm = True
            return
        if self._graph is None:
            self._g_idx = idx.clone()
            graph = torch.cuda.CUDAGraph()
            try:
                with torch.no_grad(), torch.cuda.graph(graph):
                    self._update(self.loss_grads(self.step_rows(self._g_idx), self._g_idx.numel()), betas, eps)
            except RuntimeError as exc:  # a driver or build that cannot capture: train eagerly, as on the CPU
                log.warning("KNIFE: capturing the training step as a CUDA graph failed (%s); stepping eagerly", exc)
                self.graphs = False
                self._eager_step(idx, lr, betas, eps)
                return
            self._graph = graph
        self._g_idx.copy_(idx)
        self._set_step_sizes(lr, betas)
        self._graph.replay()

    def _eager_step(self, idx, lr, betas, eps) -> None:
        n_p = len(self.active)
        rows = self.step_rows(idx)
        width = max(self.R, self.h, self.C + 2 * self.K + 1, 3 * self.K)
        # CPU: cache-sized chunks of pairs; accelerators: one chunk (fewest kernel launches)
        per_chunk = n_p if idx.device.type != "cpu" else max(1, self.CHUNK_BYTES // (4 * idx.numel() * width))
        if n_p <= per_chunk:
            grads = self.loss_grads(rows, idx.numel())
        else:
            grads = {n: torch.empty_like(v) for n, v in self.params.items()}
            for a in range(0, n_p, per_chunk):
                for n, v in self.loss_grads(rows, idx.numel(), a, a + per_chunk).items():
                    grads[n][a : a + per_chunk] = v
        self._set_step_sizes(lr, betas)
        self._update(grads, betas, eps)

    def _set_step_sizes(self, lr: float, betas: tuple[float, float]) -> None:
        """Count the step (``t``) and write Adam's bias-corrected step sizes into the 0-d float32 tensors the
        update reads: ``-lr / (1 - b1^t)`` and ``1 / sqrt(1 - b2^t)`` (device-side, so a captured graph reads them)."""
        self.t += 1
        b1, b2 = betas
        self._lr_t.fill_(-lr / (1 - b1**self.t))
        self._corr_t.fill_(1.0 / math.sqrt(1 - b2**self.t))

    @torch.no_grad()
    def _update(self, grads: dict[str, torch.Tensor], betas: tuple[float, float], eps: float) -> None:
        """Adam on every stacked parameter: ``p += lr_t * m1 / (sqrt(m2) * corr_t + eps)``, the moments updated
        first (= ``-lr / c1 * m1_hat / (sqrt(m2 / c2) + eps)``, Adam's update; no host values, so it can be captured)."""
        b1, b2 = betas
        names = list(self.params)
        ps = [self.params[n] for n in names]
        gs = [grads[n] for n in names]
        m1 = [self.m1[n] for n in names]
        m2 = [self.m2[n] for n in names]
        torch._foreach_lerp_(m1, gs, 1 - b1)
        torch._foreach_mul_(m2, b2)
        torch._foreach_addcmul_(m2, gs, gs, value=1 - b2)
        den = torch._foreach_sqrt(m2)
        torch._foreach_mul_(den, self._corr_t)
        torch._foreach_add_(den, eps)
        upd = torch._foreach_div(m1, den)
        torch._foreach_mul_(upd, self._lr_t)
        torch._foreach_add_(ps, upd)

    @torch.no_grad()
    def mean_nll(self, idx, chunk, best=False) -> np.ndarray:
        """Mean NLL (nats per item, float64 accumulation) of rows ``idx``: (P_active,) for the current
        parameters, or (P,) for every pair's best snapshot when ``best``."""
        if best:
            n_all = len(self.pairs)
            params, si, ti = self.best, self.si_all, self.ti_all
        else:
            n_all = len(self.active)
            params, si, ti = self.params, self.si, self.ti
        tot = torch.zeros(n_all, dtype=torch.float64, device=idx.device)
        for a in range(0, idx.numel(), chunk):
            tot -= self.loglik(idx[a : a + chunk], params, si, ti).double().sum(1)
        return (tot / idx.numel()).cpu().numpy()

    @torch.no_grad()
    def keep_best(self, improved: np.ndarray) -> None:
        """Copy the active pairs' parameters into their best snapshot where ``improved`` (bool (P_active,))."""
        if not improved.any():
            return
        dev = self.si.device
        loc = torch.from_numpy(np.nonzero(improved)[0]).to(dev)
        glob = torch.from_numpy(self.active[improved]).to(dev)
        for n, v in self.params.items():
            self.best[n][glob] = v.detach()[loc]

    @torch.no_grad()
    def drop(self, keep: np.ndarray) -> None:
        """Remove stopped pairs (``keep`` bool (P_active,) False) from the stacked model and its Adam state.

        Exact: the loss is a sum of per-pair terms and Adam is elementwise."""
        if keep.all():
            return
        sel = torch.from_numpy(np.nonzero(keep)[0]).to(self.si.device)
        for n in self.PARAMS:
            self.params[n] = self.params[n].detach()[sel].clone().requires_grad_(True)
            self.m1[n] = self.m1[n][sel].clone()
            self.m2[n] = self.m2[n][sel].clone()
        self.si, self.ti = self.si[sel], self.ti[sel]
        self.active = self.active[keep]
        self._graph, self._graph_warm = None, False  # new shapes and tensors: capture again

    def freeze_index(self) -> None:
        self.si_all, self.ti_all = self.si.clone(), self.ti.clone()


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


def pair_bytes(batch_rows: int, r: int, k: int, c: int, hidden: int) -> int:
    """Rough activation memory (bytes) of one pair in one training step or evaluation chunk of
    ``batch_rows`` rows (float32, including what autograd keeps)."""
    return 4 * batch_rows * (2 * r + 4 * hidden + 3 * (c + 2 * k + 1) + 12 * k + 12 * c)


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
    min_steps: int = 0,
    eval_bytes: int = 64 * 1024**2,
) -> list[PairFit]:
    """Train the conditional mixtures of ``pairs`` together, with early stopping per pair.

    Every ``eval_every`` steps (and at step 0) each active pair's mean NLL on ``val_idx`` is computed; a
    pair keeps the parameters of its best evaluation and stops after ``patience`` evaluations without
    improvement, counted only once ``min_steps`` steps are done. A stopped pair leaves the stacked model
    (so the result equals training it alone). Training ends when every pair has stopped or the schedule
    (``schedule.shape[0]`` steps) is used up. ``test_nll`` is the best snapshot's mean NLL on
    ``test_idx`` (nats per item, whole target). Evaluation runs in row chunks of about ``eval_bytes``.
    """
    eng = _Engine(pairs, prep, tables, marginals, hidden, device)
    eng.freeze_index()
    p = len(pairs)
    per_row = pair_bytes(1, eng.R, eng.K, eng.C, hidden)
    chunk = int(max(32, min(4096, eval_bytes // max(per_row * p, 1))))
    val_t = torch.from_numpy(val_idx).to(device)
    test_t = torch.from_numpy(test_idx).to(device)
    sched = torch.from_numpy(schedule).to(device)
    best = eng.mean_nll(val_t, chunk)
    history = [[float(v)] for v in best]
    best_step = np.zeros(p, dtype=int)
    stopped_at = np.full(p, -1)
    bad = np.zeros(p, dtype=int)
    steps = schedule.shape[0]
    s = 0
    for s in range(steps):
        eng.step(sched[s], lr)
        if (s + 1) % eval_every == 0 or s + 1 == steps:
            act = eng.active
            v = eng.mean_nll(val_t, chunk)
            improved = v < best[act]
            eng.keep_best(improved)
            best[act[improved]] = v[improved]
            best_step[act[improved]] = s + 1
            bad[act] = np.where(improved, 0, bad[act] + (s + 1 >= min_steps))
            for j, i in enumerate(act):
                history[i].append(float(v[j]))
            stop = bad[act] >= patience
            stopped_at[act[stop]] = s + 1
            if stop.all():
                break
            eng.drop(~stop)
    stopped_at = np.where(stopped_at < 0, s + 1, stopped_at)
    test = eng.mean_nll(test_t, chunk, best=True)
    return [
        PairFit(float(best[i]), float(test[i]), int(best_step[i]), int(stopped_at[i]), history[i])
        for i in range(p)
    ]

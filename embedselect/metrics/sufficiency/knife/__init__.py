"""KNIFE-style mixture estimators of H(Z) and H(Z|U), trained for many (source, target) pairs at once.

Pure torch; no store, no backends. Used by :mod:`embedselect.metrics.sufficiency.score`. The package:
:mod:`.prepare` (coordinates), :mod:`.mixture` (marginal, tables, conditional density), :mod:`.engine`
(the stacked model, its gradients and the early-stopping training loop).

Coordinates. Each embedding is standardised per dimension (train-split statistics) and rotated into
its principal axes (train-split PCA). The rotation is orthogonal, so entropies and IS are unchanged,
while a *diagonal* mixture fits much better in that basis. Columns that are constant at the embedding's
scale (sd <= 1e-4 x the RMS column sd, *before* standardising, so float noise in an embedder's null space
is not inflated to unit variance) and near-null directions (eigenvalue <= 1e-3 x the mean eigenvalue) are
dropped; dim(Z) counts the kept ones.

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

Batching: all pairs of a call form ONE stacked model. Source inputs are zero-padded to the widest
source input R, target top blocks to the widest K (with a mask so padded coordinates contribute exactly
nothing, value and gradient), so one training step is a fixed handful of batched ops (``bmm`` over
pairs) whatever the pool size; per-source and per-target tensors are stored once and gathered per
step. Pairs that stop early are removed from the stacked tensors and their Adam state (their best
snapshot is kept). All pairs see the same minibatch rows at a given step (drawn from the root seed,
never from the batching), each pair's initial weights come from its own seed, the loss is a sum of
per-pair losses and Adam is elementwise: a pair trained alone or inside a batch gives the same numbers
up to float summation order.

Training step (:meth:`_Engine.loss_grads`): the forward pass and its gradients are written out by hand
(no autograd graph; checked against autograd in the tests), feature-major ((pairs, features, batch)
tensors, so the C-component softmaxes reduce over a non-innermost axis), with the three quadratic-form
products fused into one ``bmm``; on CPU the pairs of a step are processed in cache-sized chunks.
Adam runs as a few ``torch._foreach_*`` ops over all stacked parameters. Held-out evaluation keeps the
autograd-free :func:`cond_loglik` path shared with :func:`marginal_nll` (IS = 0 exactly at step 0).
"""

from embedselect.metrics.sufficiency.knife.engine import PairFit, PairSpec, batch_schedule, pair_bytes, train_pairs
from embedselect.metrics.sufficiency.knife.mixture import (
    LOG_2PI,
    LOG_SCALE_MAX,
    LOG_SCALE_MIN,
    VAR_FLOOR,
    Marginal,
    TargetTables,
    cond_loglik,
    fit_marginal,
    marginal_nll,
)
from embedselect.metrics.sufficiency.knife.prepare import NULL_EIG, NULL_SD, STATS_BLOCK_ROWS, Prepared

__all__ = [
    "LOG_2PI", "LOG_SCALE_MAX", "LOG_SCALE_MIN", "NULL_EIG", "NULL_SD", "STATS_BLOCK_ROWS", "VAR_FLOOR",
    "Marginal", "PairFit", "PairSpec", "Prepared", "TargetTables",
    "batch_schedule", "cond_loglik", "fit_marginal", "marginal_nll", "pair_bytes", "train_pairs",
]

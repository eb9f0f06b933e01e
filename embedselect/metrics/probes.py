"""Linear probes on sampled tasks, held-out accuracy and the agreement score.

For S tasks (label vectors over the same n items) and one candidate's embeddings, a ridge classifier
(one-hot targets, intercept) is trained on a seeded train split and scored on the held-out split.
All S·q one-hot target columns share one design matrix, so every task is fitted by one
eigendecomposition of the centred train Gram matrix (equivalently the SVD X = U S Vᵀ):
W = V diag(s / (s² + λ)) Uᵀ Y. λ is chosen once per candidate and split by
generalised cross-validation (GCV) of the squared loss summed over all tasks, on a grid relative to
the mean squared singular value.

Agreement score (Task Discovery, section 3): two probes trained with different randomness — here on
two disjoint random halves of the train split — label the held-out points; AS is the fraction of
held-out points on which they agree. It needs no held-out labels.

Accuracy is always measured on held-out items (the published notebooks measured on training data).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from embedselect.errors import ConfigError, MetricError

#: ridge penalties, as multiples of the mean squared singular value of the centred train features
DEFAULT_ALPHAS = tuple(float(a) for a in np.logspace(-5, 2, 15))


@dataclass
class ProbeReport:
    """Held-out probe results for one candidate over S tasks.

    Attributes:
        accuracy: float64 (S,), held-out accuracy per task (fraction in [0, 1]).
        majority: float64 (S,), held-out rate of the task's most frequent train class (what a
            constant predictor scores).
        agreement: float64 (S,) agreement score per task, or None when not computed.
        alpha: the chosen relative ridge penalty on the full train split (of split 0 when there are several).
        n_train, n_test: split sizes (every split has the same).
    """

    accuracy: np.ndarray
    majority: np.ndarray
    agreement: np.ndarray | None
    alpha: float
    n_train: int
    n_test: int

    def summary(self) -> dict[str, float]:
        """mean, std (ddof 0) and 5th percentile of held-out accuracy over tasks, and mean agreement."""
        out = {
            "probe_acc_mean": float(np.mean(self.accuracy)),
            "probe_acc_std": float(np.std(self.accuracy)),
            "probe_acc_p05": float(np.percentile(self.accuracy, 5)),
            "probe_majority_mean": float(np.mean(self.majority)),
        }
        if self.agreement is not None:
            out["agreement_mean"] = float(np.mean(self.agreement))
        return out


def split_indices(n: int, test_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Seeded random train/test split of ``range(n)``.

    Returns:
        (train, test) int64 index arrays, sorted, disjoint, covering range(n); test has
        round(n·test_fraction) items (at least 1, leaving at least 2 for training).
    """
    if not (0.0 < float(test_fraction) < 1.0):
        raise ConfigError(f"test_fraction must be in (0, 1), got {test_fraction!r}")
    n_test = int(round(n * float(test_fraction)))
    n_test = min(max(n_test, 1), n - 2)
    if n_test < 1:
        raise MetricError(f"need at least 3 items to split for probes, got {n}")
    perm = np.random.default_rng(seed).permutation(n)
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])


def _ridge_scores(xtr, ytr, xte, alphas: tuple[float, ...]):
    """Fit ridge on (xtr, ytr) with GCV-chosen λ and return test scores and the relative λ.

    xtr: (m, d), ytr: (m, k), xte: (t, d) torch float64 tensors on one device.
    Uses the eigendecomposition of the smaller Gram matrix (d×d or m×m; the same spectrum s² as
    the SVD of the centred features, cheaper to get). Returns (scores (t, k), alpha).
    """
    import torch

    xm = xtr.mean(dim=0, keepdim=True)
    ym = ytr.mean(dim=0, keepdim=True)
    xc, yc = xtr - xm, ytr - ym
    m, d = xc.shape
    primal = m >= d
    s2, vecs = torch.linalg.eigh(xc.T @ xc if primal else xc @ xc.T)
    keep = s2 > s2.max().clamp_min(1e-300) * 1e-12  # drop the null space
    s2, vecs = s2[keep], vecs[:, keep]
    if primal:  # vecs = V; Uᵀ Y = S⁻¹ Vᵀ Xᵀ Y
        b = vecs.T @ (xc.T @ yc)  # (r, k) = S·Uᵀ Y
        a2 = (b * b).sum(dim=1) / s2
    else:  # vecs = U
        b = vecs.T @ yc  # (r, k) = Uᵀ Y
        a2 = (b * b).sum(dim=1)
    perp = float((yc * yc).sum() - a2.sum())  # part of Y outside the column space of X
    scale = float(s2.mean()) if s2.numel() else 1.0
    best = (math.inf, alphas[0])
    for a in alphas:
        lam = a * scale
        f = s2 / (s2 + lam)
        rss = perp + float((((1 - f) ** 2) * a2).sum())
        denom = (1.0 - float(f.sum()) / m) ** 2
        gcv = rss / denom if denom > 1e-12 else math.inf
        if gcv < best[0]:
            best = (gcv, a)
    lam = best[1] * scale
    if primal:  # W = V (S² + λ)⁻¹ Vᵀ Xᵀ Y
        w = vecs @ (b / (s2 + lam).unsqueeze(1))
    else:  # W = Xᵀ U (S² + λ)⁻¹ Uᵀ Y
        w = xc.T @ (vecs @ (b / (s2 + lam).unsqueeze(1)))
    return (xte - xm) @ w + ym, best[1]


HELD_OUT_TARGET = 2000
"""Held-out items, over all splits, that ``splits="auto"`` aims for (:func:`probe_splits`)."""
MAX_SPLITS = 8


def probe_splits(n: int, test_fraction: float) -> int:
    """How many train/test splits hold out about :data:`HELD_OUT_TARGET` items in all: between 1 and
    :data:`MAX_SPLITS` (8 at n = 300 with 30 % held out, 2 at n = 4 096)."""
    n_test = max(1, round(n * float(test_fraction)))
    return int(min(MAX_SPLITS, max(1, math.ceil(HELD_OUT_TARGET / n_test))))


def _onehot(tasks: np.ndarray, q: int):
    """(S, n) int labels -> (n, S·q) float64 one-hot, task-major columns."""
    s, n = tasks.shape
    y = np.zeros((n, s, q), dtype=np.float64)
    y[np.arange(n)[:, None], np.arange(s)[None, :], tasks.T] = 1.0
    return y.reshape(n, s * q)


def probe_tasks(
    features: Any,
    tasks: Any,
    *,
    n_classes: int | None = None,
    test_fraction: float = 0.3,
    agreement: bool = True,
    seed: int = 0,
    device: str | None = "cpu",
    alphas: tuple[float, ...] = DEFAULT_ALPHAS,
    splits: int = 1,
) -> ProbeReport:
    """Train ridge probes for all tasks at once and measure held-out accuracy (and agreement).

    Args:
        features: one candidate's embeddings, array (n, d); used as given (no normalisation).
        tasks: int array (S, n) of labels in [0, n_classes), e.g. from
            :func:`embedselect.metrics.sample_tasks`.
        n_classes: q; default ``tasks.max() + 1``.
        test_fraction: share of items held out (seeded splits; the same seed gives the same splits for every
            candidate, so candidates are compared on the same items).
        agreement: also compute the agreement score (probes on two disjoint halves of the train split).
        seed: seeds the train/test splits and the halves.
        device: torch device.
        alphas: relative ridge penalties tried by GCV.
        splits: task s is trained and tested on split ``s % splits`` (split 0 from ``seed``, the others from seeds
            derived from it): with one split shared by every task, which items happened to be held out moved a
            candidate's mean accuracy as much as the tasks did; each split costs its own
            ridge factorisations (train rows, and the two halves for the agreement).

    Returns:
        :class:`ProbeReport`.

    Raises:
        MetricError: shapes do not match, labels out of range, non-finite features.
    """
    import torch

    from embedselect.metrics.kernels import as_matrix, torch_device

    x = as_matrix(features, "features").astype(np.float64, copy=False)
    t = np.asarray(tasks)
    if t.ndim == 1:
        t = t[None, :]
    if t.ndim != 2 or t.shape[1] != x.shape[0]:
        raise MetricError(f"tasks must have shape (S, n) with n = {x.shape[0]} (rows of features), got {t.shape}")
    if not np.issubdtype(t.dtype, np.integer):
        raise MetricError(f"tasks must hold integer class labels, got dtype {t.dtype}")
    q = int(t.max()) + 1 if n_classes is None else int(n_classes)
    if t.min() < 0 or t.max() >= q:
        raise MetricError(f"task labels must lie in [0, {q}); got range [{t.min()}, {t.max()}]")
    if not alphas:
        raise ConfigError("alphas must list at least one ridge penalty")
    n = x.shape[0]
    s_tasks = t.shape[0]
    n_splits = max(1, min(int(splits), s_tasks))
    dev = torch_device(device)
    xt = torch.as_tensor(x, dtype=torch.float64, device=dev)
    acc = np.empty(s_tasks, dtype=np.float64)
    majority = np.empty(s_tasks, dtype=np.float64)
    agree = np.empty(s_tasks, dtype=np.float64) if agreement else None
    alpha, n_tr, n_te = float("nan"), 0, 0
    for k in range(n_splits):
        rows = np.arange(k, s_tasks, n_splits)  # the tasks of split k
        tr, te = split_indices(n, test_fraction, seed if k == 0 else int(np.random.default_rng([seed, 7, k]).integers(2**31)))
        if len(tr) < 4:
            raise MetricError(f"need at least 4 training items for probes (got {len(tr)} of n = {n})")
        tk = t[rows]
        y = torch.as_tensor(_onehot(tk, q), dtype=torch.float64, device=dev)
        te_t = torch.as_tensor(te, device=dev)

        def predict(idx, y=y, te_t=te_t, te=te, tk=tk):
            scores, a = _ridge_scores(xt[idx], y[idx], xt[te_t], alphas)
            return scores.reshape(len(te), len(tk), q).argmax(dim=2).T.cpu().numpy(), a  # (S_k, t)

        pred, a_k = predict(torch.as_tensor(tr, device=dev))
        if k == 0:
            alpha, n_tr, n_te = float(a_k), len(tr), len(te)
        truth = tk[:, te]
        acc[rows] = (pred == truth).mean(axis=1)
        counts = np.stack([(tk[:, tr] == c).sum(axis=1) for c in range(q)], axis=1)  # (S_k, q)
        majority[rows] = (truth == counts.argmax(axis=1)[:, None]).mean(axis=1)
        if agree is not None:
            half = np.random.default_rng([seed, 1] if k == 0 else [seed, 1, k]).permutation(tr)
            h = len(half) // 2
            pa, _ = predict(torch.as_tensor(np.sort(half[:h]), device=dev))
            pb, _ = predict(torch.as_tensor(np.sort(half[h:]), device=dev))
            agree[rows] = (pa == pb).mean(axis=1)
    return ProbeReport(accuracy=acc, majority=majority, agreement=agree, alpha=alpha, n_train=n_tr, n_test=n_te)

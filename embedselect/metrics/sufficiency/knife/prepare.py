"""Each candidate in standardised principal coordinates (train-split standardisation, PCA, null-direction drop)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from embedselect.errors import MetricError
from embedselect.metrics.kernels import host_tensor

#: Principal directions (of the standardised train rows) with eigenvalue <= NULL_EIG x the mean eigenvalue are
#: dropped. Was 1e-6 x the largest: on pixel-pca of upscaled digits (n=500) two directions at 4.5e-6 and 2.3e-4 of
#: the largest passed, held-out rows lay up to 1.1e4 train sds along them, and IS into that target was -723 to
#: +104 nats/dim; with this rule it is 0.002-0.008 (docs/sufficiency.md, "Degenerate embeddings").
NULL_EIG = 1e-3
#: Columns whose train sd is <= NULL_SD x the RMS of all the columns' sds are dropped before standardising
#: (numerically constant at the embedding's scale). Measured on rank-deficient pixel PCA (digits, n=500):
#: real components >= 7e-3, rounding-noise components <= 4e-6 of the RMS.
NULL_SD = 1e-4

#: Training rows above which :meth:`Prepared.fit` computes its standardisation and principal axes in row blocks of
#: this size (no float64 copy of every training row; below it, one pass over all of them, as before).
STATS_BLOCK_ROWS = 131072


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
    def fit(cls, x: np.ndarray, train_idx: np.ndarray, source_pcs: int, device: torch.device,
            rows: np.ndarray | None = None) -> "Prepared":
        """Standardise ``x`` (n, d) per dimension and rotate it to its principal axes, both from the
        rows ``train_idx`` (statistics in float64).

        ``x`` may be a read-only memory map. ``rows`` (sorted int64 row ids, or None for all n): the rows the
        result holds (``z`` and ``u`` then have ``len(rows)`` rows, row j being item ``rows[j]``), so that a caller
        that uses only some rows does not hold all n. Up to :data:`STATS_BLOCK_ROWS` training rows the statistics
        are computed at once; above, in row blocks of that size (the same statistics, summed in another order),
        so that no float64 copy of every training row is made."""
        if len(train_idx) <= STATS_BLOCK_ROWS:
            xt = host_tensor(np.asarray(x, dtype=np.float32)).to(device)
            tr = xt[torch.from_numpy(train_idx).to(device)].double()
            mean = tr.mean(0)
            sd = tr.std(0, unbiased=False)
        else:
            tr = None
            blocks = [train_idx[a:a + STATS_BLOCK_ROWS] for a in range(0, len(train_idx), STATS_BLOCK_ROWS)]

            def block(b: np.ndarray) -> torch.Tensor:
                return torch.from_numpy(np.asarray(x[b], dtype=np.float32)).to(device).double()

            mean = sum(block(b).sum(0) for b in blocks) / len(train_idx)
            sd = torch.sqrt(torch.as_tensor(sum(((block(b) - mean) ** 2).sum(0) for b in blocks) / len(train_idx)))
        # A column is null at the scale of the *embedding*, not of itself: float rounding in an embedder's
        # null space (e.g. PCA components past the data's rank) has a tiny sd of its own, and standardising
        # it would blow that rounding noise up to a unit-variance dimension with a degenerate distribution
        # (issue 9: 118 nats per dimension on rank-deficient pixel features).
        rms = float(torch.sqrt((sd * sd).mean()))
        keep = sd > NULL_SD * rms
        if rms == 0.0 or not bool(keep.any()):
            raise MetricError("every dimension is constant on the training rows: the embedding carries no information")
        if tr is not None:
            tr = (tr[:, keep] - mean[keep]) / sd[keep]
            cov = tr.T @ tr / tr.shape[0]
        else:
            cov = 0.0
            for b in blocks:
                c = (block(b)[:, keep] - mean[keep]) / sd[keep]
                cov = cov + c.T @ c
            cov = cov / len(train_idx)
        evals, evecs = torch.linalg.eigh(cov)
        evals, evecs = evals.flip(0), evecs.flip(1)
        # relative to the mean eigenvalue (1 after standardising), not the largest: a direction with a thousandth
        # of an average direction's variance is a near-collinearity of the training rows, and a density fitted
        # along it explodes on new rows (pixel-pca of upscaled digits: held-out rows 1.1e4 train sds away)
        ok = evals > NULL_EIG * evals.mean()
        evals, evecs = evals[ok], evecs[:, ok]
        # deterministic signs: largest-magnitude entry of each axis positive
        sign = torch.sign(evecs.gather(0, evecs.abs().argmax(0, keepdim=True)))
        evecs = evecs * sign
        if rows is not None or tr is None:  # only the rows asked for (all n when rows is None)
            xt = host_tensor(np.asarray(x[rows] if rows is not None else x, dtype=np.float32)).to(device)
        z = ((xt[:, keep] - mean[keep].float()) / sd[keep].float()) @ evecs.float()
        r = min(source_pcs, z.shape[1])
        u = z[:, :r] / torch.sqrt(evals[:r]).float()
        return cls(z.contiguous(), u.contiguous())

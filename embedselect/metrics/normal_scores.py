"""Per-dimension rank -> normal-score transform (a Gaussian copula) of an embedding, ties broken at random (seeded)."""

from __future__ import annotations

import numpy as np
from scipy.special import ndtri


def normal_scores(x: np.ndarray, seed: int) -> np.ndarray:
    """Replace each column of ``x`` by the standard-normal quantiles of its ranks, Φ⁻¹((r + 0.5) / n).

    Ties (e.g. the exact zeros of ReLU / max-pooled features, or the 256 levels of an int8 code) are broken by a
    seeded uniform key, so a point mass becomes a spread of distinct scores: a diagonal Gaussian mixture fitted to
    the result has a finite entropy, where on the raw values a component collapses onto the point mass and the
    information estimate is unbounded. Monotone per-dimension changes of ``x`` give the
    same output. The key depends only on ``seed`` and the shape, never on the candidate.

    Args:
        x: array (n, d), any real dtype, finite.
        seed: seed of the tie-breaking key.

    Returns:
        float32 (n, d); every column is a permutation of the same n normal scores (mean 0, sd about 1).
    """
    x = np.asarray(x, dtype=np.float64)
    n, d = x.shape
    key = np.random.default_rng([int(seed), 0x5C0]).random((n, d))
    order = np.lexsort((key, x), axis=0)  # by value, ties by key, per column
    scores = ndtri((np.arange(n, dtype=np.float64) + 0.5) / n)
    out = np.empty((n, d), dtype=np.float32)
    np.put_along_axis(out, order, np.broadcast_to(scores[:, None], (n, d)).astype(np.float32), axis=0)
    return out

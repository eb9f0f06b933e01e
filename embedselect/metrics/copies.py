"""Label-free detection of derived copies: a candidate that is a coordinate-wise function of another's vectors.

Quantising an embedding (int8, binary sign bits) or keeping its first k dimensions (Matryoshka-style
truncation) maps each coordinate of the parent's vector to the same coordinate of the copy by a monotone
function (up to the copy's row re-normalisation). By the data processing inequality such a copy cannot carry
more information about any labelling of the items than its parent, so a ranking that puts it above its parent
is wrong in expectation, however the label-free scores came out (docs/benchmarks.md §4c measured the default
doing exactly that: mpnet's binary copy first on two datasets).

The test, for a pair (parent P with d_P dimensions, copy C with d_C ≤ d_P), on at most ``max_items`` rows:

- ``rho_j`` = Spearman correlation of column j of C with column j of P, for j < d_C;
- C is a copy of P when the median of ``|rho_j|`` is at least ``threshold`` (0.8: sign bits of a Gaussian
  coordinate keep Spearman √3/2 ≈ 0.87; coordinates of two independently trained models, or a PCA of a model,
  are not aligned and give |rho| near 0; two layers or poolings of one transformer share its residual-stream
  coordinates only partly);
- the direction: C has fewer dimensions, or the same number and fewer distinct values per coordinate
  (quantised). Two equal-width candidates with the same resolution are reported as neither.

A static model distilled from a teacher (model2vec) is not a coordinate-wise function of the teacher's vectors
(its dimensions are a PCA of token embeddings) and is not detected here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
from scipy.stats import rankdata

from embedselect.metrics.kernels import as_matrix

THRESHOLD = 0.8
"""Median per-coordinate |Spearman| at or above which a candidate counts as a derived copy."""
MAX_ITEMS = 2000


@dataclass(frozen=True)
class DerivedCopy:
    """``copy`` is a coordinate-wise function of ``parent``'s vectors.

    Attributes:
        copy, parent: candidate names.
        relation: ``"truncated"`` (fewer dimensions) or ``"quantized"`` (same width, fewer distinct values).
        median_abs_spearman: median over the copy's coordinates of |Spearman(copy_j, parent_j)|, in [0, 1].
    """

    copy: str
    parent: str
    relation: str
    median_abs_spearman: float

    def to_dict(self) -> dict[str, Any]:
        return {"copy": self.copy, "parent": self.parent, "relation": self.relation,
                "median_abs_spearman": round(self.median_abs_spearman, 4)}


def _column_ranks(x: np.ndarray) -> np.ndarray:
    """Per-column average ranks, centred and scaled to unit norm (float64 (n, d)); constant columns are 0."""
    r = rankdata(x, axis=0).astype(np.float64)
    r -= r.mean(axis=0, keepdims=True)
    norms = np.linalg.norm(r, axis=0, keepdims=True)
    return np.divide(r, norms, out=np.zeros_like(r), where=norms > 0)


def _distinct_per_column(x: np.ndarray) -> float:
    """Median number of distinct values per column (a quantised embedding has few)."""
    xs = np.sort(x, axis=0)
    return float(np.median(1 + np.count_nonzero(np.diff(xs, axis=0), axis=0)))


def derived_copies(
    embeddings: Mapping[str, Any], *, threshold: float = THRESHOLD, max_items: int = MAX_ITEMS, seed: int = 0
) -> list[DerivedCopy]:
    """Every (copy, parent) pair among ``embeddings`` (name -> (n, d_k) array, the same n items in the same order).

    Args:
        embeddings: candidate name -> float array (n, d_k).
        threshold: minimum median per-coordinate |Spearman| (see module docstring).
        max_items: rows used (a seeded subsample above this).
        seed: seeds the subsample.

    Returns:
        the pairs found, sorted by (parent, copy). A copy with several parents (e.g. a truncation of a
        quantisation) is listed once per parent.
    """
    names = list(embeddings)
    if len(names) < 2:
        return []
    mats = {k: as_matrix(embeddings[k], f"embeddings[{k!r}]") for k in names}
    n = next(iter(mats.values())).shape[0]
    rows = np.sort(np.random.default_rng([seed, 31]).choice(n, size=max_items, replace=False)) if n > max_items \
        else np.arange(n)
    sub = {k: np.asarray(v[rows], dtype=np.float64) for k, v in mats.items()}
    ranks = {k: _column_ranks(v) for k, v in sub.items()}
    distinct = {k: _distinct_per_column(v) for k, v in sub.items()}
    out = []
    for p in names:
        for c in names:
            dp, dc = sub[p].shape[1], sub[c].shape[1]
            if p == c or dc > dp:
                continue
            if dc == dp and not distinct[c] < distinct[p]:
                continue  # same width: only a lower-resolution (quantised) candidate can be the copy
            rho = np.abs(np.einsum("ij,ij->j", ranks[c], ranks[p][:, :dc]))
            med = float(np.median(rho))
            if med >= threshold:
                out.append(DerivedCopy(c, p, "truncated" if dc < dp else "quantized", med))
    return sorted(out, key=lambda d: (d.parent, d.copy))


__all__ = ["THRESHOLD", "DerivedCopy", "derived_copies"]

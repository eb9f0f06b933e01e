"""The rules every metric applies to the pool before it computes: which candidates can be scored at all
(:func:`unusable_reason`), which are consulted as evidence about the data (:func:`evidence`) and how much each of
those weighs (:func:`family_weights`).

Part of every metric's code version (``metrics.base._SHARED_CODE``): a change here recomputes every cached result.
"""

from __future__ import annotations

from collections import Counter
from typing import Mapping, Sequence

import numpy as np

from embedselect._util.arrays import nonfinite_rows, row_blocks

CONSTANT_RTOL = 1e-5
"""Rows whose spread (largest per-dimension range) is at most this fraction of the largest absolute value are one
repeated vector up to float noise (a float32 model that maps every input to one vector still differs in the last
bits)."""


def unusable_reason(name: str, x: np.ndarray) -> str | None:
    """Why one candidate's embeddings cannot be scored by any metric, or None when they can: the one rule every
    metric applies before leaving a candidate out (score NaN, with this reason) while it scores the others.

    Args:
        name: the candidate, for the message.
        x: its embeddings, shape (n, d), any float dtype (read in row blocks of :data:`BLOCK_ELEMENTS`; a read-only
            memory map is fine). Anything that is not 2-D gets None (the metric's shape check reports it).

    Returns:
        "k of n items have NaN or infinite embeddings; ..." or "every item has the same embedding ..." (see
        :data:`CONSTANT_RTOL`), else None.
    """
    a = np.asarray(x)
    if a.ndim != 2:  # the metrics' own shape checks say what is wrong
        return None
    # one row block at a time (max, min and counts are exact in any order: the same answer as on the whole matrix)
    n_bad = nonfinite_rows(a)
    if n_bad:
        return f"{n_bad} of {a.shape[0]} items have NaN or infinite embeddings; re-embed them"
    if a.shape[0] > 1 and a.size:
        blocks = list(row_blocks(a))
        spread = float((np.max([b.max(axis=0) for b in blocks], axis=0)
                        - np.min([b.min(axis=0) for b in blocks], axis=0)).max())
        if spread <= CONSTANT_RTOL * max(float(np.abs(b).max()) for b in blocks):
            return (
                "every item has the same embedding (constant rows, up to float noise): it carries no information; "
                f"check that {name} loads and runs correctly"
            )
    return None


MIN_EVIDENCE = 2
"""Fewest candidates a pool-relative metric consults; with fewer non-reference candidates it consults all."""


def evidence(keys: list[str], references: frozenset[str] | set[str]) -> list[int]:
    """Indices into ``keys`` of the candidates a pool-relative metric consults: the candidates that are not reference
    points (:attr:`embedselect.metrics.base.MetricContext.references`), or every candidate when fewer than
    :data:`MIN_EVIDENCE` are left.

    Why: a consensus of the pool is evidence about which structure of the data matters only where its members learned
    something about such data. Built-in baselines did not: on photographs two of them (pixel PCA and a random
    projection: both linear in the pixels, yet not near-copies) pull a prior that counts them towards pixel geometry,
    and rank themselves above every ImageNet model (docs/validity.md, "Reference points").
    """
    members = [i for i, k in enumerate(keys) if k not in references]
    return members if len(members) >= MIN_EVIDENCE else list(range(len(keys)))


def family_weights(keys: list[str], members: list[int], families: Mapping[str, str] | None) -> np.ndarray:
    """How much each consulted candidate weighs as evidence: one family, one vote.

    Args:
        keys: the candidates, in the metric's order.
        members: indices into ``keys`` of the candidates consulted (:func:`evidence`).
        families: candidate -> family key (:attr:`embedselect.metrics.base.MetricContext.families`); a candidate it
            does not name is a family of its own.

    Returns:
        float64 (len(members),): 1 / the number of members in the candidate's family (all 1 when every member is a
        family of its own).

    Why: variants of one model (another pooling, layer, resolution or max_length of the same weights) and the copies
    of it (a quantisation, a distillation its card declares) are not independent witnesses of what matters in the
    data. Counted one by one, a family of three outvotes a stronger model that came alone: on the validity
    benchmark's text pools (mpnet against MiniLM with its CLS pooling and its model2vec distillation) every pool
    signal then picks MiniLM (docs/validity.md, "Protocol").
    """
    fam = [(families or {}).get(keys[i], keys[i]) for i in members]
    size = Counter(fam)
    return np.array([1.0 / size[f] for f in fam], dtype=np.float64)


def weighted_median(values: Sequence[float], weights: Sequence[float]) -> float:
    """The median of ``values`` with ``weights`` (> 0): the value at which the cumulative weight of the sorted values
    reaches half the total, the mean of the two values around it when it reaches half exactly between them (so equal
    weights give :func:`numpy.median`)."""
    v = np.asarray(values, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    order = np.argsort(v, kind="stable")
    v, w = v[order], w[order]
    cum = np.cumsum(w) / w.sum()
    i = int(np.searchsorted(cum, 0.5 - 1e-12))
    if abs(cum[i] - 0.5) <= 1e-12 and i + 1 < len(v):
        return float((v[i] + v[i + 1]) / 2)
    return float(v[i])

"""The rules every metric applies to the pool before it computes: which candidates can be scored at all
(:func:`unusable_reason`), which are consulted as evidence about the data (:func:`evidence`: one head per family),
whom each candidate is compared with (:func:`compared_with`) and a candidate's place under one signal counting each
family once (:func:`relative_positions`, :func:`relative_z`, read by :mod:`embedselect.ranking.combine`).

Part of every metric's code version (``metrics.base._SHARED_CODE``): a change here recomputes every cached result.
"""

from __future__ import annotations

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
"""Fewest families a pool-relative metric consults; with fewer non-reference families it consults every family."""


def family_of(key: str, families: Mapping[str, str] | None) -> str:
    """The family key of candidate ``key`` (:attr:`embedselect.metrics.base.MetricContext.families`; a candidate it
    does not name is a family of its own)."""
    return (families or {}).get(key, key)


def family_heads(keys: Sequence[str], members: Sequence[int], families: Mapping[str, str] | None) -> list[int]:
    """One index per family among ``members`` (indices into ``keys``), in ``members``' order: the family's *head*,
    the member whose name is the family key when it is among ``members``, else the family's first member.

    The family key is the family's first member in the user's candidate order that is not a copy of another
    (:func:`embedselect.pipeline.families.pool_relations`): the model as the user first named it.
    """
    fam = [family_of(keys[i], families) for i in members]
    head: dict[str, int] = {}
    for i, f in zip(members, fam):
        if f not in head or keys[i] == f:
            head[f] = i
    chosen = set(head.values())
    return [i for i in members if i in chosen]


def evidence(keys: list[str], references: frozenset[str] | set[str],
             families: Mapping[str, str] | None = None) -> list[int]:
    """Indices into ``keys`` of the candidates a pool-relative metric consults (its *witnesses*): the head of each
    family (:func:`family_heads`) among the candidates that are not reference points
    (:attr:`embedselect.metrics.base.MetricContext.references`); when fewer than :data:`MIN_EVIDENCE` families are
    left that way, every candidate that is not a reference point (one model and its variants), and when fewer than
    :data:`MIN_EVIDENCE` of those, the head of every family. Candidates without a family (``families`` None or not naming
    them) are each a family of their own.

    Why the reference points stay out: a consensus of the pool is evidence about which structure of the data matters
    only where its members learned something about such data. Built-in baselines did not: on photographs two of them
    (pixel PCA and a random projection: both linear in the pixels, yet not near-copies) pull a prior that counts them
    towards pixel geometry, and rank themselves above every ImageNet model (docs/validity.md, "Reference points").

    Why one head per family: variants of one model (another pooling, layer, resolution or max_length of the same
    weights) and its copies (a quantisation, a distillation its card declares) are not independent witnesses of what
    matters in the data. Weighed by 1 / family size they still leaned the pool towards the family that carried more
    options (issue 41: with its two extra options a family went from third to first). With the heads only, adding
    options, layers or copies of a model changes no witness, so no score of another family's head and no order among
    the heads moves (tests/test_invariance.py).
    """
    models = [i for i, k in enumerate(keys) if k not in references]
    heads = family_heads(keys, models, families)
    if len(heads) >= MIN_EVIDENCE:
        return heads
    if len(models) >= MIN_EVIDENCE:  # one model family with its variants: they are the only witnesses that learned
        return models                 # anything; the reference points' geometry would outvote them
    return family_heads(keys, range(len(keys)), families)


def compared_with(keys: Sequence[str], i: int, witnesses: Sequence[int], families: Mapping[str, str] | None) -> list[int]:
    """The witnesses candidate ``keys[i]`` is compared with: those of other families than its own (its own family
    would praise it: a variant agrees with its parent). When that leaves none (a pool of one family), every witness
    but itself."""
    mine = family_of(keys[i], families)
    out = [j for j in witnesses if family_of(keys[j], families) != mine]
    return out or [j for j in witnesses if j != i]


def relative_positions(scores: Mapping[str, float], families: Mapping[str, str] | None) -> dict[str, float]:
    """Each candidate's place under one signal, in [0, 1] (0 = above every other family, 1 = below), counting each
    family once: the fraction of the families' heads (:func:`family_heads` in ``scores``' order) that score above it,
    ties counting half, among the *other* families' heads for a head, among every head (its own included) for a
    variant or copy. For a head this is (its rank among the heads − 1) / (heads − 1), the normalised rank among the
    families, so variants and copies added to the pool move no head's place; a variant below its own head is placed
    below it. With one family only, the place among every candidate ((rank − 1) / (m − 1), 0 when alone).

    Args:
        scores: candidate -> finite score (higher is better), in the candidates' order.
        families: as for :func:`evidence`.

    Returns:
        candidate -> place, float.
    """
    keys = list(scores)
    v = np.array([float(scores[k]) for k in keys], dtype=np.float64)
    heads = family_heads(keys, range(len(keys)), families)
    out = {}
    for i, k in enumerate(keys):
        if len(heads) < 2:
            others = [j for j in range(len(keys)) if j != i]
        else:
            others = compared_with(keys, i, heads, families) if i in heads else heads
        if not others:
            out[k] = 0.0
            continue
        o = v[others]
        out[k] = float((np.sum(o > v[i]) + 0.5 * np.sum(o == v[i])) / len(o))
    return out


def relative_z(scores: Mapping[str, float], families: Mapping[str, str] | None) -> dict[str, float]:
    """Each candidate's z-score under one signal against the families' heads: (score − the heads' mean) / the heads'
    standard deviation (0 when they do not vary), so that variants and copies added to the pool move no head's
    z-score. Heads as in :func:`relative_positions`; with one family, against every candidate."""
    keys = list(scores)
    v = np.array([float(scores[k]) for k in keys], dtype=np.float64)
    heads = family_heads(keys, range(len(keys)), families)
    ref = v[heads] if len(heads) > 1 else v
    sd = float(ref.std())
    mean = float(ref.mean())
    return {k: float((v[i] - mean) / sd) if sd > 0 else 0.0 for i, k in enumerate(keys)}

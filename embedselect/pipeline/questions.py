"""Which triplet questions to ask (``embedselect ask``): where the contenders' embeddings disagree most, spread over
the data.

Every cosine here is taken about the contender's mean over the data, as the answers are scored
(:func:`embedselect.validation.answers.orders`). For a seeded sample of anchor items, the candidates for ``a`` and
``b`` are the union of every contender's ``k`` nearest neighbours of the anchor (cosine, :func:`embedselect.nn.knn.knn`):
items some contender calls close, so the question is one a person can answer. Each pair (j, h) of them is scored by how
strongly the contenders disagree on its order: per contender, d = cos(anchor, j) - cos(anchor, h) divided by the
median |d| over that anchor's pairs (so that no contender's scale dominates); the disagreement is the smaller of the
summed positive and the summed negative parts (0 when all contenders agree). Pairs that look like near duplicates to
any contender (cosine >= :data:`NEAR_DUPLICATE`) are left out, and so are items with an exact duplicate in the data.

The anchors are grouped by spherical k-means over the contenders' unit vectors side by side, and questions are taken
round-robin over the groups, each group's most disputed first, with no item in more than :data:`MAX_USES` questions
(counting the questions already in the file): spread over the data, not one cluster. Which item is shown as ``a``
is a seeded coin flip, so that ``a`` is not always one contender's choice.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from embedselect.validation.answers import centre_of

K_NEIGHBOURS = 10
"""Neighbours per contender from which an anchor's ``a`` and ``b`` are drawn."""
ANCHORS_PER_QUESTION = 10
"""Anchors sampled per question wanted (at least :data:`MIN_ANCHORS`, at most every usable item)."""
MIN_ANCHORS = 200
PER_ANCHOR = 3
"""At most this many of an anchor's most disputed pairs are kept as candidates."""
MAX_USES = 3
"""No item appears in more questions than this (as anchor, a or b)."""
NEAR_DUPLICATE = 0.98
"""Two items with cosine >= this under any contender are not put in one question."""


def choose_triplets(vectors: Mapping[str, np.ndarray], n_new: int, *, usable: np.ndarray, seed: int,
                    taken: Sequence[Sequence[int]] = (), k: int = K_NEIGHBOURS,
                    max_uses: int = MAX_USES) -> list[tuple[int, int, int]]:
    """Up to ``n_new`` new (anchor, a, b) triplets where the contenders ``vectors`` disagree most (module docstring).

    Args:
        vectors: contender name -> float (n, d) embeddings of the same n items (at least two contenders).
        n_new: how many new questions are wanted.
        usable: bool (n,): items that may appear in a question (False: e.g. an item with an exact duplicate).
        seed: seeds the anchors, the k-means groups, the order of the questions and the a/b coin flips.
        taken: (anchor, a, b) positions of the questions already asked: not repeated (in either a/b order), and
            their items count towards ``max_uses``.
        k: neighbours per contender.
        max_uses: the most questions one item may appear in.

    Returns:
        the new triplets (item positions), in the order to ask them; fewer than ``n_new`` when the data run out of
        disputed pairs under these rules.
    """
    names = list(vectors)
    usable = np.asarray(usable, dtype=bool)
    pool = np.flatnonzero(usable)
    if n_new <= 0 or len(names) < 2 or len(pool) < 3:
        return []
    rng = np.random.default_rng(seed)
    n_anchor = min(len(pool), max(MIN_ANCHORS, ANCHORS_PER_QUESTION * (n_new + len(taken))))
    anchors = np.sort(rng.choice(len(pool), n_anchor, replace=False))  # positions in pool
    # cosines about each contender's mean over the data, as validation.answers.orders scores the answers
    unit = {m: _unit(np.asarray(vectors[m])[pool] - centre_of(vectors[m])) for m in names}
    kk = min(k, len(pool) - 1)
    near = {m: _neighbours(unit[m], anchors, kk) for m in names}

    uses = np.zeros(len(usable), dtype=np.int64)
    done: set[tuple[int, frozenset[int]]] = set()
    for t in taken:
        i, a, b = (int(x) for x in t)
        uses[[i, a, b]] += 1
        done.add((i, frozenset((a, b))))

    by_anchor: list[list[tuple[float, int, int, int]]] = []
    for r, anc in enumerate(anchors):
        union = np.unique(np.concatenate([near[m][r] for m in names]))
        union = union[union != anc]
        if len(union) < 2:
            by_anchor.append([])
            continue
        j, h = np.triu_indices(len(union), 1)
        z = np.empty((len(names), len(j)))
        dup = np.zeros(len(j), dtype=bool)
        for mi, m in enumerate(names):
            u = unit[m][union]
            s = u @ unit[m][anc]
            d = s[j] - s[h]
            z[mi] = d / max(float(np.median(np.abs(d))), 1e-12)
            g = u @ u.T
            dup |= (g[j, h] >= NEAR_DUPLICATE) | (s[j] >= NEAR_DUPLICATE) | (s[h] >= NEAR_DUPLICATE)
        score = np.minimum(np.clip(z, 0, None).sum(0), np.clip(-z, 0, None).sum(0))
        score[dup] = 0.0
        best = [int(x) for x in np.argsort(-score, kind="stable")[:PER_ANCHOR] if score[x] > 0]
        by_anchor.append([(float(score[x]), int(pool[anc]), int(pool[union[j[x]]]), int(pool[union[h[x]]]))
                          for x in best])

    groups = _groups(np.concatenate([unit[m][anchors] for m in names], axis=1), min(n_new, len(anchors)), rng)
    queues = []
    for g in rng.permutation(int(groups.max()) + 1 if len(groups) else 0):
        cands = [c for r in np.flatnonzero(groups == g) for c in by_anchor[r]]
        cands.sort(key=lambda c: (-c[0], c[1], c[2], c[3]))
        if cands:
            queues.append(cands)
    out: list[tuple[int, int, int]] = []
    while len(out) < n_new and queues:
        still = []
        for q in queues:
            while q:
                _, i, a, b = q.pop(0)
                key = (i, frozenset((a, b)))
                if key in done or max(uses[i], uses[a], uses[b]) >= max_uses:
                    continue
                done.add(key)
                uses[[i, a, b]] += 1
                out.append((i, a, b) if rng.random() < 0.5 else (i, b, a))
                break
            if q:
                still.append(q)
            if len(out) >= n_new:
                break
        queues = still
    order = rng.permutation(len(out))
    return [out[int(x)] for x in order]


def _unit(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length, float32 (a zero row stays zero)."""
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


def _neighbours(unit: np.ndarray, anchors: np.ndarray, k: int) -> np.ndarray:
    """int64 (len(anchors), k): each anchor's k nearest rows of ``unit`` by cosine, itself left out."""
    from embedselect.nn.knn import knn

    nb = knn(unit, k + 1, queries=unit[anchors], metric="ip", exclude_self=False)
    out = np.empty((len(anchors), k), dtype=np.int64)
    for r, a in enumerate(anchors):
        row = [int(x) for x in nb.ids[r] if x != a and x >= 0][:k]
        row += [row[-1]] * (k - len(row)) if row else [int(a)] * k
        out[r] = row
    return out


def _groups(x: np.ndarray, n_groups: int, rng: np.random.Generator, iters: int = 15) -> np.ndarray:
    """int64 (m,): spherical k-means labels of the rows of ``x`` into at most ``n_groups`` groups (seeded)."""
    m = len(x)
    if m == 0:
        return np.zeros(0, dtype=np.int64)
    n_groups = max(1, min(n_groups, m))
    x = _unit(x)
    centres = x[rng.choice(m, n_groups, replace=False)]
    labels = np.zeros(m, dtype=np.int64)
    for _ in range(iters):
        labels = np.argmax(x @ centres.T, axis=1)
        for c in range(n_groups):
            members = x[labels == c]
            if len(members):
                centres[c] = members.sum(0)
        centres = _unit(centres)
    return labels

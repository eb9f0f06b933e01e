"""(query, relevant document) pairs made into a retrieval set of bounded size: what every retrieval loader ends
with."""

from __future__ import annotations

from typing import Sequence

import numpy as np


SEED = 0
MAX_DOCS = 500
"""At most this many documents (and queries) per set: 2 CPU cores shared by a team embed 18 candidates of 9 sets."""


NEW_MAX = 300
"""At most this many documents (and queries) for the sets of the third round (ruff-rules, film-reviews,
python-docstrings, chatterbot-world-qa): the CPU time to embed 18 candidates of four more sets on the shared machine."""


def _sample(n: int, k: int, seed: int) -> np.ndarray:
    """Sorted int64 rows of a seeded sample of at most ``k`` of ``n``."""
    if n <= k:
        return np.arange(n, dtype=np.int64)
    return np.sort(np.random.default_rng(seed).choice(n, size=k, replace=False)).astype(np.int64)


def from_pairs(pairs: Sequence[tuple[str, str]], *, max_docs: int = MAX_DOCS, max_queries: int = MAX_DOCS,
               seed: int = SEED) -> tuple[list[str], list[str], list[list[int]]]:
    """(query, relevant document) pairs as a retrieval set: the distinct documents (a seeded sample of at most
    ``max_docs`` of them, in first-seen order), the distinct queries that have a relevant document among them (a
    seeded sample of at most ``max_queries``, in first-seen order), and per query the rows of every document paired
    with it. A query equal to one of its own relevant documents is dropped (it would find itself)."""
    docs = list(dict.fromkeys(d for _, d in pairs))
    keep = {docs[i] for i in _sample(len(docs), max_docs, seed)}
    docs = [d for d in docs if d in keep]
    row = {d: i for i, d in enumerate(docs)}
    rel: dict[str, list[int]] = {}
    for q, d in pairs:
        if d in row and q != d:
            got = rel.setdefault(q, [])
            if row[d] not in got:
                got.append(row[d])
    queries = [q for q in rel if q not in row or row[q] not in rel[q]]
    queries = [queries[i] for i in _sample(len(queries), max_queries, seed + 1)]
    return docs, queries, [sorted(rel[q]) for q in queries]

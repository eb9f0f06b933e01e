"""Search quality of embeddings on a user's queries: MRR@10, nDCG@10, recall@1 and recall@10, with bootstrap
intervals over the queries. Pure array code: the queries and documents come in as vectors, the relevant documents as
row indices.

- :func:`search_ranks` finds each query's ``k`` nearest documents by exact cosine search
  (:func:`embedselect.nn.knn.knn`, ties broken by the lower document row).
- :func:`query_scores` turns those lists and the relevant rows into per-query scores (binary relevance).
- :func:`retrieval_quality` runs both and summarises them: the mean of each score over the queries and a percentile
  bootstrap interval (queries resampled with replacement, seeded).

Definitions, for one query with relevant set R and ranked list r_1..r_k (k = 10 unless given):

- reciprocal rank = 1 / (the position of the first relevant document), 0 when none is in the first k (MRR@k is
  its mean over the queries);
- nDCG@k = Σ_{i ≤ k, r_i ∈ R} 1/log2(i + 1), divided by its best value Σ_{i ≤ min(|R|, k)} 1/log2(i + 1);
- recall@j = |R ∩ {r_1..r_j}| / |R| (with a single relevant document, whether it is in the first j).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from embedselect.errors import ConfigError, DataError
from embedselect.ranking.bootstrap import check_bootstrap, percentile_interval

__all__ = ["RETRIEVAL_SCORES", "RetrievalQuality", "query_scores", "retrieval_quality", "search_ranks"]

K = 10
"""The cut-off of MRR, nDCG and the larger recall."""
RETRIEVAL_SCORES = ("mrr@10", "ndcg@10", "recall@1", "recall@10")
"""The scores :func:`retrieval_quality` reports, in this order; ``mrr@10`` is the one the ranking is checked against."""


def search_ranks(query_vectors: Any, doc_vectors: Any, k: int = K) -> np.ndarray:
    """The rows of the ``k`` documents nearest to each query by cosine similarity, nearest first.

    Args:
        query_vectors: float (m, d), one row per query.
        doc_vectors: float (n, d), one row per document (the same space as the queries).
        k: list length; at most n (fewer documents: every document is listed).

    Returns:
        int64 (m, min(k, n)) document rows. Exact search (a flat FAISS index); equal similarities are ordered by the
        lower row, as a stable brute-force sort would.

    Raises:
        DataError: the two sides have different widths. MetricError: NaN/inf in a vector.
    """
    from embedselect.nn.knn import knn

    q = np.asarray(query_vectors, dtype=np.float32)
    x = np.asarray(doc_vectors, dtype=np.float32)
    if q.ndim != 2 or x.ndim != 2 or q.shape[1] != x.shape[1]:
        raise DataError(f"query vectors {q.shape} and document vectors {x.shape} must be 2-D with the same width")
    if len(x) == 0 or len(q) == 0:
        raise DataError("no documents or no queries to search")
    return knn(x, min(int(k), len(x)), queries=q, metric="cosine", exact=True).ids


def query_scores(ranked: np.ndarray, relevant: Sequence[Sequence[int]], k: int = K) -> dict[str, np.ndarray]:
    """Per-query scores of ranked lists against the relevant rows.

    Args:
        ranked: int (m, >= 1) document rows, best first (:func:`search_ranks`); -1 pads a short list.
        relevant: m lists of relevant document rows (each non-empty; duplicates count once).
        k: the cut-off of MRR, nDCG and the larger recall (``ranked`` may be shorter, when there are fewer
            documents).

    Returns:
        ``{"mrr@k": rr, "ndcg@k": ..., "recall@1": ..., "recall@k": ...}``, each float64 (m,) in [0, 1].

    Raises:
        DataError: a query without a relevant row, or the counts differ.
    """
    ranked = np.asarray(ranked, dtype=np.int64)
    if ranked.ndim != 2 or len(ranked) != len(relevant):
        raise DataError(f"{len(relevant)} relevant sets for ranked lists of shape {ranked.shape}")
    m = len(relevant)
    top = ranked[:, :k]
    discounts = 1.0 / np.log2(np.arange(2, k + 2, dtype=np.float64))
    out = {name: np.zeros(m, dtype=np.float64) for name in (f"mrr@{k}", f"ndcg@{k}", "recall@1", f"recall@{k}")}
    for i, rel in enumerate(relevant):
        rset = {int(r) for r in rel}
        if not rset:
            raise DataError(f"query {i} has no relevant document")
        hits = np.fromiter((int(r) in rset for r in top[i]), dtype=bool, count=top.shape[1])
        if hits.any():
            out[f"mrr@{k}"][i] = 1.0 / (int(np.argmax(hits)) + 1)
        out[f"ndcg@{k}"][i] = float(discounts[: len(hits)][hits].sum() / discounts[: min(len(rset), k)].sum())
        out["recall@1"][i] = float(hits[:1].sum()) / len(rset)
        out[f"recall@{k}"][i] = float(hits.sum()) / len(rset)
    return out


@dataclass
class RetrievalQuality:
    """One candidate's search quality on the queries.

    Attributes:
        scores: score name (:data:`RETRIEVAL_SCORES`) -> mean over the queries, in [0, 1].
        intervals: score name -> (lo, hi) percentile bootstrap interval at ``level`` (queries resampled with
            replacement; (nan, nan) with ``n_boot`` 0).
        per_query: score name -> float64 (m,) per-query values (not serialised by :meth:`to_dict`).
        n_queries, n_documents: the sizes searched.
    """

    scores: dict[str, float]
    intervals: dict[str, tuple[float, float]]
    n_queries: int
    n_documents: int
    per_query: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON form: ``{score: value, score_lo: ..., score_hi: ..., "n_queries": m, "n_documents": n}`` (NaN as
        None)."""
        def num(v: float) -> float | None:
            return float(v) if math.isfinite(v) else None

        out: dict[str, Any] = {}
        for name, v in self.scores.items():
            lo, hi = self.intervals.get(name, (math.nan, math.nan))
            out.update({name: num(v), f"{name}_lo": num(lo), f"{name}_hi": num(hi)})
        return {**out, "n_queries": self.n_queries, "n_documents": self.n_documents}


def retrieval_quality(query_vectors: Any, doc_vectors: Any, relevant: Sequence[Sequence[int]], *, k: int = K,
                      n_boot: int = 1000, level: float = 0.9, seed: int = 0) -> RetrievalQuality:
    """Search the documents with each query and score the lists (see the module docstring for the definitions).

    Args:
        query_vectors: float (m, d); doc_vectors: float (n, d), the same space.
        relevant: m non-empty lists of document rows in [0, n).
        k: cut-off (10: the scores are named ``mrr@10`` ...).
        n_boot: bootstrap replicates over the queries (0: no intervals); ``level``: their coverage; ``seed``: the
            resampling seed (the same seed draws the same query resamples for every candidate, so their intervals
            are paired).

    Raises:
        DataError: a relevant row outside the documents, a query without a relevant row, shapes that differ.
        ConfigError: bad ``k``, ``n_boot`` or ``level``.
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ConfigError(f"k must be a positive integer, got {k!r}")
    check_bootstrap(n_boot, level, min_boot=0)
    n = int(np.asarray(doc_vectors).shape[0]) if np.ndim(doc_vectors) == 2 else 0
    for i, rel in enumerate(relevant):
        bad = [int(r) for r in rel if not 0 <= int(r) < n]
        if bad:
            raise DataError(f"query {i}: relevant row {bad[0]} is not one of the {n} documents")
    ranked = search_ranks(query_vectors, doc_vectors, k)
    if len(ranked) != len(relevant):
        raise DataError(f"{len(ranked)} query vectors but {len(relevant)} relevant sets")
    per_query = query_scores(ranked, relevant, k)
    m = len(relevant)
    means = {name: float(v.mean()) for name, v in per_query.items()}
    intervals: dict[str, tuple[float, float]] = {name: (math.nan, math.nan) for name in per_query}
    if n_boot:
        rng = np.random.default_rng(seed)
        boot = {name: np.empty(n_boot) for name in per_query}
        step = max(1, (1 << 22) // max(m, 1))  # replicates per block: at most ~4M indices in memory
        for start in range(0, n_boot, step):
            idx = rng.integers(0, m, size=(min(step, n_boot - start), m))
            for name, v in per_query.items():
                boot[name][start:start + len(idx)] = v[idx].mean(axis=1)
        intervals = {name: percentile_interval(b, level) for name, b in boot.items()}
    return RetrievalQuality(scores=means, intervals=intervals, n_queries=m, n_documents=n, per_query=per_query)

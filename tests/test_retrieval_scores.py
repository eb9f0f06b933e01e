"""Retrieval scores (pure arrays): MRR@10, nDCG@10, recall@1/@10 and their bootstrap over queries (issue 43)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from embedselect.errors import DataError
from embedselect.validation.retrieval import query_scores, retrieval_quality, search_ranks


# --- pure scores -------------------------------------------------------------------------------------------------
def test_each_score_on_lists_worked_by_hand():
    ranked = np.array([[3, 1, 2], [0, 1, 2], [4, 0, 1]])
    relevant = [[1], [5], [4, 1]]
    s = query_scores(ranked, relevant, k=3)
    assert s["mrr@3"].tolist() == [0.5, 0.0, 1.0]
    assert s["recall@1"].tolist() == [0.0, 0.0, 0.5]
    assert s["recall@3"].tolist() == [1.0, 0.0, 1.0]
    # query 0: one relevant at position 2 -> (1/log2 3) / 1; query 2: relevant at 1 and 3 of 2 relevant
    ideal2 = 1 + 1 / math.log2(3)
    assert s["ndcg@3"] == pytest.approx([1 / math.log2(3), 0.0, (1 + 1 / math.log2(4)) / ideal2])


def test_a_query_beside_its_document_scores_one_and_random_vectors_score_low():
    rng = np.random.default_rng(0)
    docs = rng.standard_normal((200, 16))
    relevant = [[i] for i in range(0, 200, 2)]
    near = docs[::2] + 0.01 * rng.standard_normal((100, 16))
    good = retrieval_quality(near, docs, relevant, seed=1)
    assert good.scores == {"mrr@10": 1.0, "ndcg@10": 1.0, "recall@1": 1.0, "recall@10": 1.0}
    bad = retrieval_quality(rng.standard_normal((100, 16)), docs, relevant, seed=1)
    # 200 documents, 10 listed: chance recall@10 is 0.05
    assert bad.scores["recall@10"] < 0.2 and bad.scores["mrr@10"] < 0.1
    lo, hi = bad.intervals["mrr@10"]
    assert lo <= bad.scores["mrr@10"] <= hi and hi > lo


def test_ties_list_the_lower_document_row_first():
    docs = np.ones((30, 4), dtype=np.float32)
    assert search_ranks(np.ones((2, 4)), docs).tolist() == [list(range(10))] * 2
    q = retrieval_quality(np.ones((3, 4)), docs, [[0], [4], [12]], n_boot=0)
    assert q.scores["mrr@10"] == pytest.approx((1 + 1 / 5 + 0) / 3)
    assert all(math.isnan(v) for v in q.intervals["mrr@10"])


def test_bootstrap_over_queries_is_seeded():
    rng = np.random.default_rng(3)
    docs, queries = rng.standard_normal((50, 8)), rng.standard_normal((40, 8))
    rel = [[int(i)] for i in rng.integers(0, 50, 40)]
    a = retrieval_quality(queries, docs, rel, seed=7).intervals
    assert a == retrieval_quality(queries, docs, rel, seed=7).intervals
    assert a != retrieval_quality(queries, docs, rel, seed=8).intervals


def test_bad_arrays_are_typed_errors():
    docs = np.zeros((5, 3))
    with pytest.raises(DataError, match="relevant row 7"):
        retrieval_quality(np.ones((1, 3)), docs, [[7]])
    with pytest.raises(DataError, match="no relevant"):
        query_scores(np.array([[0]]), [[]])
    with pytest.raises(DataError, match="same width"):
        search_ranks(np.ones((1, 4)), docs)

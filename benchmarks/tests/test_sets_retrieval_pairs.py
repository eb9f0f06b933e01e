"""The pairs-to-set rule of the retrieval sets (benchmarks/sets/retrieval_pairs.py)."""

from benchmarks.sets.retrieval_pairs import from_pairs


def test_pairs_become_documents_queries_and_relevant_rows():
    pairs = [("hi", "hello there"), ("hi", "good day"), ("bye", "see you"), ("see you", "see you")]
    docs, queries, rel = from_pairs(pairs)
    assert docs == ["hello there", "good day", "see you"]
    assert queries == ["hi", "bye"]  # a query equal to its own document is dropped
    assert rel == [[0, 1], [2]]

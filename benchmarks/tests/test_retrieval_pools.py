"""The retrieval sets' pool folders (benchmarks/retrieval_pools.py): the int8 copies calibrated on the documents only."""

import numpy as np

from benchmarks.retrieval_pools import int8_on_docs


def test_int8_is_calibrated_on_the_documents_only():
    rng = np.random.default_rng(0)
    docs = rng.normal(size=(50, 4)).astype(np.float32)
    queries = np.vstack([docs.max(axis=0) + 5, docs.min(axis=0) - 5])  # outside the documents' range
    out = int8_on_docs(np.vstack([docs, queries]), 50)
    assert out.dtype == np.float32 and out.min() >= -128 and out.max() <= 127
    assert np.array_equal(out[:50], int8_on_docs(docs, 50))  # the queries change nothing of the documents
    assert (out[50] == 127).all() and (out[51] == -128).all()  # clipped to the documents' range

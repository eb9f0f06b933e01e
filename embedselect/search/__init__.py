"""Use the winner: a FAISS index of the reference data under one candidate, and queries against it; and the
side-by-side neighbour view of several candidates.

``build_index(data, model, out=DIR)`` reads the candidate's vectors of ``data`` from the cache (embedding only
what is missing, through :func:`embedselect.pipeline.embed`), and writes to ``DIR``::

    manifest.json   format, candidate (name, spec, model id, pinned revision, backend, options, seed), run key,
                    data fingerprint / modality / source, n, dim, metric, index type, versions, file sha256s
    index.faiss     the FAISS index (row i = reference item i); cosine: rows L2-normalised, inner product
    rows.jsonl      one JSON object per row: {"row": i, "id": item id, "item": text or image path}
    baseline.npz    only for a fitted baseline (tfidf-svd, pixel-pca): its fit on the reference data as numpy
                    arrays (no pickle), so that queries are embedded exactly as the items were, with no refit

``SearchIndex.load(DIR)`` checks every file against the manifest and, when asked, that the model and the data
are the ones it was built from (:class:`~embedselect.errors.IndexMismatchError` otherwise);
``SearchIndex.search(["query text"])`` embeds the queries with the same model at the same revision (refusing a
model whose files changed) and returns the nearest items.

This package is orchestration: it knows the store, the backends and the metrics, like :mod:`embedselect.pipeline`.
Modules: :mod:`~embedselect.search.manifest` (the index files), :mod:`~embedselect.search.build` (building),
:mod:`~embedselect.search.index` (loading, checking, searching), :mod:`~embedselect.search.neighbour_view`.
"""

from embedselect.search.build import best_candidate, build_index
from embedselect.search.index import Hit, SearchIndex, search
from embedselect.search.manifest import (
    FIT_CHECK_ROWS,
    FIT_FILE,
    INDEX_FILE,
    INDEX_FORMAT,
    MANIFEST,
    ROWS_FILE,
    IndexManifest,
)
from embedselect.search.neighbour_view import NeighbourView, neighbours_view

__all__ = ["Hit", "IndexManifest", "NeighbourView", "SearchIndex", "best_candidate", "build_index",
           "neighbours_view", "search", "FIT_CHECK_ROWS", "FIT_FILE", "INDEX_FILE", "INDEX_FORMAT", "MANIFEST",
           "ROWS_FILE"]

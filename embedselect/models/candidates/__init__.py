"""Candidates: what the user asks to rank, and how each one is pinned to an exact model revision.

A candidate spec is one of (comma-separated in one string, or a list):

- a hub repo id ``org/name`` with optional ``@revision`` (branch, tag or commit sha); ``hf:org/name`` and
  ``https://huggingface.co/org/name`` are accepted too;
- an existing local model directory (absolute, relative, or ``~``-prefixed; ``local:PATH`` forces it);
- a baseline: ``tfidf-svd``, ``random-projection``, ``pixel-pca`` (optionally ``baseline:NAME``);
- a catalog: ``catalog:text``, ``catalog:image`` (shipped lists) or ``catalog:/path/to/list.yaml``;
- precomputed vectors, named: ``NAME=vectors:PATH`` (a ``.npy`` or ``.parquet`` file; see
  :meth:`Candidate.from_vectors`).

From Python a candidate may also be an embedder object (``encode(items, batch_size)``, a ``SentenceTransformer``, or
a callable ``items -> array``; see :meth:`Candidate.from_embedder`) or a :class:`Candidate` built with ``embedder=``
or :meth:`Candidate.from_vectors`.

Any spec may carry backend options as a query string: ``BAAI/bge-small-en-v1.5?backend=transformers&pooling=cls&max_length=256``,
``tfidf-svd?dim=128``, and a backend with ``backend=``: ``org/name?backend=transformers``.

This module imports no torch; hashing a local directory and reading YAML are the heaviest things it does.
The package is split by concern: :mod:`~embedselect.models.candidates.model` (the data classes),
:mod:`~embedselect.models.candidates.spec` (one spec string), :mod:`~embedselect.models.candidates.catalogs` (catalog files),
:mod:`~embedselect.models.candidates.parse` (a list of specs) and :mod:`~embedselect.models.candidates.resolve` (pinning a
candidate to exact bytes). Import from ``embedselect.models.candidates``; the names below are its public API.

It imports no torch; hashing a local directory and reading YAML are the heaviest things it does.
"""

from embedselect.models.candidates.catalogs import (
    CATALOG_SCHEMA_VERSION,
    available_catalogs,
    catalog_dirs,
    load_catalog,
    read_catalog,
)
from embedselect.models.candidates.model import Candidate, FrozenOptions, ResolvedCandidate
from embedselect.models.candidates.parse import input_files, parse_candidates
from embedselect.models.candidates.resolve import (
    infer_backend,
    infer_modality,
    local_dir_revision,
    resolve_candidate,
)
from embedselect._util.kinds import BACKENDS, BASELINES, MODALITIES

__all__ = [
    "BACKENDS",
    "BASELINES",
    "CATALOG_SCHEMA_VERSION",
    "MODALITIES",
    "Candidate",
    "FrozenOptions",
    "ResolvedCandidate",
    "available_catalogs",
    "catalog_dirs",
    "infer_backend",
    "infer_modality",
    "input_files",
    "load_catalog",
    "local_dir_revision",
    "parse_candidates",
    "read_catalog",
    "resolve_candidate",
]

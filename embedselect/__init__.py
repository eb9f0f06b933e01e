"""embedselect: rank embedding models on your own data, label-free.

Public API::

    import embedselect
    ranking = embedselect.select("my_texts.csv", ["sentence-transformers/all-MiniLM-L6-v2", "tfidf-svd"],
                                 column="text")
    ranking.best.name, ranking.to_pandas(), ranking.to_json()

Heavy modules (torch, transformers) are imported only when used.
"""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING, Any

from embedselect.errors import (
    AllCandidatesFailedError,
    CacheCorruptError,
    CandidateError,
    CandidatesFailedError,
    CandidateSpecError,
    ColumnNotFoundError,
    ConfigError,
    DataError,
    DataFileNotFoundError,
    DecodeError,
    EmbedselectError,
    EmptyDataError,
    HubError,
    IndexMismatchError,
    MetricError,
    MissingExtraError,
    ModelFileError,
    ModelLoadError,
    ModelTimeoutError,
    NightlyEmptyError,
    NightlyLockedError,
    RankingFormatError,
    SearchIndexError,
    StoreCorruptError,
    StoreError,
    StoreLockedError,
    StoreReadOnlyError,
    TooFewItemsError,
    UnknownMetricError,
    UnsafeModelError,
    UnsupportedFormatError,
)
from embedselect.models.policy import LoadPolicy
from embedselect.version import __version__

# a library never prints: without a handler, logging's last resort would write warnings to stderr
logging.getLogger(__name__).addHandler(logging.NullHandler())

_LAZY = {
    "select": "embedselect.pipeline",
    "embed": "embedselect.pipeline",
    "Ranking": "embedselect.ranking.result",
    "CandidateResult": "embedselect.ranking.result",
    "RankingWarning": "embedselect.ranking.result",
    "ReferenceData": "embedselect.data",
    "Candidate": "embedselect.models.candidates",
    "Store": "embedselect.store",
}

if TYPE_CHECKING:  # what _LAZY serves, visible to type checkers and IDEs (tests/test_packaging.py keeps them equal)
    from embedselect.pipeline import embed, select
    from embedselect.models.candidates import Candidate
    from embedselect.data import ReferenceData
    from embedselect.ranking.result import CandidateResult, Ranking, RankingWarning
    from embedselect.store import Store

__all__ = [
    "AllCandidatesFailedError",
    "CacheCorruptError",
    "Candidate",
    "CandidateError",
    "CandidatesFailedError",
    "CandidateResult",
    "CandidateSpecError",
    "ColumnNotFoundError",
    "ConfigError",
    "DataError",
    "DataFileNotFoundError",
    "DecodeError",
    "EmbedselectError",
    "EmptyDataError",
    "HubError",
    "IndexMismatchError",
    "LoadPolicy",
    "MetricError",
    "MissingExtraError",
    "ModelFileError",
    "ModelLoadError",
    "ModelTimeoutError",
    "NightlyEmptyError",
    "NightlyLockedError",
    "Ranking",
    "RankingFormatError",
    "RankingWarning",
    "ReferenceData",
    "SearchIndexError",
    "Store",
    "StoreCorruptError",
    "StoreError",
    "StoreLockedError",
    "StoreReadOnlyError",
    "TooFewItemsError",
    "UnknownMetricError",
    "UnsafeModelError",
    "UnsupportedFormatError",
    "__version__",
    "embed",
    "select",
]
"""Sorted; the lazy exports (``_LAZY``) are written out too, so that type checkers read a static list (a test keeps
the two equal)."""


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'embedselect' has no attribute {name!r}")

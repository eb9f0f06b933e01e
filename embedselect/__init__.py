"""embedselect: rank embedding models on your own data, label-free.

Public API::

    import embedselect
    ranking = embedselect.select("my_texts.csv", ["sentence-transformers/all-MiniLM-L6-v2", "tfidf-svd"],
                                 column="text")
    ranking.best.name, ranking.to_pandas(), ranking.to_json()

    config = embedselect.RankConfig(column="text", max_items=2000, seed=1)   # the same settings as an object
    ranking = embedselect.select("my_texts.csv", "catalog:text", config=config)

The names here are the whole public surface of the package: the entry points (:func:`select`, :func:`embed`), the
result types, the data and candidate types, the run configuration (:class:`RankConfig`, :class:`Runtime`,
:class:`LoadPolicy`) and the error categories (every error class is in :mod:`embedselect.errors`). Heavy modules
(torch, transformers) are imported only when used; so is everything here but the errors.
"""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING, Any

from embedselect.errors import (
    CacheError,
    CandidateError,
    ConfigError,
    DataError,
    EmbedselectError,
    HubError,
    MetricError,
)
from embedselect.version import __version__

# a library never prints: without a handler, logging's last resort would write warnings to stderr
logging.getLogger(__name__).addHandler(logging.NullHandler())

_LAZY = {
    "select": "embedselect.pipeline",
    "ask": "embedselect.pipeline",
    "embed": "embedselect.pipeline",
    "Ranking": "embedselect.ranking.result",
    "CandidateResult": "embedselect.ranking.result",
    "RankingWarning": "embedselect.ranking.result",
    "ReferenceData": "embedselect.data",
    "Candidate": "embedselect.models.candidates",
    "RankConfig": "embedselect.config",
    "Runtime": "embedselect.config",
    "LoadPolicy": "embedselect.config",
}

if TYPE_CHECKING:  # what _LAZY serves, visible to type checkers and IDEs (tests/test_packaging.py keeps them equal)
    from embedselect.pipeline import ask, embed, select
    from embedselect.ranking.result import CandidateResult, Ranking, RankingWarning
    from embedselect.data import ReferenceData
    from embedselect.models.candidates import Candidate
    from embedselect.config import LoadPolicy, RankConfig, Runtime

__all__ = [
    "CacheError",
    "Candidate",
    "CandidateError",
    "CandidateResult",
    "ConfigError",
    "DataError",
    "EmbedselectError",
    "HubError",
    "LoadPolicy",
    "MetricError",
    "RankConfig",
    "Ranking",
    "RankingWarning",
    "ReferenceData",
    "Runtime",
    "__version__",
    "ask",
    "embed",
    "select",
]
"""Sorted; the lazy exports (``_LAZY``) are written out too, so that type checkers read a static list (a test keeps
the two equal)."""


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'embedselect' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public names (``__all__``), so that ``dir(embedselect)`` and completion list ``select`` before it is
    imported."""
    return sorted(__all__)

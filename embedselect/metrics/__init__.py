"""Label-free metrics on embedding matrices (pure numpy / torch; no store, no backends).

Public functions are imported lazily so that ``import embedselect.metrics`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

from embedselect.metrics.base import (
    MetricContext,
    MetricResult,
    MemoryPairCache,
    PairCache,
    available_metrics,
    get_metric,
)

_LAZY = {
    # task priors (issue 3)
    "task_prior_moments": "embedselect.metrics.task_prior.score",
    "sample_tasks": "embedselect.metrics.task_prior.score",
    "centered_cosine_kernel": "embedselect.metrics.kernels",
    # information sufficiency (issue 4)
    "information_sufficiency": "embedselect.metrics.sufficiency.score",
    # nearest-neighbour metrics (the k-NN primitives themselves: embedselect.nn.knn)
    "knn_predict": "embedselect.metrics.neighbours",
    "mutual_knn_agreement": "embedselect.metrics.neighbours",
}

__all__ = [
    "MetricContext",
    "MetricResult",
    "MemoryPairCache",
    "PairCache",
    "available_metrics",
    "get_metric",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'embedselect.metrics' has no attribute {name!r}")

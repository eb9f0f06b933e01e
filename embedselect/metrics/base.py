"""The contract between the orchestration (``embedselect.api``) and the metrics.

Metrics are pure array code: they never import the store, the backends or the hub. ``select()``
builds a :class:`MetricContext` from cached embeddings and calls the metric's ``compute`` function,
which returns a :class:`MetricResult`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol

import numpy as np


class PairCache(Protocol):
    """Key-value cache for pairwise metric values, persisted by the store.

    Keys are opaque strings built by the metric (e.g. a hash of the two embedding run keys and the
    estimator settings); values are JSON-serialisable dicts.
    """

    def get_many(self, keys: list[str]) -> dict[str, dict[str, Any]]: ...

    def put_many(self, items: Mapping[str, dict[str, Any]]) -> None: ...


@dataclass(frozen=True)
class MetricContext:
    """Everything a metric may read.

    Attributes:
        embeddings: candidate key -> float32 array of shape (n, d_candidate). All arrays share the
            same n and the same row order (row i is reference item i).
        run_keys: candidate key -> content key of the embedding run (stable across processes; use it to
            key cached pairwise results).
        seed: root seed; derive every random choice from it.
        options: metric-specific options given by the user (``select(..., metric_options={name: {...}})``).
        labels: optional length-n array of labels. Label-free metrics must not read it unless the user
            explicitly asked for a label prior (``options['prior'] == 'labels'``).
        pair_cache: optional persistent cache for pairwise values.
        device: "cpu" or "cuda[:k]"; metrics may use torch on this device.
    """

    embeddings: Mapping[str, np.ndarray]
    run_keys: Mapping[str, str]
    seed: int = 0
    options: Mapping[str, Any] = field(default_factory=dict)
    labels: np.ndarray | None = None
    pair_cache: PairCache | None = None
    device: str = "cpu"


@dataclass
class MetricResult:
    """What a metric returns.

    Attributes:
        name: metric name ("task_prior", "sufficiency", ...).
        scores: candidate key -> headline score. **Higher is better**; used for the metric's rank.
        columns: extra per-candidate numbers, column name -> {candidate key: value}
            (e.g. ``{"task_prior_var": {...}, "probe_acc_p05": {...}}``). Shown in tables and JSON.
        details: JSON-serialisable extras (settings used, prior used, pairwise matrix, communities,
            warnings such as "pool is small").
        intervals: optional candidate key -> (low, high) confidence interval of the headline score.
    """

    name: str
    scores: dict[str, float]
    columns: dict[str, dict[str, float]] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    intervals: dict[str, tuple[float, float]] = field(default_factory=dict)


MetricFn = Callable[[MetricContext], MetricResult]

# name -> "module:function". Imported lazily so that a metric's import cost (torch, networkx) is only
# paid when it is used.
_REGISTRY: dict[str, str] = {
    "task_prior": "embedselect.metrics.taskprior:compute",
    "sufficiency": "embedselect.metrics.sufficiency:compute",
    # label-free comparators from the literature (docs/benchmarks.md §4)
    "rankme": "embedselect.metrics.spectral:compute_rankme",
    "alpha_req": "embedselect.metrics.spectral:compute_alpha_req",
    "uniformity": "embedselect.metrics.spectral:compute_uniformity",
    "nn_agreement": "embedselect.metrics.agreement:compute",
}

# Minimum number of reference items each metric needs (checked before embedding anything).
MIN_ITEMS: dict[str, int] = {
    "task_prior": 20,
    "sufficiency": 50,
    "rankme": 2,
    "alpha_req": 2,
    "uniformity": 2,
    "nn_agreement": 3,
}


def available_metrics() -> list[str]:
    return list(_REGISTRY)


def get_metric(name: str) -> MetricFn:
    """Return the ``compute`` function of metric ``name``.

    Raises:
        UnknownMetricError: ``name`` is not registered.
    """
    import importlib

    from embedselect.errors import UnknownMetricError

    try:
        target = _REGISTRY[name]
    except KeyError:
        raise UnknownMetricError(
            f"unknown metric {name!r}; available: {', '.join(sorted(_REGISTRY))}"
        ) from None
    module, func = target.split(":")
    return getattr(importlib.import_module(module), func)

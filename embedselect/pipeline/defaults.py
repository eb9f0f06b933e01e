"""The default combination for each kind of data: the weights, the combination method and the metric options a
ranking uses where the user gives none. One place for this rule; ``select()``, the nightly job, the Ray pair
precompute and ``embedselect metrics`` all read it here.

Text keeps the registry's weights (:class:`embedselect.metrics.base.MetricSpec`: task_prior 1, sufficiency 0.25;
nn_agreement, rankme and modularity 0, shown), :data:`embedselect.ranking.combine.DEFAULT_METHOD` (mean rank),
task_prior's central prior and sufficiency's KNIFE estimator: the setting chosen on the selection half of the
protocol and confirmed on the confirmation half (docs/validity.md, "Protocol").

Images use task_prior 1 on *cluster tasks* with each candidate left out of its own prior (``tasks="clusters"``,
``leave_self_out``: probes on the central prior's k-means partitions into 4, 8 and 16 classes, 32 partitions of each,
``cluster_restarts``; docs/task_prior.md), sufficiency 0.25 with the Gaussian estimator, nn_agreement 0.5, rankme 0.5
and modularity 0.5, combined by mean rank: the setting the leave-one-dataset-out *within* the image datasets chose
most often. Held out it scores 0.801 mean ρ over 6 datasets and 12 views, every view ≥ 0.6 (lowest digits/all 0.61),
regret ≤ 0.02 on 85 % of (view, seed) pairs.

The protocol, the targets and these numbers: docs/validity.md, "Where it stands" and "Current defaults".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from embedselect.ranking.combine import DEFAULT_METHOD
from embedselect._util.kinds import IMAGE
from embedselect.metrics.base import get_spec


@dataclass(frozen=True)
class ModalityDefaults:
    """What differs from the registry's defaults for one modality: ``weights`` (metric -> weight, overriding the
    specs' weights), ``method`` (``mean-rank`` or ``mean-z``) and ``options`` (metric -> default options, under the
    user's own)."""

    weights: Mapping[str, float] = field(default_factory=dict)
    method: str = DEFAULT_METHOD
    options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


BY_MODALITY: dict[str, ModalityDefaults] = {
    IMAGE: ModalityDefaults(weights={"task_prior": 1.0, "sufficiency": 0.25, "nn_agreement": 0.5, "rankme": 0.5,
                                     "modularity": 0.5},
                            method="mean-rank",
                            options={"sufficiency": {"estimator": "gaussian"},
                                     "task_prior": {"tasks": "clusters", "leave_self_out": True,
                                                    "cluster_restarts": 32}}),
}
"""Modalities whose defaults differ from the registry's (see the module docstring); any other uses the registry's."""


def _of(modality: str | None) -> ModalityDefaults:
    return BY_MODALITY.get(modality or "", ModalityDefaults())


def default_weight(metric: str, modality: str | None) -> float:
    """The weight ``metric`` has in the combined score for data of ``modality`` when the user names none."""
    got = _of(modality).weights.get(metric)
    return float(get_spec(metric).weight if got is None else got)


def weight_of(metric: str, modality: str | None, user: Mapping[str, float] | None = None) -> float:
    """``metric``'s weight in a run's combined score: the user's (``weights=``) where given, else the default."""
    got = (user or {}).get(metric)
    return default_weight(metric, modality) if got is None else float(got)


def combined_weights(metrics: Sequence[str], modality: str | None,
                     user: Mapping[str, float] | None = None) -> dict[str, float]:
    """The weights of a run's combined score over ``metrics``, the metrics that produced scores: the one place that
    decides them (the rank stage combines with them, the metrics stage reads them to tell a weight-0 metric's moot
    warnings, ``settings["combined_weights"]`` records them).

    Each metric has the user's weight (``weights=``) where given, else its default (:func:`weight_of`). When none
    of ``metrics`` has a positive weight (only metrics that are shown, not combined, were asked for, or every metric
    with a weight failed), each gets weight 1: they are what the score can be made of.
    """
    weights = {m: weight_of(m, modality, user) for m in metrics}
    if not any(weights.values()):
        weights = {m: 1.0 for m in weights}
    return weights


def default_method(modality: str | None) -> str:
    """The combination method (``mean-rank`` / ``mean-z``) for data of ``modality``."""
    return _of(modality).method


def metric_options(user: Mapping[str, Mapping[str, Any]] | None, modality: str | None) -> dict[str, dict[str, Any]]:
    """The metric options of a run: the modality's defaults, under the user's own option by option."""
    out = {m: dict(o) for m, o in _of(modality).options.items()}
    for m, o in (user or {}).items():
        out.setdefault(m, {}).update(o)
    return out


__all__ = ["BY_MODALITY", "ModalityDefaults", "combined_weights", "default_method", "default_weight", "metric_options", "weight_of"]

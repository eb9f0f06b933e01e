"""The names of a metric's options where they are not one mapping of option defaults, for the registry's check of a
run's options before any embedding (:attr:`~embedselect.metrics.base.MetricSpec.options`).

Outside the metrics' own packages on purpose: naming options changes nothing a metric computes, so this module is in
no metric's code version (:meth:`~embedselect.metrics.base.MetricSpec.code_version`) and editing it keeps every cached
metric result.
"""

from __future__ import annotations

from typing import Any, Mapping

SUFFICIENCY_OPTIONS = ("estimator", "targets", "pairs")
"""sufficiency's options that are not an estimator's settings (split from them by
:func:`embedselect.metrics.sufficiency.pairs.estimator_options`)."""


def sufficiency(options: Mapping[str, Any]) -> frozenset[str]:
    """The options sufficiency takes alongside ``options``: :data:`SUFFICIENCY_OPTIONS`, the run options of
    :func:`~embedselect.metrics.sufficiency.score.compute` (``batched``, ``max_batch_bytes``) and the settings of the
    estimator ``options`` name (:class:`~embedselect.metrics.sufficiency.settings.SufficiencySettings` for KNIFE,
    :class:`~embedselect.metrics.sufficiency.gaussian.GaussianSettings` for the Gaussian one), or of either when they
    name none (the data's kind chooses the default estimator, :mod:`embedselect.pipeline.defaults`)."""
    import dataclasses

    from embedselect.metrics.sufficiency.gaussian import GaussianSettings
    from embedselect.metrics.sufficiency.settings import RUN_OPTIONS, SufficiencySettings

    settings = {"knife": SufficiencySettings, "gaussian": GaussianSettings}
    chosen = options.get("estimator")
    classes = [settings[chosen]] if chosen in settings else list(settings.values())
    return frozenset([*SUFFICIENCY_OPTIONS, *RUN_OPTIONS, *(f.name for c in classes for f in dataclasses.fields(c))])

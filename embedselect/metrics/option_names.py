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


ESTIMATOR_NAMES = {"knife": "KNIFE", "gaussian": "Gaussian"}
"""sufficiency's estimators (the ``estimator`` option's values) as messages name them."""


def _estimator_settings() -> dict[str, frozenset[str]]:
    """Each sufficiency estimator's settings by name (:class:`~embedselect.metrics.sufficiency.settings.
    SufficiencySettings` for KNIFE, :class:`~embedselect.metrics.sufficiency.gaussian.GaussianSettings`)."""
    import dataclasses

    from embedselect.metrics.sufficiency.gaussian import GaussianSettings
    from embedselect.metrics.sufficiency.settings import SufficiencySettings

    return {"knife": frozenset(f.name for f in dataclasses.fields(SufficiencySettings)),
            "gaussian": frozenset(f.name for f in dataclasses.fields(GaussianSettings))}


def sufficiency(options: Mapping[str, Any]) -> frozenset[str]:
    """The options sufficiency takes alongside ``options``: :data:`SUFFICIENCY_OPTIONS`, the run options of
    :func:`~embedselect.metrics.sufficiency.score.compute` (``batched``, ``max_batch_bytes``) and the settings of the
    estimator ``options`` name (:func:`_estimator_settings`), or of either when they name none (the data's kind
    chooses the default estimator, :mod:`embedselect.pipeline.defaults`)."""
    from embedselect.metrics.sufficiency.settings import RUN_OPTIONS

    settings = _estimator_settings()
    chosen = options.get("estimator")
    names = settings[chosen] if chosen in settings else frozenset().union(*settings.values())
    return frozenset([*SUFFICIENCY_OPTIONS, *RUN_OPTIONS, *names])


def misplaced(metric: str, option: str, options: Mapping[str, Any]) -> str | None:
    """Why ``metric`` refuses ``option`` alongside ``options`` when it is no typo, as the end of a sentence about
    it: a setting of sufficiency's other estimator ("belongs to the KNIFE estimator (estimator='knife') and has no
    effect with the Gaussian one (estimator='gaussian'): ..."); None for any other option (a typo: the caller
    suggests the close name instead)."""
    if metric != "sufficiency":
        return None
    settings = _estimator_settings()
    chosen = options.get("estimator")
    owner = next((e for e, names in settings.items() if e != chosen and option in names), None)
    if chosen not in settings or owner is None:
        return None
    return (f"belongs to the {ESTIMATOR_NAMES[owner]} estimator (estimator={owner!r}) and has no effect with the "
            f"{ESTIMATOR_NAMES[chosen]} one (estimator={chosen!r}): leave it out, or choose estimator={owner!r}")


def call_defaults(metric: str) -> Mapping[str, Any]:
    """The options ``metric`` assumes when a call names none, for checking a call's options
    (:class:`~embedselect.metrics.base.CheckedMetric`): sufficiency's estimator
    (:data:`~embedselect.metrics.sufficiency.pairs.DEFAULT_ESTIMATOR`); none for the other metrics."""
    if metric != "sufficiency":
        return {}
    from embedselect.metrics.sufficiency.pairs import DEFAULT_ESTIMATOR

    return {"estimator": DEFAULT_ESTIMATOR}

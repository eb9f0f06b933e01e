"""Which directed pairs the sufficiency metric estimates: the metric's options that are not the estimator's
(:func:`estimator_options`), the pairs its scores read (:func:`scored_targets`), and the selector both the metric
and the pair precompute use (:func:`selector`, :func:`pairs_of`)."""

from __future__ import annotations

from typing import Any, Callable, Collection, Mapping, Sequence

from embedselect.errors import ConfigError
from embedselect.metrics.base import compared_with, evidence


ESTIMATORS = ("gaussian", "knife")
"""``gaussian``: a linear-Gaussian conditional, cross-fitted (:mod:`embedselect.metrics.sufficiency.gaussian`);
``knife``: the KNIFE mixtures of the paper, trained per pair with held-out splits (:mod:`embedselect.metrics.sufficiency.knife`)."""
DEFAULT_ESTIMATOR = "knife"

PAIRS = ("scored", "all")
"""The metric's ``pairs`` option (KNIFE estimator): ``scored`` (default) trains only the directed pairs some score
reads (:func:`scored_targets`), ``all`` every pair of the pool (the whole matrix; Louvain communities need it). With
``targets="all"`` every pair is trained either way; the Gaussian estimator always computes its whole matrix."""


def scored_targets(keys: Sequence[str], references: frozenset[str] | set[str],
                   families: Mapping[str, str] | None) -> dict[str, list[str]]:
    """Which pairs the sufficiency scores read: each candidate of ``keys`` -> the candidates whose IS from it its score
    is the median of, the witnesses it is compared with (:func:`~embedselect.metrics.pool.evidence`,
    :func:`~embedselect.metrics.pool.compared_with`). Every other directed pair (towards a reference point that is not
    evidence, a copy, or the candidate's own family) only fills other cells of the matrix. ``keys``: the usable
    candidates in the order the metric receives them (after leaving degenerate ones out: that can change the
    witnesses)."""
    keys = list(keys)
    heads = evidence(keys, references, families)
    return {k: [keys[j] for j in compared_with(keys, i, heads, families)] for i, k in enumerate(keys)}


PairSelector = Callable[[list[str]], Collection[tuple[str, str]]]
"""The usable candidates' names -> the directed pairs (source, target) among them to estimate."""


def selector(options: Mapping[str, Any], references: frozenset[str] | set[str],
              families: Mapping[str, str] | None) -> PairSelector | None:
    """The pairs the metric with ``options`` (:func:`estimator_options`) estimates, as a function of the usable
    candidates: those its scores read (:func:`scored_targets`) for the KNIFE estimator with ``pairs="scored"`` and
    ``targets="models"``; None (every pair) otherwise."""
    estimator, _ = estimator_options(options)
    if estimator != "knife" or options.get("pairs", PAIRS[0]) != "scored" or options.get("targets", "models") != "models":
        return None

    def read(usable: list[str]) -> set[tuple[str, str]]:
        return {(s, t) for s, ts in scored_targets(usable, references, families).items() for t in ts}

    return read


def estimator_options(options: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The estimator a metric's ``options`` choose and the options that are its own: the one place that splits the
    metric's options (``targets``: whose median a score is; ``pairs``: :data:`PAIRS`; ``estimator``) from the
    estimator's settings.

    Raises:
        ConfigError: an unknown estimator, ``targets`` or ``pairs`` value.
    """
    opts = dict(options)
    estimator = opts.pop("estimator", DEFAULT_ESTIMATOR)
    if estimator not in ESTIMATORS:
        raise ConfigError(f"sufficiency option 'estimator' must be one of {', '.join(ESTIMATORS)}, got {estimator!r}")
    targets = opts.pop("targets", "models")
    if targets not in ("models", "all"):
        raise ConfigError(f"sufficiency option 'targets' must be 'models' or 'all', got {targets!r}")
    pairs = opts.pop("pairs", PAIRS[0])
    if pairs not in PAIRS:
        raise ConfigError(f"sufficiency option 'pairs' must be one of {', '.join(PAIRS)}, got {pairs!r}")
    return estimator, opts


def pairs_of(names: list[str], only: PairSelector | None) -> list[tuple[str, str]]:
    """The directed pairs among ``names`` to estimate, in the matrix's order: every pair, or those ``only`` picks."""
    every = [(s, t) for s in names for t in names if s != t]
    if only is None:
        return every
    picked = set(only(list(names)))
    return [p for p in every if p in picked]

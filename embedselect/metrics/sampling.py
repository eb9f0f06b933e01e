"""The option checks, the usable candidates and the seeded row subsample of the metrics that read a sample of the
reference items (the spectral comparators, nn_agreement, modularity): one rule for each, so the messages and the draw
are the same.

A metric that uses these lists this module in its :attr:`~embedselect.metrics.base.MetricSpec.code`, so a change
here computes its cached results again.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from embedselect.errors import ConfigError, TooFewItemsError
from embedselect.metrics.base import MIN_ITEMS, MetricContext, unusable_reason


def checked_options(metric: str, given: Mapping[str, Any], defaults: Mapping[str, Any],
                    lowest: Mapping[str, int]) -> dict[str, Any]:
    """``defaults`` updated by ``given``, after checking that ``given`` names no other option and that each option
    named in ``lowest`` is an integer (not a bool) ≥ its bound.

    Raises:
        ConfigError: an unknown option, or an integer option out of bounds (the message says which and why).
    """
    unknown = set(given) - set(defaults)
    if unknown:
        raise ConfigError(f"unknown {metric} option(s) {sorted(unknown)}; known: {', '.join(defaults)}")
    opt = {**defaults, **dict(given)}
    for name, lo in lowest.items():
        v = opt[name]
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            raise ConfigError(f"{metric} option {name!r} must be an integer ≥ {lo}, got {v!r}")
    return opt


def usable_keys(ctx: MetricContext) -> tuple[list[str], dict[str, str]]:
    """The candidates a metric can read, in ``ctx.embeddings``' order, and the others with their reasons (the one
    rule for unusable embeddings, :func:`~embedselect.metrics.base.unusable_reason`: such a candidate scores NaN)."""
    excluded = {k: why for k in ctx.embeddings if (why := unusable_reason(k, ctx.embeddings[k])) is not None}
    return [k for k in ctx.embeddings if k not in excluded], excluded


def seeded_rows(ctx: MetricContext, keys: list[str], metric: str, max_items: int, *, salt: int) -> np.ndarray:
    """The rows a metric reads: sorted int64 indices, all n of them, or a subsample of ``max_items`` drawn from
    ``ctx.seed`` and the metric's ``salt`` (the same rows for every candidate).

    Raises:
        TooFewItemsError: fewer reference items than the metric's ``min_items``.
    """
    n = int(np.shape(ctx.embeddings[keys[0]])[0])
    need = MIN_ITEMS[metric]
    if n < need:
        raise TooFewItemsError(f"{metric} needs at least {need} reference items, got {n}; add more data",
                               needed=need, got=n)
    rng = np.random.default_rng([ctx.seed, salt])
    return np.sort(rng.choice(n, size=int(max_items), replace=False)) if n > max_items else np.arange(n)

"""What both information-sufficiency estimators check first: the pool's candidates (usable or left out, and why)
and the torch device."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from embedselect._util.arrays import check_embeddings
from embedselect.errors import ConfigError, MetricError, TooFewItemsError
from embedselect.metrics.base import MIN_ITEMS as _MIN_ITEMS
from embedselect.metrics.base import unusable_reason

MIN_ITEMS = _MIN_ITEMS["sufficiency"]  # the spec's rule (metrics/base.py), named here for messages
SMALL_POOL = 4
"""With fewer usable candidates the result carries a pool warning (paper, appendix E.4)."""


def validate(embeddings: Mapping[str, Any]) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Usable candidates as float32 arrays, and the candidates left out with the reason.

    A candidate whose embeddings contain NaN/inf, or whose every item has the same embedding, is left out
    (its score is NaN and a warning names it): the others are still ranked. Shape errors, which mean the
    candidates did not embed the same items, stop the metric.
    """
    if not isinstance(embeddings, Mapping):
        raise MetricError("embeddings must be a mapping {candidate name: array of shape (n, d)}")
    out: dict[str, np.ndarray] = {}
    excluded: dict[str, str] = {}
    n = None
    for name, x in embeddings.items():
        if not isinstance(name, str) or not name:
            raise MetricError(f"candidate names must be non-empty strings, got {name!r}")
        a = check_embeddings(x, what=f"embeddings of {name!r}", finite=False, error=MetricError)  # NaN: left out below
        if n is None:
            n = a.shape[0]
        elif a.shape[0] != n:
            raise MetricError(
                f"all candidates must embed the same items: {name!r} has {a.shape[0]} rows, others {n}"
            )
        # a stored memory map is checked once per run (metrics.base.unusable_reason); anything converted, as converted
        why = unusable_reason(name, x if isinstance(x, np.memmap) and x.dtype == a.dtype else a)
        if why is not None:
            excluded[name] = why
            continue
        out[name] = a
    if n is None or len(embeddings) < 2:
        raise MetricError(
            f"information sufficiency compares candidates with each other and needs at least 2, got "
            f"{len(embeddings)}; add candidates or use another metric (e.g. task_prior)"
        )
    if n < MIN_ITEMS:
        raise TooFewItemsError(
            f"information sufficiency needs at least {MIN_ITEMS} reference items (held-out splits), "
            f"got {n}; use more data",
            needed=MIN_ITEMS,
            got=n,
        )
    return out, excluded


def too_few_usable(excluded: Mapping[str, str], usable: list[str]) -> MetricError:
    why = "; ".join(f"{k}: {v}" for k, v in excluded.items())
    return MetricError(
        f"information sufficiency needs at least 2 usable candidates, {len(usable)} left after leaving out "
        f"degenerate ones ({why})"
    )


def torch_device(device: str) -> Any:
    """``device`` as a torch device; a :class:`ConfigError` for a malformed name or CUDA that is not available."""
    import torch

    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise ConfigError(f"invalid device {device!r}: {e}") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"device {device!r} requested but CUDA is not available; use device='cpu'")
    return dev


def pool_caveats(names: list[str], excluded: Mapping[str, str]) -> tuple[list[str], str | None]:
    """The warnings of an estimate over the usable candidates ``names`` (one per candidate left out, and the pool
    warning below :data:`SMALL_POOL`), and the pool warning alone (None when the pool is large enough)."""
    warnings = [f"{k} left out of information sufficiency (score NaN): {why}" for k, why in excluded.items()]
    pool_warning = None
    if len(names) < SMALL_POOL:
        pool_warning = (
            f"small pool ({len(names)} candidates): median information sufficiency depends on the other "
            f"candidates and its rankings degrade with few of them (paper, appendix E.4); add candidates"
        )
        warnings.append(pool_warning)
    return warnings, pool_warning

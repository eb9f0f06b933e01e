"""How sure is a label-free ranking? Bootstrap over the reference items.

:func:`bootstrap_metric` recomputes a metric's headline scores on resampled reference items — the
*same* rows for every candidate in a replicate, so the comparison between candidates stays paired —
and reports, per candidate, a percentile confidence interval of the score and of the rank, and for
each adjacent pair of the point-estimate ranking whether the two are distinguishable (the interval
of their score difference excludes 0).

Two resampling schemes:

- ``"bootstrap"`` (default): n rows drawn with replacement. Fine for statistics of the kernel such as
  the Task Prior moments.
- ``"half"``: n//2 rows drawn without replacement (half-sampling, the delete-d jackknife with
  d = n/2, whose spread estimates the full-sample spread without rescaling). Use it for metrics that
  split the rows into train and test internally (information sufficiency): with replacement, copies
  of one row land on both sides and bias the estimate. Because such metrics depend on n, the
  intervals are re-centred on the point estimate: ``point + (quantile - median)`` of the replicates.

The persistent pair cache is never passed to replicates (its keys describe the full data).
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator, Mapping

import numpy as np
import pandas as pd

from embedselect.errors import ConfigError, DataError, EmbedselectError, MetricError
from embedselect.metrics.base import MetricContext, MetricResult
from embedselect.ranking.ties import order_by_score

__all__ = ["BootstrapResult", "PairComparison", "bootstrap_metric"]

log = logging.getLogger(__name__)

MAX_FAILED_FRACTION = 0.5
"""If more than this fraction of replicates raise an embedselect error, the bootstrap fails."""


@dataclass(frozen=True)
class PairComparison:
    """Two candidates adjacent in the point-estimate ranking (``upper`` scored higher).

    Attributes:
        diff: point-estimate score(upper) − score(lower), >= 0, in the metric's units.
        ci: interval of that difference at the result's level.
        p_order: fraction of replicates in which upper still scored higher than lower.
        distinguishable: False when the interval contains 0.
    """

    upper: str
    lower: str
    diff: float
    ci: tuple[float, float]
    p_order: float
    distinguishable: bool


@dataclass
class BootstrapResult:
    """Output of :func:`bootstrap_metric`.

    Attributes:
        metric: metric name.
        score_name: which score was bootstrapped (the metric's ``details['headline']`` under the
            bootstrap options, e.g. ``task_prior_alignment`` when probes are off), or the metric name.
        scores: point estimate, candidate -> headline score (higher is better).
        order: candidates best first by the point estimate (:func:`embedselect.ranking.ties.order_by_score`).
        intervals: candidate -> (low, high) score interval at ``level``.
        rank_intervals: candidate -> (low, high) rank interval (1 = best) at ``level``.
        samples: float64 array (n_valid_replicates, n_candidates) of replicate scores, columns in
            ``order``; NaN where a replicate gave no score for a candidate.
        pairs: adjacent-pair comparisons down the ranking.
        level, n_boot, seed, resample: settings; ``n_failed`` replicates raised and were skipped.
    """

    metric: str
    scores: dict[str, float]
    order: list[str]
    intervals: dict[str, tuple[float, float]]
    rank_intervals: dict[str, tuple[float, float]]
    samples: np.ndarray
    pairs: list[PairComparison]
    level: float
    n_boot: int
    seed: int
    resample: str = "bootstrap"
    n_failed: int = 0
    options: dict[str, Any] = field(default_factory=dict)
    score_name: str = ""

    @property
    def indistinguishable(self) -> list[tuple[str, str]]:
        """Adjacent pairs (upper, lower) whose order the data does not settle."""
        return [(p.upper, p.lower) for p in self.pairs if not p.distinguishable]

    def to_pandas(self) -> pd.DataFrame:
        """One row per candidate, best first: score, its interval, rank interval, and whether it is
        distinguishable from the next candidate down (NaN for the last)."""
        nxt = {p.upper: p.distinguishable for p in self.pairs}
        rows = []
        for i, c in enumerate(self.order):
            rows.append(
                {
                    "candidate": c,
                    "rank": i + 1,
                    "score": self.scores[c],
                    "score_lo": self.intervals[c][0],
                    "score_hi": self.intervals[c][1],
                    "rank_lo": self.rank_intervals[c][0],
                    "rank_hi": self.rank_intervals[c][1],
                    "distinct_from_next": nxt.get(c, np.nan),
                }
            )
        return pd.DataFrame(rows).set_index("candidate")

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable summary (no replicate samples; NaN becomes ``None``)."""

        def f(x: float) -> float | None:
            return float(x) if math.isfinite(float(x)) else None

        return {
            "metric": self.metric,
            "score_name": self.score_name,
            "level": self.level,
            "n_boot": self.n_boot,
            "n_failed": self.n_failed,
            "seed": self.seed,
            "resample": self.resample,
            "options": dict(self.options),
            "order": list(self.order),
            "scores": {c: f(v) for c, v in self.scores.items()},
            "intervals": {c: [f(lo), f(hi)] for c, (lo, hi) in self.intervals.items()},
            "rank_intervals": {c: [f(lo), f(hi)] for c, (lo, hi) in self.rank_intervals.items()},
            "pairs": [
                {
                    "upper": p.upper,
                    "lower": p.lower,
                    "diff": f(p.diff),
                    "ci": [f(p.ci[0]), f(p.ci[1])],
                    "p_order": f(p.p_order),
                    "distinguishable": p.distinguishable,
                }
                for p in self.pairs
            ],
            "indistinguishable": [list(p) for p in self.indistinguishable],
        }


def check_bootstrap(n_boot: Any, level: Any, *, min_boot: int) -> None:
    """The one check of bootstrap settings: ``n_boot`` an integer >= ``min_boot``, ``level`` in (0, 1).

    Raises:
        ConfigError: either is out of range, with the accepted range.
    """
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < min_boot:
        raise ConfigError(f"n_boot must be an integer >= {min_boot}, got {n_boot!r}")
    if isinstance(level, bool) or not isinstance(level, (int, float, np.number)) or not (0.0 < float(level) < 1.0):
        raise ConfigError(f"level must be in (0, 1), e.g. 0.9; got {level!r}")


def percentile_interval(x: np.ndarray, level: float) -> tuple[float, float]:
    """Central percentile interval of the finite values of ``x`` at ``level`` (e.g. 0.9 -> 5th..95th);
    (nan, nan) when there are none."""
    x = x[np.isfinite(x)]
    if x.size == 0:
        return (float("nan"), float("nan"))
    a = (1.0 - level) / 2.0
    lo, hi = np.quantile(x, [a, 1.0 - a])
    return (float(lo), float(hi))


@contextlib.contextmanager
def _replicate_warnings_silenced() -> Iterator[None]:
    """While a bootstrap replicate runs, the metrics' log warnings (small pool, few items, ...) are not emitted: they
    repeat the point estimate's, which are said once, and 200 resamples printed 400 lines (issue 14). Warnings of
    embedselect's other loggers, and errors, still pass."""
    metrics_log = logging.getLogger("embedselect.metrics")
    with _SILENCE_LOCK:  # counted, so that overlapping replicates (threads) restore the level once, when all end
        if _SILENCE["depth"] == 0:
            _SILENCE["level"] = metrics_log.level
            metrics_log.setLevel(max(metrics_log.level, logging.ERROR))
        _SILENCE["depth"] += 1
    try:
        yield
    finally:
        with _SILENCE_LOCK:
            _SILENCE["depth"] -= 1
            if _SILENCE["depth"] == 0:
                metrics_log.setLevel(_SILENCE["level"])


def _rows_of(ctx: MetricContext) -> int:
    """The number of rows n every candidate (and the labels, if any) has; at least 2 candidates.

    Raises:
        DataError: fewer than 2 candidates, or different row counts.
    """
    if len(ctx.embeddings) < 2:
        raise DataError("bootstrap of a ranking needs at least 2 candidates")
    ns = {np.shape(v)[0] for v in ctx.embeddings.values()}
    if len(ns) != 1:
        raise DataError(f"all embedding matrices must have the same number of rows; got {sorted(ns)}")
    n = ns.pop()
    if ctx.labels is not None and len(ctx.labels) != n:
        raise DataError(f"labels has {len(ctx.labels)} entries for {n} rows")
    return n


def _replicates(metric_fn: Callable[[MetricContext], MetricResult], base: MetricContext, ctx: MetricContext, n: int,
                n_boot: int, seed: int, resample: str, order: list[str], name: str | None) -> tuple[np.ndarray, int]:
    """The replicates' scores, float64 (replicates that succeeded, candidates in ``order``; NaN where a replicate
    gave a candidate no score), and how many replicates failed.

    Raises:
        MetricError: more than :data:`MAX_FAILED_FRACTION` of the replicates failed.
    """
    col = {c: j for j, c in enumerate(order)}
    rng = np.random.default_rng(seed)
    m = n if resample == "bootstrap" else n // 2
    samples = []
    n_failed = 0
    last_error: Exception | None = None
    for b in range(n_boot):
        rows = rng.integers(0, n, size=m) if resample == "bootstrap" else np.sort(rng.choice(n, m, replace=False))
        rep_seed = int(rng.integers(0, 2**31 - 1))
        rep = replace(
            base,
            embeddings={k: np.ascontiguousarray(np.asarray(v)[rows]) for k, v in ctx.embeddings.items()},
            labels=None if ctx.labels is None else np.asarray(ctx.labels)[rows],
            pair_cache=None,
            seed=rep_seed,
        )
        try:
            with _replicate_warnings_silenced():
                res = metric_fn(rep)
        except EmbedselectError as e:  # e.g. a degenerate resample; counted, not hidden
            n_failed += 1
            last_error = e
            log.debug("bootstrap replicate %d of %s failed: %s", b, name, e)
            continue
        row = np.full(len(order), np.nan)
        for c, v in res.scores.items():
            if c in col:
                row[col[c]] = float(v)
        samples.append(row)
    if n_failed > MAX_FAILED_FRACTION * n_boot:
        raise MetricError(
            f"{n_failed} of {n_boot} bootstrap replicates of {name or 'the metric'} failed "
            f"(last error: {last_error}); use more reference items or resample='bootstrap'"
        )
    S = np.asarray(samples, dtype=np.float64).reshape(len(samples), len(order))
    return S, n_failed


def _summarise(S: np.ndarray, scores: Mapping[str, float], order: list[str], level: float,
               resample: str) -> tuple[dict[str, tuple[float, float]], dict[str, tuple[float, float]],
                                       list[PairComparison]]:
    """Score and rank intervals per candidate, and the comparison of each adjacent pair of ``order``."""
    col = {c: j for j, c in enumerate(order)}

    def interval(x: np.ndarray, centre: float) -> tuple[float, float]:
        lo, hi = percentile_interval(x, level)
        if resample == "half" and math.isfinite(lo):
            med = float(np.nanmedian(x))
            lo, hi = centre + (lo - med), centre + (hi - med)
        return (lo, hi)

    intervals = {c: interval(S[:, col[c]], scores[c]) for c in order}
    from scipy.stats import rankdata

    R = np.where(np.isnan(S), np.inf, -S)  # missing scores rank last
    ranks = rankdata(R, method="average", axis=1) if len(S) else np.empty_like(S)
    rank_intervals = {c: percentile_interval(ranks[:, col[c]], level) for c in order}

    pairs: list[PairComparison] = []
    for a, b_name in zip(order[:-1], order[1:]):
        d = S[:, col[a]] - S[:, col[b_name]]
        diff = scores[a] - scores[b_name]
        lo, hi = interval(d, diff)
        ok = d[np.isfinite(d)]
        p_order = float(np.mean(ok > 0)) if ok.size else float("nan")
        distinct = bool(math.isfinite(lo) and (lo > 0 or hi < 0))
        pairs.append(PairComparison(a, b_name, float(diff), (lo, hi), p_order, distinct))
    return intervals, rank_intervals, pairs


_SILENCE_LOCK = threading.Lock()
_SILENCE: dict[str, int] = {"depth": 0, "level": logging.NOTSET}


def bootstrap_metric(
    metric_fn: Callable[[MetricContext], MetricResult] | str,
    ctx: MetricContext,
    *,
    n_boot: int = 50,
    seed: int = 0,
    level: float = 0.9,
    options: Mapping[str, Any] | None = None,
    resample: str | None = None,
    point: MetricResult | None = None,
) -> BootstrapResult:
    """Confidence intervals of a metric's scores and ranks by resampling the reference items.

    Args:
        metric_fn: a metric's ``compute`` function, or its registered name.
        ctx: the context of the point estimate (all n rows). Its ``labels`` are resampled with the
            rows; its ``pair_cache`` is only used for the point estimate.
        n_boot: number of replicates (>= 2). 50 gives rough 90% intervals; use 200+ to publish.
        seed: drives the row draws and each replicate's metric seed (so estimator randomness, e.g.
            network initialisation, is part of the spread).
        level: coverage of the percentile intervals, in (0, 1).
        options: option overrides merged over ``ctx.options`` and the metric's
            :attr:`~embedselect.metrics.base.MetricSpec.bootstrap_options`, for the point estimate and every replicate.
        resample: ``"bootstrap"`` (n rows with replacement) or ``"half"`` (n//2 rows without
            replacement, intervals re-centred on the point estimate); see the module docstring.
            ``None`` = the metric's :attr:`~embedselect.metrics.base.MetricSpec.resample` rule, else ``"bootstrap"``.
        point: an already computed point estimate *with the same options* (saves one computation).

    Returns:
        A :class:`BootstrapResult`.

    Raises:
        ConfigError: bad ``n_boot`` / ``level`` / ``resample``.
        DataError: fewer than 2 candidates, or arrays with different row counts.
        MetricError: more than half of the replicates failed.
    """
    from embedselect.metrics.base import RESAMPLE_RULES, get_spec, spec_of

    spec = get_spec(metric_fn) if isinstance(metric_fn, str) else spec_of(metric_fn)
    if isinstance(metric_fn, str):
        assert spec is not None  # get_spec raises for an unknown name
        metric_fn = spec.load()
    name = spec.name if spec is not None else None
    check_bootstrap(n_boot, level, min_boot=2)
    if resample is None:
        resample = spec.resample if spec is not None else "bootstrap"
    if resample not in RESAMPLE_RULES:
        raise ConfigError(f"resample must be one of {', '.join(RESAMPLE_RULES)}; got {resample!r}")
    n = _rows_of(ctx)

    defaults = dict(spec.bootstrap_options) if spec is not None else {}
    merged = {**defaults, **dict(ctx.options), **dict(options or {})}
    base = replace(ctx, options=merged)
    if point is None:
        point = metric_fn(base)
    scores = {k: float(v) for k, v in point.scores.items()}
    order = order_by_score(scores)

    S, n_failed = _replicates(metric_fn, base, ctx, n, n_boot, seed, resample, order, name)
    intervals, rank_intervals, pairs = _summarise(S, scores, order, level, resample)

    return BootstrapResult(
        metric=name or point.name,
        scores=scores,
        order=order,
        intervals=intervals,
        rank_intervals=rank_intervals,
        samples=S,
        pairs=pairs,
        level=float(level),
        n_boot=int(n_boot),
        seed=seed,
        resample=resample,
        n_failed=n_failed,
        options=merged,
        score_name=str(point.details.get("headline") or name or point.name),
    )

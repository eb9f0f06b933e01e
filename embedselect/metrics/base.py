"""The contract between the orchestration (``embedselect.pipeline``) and the metrics.

Metrics are pure array code: they never import the store, the backends or the hub. ``select()``
builds a :class:`MetricContext` from cached embeddings and calls the metric's ``compute`` function,
which returns a :class:`MetricResult`.
"""

from __future__ import annotations

import weakref
from collections import abc
from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Mapping, Protocol, Sequence

import numpy as np

from embedselect._util.arrays import BLOCK_ELEMENTS, nonfinite_rows, row_blocks  # noqa: F401 - re-exported for the metrics
import embedselect.metrics.pool as _pool
from embedselect.metrics.pool import (  # noqa: F401 - re-exported
    CONSTANT_RTOL,
    MIN_EVIDENCE,
    compared_with,
    evidence,
    family_heads,
    family_of,
)

_VERDICTS: dict[tuple[int, str], tuple[weakref.ref, str | None]] = {}
"""(id of a read-only memory map, candidate name) -> (a weak reference to the map, its verdict): see unusable_reason."""


def unusable_reason(name: str, x: Any) -> str | None:
    """:func:`embedselect.metrics.pool.unusable_reason`, the one rule for embeddings no metric can score, remembered
    for a read-only :class:`numpy.memmap` (the store's vectors, which it never rewrites in place: it replaces a file by
    a rename). Every metric of a run, and the pool's checks before them, ask it of the same maps, and the answer reads
    the whole matrix: four passes over 1.5 GB at 10^6 x 384, once per candidate per run instead of once per metric.
    Any other array (one a caller may still change) is checked on every call. Not part of a metric's code version:
    the answer is the same either way."""
    if not (isinstance(x, np.memmap) and not x.flags.writeable):
        return _pool.unusable_reason(name, x)
    key = (id(x), name)
    hit = _VERDICTS.get(key)
    if hit is not None and hit[0]() is x:
        return hit[1]
    why = _pool.unusable_reason(name, x)
    for k in [k for k, (ref, _) in list(_VERDICTS.items()) if ref() is None]:  # maps that are gone (a copy: threads)
        _VERDICTS.pop(k, None)
    _VERDICTS[key] = (weakref.ref(x), why)
    return why


class PairCache(Protocol):
    """Key-value cache for pairwise metric values, persisted by the store.

    Keys are opaque strings built by the metric (e.g. a hash of the two embedding run keys and the
    estimator settings); values are JSON-serialisable dicts.
    """

    def get_many(self, keys: list[str]) -> dict[str, dict[str, Any]]: ...

    def put_many(self, items: Mapping[str, dict[str, Any]]) -> None: ...


class MemoryPairCache(dict[str, dict[str, Any]]):
    """A :class:`PairCache` in memory (key -> value, a dict) for calling the metrics without a store: pairs computed
    once in a process are read back by the next call. ``new`` holds the values written to it (not those it was made
    with), ``puts`` counts the writes."""

    def __init__(self, items: Mapping[str, dict[str, Any]] | None = None) -> None:
        super().__init__(items or {})
        self.new: dict[str, dict[str, Any]] = {}
        self.puts = 0

    def get_many(self, keys: list[str]) -> dict[str, dict[str, Any]]:
        return {k: self[k] for k in keys if k in self}

    def put_many(self, items: Mapping[str, dict[str, Any]]) -> None:
        self.puts += len(items)
        got = {k: dict(v) for k, v in items.items()}
        self.update(got)
        self.new.update(got)


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
        references: candidate keys that are reference points, not evidence about the data: the built-in
            baselines (TF-IDF + SVD, random projections, pixel PCA). Every metric scores them; a metric that judges
            a candidate by the rest of the pool (a consensus prior, agreement with the others) consults only the
            other candidates (:func:`evidence`).
        families: candidate key -> family key: the variants of one model (other pooling, layer, resolution or
            max_length of the same weights) and its copies (quantised, truncated, or distilled as its card declares)
            share one. A metric that consults the pool consults one head per family and compares a candidate with
            the other families' heads only (:func:`evidence`, :func:`compared_with`). A candidate not named is a
            family of its own.
    """

    embeddings: Mapping[str, np.ndarray]
    run_keys: Mapping[str, str]
    seed: int = 0
    options: Mapping[str, Any] = field(default_factory=dict)
    labels: np.ndarray | None = None
    pair_cache: PairCache | None = None
    device: str = "cpu"
    references: frozenset[str] = frozenset()
    families: Mapping[str, str] = field(default_factory=dict)


@dataclass
class MetricResult:
    """What a metric returns.

    Attributes:
        name: metric name ("task_prior", "sufficiency", ...).
        scores: candidate key -> headline score. **Higher is better**; used for the metric's rank.
        columns: extra per-candidate numbers, column name -> {candidate key: value}
            (e.g. ``{"task_prior_var": {...}, "probe_acc_p05": {...}}``). Shown in tables and JSON.
        details: JSON-serialisable extras (settings used, prior used, pairwise matrix, communities,
            warnings such as "pool is small"). Conventional keys: ``warnings`` (list of caveats),
            ``excluded`` (candidate -> why it was not scored), ``pool_warning`` (the one of ``warnings`` that is
            about the pool's size: ``select()`` states the pool size once for the whole ranking instead).
        intervals: optional candidate key -> (low, high) confidence interval of the headline score.
    """

    name: str
    scores: dict[str, float]
    columns: dict[str, dict[str, float]] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    intervals: dict[str, tuple[float, float]] = field(default_factory=dict)


MetricFn = Callable[[MetricContext], MetricResult]

@dataclass(frozen=True)
class MetricSpec:
    """Everything embedselect needs to know about one metric, in one place.

    Attributes:
        name: the metric's name ("task_prior", ...), as users write it.
        compute: ``"module:function"`` of its ``compute(ctx) -> MetricResult`` (imported lazily, so a metric's
            import cost is only paid when it is used), or the function itself.
        min_items: the fewest reference items it accepts (checked by ``select()`` before any embedding).
        resample: how the bootstrap resamples items for its intervals: ``"bootstrap"`` (with replacement) or
            ``"half"`` (half the items without replacement, for estimators with held-out splits, where a copied
            row on both sides would inflate the score).
        bootstrap_options: option overrides inside bootstrap replicates (e.g. skip an expensive secondary part).
        description: one line for ``embedselect metrics``.
        weight: its weight in the combined rank when the user names none (``select(weights=...)`` overrides it);
            0 means computed and shown (its column, ranks and details) but not part of the combined score; when
            every metric a run asks for has weight 0 (e.g. ``metrics=["sufficiency"]``), they are weighted equally.
            Defaults of the built-in metrics are chosen by leave-one-dataset-out on the validity benchmark
            (docs/validity.md, "Choosing a default: leave-one-dataset-out"), never by argument.
        code: modules whose source makes up the metric's code version (default: the compute function's module,
            plus this package's shared modules). A cached result of the metric is reused only while that
            source is unchanged.
        options: the names of the options the metric takes, as ``"module:attribute"`` (imported lazily, like
            :attr:`compute`) or the object itself: a collection of names (e.g. the metric's option defaults, a dict),
            or a function of the options given that returns them (when one option decides which others exist, as
            sufficiency's ``estimator``). :class:`~embedselect.config.RankConfig` checks the options given against
            them before any embedding (:meth:`check_options`); None: not checked before the run (the metric checks
            its own when it runs).
    """

    name: str
    compute: str | MetricFn
    min_items: int = 2
    resample: str = "bootstrap"
    bootstrap_options: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""
    weight: float = 1.0
    code: tuple[str, ...] = ()
    options: str | Collection[str] | Callable[[Mapping[str, Any]], Collection[str]] | None = None

    def load(self) -> MetricFn:
        """The compute function; for a metric whose spec names its options (:attr:`options`), behind
        :class:`CheckedMetric`, so that a call with a misspelt option gets the close name (:meth:`check_options`)
        before the metric's own check (which names none)."""
        fn: MetricFn
        if callable(self.compute):
            fn = self.compute
        else:
            import importlib

            module, func = self.compute.split(":")
            fn = getattr(importlib.import_module(module), func)
        return fn if self.options is None else CheckedMetric(self.name, fn)

    def option_names(self, given: Mapping[str, Any]) -> frozenset[str] | None:
        """The names of the options the metric takes alongside ``given`` (:attr:`options`), or None when the spec
        names none."""
        names: Any = self.options
        if names is None:
            return None
        if isinstance(names, str):
            import importlib

            module, attr = names.split(":")
            names = getattr(importlib.import_module(module), attr)
        if callable(names):
            names = names(given)
        return frozenset(str(n) for n in names)

    def check_options(self, given: Mapping[str, Any]) -> None:
        """Refuse option names the metric does not take, with the close known name for each.

        Raises:
            ConfigError: an option the metric does not take ("unknown sufficiency option 'repeats' (did you mean
                'max_repeats'?); known: ..."); one of another of its settings, said so instead of a close name
                (:func:`~embedselect.metrics.option_names.misplaced`: "sufficiency option 'max_steps' belongs to the
                KNIFE estimator ...").
        """
        from embedselect._util.suggest import did_you_mean
        from embedselect.errors import ConfigError
        from embedselect.metrics.option_names import misplaced

        known = self.option_names(given)
        unknown = [k for k in given if known is not None and k not in known]
        if known is None or not unknown:
            return
        notes = {k: misplaced(self.name, k, given) for k in unknown}
        parts = [f"{self.name} option {k!r} {note}" for k, note in notes.items() if note]
        typos = [k for k in unknown if not notes[k]]
        if typos:
            which = ", ".join(f"{k!r}{did_you_mean(k, known)}" for k in typos)
            parts.append(f"unknown {self.name} option{'s' if len(typos) > 1 else ''} {which}")
        raise ConfigError(f"{'; '.join(parts)}; known: {', '.join(sorted(known))}")

    def code_version(self) -> str:
        """sha256 over the source of the metric's modules (:attr:`code`, or the compute function's module, and
        the shared metric modules): changes whenever the code that computes it changes."""
        import hashlib
        import importlib
        import inspect

        modules = set(self.code) or {self.compute.split(":")[0] if isinstance(self.compute, str)
                                     else self.compute.__module__}
        modules |= set(_SHARED_CODE)
        h = hashlib.sha256()
        for name in sorted(modules):
            mod = importlib.import_module(name)
            h.update(name.encode() + b"\0" + inspect.getsource(mod).encode())
        return h.hexdigest()


_SHARED_CODE = ("embedselect.metrics.pool", "embedselect.metrics.kernels")
"""Modules every metric's code version includes (the rules every metric applies to the pool, and the shared kernels).
Not this module: the registry's weights and descriptions decide how scores are combined and shown, not what a metric
computes, so changing a default weight keeps every cached metric result."""

_SPECS: dict[str, MetricSpec] = {}


def register_metric(spec: MetricSpec, *, replace: bool = False) -> MetricSpec:
    """Make a metric available to ``select()``, the CLI, the bootstrap and validation.

    Raises:
        ConfigError: a metric of that name exists (pass ``replace=True`` to override it), or the spec is
            malformed (bad resample rule, min_items < 2).
    """
    from embedselect.errors import ConfigError

    if spec.name in _SPECS and not replace:
        raise ConfigError(f"a metric named {spec.name!r} is registered already; pass replace=True to override it")
    if spec.resample not in RESAMPLE_RULES:
        raise ConfigError(f"metric {spec.name!r}: resample must be one of {RESAMPLE_RULES}, got {spec.resample!r}")
    if int(spec.min_items) < 2:
        raise ConfigError(f"metric {spec.name!r}: min_items must be at least 2")
    if not (isinstance(spec.weight, (int, float)) and 0 <= spec.weight < float("inf")):
        raise ConfigError(f"metric {spec.name!r}: weight must be a finite number >= 0, got {spec.weight!r}")
    _SPECS[spec.name] = spec
    return spec


RESAMPLE_RULES = ("bootstrap", "half")
_SPECTRAL = ("embedselect.metrics.comparators.spectral", "embedselect.metrics.sampling")
_SPECTRAL_OPTIONS = "embedselect.metrics.comparators.spectral:_OPTION_DEFAULTS"

for _spec in (
    MetricSpec("task_prior", "embedselect.metrics.task_prior.score:compute", min_items=20,
               bootstrap_options={"probes": False},  # replicates bootstrap the moments, not sampled-task probes
               description="Task Prior statistics: probes on tasks drawn from a prior over labelings (sampled; for images "
                           "its clusters)",
               code=("embedselect.metrics.task_prior.score", "embedselect.metrics.task_prior.moments",
                     "embedselect.metrics.task_prior.priors", "embedselect.metrics.task_prior.sampling",
                     "embedselect.metrics.probes", "embedselect.metrics.content_seed"),
               options="embedselect.metrics.task_prior.score:_OPTION_DEFAULTS"),
    MetricSpec("sufficiency", "embedselect.metrics.sufficiency.score:compute", min_items=50, resample="half",
               description="median information sufficiency: how well each embedding predicts the pool's models (part of "
                           "the default combination; its communities with the option pairs=all)",
               weight=0.25,
               code=("embedselect.metrics.sufficiency.score", "embedselect.metrics.sufficiency.pairs",
                     "embedselect.metrics.sufficiency.rows", "embedselect.metrics.sufficiency.settings",
                     "embedselect.metrics.sufficiency.result", "embedselect.metrics.sufficiency.inputs",
                     "embedselect.metrics.sufficiency.gaussian", "embedselect.metrics.sufficiency.knife",
                     "embedselect.metrics.sufficiency.knife.prepare", "embedselect.metrics.sufficiency.knife.mixture",
                     "embedselect.metrics.sufficiency.knife.engine", "embedselect.metrics.normal_scores",
                     "embedselect.metrics.content_seed"),
               options="embedselect.metrics.option_names:sufficiency"),
    # label-free comparators from the literature, shown for texts (weight 0: the text default is task_prior 1 and
    # sufficiency 0.25, mean ranks, chosen on the selection half of docs/validity.md's protocol and confirmed on the
    # other half, "Protocol"); images weigh them in: pipeline/defaults.py
    MetricSpec("rankme", "embedselect.metrics.comparators.spectral:compute_rankme", weight=0.0,
               description="RankMe effective rank (comparator; in the image default, shown for texts)", code=_SPECTRAL,
               options=_SPECTRAL_OPTIONS),
    MetricSpec("alpha_req", "embedselect.metrics.comparators.spectral:compute_alpha_req",
               description="alpha-ReQ eigenspectrum decay (comparator)", code=_SPECTRAL, options=_SPECTRAL_OPTIONS),
    MetricSpec("uniformity", "embedselect.metrics.comparators.spectral:compute_uniformity",
               description="uniformity on the sphere (comparator)", code=_SPECTRAL, options=_SPECTRAL_OPTIONS),
    MetricSpec("nn_agreement", "embedselect.metrics.comparators.agreement:compute", min_items=3, weight=0.0,
               description="nearest-neighbour agreement with the other candidates (comparator; in the image default, "
                           "shown for texts)",
               code=("embedselect.metrics.comparators.agreement", "embedselect.metrics.sampling"),
               options="embedselect.metrics.comparators.agreement:_OPTION_DEFAULTS"),
    MetricSpec("modularity", "embedselect.metrics.comparators.modularity:compute", min_items=20, resample="half", weight=0.0,
               description="community structure of each candidate's own k-NN graph (Louvain modularity; in the image "
                           "default, shown for texts)",
               code=("embedselect.metrics.comparators.modularity", "embedselect.metrics.comparators.agreement", "embedselect.metrics.sampling"),
               options="embedselect.metrics.comparators.modularity:_OPTION_DEFAULTS"),
):
    register_metric(_spec)


DEFAULT_METRICS = ("task_prior", "sufficiency", "nn_agreement", "rankme", "modularity")
"""The default label-free metrics (the weights, method and options of images differ:
:mod:`embedselect.pipeline.defaults`). With their specs' weights and :data:`embedselect.ranking.combine.DEFAULT_METHOD`
they are the text default: task_prior 1 with its central prior, sufficiency 0.25, and nn_agreement, rankme and
modularity shown, not combined (weight 0), mean ranks; each family of variants and copies counts once in the pool's evidence, and
the pool's built-in baselines are not evidence (docs/validity.md, "Current defaults")."""


class _MinItems(abc.Mapping):
    """Read-only view: metric name -> its spec's ``min_items``."""

    def __getitem__(self, name: str) -> int:
        return _SPECS[name].min_items

    def __iter__(self):
        return iter(_SPECS)

    def __len__(self) -> int:
        return len(_SPECS)


MIN_ITEMS: Mapping[str, int] = _MinItems()
"""Minimum number of reference items each metric needs (from the specs; checked before embedding anything)."""


def available_metrics() -> list[str]:
    """Names of the registered metrics, in registration order."""
    return list(_SPECS)


def get_spec(name: str) -> MetricSpec:
    """The :class:`MetricSpec` of metric ``name``.

    Raises:
        UnknownMetricError: ``name`` is not registered.
    """
    from embedselect.errors import UnknownMetricError

    try:
        return _SPECS[name]
    except KeyError:
        raise UnknownMetricError(unknown_metrics([name]) or name) from None


def unknown_metrics(names: Sequence[str]) -> str | None:
    """The message for the names among ``names`` that are no registered metric, each with its close name
    ("unknown metric 'sufficency' (did you mean 'sufficiency'?); available: ..."); None when all are metrics."""
    from embedselect._util.suggest import did_you_mean

    unknown = [m for m in names if m not in _SPECS]
    if not unknown:
        return None
    which = ", ".join(f"{m!r}{did_you_mean(m, _SPECS)}" for m in unknown)
    return f"unknown metric{'s' if len(unknown) > 1 else ''} {which}; available: {', '.join(_SPECS)}"


class CheckedMetric:
    """A metric's compute function, called after its spec's option check (:meth:`MetricSpec.check_options`) of the
    options the call gives, with the defaults the metric assumes where they name none
    (:func:`~embedselect.metrics.option_names.call_defaults`): the check before a run's embedding, repeated for a
    direct call (``get_metric("sufficiency")(MetricContext(..., options={"max_stepz": 1})``). The metric's own
    check stays behind it (its module is in the metric's code version). Pickles (the Ray executor) as the metric's
    name and function; ``__wrapped__``, ``__module__`` and ``__name__`` are the function's (:func:`spec_of`)."""

    def __init__(self, metric: str, fn: MetricFn) -> None:
        import functools

        self.metric = metric
        functools.update_wrapper(self, fn)

    def __call__(self, ctx: MetricContext) -> MetricResult:
        from embedselect.metrics.option_names import call_defaults

        get_spec(self.metric).check_options({**call_defaults(self.metric), **dict(ctx.options or {})})
        return self.__wrapped__(ctx)  # type: ignore[attr-defined]


def get_metric(name: str) -> MetricFn:
    """Return the ``compute`` function of metric ``name`` (:meth:`MetricSpec.load`).

    Raises:
        UnknownMetricError: ``name`` is not registered.
    """
    return get_spec(name).load()


def spec_of(fn: Any) -> MetricSpec | None:
    """The spec whose compute function is ``fn`` (None for an unregistered function)."""
    fn = getattr(fn, "__wrapped__", fn)  # a CheckedMetric: its function
    target = f"{getattr(fn, '__module__', None)}:{getattr(fn, '__name__', None)}"
    return next((s for s in _SPECS.values() if s.compute == target or s.compute is fn), None)

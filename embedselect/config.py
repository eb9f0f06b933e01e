"""The run configuration: what is ranked and how (:class:`RankConfig`), where and with what it runs
(:class:`Runtime`), and the model-loading safety policy (:class:`LoadPolicy`).

One definition for the three ways in: ``select()``'s keyword arguments (:func:`from_keywords`), the CLI's flags
(``embedselect.cli.common.rank_config``) and the nightly YAML (``NightlyConfig.rank_config``) all build these
objects, and every stage below them (``pipeline``, ``search``, ``nightly``) takes them instead of repeating the
keywords. Both are frozen and validated once, when built: a bad value is a :class:`~embedselect.errors.ConfigError`
that names the setting and the accepted form.

Both pickle (the Ray executor sends them to its workers). The hub token lives only in :class:`Runtime`, never in a
repr, a dict or a stored ranking.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import AbstractSet, Any, Literal, Mapping, Sequence, get_args

from embedselect.errors import ConfigError

__all__ = [
    "DEFAULT_MAX_MODEL_BYTES",
    "DropDuplicates",
    "LoadPolicy",
    "OnError",
    "RankConfig",
    "Runtime",
    "from_keywords",
]

OnError = Literal["fail", "skip"]
"""What loading does with an item it cannot decode: stop with a :class:`~embedselect.errors.DecodeError`, or skip it
(and count it in the load report)."""

DropDuplicates = Literal["exact", "near"]
"""Which duplicate items are dropped before ranking (:meth:`embedselect.data.ReferenceData.drop_duplicates`)."""

DEFAULT_MAX_MODEL_BYTES = 5 * 1024**3
"""The default cap on a hub model's weight files: 5 GiB."""


@dataclass(frozen=True)
class LoadPolicy:
    """What a model may need before embedselect refuses to load it.

    Attributes:
        allow_pickle: load ``.bin`` / ``.pt`` / ``.pth`` pickle weights (arbitrary code on unpickling).
            Default ``False``: safetensors only.
        trust_remote_code: run Python code shipped in the model repo. Default ``False``.
        allow_gated: try gated repos (needs a token with access). Default ``False``.
        max_bytes: refuse repos whose weight files exceed this many bytes. ``None`` = no cap.
        allow_models: model ids for which all of the above are lifted (a per-model opt-in); a frozenset once built.
    """

    allow_pickle: bool = False
    trust_remote_code: bool = False
    allow_gated: bool = False
    max_bytes: int | None = DEFAULT_MAX_MODEL_BYTES
    allow_models: AbstractSet[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        for name in ("allow_pickle", "trust_remote_code", "allow_gated"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"LoadPolicy.{name} must be True or False; got {getattr(self, name)!r}")
        if self.max_bytes is not None and (isinstance(self.max_bytes, bool) or not isinstance(self.max_bytes, int)
                                           or self.max_bytes < 1):
            raise ConfigError(f"LoadPolicy.max_bytes must be a positive number of bytes or None; got {self.max_bytes!r}")
        if isinstance(self.allow_models, str):
            raise ConfigError("LoadPolicy.allow_models is a collection of model ids, not one string")
        if not isinstance(self.allow_models, frozenset):
            object.__setattr__(self, "allow_models", frozenset(self.allow_models))

    def for_model(self, model_id: str) -> LoadPolicy:
        """The policy that applies to ``model_id`` (everything allowed if it was opted in)."""
        if model_id in self.allow_models:
            return LoadPolicy(True, True, True, None, self.allow_models)
        return self

    def to_dict(self) -> dict[str, Any]:
        """The policy as JSON-ready values (``allow_models`` sorted)."""
        return {"allow_pickle": self.allow_pickle, "trust_remote_code": self.trust_remote_code,
                "allow_gated": self.allow_gated, "max_bytes": self.max_bytes,
                "allow_models": sorted(self.allow_models)}


def _int(value: Any, name: str, *, minimum: int, allow_none: bool = False) -> int | None:
    """``value`` as an int >= ``minimum`` (None where allowed); numpy integers are accepted, bools are not."""
    if value is None and allow_none:
        return None
    import numbers

    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < minimum:
        what = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise ConfigError(f"{name} must be {what}{' or None' if allow_none else ''}; got {value!r}")
    return int(value)


def _choice(value: Any, name: str, kinds: Any, *, allow_none: bool = False) -> Any:
    allowed = get_args(kinds)
    if (value is None and allow_none) or value in allowed:
        return value
    accepted = " or ".join(repr(a) for a in allowed) + (" or None" if allow_none else "")
    raise ConfigError(f"{name} must be {accepted}; got {value!r}")


def _weights(weights: Mapping[str, float] | None, metrics: Sequence[str]) -> Mapping[str, float] | None:
    if weights is None:
        return None
    if not isinstance(weights, Mapping):
        raise ConfigError(f"weights must be a mapping of metric name -> number, e.g. {{'sufficiency': 0.5}}; "
                          f"got {type(weights).__name__}")
    out: dict[str, float] = {}
    for m, w in weights.items():
        try:
            value = float(w)
        except (TypeError, ValueError):
            raise ConfigError(f"weights[{m!r}] must be a number; got {w!r}") from None
        if isinstance(w, bool) or not (math.isfinite(value) and value >= 0):
            raise ConfigError(f"weights[{m!r}] must be a finite number >= 0; got {w!r}")
        out[str(m)] = value
    extra = sorted(set(out) - set(metrics))
    if extra:
        from embedselect.metrics.base import unknown_metrics

        unknown = unknown_metrics(extra)  # a misspelt name: its close name
        if unknown:
            raise ConfigError(f"weights: {unknown}")
        raise ConfigError(f"weights for metric(s) not requested: {extra}; metrics: {list(metrics)}")
    if set(metrics) <= set(out) and not any(out.values()):
        raise ConfigError(f"weights must be finite, >= 0 and not all 0; got {out}: give at least one metric a "
                          "positive weight")
    return MappingProxyType(out) if out else None


def _options(options: Mapping[str, Mapping[str, Any]] | None) -> Mapping[str, Mapping[str, Any]]:
    """``options`` read-only, after checking that each names a registered metric and only options that metric takes
    (:meth:`~embedselect.metrics.base.MetricSpec.check_options`): a typo is refused before any data is read or any
    candidate embedded, with the close name."""
    from embedselect.metrics.base import get_spec

    if options is None:
        return MappingProxyType({})
    if not isinstance(options, Mapping) or not all(isinstance(v, Mapping) for v in options.values()):
        raise ConfigError("metric_options must map a metric name to its options, e.g. {'task_prior': {'tau': 0.1}}")
    for m, o in options.items():
        get_spec(str(m)).check_options(o)
    return MappingProxyType({str(m): MappingProxyType(dict(o)) for m, o in options.items()})


def metric_names(metrics: Sequence[str] | None) -> tuple[str, ...]:
    """The metrics asked for, each once in the order given (a string: comma-separated names; None: the defaults).

    Raises:
        UnknownMetricError: a name that is not a registered metric (the message names the close one).
        ConfigError: no metric at all.
    """
    from embedselect.metrics.base import DEFAULT_METRICS, unknown_metrics

    if metrics is None:
        return tuple(DEFAULT_METRICS)
    if isinstance(metrics, str):
        metrics = [m.strip() for m in metrics.split(",") if m.strip()]
    names = tuple(dict.fromkeys(str(m) for m in metrics))
    unknown = unknown_metrics(names)
    if unknown:
        from embedselect.errors import UnknownMetricError

        raise UnknownMetricError(unknown)
    if not names:
        raise ConfigError("choose at least one metric")
    return names


@dataclass(frozen=True)
class RankConfig:
    """What is ranked and how: the settings that decide a ranking's result.

    Frozen and validated when built (:class:`~embedselect.errors.ConfigError` naming the setting). ``select()``'s
    keyword arguments, the CLI's flags and the nightly YAML build the same object for the same settings.

    Attributes:
        metrics: metric names, without repeats, in order, as a tuple (default
            :data:`embedselect.metrics.base.DEFAULT_METRICS`); a comma-separated string is split.
        weights: metric -> weight >= 0 in the combined score, only for requested metrics; a metric not named keeps
            its default weight (:func:`embedselect.pipeline.defaults.combined_weights`). None: every default.
        metric_options: metric -> its options, e.g. ``{"task_prior": {"tau": 0.1}}`` (under the data's defaults).
        max_items: seeded sub-sample of the reference data to at most this many items (None: all).
        seed: root seed (>= 0) of sampling, baselines, metrics and the bootstrap.
        bootstrap: bootstrap resamples of the reference items for score intervals (0: none).
        on_error: ``"fail"`` or ``"skip"`` undecodable items.
        drop_duplicates: ``"exact"`` / ``"near"``: rank without the data's duplicates; None keeps every item.
        column: the text column of a table file (None: the reader's choice).
        id_column: the column of a table file (or DataFrame) whose values are the items' ids (None: row numbers);
            see :meth:`~embedselect.data.ReferenceData.from_file`.
        labels: the label column of a table file (``"folder"`` for an image folder): used only to validate the
            label-free ranking (labels as an array are passed with the data, see ``select()``).
        policy: the :class:`LoadPolicy` for the candidates (safetensors only, no remote code, no gated repos).
    """

    metrics: Sequence[str] = None  # type: ignore[assignment]  # a tuple once built; None: DEFAULT_METRICS
    weights: Mapping[str, float] | None = None
    metric_options: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: MappingProxyType({}))
    max_items: int | None = None
    seed: int = 0
    bootstrap: int = 0
    on_error: OnError = "fail"
    drop_duplicates: DropDuplicates | None = None
    column: str | None = None
    labels: str | None = None
    policy: LoadPolicy = field(default_factory=LoadPolicy)
    id_column: str | None = None

    def __post_init__(self) -> None:
        metrics = metric_names(self.metrics)
        set_ = object.__setattr__
        set_(self, "metrics", metrics)
        set_(self, "weights", _weights(self.weights, metrics))
        set_(self, "metric_options", _options(self.metric_options))
        set_(self, "max_items", _int(self.max_items, "max_items", minimum=1, allow_none=True))
        set_(self, "seed", _int(self.seed, "seed", minimum=0))
        set_(self, "bootstrap", _int(self.bootstrap, "bootstrap", minimum=0))
        _choice(self.on_error, "on_error", OnError)
        _choice(self.drop_duplicates, "drop_duplicates", DropDuplicates, allow_none=True)
        for name in ("column", "labels", "id_column"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ConfigError(f"{name} must be a column name (a non-empty string) or None; got {value!r}")
        if not isinstance(self.policy, LoadPolicy):
            raise ConfigError(f"policy must be a LoadPolicy; got {type(self.policy).__name__}")

    def replace(self, **changes: Any) -> RankConfig:
        """A copy with ``changes`` (validated like a new one)."""
        return RankConfig(**{**self._fields(), **changes})

    def _fields(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def to_dict(self) -> dict[str, Any]:
        """The settings as plain JSON-ready values (what a ranking records, what pickling carries)."""
        out = self._fields()
        out["metrics"] = list(self.metrics)
        out["weights"] = dict(self.weights) if self.weights is not None else None
        out["metric_options"] = {m: dict(o) for m, o in self.metric_options.items()}
        out["policy"] = self.policy.to_dict()
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RankConfig:
        """The inverse of :meth:`to_dict`."""
        d = dict(d)
        if isinstance(d.get("policy"), Mapping):
            d["policy"] = LoadPolicy(**d["policy"])
        return cls(**d)

    def __reduce__(self) -> tuple[Any, ...]:  # the read-only mappings do not pickle; the plain form does
        return (RankConfig.from_dict, (self.to_dict(),))

    def __hash__(self) -> int:  # the read-only mappings are not hashable; their JSON form is
        return hash(json.dumps(self.to_dict(), sort_keys=True, default=str))


@dataclass(frozen=True)
class Runtime:
    """Where and with what a run works: none of it changes a ranking's scores.

    Attributes:
        cache_dir: the cache root, a :class:`~pathlib.Path` once built (None: ``$EMBEDSELECT_CACHE_DIR`` or the user
            cache directory).
        device: ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"``, or None for automatic.
        batch_size: embedding batch size (None: the backend's default).
        token: hub token (None: ``HF_TOKEN``); never in a repr, a log or a stored result.
        progress: show progress bars (only on a terminal).
        save: store the ranking in the cache database (False: its ``ranking_id`` is None).
        strict: a failed candidate makes ``select()`` raise :class:`~embedselect.errors.CandidatesFailedError` (after
            ranking the others and storing the ranking) instead of returning a ranking with a failed row.
    """

    cache_dir: Path | str | None = None
    device: str | None = None
    batch_size: int | None = None
    token: str | None = field(default=None, repr=False)
    progress: bool = False
    save: bool = True
    strict: bool = False

    def __post_init__(self) -> None:
        if self.cache_dir is not None:
            if not isinstance(self.cache_dir, (str, Path)) or not str(self.cache_dir).strip():
                raise ConfigError(f"cache_dir must be a folder path or None; got {self.cache_dir!r}")
            object.__setattr__(self, "cache_dir", Path(self.cache_dir))
        if self.device is not None and (not isinstance(self.device, str) or not self.device.strip()):
            raise ConfigError(f"device must be 'cpu', 'cuda', 'cuda:N', 'mps' or None; got {self.device!r}")
        object.__setattr__(self, "batch_size", _int(self.batch_size, "batch_size", minimum=1, allow_none=True))
        if self.token is not None and not isinstance(self.token, str):
            raise ConfigError("token must be a string or None")
        for name in ("progress", "save", "strict"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{name} must be True or False; got {getattr(self, name)!r}")

    def replace(self, **changes: Any) -> Runtime:
        """A copy with ``changes`` (validated like a new one)."""
        return Runtime(**{**{f.name: getattr(self, f.name) for f in fields(self)}, **changes})


def from_keywords(
    *,
    metrics: Sequence[str] | None = None,
    weights: Mapping[str, float] | None = None,
    metric_options: Mapping[str, Mapping[str, Any]] | None = None,
    max_items: int | None = None,
    seed: int = 0,
    bootstrap: int = 0,
    on_error: OnError = "fail",
    drop_duplicates: DropDuplicates | None = None,
    column: str | None = None,
    labels: str | None = None,
    policy: LoadPolicy | None = None,
    id_column: str | None = None,
    cache_dir: str | Path | None = None,
    device: str | None = None,
    batch_size: int | None = None,
    token: str | None = None,
    progress: bool = False,
    save: bool = True,
    strict: bool = False,
) -> tuple[RankConfig, Runtime]:
    """The :class:`RankConfig` and :class:`Runtime` of ``select()``'s keyword arguments (the same names)."""
    config = RankConfig(metrics=metrics, weights=weights, metric_options=metric_options or {}, max_items=max_items,  # type: ignore[arg-type]
                        seed=seed, bootstrap=bootstrap, on_error=on_error, drop_duplicates=drop_duplicates,
                        column=column, labels=labels, policy=policy if policy is not None else LoadPolicy(),
                        id_column=id_column)
    runtime = Runtime(cache_dir=Path(cache_dir) if cache_dir is not None else None, device=device,
                      batch_size=batch_size, token=token, progress=progress, save=save, strict=strict)
    return config, runtime

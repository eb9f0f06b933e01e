"""The nightly job's configuration: a YAML file validated into :class:`NightlyConfig`.

Unknown keys and bad values are :class:`~embedselect.errors.ConfigError` naming the key's path
(``crawl.limit: ...``). Relative paths (``data.path``, ``output``, ``cache``) are resolved against the folder of the
configuration file, so that cron can run the job from any working directory.

Minimal file::

    data: {path: texts.csv, column: text, max_items: 2000}
    crawl: {library: sentence-transformers, sort: trending, limit: 50}
    keep_top: 5
    pinned: [tfidf-svd]
    output: ./site
    budget_minutes: 60
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from embedselect.config import (
    DEFAULT_MAX_MODEL_BYTES,
    DropDuplicates,
    LoadPolicy,
    OnError,
    RankConfig,
    Runtime,
    metric_names,
)
from embedselect.errors import CandidateSpecError, ConfigError
from embedselect.metrics.base import DEFAULT_METRICS

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmMbBtT]?)\s*$")
_SUFFIX = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "t": 10**12}


def _count(v: Any) -> Any:
    """``"110M"`` / ``"1.5B"`` / ``300000`` -> int parameter count (None stays None)."""
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, int):
        return v
    m = _SIZE_RE.match(str(v))
    if not m:
        raise ValueError(f"{v!r} is not a parameter count (e.g. 110M, 1.5B, 300000)")
    return int(round(float(m.group(1)) * _SUFFIX[m.group(2).lower()]))


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DataConfig(_Strict):
    """``data:`` the fixed reference data every night ranks on, and how it is read (the data settings of a
    :class:`~embedselect.config.RankConfig`: ``labels`` is a label column, used only to validate the ranking)."""

    path: str
    column: str | None = None
    id_column: str | None = None
    labels: str | None = None
    max_items: int | None = Field(default=None, ge=2)
    on_error: OnError = "fail"
    drop_duplicates: DropDuplicates | None = None


class PolicyConfig(_Strict):
    """``policy:`` the :class:`~embedselect.config.LoadPolicy` of the night's candidates (the CLI's
    ``--allow-pickle``, ``--trust-remote-code``, ``--allow-gated``, ``--allow-model``, ``--max-model-bytes``)."""

    allow_pickle: bool = False
    trust_remote_code: bool = False
    allow_gated: bool = False
    allow_models: tuple[str, ...] = ()
    max_bytes: int | None = Field(default=DEFAULT_MAX_MODEL_BYTES, ge=1)

    def load_policy(self) -> LoadPolicy:
        return LoadPolicy(allow_pickle=self.allow_pickle, trust_remote_code=self.trust_remote_code,
                          allow_gated=self.allow_gated, max_bytes=self.max_bytes,
                          allow_models=frozenset(self.allow_models))


class CrawlConfig(_Strict):
    """``crawl:`` the hub listing (as :func:`embedselect.models.hub.crawl`); the hub is the one ``HF_ENDPOINT`` names."""

    library: str | None = None
    pipeline_tag: str | None = None
    tags: tuple[str, ...] = ()
    author: str | None = None
    search: str | None = None
    sort: Literal["trending", "downloads", "likes", "recency", "created"] = "trending"
    limit: int = Field(default=50, ge=1, le=10_000)
    max_pages: int = Field(default=50, ge=1, le=10_000)  # listing pages read at most (a Link that never ends)
    min_params: int | None = None
    max_params: int | None = None
    licenses: tuple[str, ...] | None = None
    exclude_gated: bool = True

    @field_validator("min_params", "max_params", mode="before")
    @classmethod
    def _params(cls, v: Any) -> Any:
        return _count(v)


class ExecutorConfig(_Strict):
    """``executor:`` where embedding and pair estimation run (see docs/nightly.md)."""

    kind: Literal["local", "ray"] = "local"
    address: str | None = None  # ray: "auto", "ray://head:10001", ...; None starts a local Ray
    num_cpus: int | None = Field(default=None, ge=1)  # ray: CPUs of a locally started Ray
    gpus_per_model: float = Field(default=0.0, ge=0)  # ray: GPUs each embedding task requests
    cpus_per_task: float = Field(default=1.0, gt=0)


class NightlyConfig(_Strict):
    """The whole configuration. Times are minutes; ``budget_minutes`` is the wall-clock limit of one night."""

    data: DataConfig
    crawl: CrawlConfig = CrawlConfig()
    keep_top: int = Field(default=5, ge=0)
    pinned: tuple[str, ...] = ()
    output: str
    budget_minutes: float = Field(default=60.0, gt=0)
    rank_reserve: float = Field(default=0.2, ge=0, lt=1)  # share of the budget kept for ranking and publishing
    model_timeout_minutes: float | None = Field(default=None, gt=0)
    max_new: int | None = Field(default=None, ge=0)  # at most this many models embedded per night
    retry_failed: bool = False  # re-try models that failed at the same revision in an earlier night
    cache: str | None = None  # the cache folder; default $EMBEDSELECT_CACHE_DIR or the user cache dir
    metrics: tuple[str, ...] = DEFAULT_METRICS
    metric_options: dict[str, dict[str, Any]] = {}
    weights: dict[str, float] | None = None
    seed: int = Field(default=0, ge=0)
    bootstrap: int = Field(default=0, ge=0)
    policy: PolicyConfig = PolicyConfig()
    device: str | None = None
    batch_size: int | None = Field(default=None, ge=1)
    executor: ExecutorConfig = ExecutorConfig()
    base_dir: str = Field(default=".", exclude=True)

    @field_validator("pinned", mode="before")
    @classmethod
    def _pinned(cls, v: Any) -> Any:
        return (v,) if isinstance(v, str) else v

    @field_validator("metrics")
    @classmethod
    def _metrics(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        metric_names(v)  # select()'s rule; its ConfigError is a ValueError, so reported under the key metrics
        return v  # as written, not deduplicated: ranking_key, the history's, reads it

    def rank_config(self) -> RankConfig:
        """The night's :class:`~embedselect.config.RankConfig`: what ``select()`` and ``embedselect rank`` build
        from the same settings."""
        return RankConfig(metrics=self.metrics, weights=self.weights, metric_options=self.metric_options,
                          max_items=self.data.max_items, seed=self.seed, bootstrap=self.bootstrap,
                          on_error=self.data.on_error, drop_duplicates=self.data.drop_duplicates,
                          column=self.data.column, labels=self.data.labels, id_column=self.data.id_column,
                          policy=self.policy.load_policy())

    def runtime(self, token: str | None = None, *, progress: bool = False) -> Runtime:
        """The night's :class:`~embedselect.config.Runtime` (its cache, device and batch size; the ranking is saved;
        ``progress``: a progress line on a terminal, as ``rank`` draws, for each model embedded in this process
        and for the ranking)."""
        return Runtime(cache_dir=self.cache_path, device=self.device, batch_size=self.batch_size, token=token,
                       progress=progress, save=True)

    @property
    def pinned_specs(self) -> tuple[str, ...]:
        """``pinned`` with each relative path (a folder, ``vectors:PATH``) made absolute against the configuration
        file's folder (:func:`~embedselect.models.candidates.spec.spec_against`), comma-separated entries split."""
        return tuple(spec for entry in self.pinned for spec in _entry_specs(entry, self.base_dir))

    def path(self, p: str) -> Path:
        """``p`` resolved against the configuration file's folder."""
        q = Path(p).expanduser()
        # abspath, not resolve(): the output is a symbolic link that must not be followed
        return Path(os.path.abspath(q if q.is_absolute() else Path(self.base_dir) / q))

    @property
    def data_path(self) -> Path:
        return self.path(self.data.path)

    @property
    def output_path(self) -> Path:
        return self.path(self.output)

    @property
    def cache_path(self) -> Path | None:
        return self.path(self.cache) if self.cache else None

    def ranking_key(self) -> str:
        """sha256 of what makes two nights comparable (data, metrics and their options, weights, seed): the
        history and rank changes are kept per key, so a changed setting starts a new history."""
        # a setting added since the key was defined counts only when it is not its default, so that the nights of
        # an unchanged file keep one history
        data = self.data.model_dump(exclude={k for k in ("labels", "drop_duplicates") if getattr(self.data, k) is None})
        payload = {
            "data": data,
            "data_path": str(self.data_path),
            "metrics": list(self.metrics),
            "metric_options": self.metric_options,
            "weights": self.weights,
            "seed": self.seed,
        }
        if self.bootstrap:
            payload["bootstrap"] = self.bootstrap
        if self.policy != PolicyConfig():
            payload["policy"] = self.policy.model_dump()
        return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _format(err: ValidationError, source: str) -> str:
    lines = []
    for e in err.errors():
        loc = ".".join(str(x) for x in e["loc"]) or "(top level)"
        if e["type"] == "extra_forbidden":
            lines.append(f"{loc}: unknown key")
        elif e["type"] == "missing":
            lines.append(f"{loc}: required key is missing")
        else:
            msg = e["msg"].removeprefix("Value error, ")
            lines.append(f"{loc}: {msg} (got {e.get('input')!r})")
    # one problem a line; '; ' ends each but the last, so the CLI's one line (newlines collapsed) keeps them apart
    return f"invalid nightly configuration {source}:\n  " + ";\n  ".join(lines)


def parse_config(obj: Any, *, base_dir: str | Path = ".", source: str = "") -> NightlyConfig:
    """Validate a mapping (as read from YAML) into a :class:`NightlyConfig`.

    Raises:
        ConfigError: unknown keys, missing keys or bad values, each with its path; the old key ``store:`` (now
            ``cache:``) with what to rename.
    """
    if not isinstance(obj, dict):
        raise ConfigError(f"the nightly configuration {source} must be a mapping of keys, got {type(obj).__name__}")
    if "base_dir" in obj:
        raise ConfigError(f"invalid nightly configuration {source}:\n  base_dir: unknown key")
    if "store" in obj:
        raise ConfigError(f"invalid nightly configuration {source}:\n  store: this key is now called cache (the same "
                          f"folder: {obj['store']!r}); rename store: to cache:")
    try:
        cfg = NightlyConfig(**obj, base_dir=str(Path(base_dir).resolve()))
    except ValidationError as exc:
        raise ConfigError(_format(exc, source)) from None
    try:
        cfg.rank_config()  # what the night ranks with, validated as select() validates it
    except ConfigError as exc:
        raise ConfigError(f"invalid nightly configuration {source}:\n  {exc}") from None
    _check_pinned(cfg, source)
    _check_output(cfg, source)
    return cfg


def _check_pinned(cfg: NightlyConfig, source: str) -> None:
    """Each ``pinned`` entry parses as the night will parse it (relative paths from the configuration's folder,
    :attr:`NightlyConfig.pinned_specs`): a malformed spec, a missing vectors file or local folder is a
    :class:`ConfigError` naming the entry (``pinned[1]: ...``), before the night crawls anything, and so is a
    baseline of the other modality (``tfidf-svd`` for a folder of images: the data's modality read from its path as
    the loader reads it, :func:`~embedselect.data.reference.path_modality`, when it exists). Offline: a hub id is not
    looked up (a hub model of the other modality is left out when the night plans)."""
    from embedselect.data.reference import path_modality
    from embedselect.models.candidates import parse_candidates

    modality = path_modality(cfg.data_path) if cfg.data_path.exists() else None
    for i, entry in enumerate(cfg.pinned):
        try:
            parse_candidates(_entry_specs(entry, cfg.base_dir), modality=modality)
        except (CandidateSpecError, ConfigError) as exc:
            raise ConfigError(f"invalid nightly configuration {source}:\n  pinned[{i}]: {exc}") from None


def _entry_specs(entry: str, base_dir: str) -> list[str]:
    """One ``pinned`` entry's specs: split at commas, each relative path made absolute against ``base_dir`` (the
    configuration file's folder, :func:`~embedselect.models.candidates.spec.spec_against`)."""
    from embedselect.models.candidates.spec import spec_against

    return [spec_against(part.strip(), base_dir) for part in entry.split(",") if part.strip()]


def _check_output(cfg: NightlyConfig, source: str) -> None:
    """``output`` names a folder of its own: not empty / ``.`` / ``/`` / home, not equal to or containing the
    configuration's folder, the data or the cache, not inside the cache (paths only: the disk is checked when the
    night starts, :func:`embedselect.nightly.outputs.check_outputs`)."""
    from embedselect.nightly.outputs import check_outputs

    if not cfg.output.strip() or cfg.output.strip() in (".", "./"):
        raise ConfigError(f"invalid nightly configuration {source}:\n  output: {cfg.output!r} would be the "
                          "configuration's own folder; name a folder of its own, e.g. ./site")
    try:
        check_outputs(cfg.output_path, cache=cfg.cache_path, data=cfg.data_path, config_dir=Path(cfg.base_dir),
                      writable=False)
    except ConfigError as exc:
        raise ConfigError(f"invalid nightly configuration {source}:\n  {exc}") from None


def load_config(path: str | Path) -> NightlyConfig:
    """Read and validate a YAML configuration file; relative paths in it are relative to its folder.

    Raises:
        ConfigError: the file is missing, is not YAML, or does not validate.
    """
    import yaml

    p = Path(path).expanduser()
    if not p.is_file():
        raise ConfigError(f"nightly configuration file not found: {p}")
    try:
        obj = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{p} is not valid YAML: {exc}") from None
    return parse_config(obj, base_dir=p.parent, source=str(p))


__all__ = ["CrawlConfig", "DataConfig", "ExecutorConfig", "NightlyConfig", "PolicyConfig", "load_config", "parse_config"]

"""The one orchestration path: reference data -> candidates -> cached embeddings -> metrics -> Ranking.

Used by the CLI, the nightly job and pipelines alike. Logs through :mod:`logging`; never prints.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import math
import platform
import time
import uuid
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from embedselect.arrays import check_embeddings
from embedselect.errors import AllCandidatesFailedError, ConfigError, EmbedselectError, MetricError, StoreError
from embedselect.metrics.base import (
    DEFAULT_METRICS,
    MetricContext,
    MetricResult,
    available_metrics,
    get_metric,
    get_spec,
)
from embedselect.policy import LoadPolicy
from embedselect.aggregate import DEFAULT_METHOD
from embedselect.ranking import CandidateResult, Ranking, rank_scores, to_jsonable

log = logging.getLogger(__name__)



@dataclass
class EmbedOutcome:
    """What happened to one candidate in :func:`embed`.

    ``vectors`` is the float32 (n, d) matrix when ``status == "ok"`` and ``keep_vectors`` was set: a read-only
    :class:`numpy.memmap` of the cached file (copy it before writing into it), so that holding every candidate's
    outcome does not hold every candidate's matrix in memory.
    """

    result: CandidateResult
    vectors: np.ndarray | None = field(default=None, repr=False)
    wall_seconds: float = 0.0
    """Wall time of this call for the candidate (resolve, load and embed, or the cache read), in seconds."""


def _versions() -> dict[str, str]:
    from importlib import metadata

    from embedselect.version import __version__

    out = {"embedselect": __version__, "python": platform.python_version()}
    for pkg in ("numpy", "torch", "transformers", "sentence-transformers", "timm", "huggingface_hub", "duckdb"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return out


def _num(v: Any) -> float:
    """A float from a metric value (None, as JSON writes NaN, becomes NaN)."""
    return math.nan if v is None else float(v)


@functools.lru_cache(maxsize=None)
def _code_version(metric: str) -> str:
    """The metric's code version (its spec's hash of its source), computed once per process."""
    return get_spec(metric).code_version()


def _competition_rank(r: float | None) -> Any:
    """A rank from ``rank_scores(..., ties="min")`` (an int, or None for an unranked score) as it is stored."""
    return None if r is None else int(r)


def _metric_key(metric: str, run_keys: Mapping[str, str], options: Mapping[str, Any], seed: int, labels) -> str:
    """Cache key of a whole metric result: the metric, embedselect's version and metric code, the options, the
    seed, the embedding runs it read (by candidate name) and, only for a label prior, the labels."""
    from embedselect.version import __version__

    payload = {
        "metric": metric,
        "version": __version__,
        "code": _code_version(metric),
        "options": options,
        "seed": seed,
        "runs": sorted(run_keys.items()),
        "labels": hashlib.sha256(json.dumps([str(x) for x in labels]).encode()).hexdigest()
        if labels is not None
        else None,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def load_reference_data(data: Any, *, column, labels, max_items, seed, on_error, drop_duplicates=None):
    """``data`` as a :class:`~embedselect.data.ReferenceData` (a ReferenceData is returned as it is; a path or a
    list of items is loaded with the given column, labels, sub-sampling and error rule), the one way ``select()``,
    ``embed()`` and the search index read reference data. ``drop_duplicates`` (``"exact"``, ``"near"`` or None)
    then removes duplicates (:meth:`~embedselect.data.ReferenceData.drop_duplicates`, after sub-sampling)."""
    from embedselect.data import ReferenceData

    if isinstance(data, ReferenceData):
        if max_items is not None and len(data) > max_items:
            raise ConfigError("max_items cannot sub-sample an existing ReferenceData; load it with max_items=")
        if labels is not None and not isinstance(labels, str):
            raise ConfigError("pass labels when building the ReferenceData, not to select()")
        return data if drop_duplicates is None else data.drop_duplicates(drop_duplicates, seed=seed)
    kw: dict[str, Any] = {"max_items": max_items, "seed": seed, "on_error": on_error}
    is_file = isinstance(data, (str, Path)) and Path(data).is_file()
    if column is not None:
        kw["column"] = column
    if isinstance(labels, str):
        kw["label_column"] = labels
    elif labels is not None:
        if is_file:
            raise ConfigError("for a data file, give labels as the name of its label column (labels='label')")
        kw["labels"] = labels
    ref = ReferenceData.load(data, **kw)
    return ref if drop_duplicates is None else ref.drop_duplicates(drop_duplicates, seed=seed)


STAGES_PER_CANDIDATE = 3
"""Steps of the run's progress display per candidate: resolve, load (or the cache look-up), embed."""


@dataclass
class RunContext:
    """One run of :func:`select` or :func:`embed`, built once by :func:`_run_context` and handed from stage to stage.

    Internal. The stages, in order: resolve and embed each candidate (:func:`_embed_stage`, per candidate
    :func:`_resolve` then :func:`_vectors`), :func:`_metrics_stage`, :func:`_rank_stage`, :func:`_validate_stage`
    and :func:`_report`. The first block of fields is the run's input; the second is filled by the stages.

    Attributes:
        ref: the :class:`~embedselect.data.ReferenceData` (n items of one modality).
        candidates: the parsed :class:`~embedselect.candidates.Candidate` objects, unique names, in order.
        store: the open :class:`~embedselect.store.Store` (embeddings, metric results, failures, rankings).
        bar: the run's :class:`~embedselect.progress.RunProgress`.
        device: the torch device string (``"cpu"``, ``"cuda:0"``), resolved once.
        seed, batch_size, policy, token, progress: as given to :func:`select` / :func:`embed`.
        metrics, metric_options, weights, bootstrap: :func:`select`'s metric settings (empty for :func:`embed`).
        outcomes: one :class:`EmbedOutcome` per candidate, in order.
        vectors: candidate name -> float32 (n, d) matrix, the candidates that were embedded: read-only memory maps
            of the cached files (:meth:`~embedselect.store.Store.load_vectors` with ``mmap=True``), so the metrics
            stage holds only the pages of the candidate (or pair) a metric is working on.
        per_metric: metric -> {candidate name: headline score}; ``details``: metric -> the metric's details.
        uncertainty: metric -> its bootstrap summary (when ``bootstrap``).
        warnings: what the result should tell the user, in order.
        pool_notes: the metrics' caveats about the pool's size (``details['pool_warning']``): added to ``warnings``
            only when the ranking itself does not already say that the pool is small.
        timings: wall seconds per candidate, per metric, of the validation and in total.
    """

    ref: Any
    candidates: list[Any]
    store: Any
    bar: Any
    device: str
    seed: int = 0
    batch_size: int | None = None
    policy: LoadPolicy = field(default_factory=LoadPolicy)
    token: str | None = None
    progress: bool = False
    metrics: list[str] = field(default_factory=list)
    metric_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    weights: Mapping[str, float] | None = None
    bootstrap: int = 0
    outcomes: list[EmbedOutcome] = field(default_factory=list)
    vectors: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    per_metric: dict[str, dict[str, float]] = field(default_factory=dict)
    combined_weights: dict[str, float] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    uncertainty: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    pool_notes: list[str] = field(default_factory=list)
    timings: dict[str, Any] = field(default_factory=dict)

    @property
    def results(self) -> list[CandidateResult]:
        """The candidates' results, in the order of :attr:`outcomes`."""
        return [o.result for o in self.outcomes]


def _run_context(ref: Any, candidates: Any, *, store: Any, seed: int, device: str | None, batch_size: int | None,
                 policy: LoadPolicy | None, token: str | None, progress: bool, metrics: Sequence[str] = (),
                 metric_options: Mapping[str, Mapping[str, Any]] | None = None,
                 weights: Mapping[str, float] | None = None, bootstrap: int = 0) -> RunContext:
    """The :class:`RunContext` of a run: records the data set in the store, parses the candidates for the data's
    modality, resolves the device once and sizes the progress display (per candidate, per metric, validation).

    Raises:
        ConfigError: no candidates, or an unknown device.
        CandidateSpecError: a candidate spec is not understood.
    """
    from embedselect.backends.device import resolve_device
    from embedselect.candidates import parse_candidates
    from embedselect.progress import RunProgress

    store.record_dataset(
        fingerprint=ref.fingerprint, modality=ref.modality, n_items=len(ref), source=ref.source, summary=ref.to_dict()
    )
    cands = parse_candidates(candidates, modality=ref.modality)
    if not cands:
        raise ConfigError("no candidates given: pass model ids, local directories, baselines or catalog:NAME")
    dev = resolve_device(device)
    steps = STAGES_PER_CANDIDATE * len(cands) + len(metrics) + (bool(metrics) and ref.labels is not None)
    return RunContext(
        ref=ref, candidates=cands, store=store, bar=RunProgress(steps, enabled=progress), device=dev, seed=seed,
        batch_size=batch_size, policy=policy or LoadPolicy(), token=token, progress=progress, metrics=list(metrics),
        metric_options={k: dict(v) for k, v in (metric_options or {}).items()}, weights=weights, bootstrap=bootstrap,
        timings={"candidates": {}, "metrics": {}, "validation": None, "total": None},
    )  # fmt: skip


def embed(
    data: Any,
    candidates: Any,
    *,
    column: str | None = None,
    labels: Any = None,
    max_items: int | None = None,
    seed: int = 0,
    on_error: str = "fail",
    cache_dir: str | Path | None = None,
    device: str | None = None,
    batch_size: int | None = None,
    policy: LoadPolicy | None = None,
    token: str | None = None,
    progress: bool = False,
    keep_vectors: bool = False,
) -> list[EmbedOutcome]:
    """Make sure every candidate's embeddings of ``data`` are in the cache; compute only what is missing.

    A candidate that cannot be resolved, loaded or run is returned with ``status="failed"`` and its reason,
    recorded in the store's ``failures`` table, and the others go on. The arguments mean what they mean for
    :func:`select`; ``keep_vectors`` puts each float32 (n, d) matrix into its outcome (a read-only memory map of the
    cached file; see :class:`EmbedOutcome`).

    Returns:
        one :class:`EmbedOutcome` per candidate, in the order given.
    """
    from embedselect.store import Store

    ref = load_reference_data(data, column=column, labels=labels, max_items=max_items, seed=seed, on_error=on_error)
    return embed_reference(ref, candidates, store=Store.open(cache_dir), seed=seed, device=device,
                           batch_size=batch_size, policy=policy, token=token, progress=progress,
                           keep_vectors=keep_vectors)  # fmt: skip


def embed_reference(
    ref: Any,
    candidates: Any,
    *,
    store: Any,
    seed: int = 0,
    device: str | None = None,
    batch_size: int | None = None,
    policy: LoadPolicy | None = None,
    token: str | None = None,
    progress: bool = False,
    keep_vectors: bool = False,
) -> list[EmbedOutcome]:
    """Internal: :func:`embed` for a caller that already holds the loaded data and an open store (the search index,
    the nightly job, the executors' workers), so that neither is loaded or opened twice. Not part of the public API.

    Args:
        ref: a :class:`~embedselect.data.ReferenceData`.
        candidates: as for :func:`embed` (specs, :class:`~embedselect.candidates.Candidate` objects, or both).
        store: the :class:`~embedselect.store.Store` the embeddings are read from and written to.
        seed, device, batch_size, policy, token, progress, keep_vectors: as for :func:`embed`.

    Returns:
        one :class:`EmbedOutcome` per candidate, in the order given.
    """
    ctx = _run_context(ref, candidates, store=store, seed=seed, device=device, batch_size=batch_size, policy=policy,
                       token=token, progress=progress)  # fmt: skip
    try:
        return _embed_stage(ctx, keep_vectors=keep_vectors)
    finally:
        ctx.bar.close()


def _embed_stage(ctx: RunContext, *, keep_vectors: bool) -> list[EmbedOutcome]:
    """Stages 1 and 2, one candidate at a time: resolve it (:func:`_resolve`), then read its vectors from the cache
    or compute and store them (:func:`_vectors`). A candidate's failure is recorded and the others go on. Fills
    ``ctx.outcomes``, ``ctx.vectors`` (with ``keep_vectors``) and ``ctx.timings["candidates"]``."""
    for cand in ctx.candidates:
        outcome = _embed_candidate(ctx, cand, keep_vectors=keep_vectors)
        ctx.outcomes.append(outcome)
        ctx.timings["candidates"][cand.name] = outcome.wall_seconds
        if outcome.result.ok and outcome.vectors is not None:
            ctx.vectors[cand.name] = outcome.vectors
    return ctx.outcomes


@dataclass(frozen=True)
class _Pinned:
    """A resolved candidate and the cache key of its embeddings of the run's data."""

    rc: Any  # ResolvedCandidate
    key: str


def _embed_candidate(ctx: RunContext, cand: Any, *, keep_vectors: bool) -> EmbedOutcome:
    """One candidate's embeddings of ``ctx.ref`` (from the cache or computed), or its failure; see :func:`embed`."""
    t_start = time.perf_counter()
    res = CandidateResult(name=cand.name, spec=cand.spec)
    outcome = EmbedOutcome(res)
    step = {"stage": "resolve", "done": 0}  # where a failure happened, and the progress steps counted so far
    try:
        pinned = _resolve(ctx, cand, res, step)
        with ctx.store.run_lock(pinned.key, what=cand.name):  # a concurrent run of the same key: wait, then read it
            vectors = _vectors(ctx, cand, pinned, res, step)
        res.n, res.dim = int(vectors.shape[0]), int(vectors.shape[1])
        if keep_vectors:
            outcome.vectors = vectors
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as exc:  # noqa: BLE001 - one model's failure must not end the run
        _record_failure(ctx, cand, res, exc, step)
    outcome.wall_seconds = time.perf_counter() - t_start
    return outcome


def _resolve(ctx: RunContext, cand: Any, res: CandidateResult, step: dict[str, Any]) -> _Pinned:
    """Stage 1 for one candidate: pin it to exact bytes, check its modality, record the model and compute the cache
    key of its vectors (model, revision, backend, the options that change vectors, data fingerprint, precision)."""
    from embedselect.backends.base import vector_options
    from embedselect.backends.device import key_precision, library_progress, progress_enabled
    from embedselect.backends.loader import weight_bytes
    from embedselect.candidates import resolve_candidate
    from embedselect.store import run_key

    with ctx.bar.stage(f"{cand.name}: resolve"):
        step["done"] += 1
        with library_progress(progress_enabled(ctx.progress)):
            rc = resolve_candidate(cand, policy=ctx.policy.for_model(cand.ref), token=ctx.token,
                                   digest_dir=None if ctx.store.read_only else ctx.store.root / "digests")  # fmt: skip
        res.model_id, res.revision, res.backend, res.modality = rc.model_id, rc.revision, rc.backend, rc.modality
        res.model_bytes = weight_bytes(rc.local_dir) if rc.local_dir else None
        if rc.modality != ctx.ref.modality:
            raise ConfigError(
                f"{cand.name} embeds {rc.modality} but the reference data is {ctx.ref.modality}; "
                "choose candidates of the data's modality"
            )
        ctx.store.record_model(model_id=rc.model_id, revision=rc.revision, backend=rc.backend, modality=rc.modality,
                               spec=cand.spec, local_dir=str(rc.local_dir) if rc.local_dir else None)  # fmt: skip
        is_baseline = rc.model_id.startswith("baseline:")
        precision = key_precision(cand.options.get("dtype"), ctx.device, baseline=is_baseline)
        key_options = vector_options(cand.options)
        if is_baseline:  # every setting of the baseline's own (?seed= over the run's seed, ?dim=, ...)
            from embedselect.backends.baselines import baseline_key_options

            key_options = baseline_key_options(rc.backend, modality=rc.modality, options=key_options, seed=ctx.seed)
        key = run_key(model_id=rc.model_id, revision=rc.revision, backend=rc.backend, options=key_options,
                      fingerprint=ctx.ref.fingerprint, precision=precision)  # fmt: skip
        res.run_key = key
    return _Pinned(rc, key)


def _vectors(ctx: RunContext, cand: Any, pinned: _Pinned, res: CandidateResult, step: dict[str, Any]) -> np.ndarray:
    """Stage 2 for one candidate: its float32 (n, d) embeddings of ``ctx.ref``, from the store or computed (load the
    model, embed, store the vectors with their run record), as a read-only memory map of the cached file (the
    in-memory matrix only when the file cannot be mapped back)."""
    from embedselect.backends.device import library_progress, progress_enabled

    rc, key, ref = pinned.rc, pinned.key, ctx.ref
    step["stage"] = "cache"
    vectors = ctx.store.load_vectors(key, mmap=True)
    if vectors is not None:
        rec = ctx.store.get_run(key)
        res.cached, res.seconds = True, rec.seconds if rec else None
        log.info("%s: cached (%d x %d)", cand.name, *vectors.shape)
        ctx.bar.advance(STAGES_PER_CANDIDATE - step["done"])
        step["done"] = STAGES_PER_CANDIDATE
        return vectors
    ctx.store.require_writable(f"store the embeddings of {cand.name}")  # before any work that could not be kept
    step["stage"] = "load"
    from embedselect.backends.loader import load_embedder

    with ctx.bar.stage(f"{cand.name}: load"), library_progress(progress_enabled(ctx.progress)):
        step["done"] += 1
        embedder = load_embedder(rc, device=ctx.device, policy=ctx.policy.for_model(cand.ref), options=cand.options,
                                 seed=ctx.seed)  # fmt: skip
    step["stage"] = "embed"
    log.info("%s: embedding %d %s items on %s", cand.name, len(ref), ref.modality, embedder.device)
    with ctx.bar.stage(f"{cand.name}: embed {len(ref)} {ref.modality} items"):
        step["done"] += 1
        t0 = time.perf_counter()
        vectors = embedder.embed(list(ref.items), batch_size=ctx.batch_size, progress=ctx.progress)
        seconds = time.perf_counter() - t0
    ctx.bar.rate(cand.name, len(ref), seconds)
    vectors = check_embeddings(vectors, what=f"the embeddings {cand.name} returned", n=len(ref), dtype=None,
                               finite=False, error=MetricError)  # not finite: refused by the store, with its message
    step["stage"] = "store"
    ctx.store.save_run(key=key, vectors=vectors, model_id=rc.model_id, revision=rc.revision, backend=rc.backend,
                       settings=embedder.settings(), fingerprint=ref.fingerprint, device=embedder.device,
                       seconds=seconds)  # fmt: skip
    res.seconds = seconds
    # hand on the stored file, memory-mapped, and let the in-memory matrix go: the run then holds at most one
    # candidate's matrix in its own memory at a time (the file was just written and checksummed: size check only)
    mapped = ctx.store.load_vectors(key, verify=False, mmap=True)
    return mapped if mapped is not None else vectors


def _record_failure(ctx: RunContext, cand: Any, res: CandidateResult, exc: Exception, step: dict[str, Any]) -> None:
    """A candidate failed at ``step["stage"]``: mark its result failed, log it, record it through the one place
    (:func:`embedselect.store.failures.record_failure`: token-free message, a policy refusal of a hub revision
    also in ``hub_refusals``) and count its remaining steps."""
    from embedselect.store.failures import record_failure

    ctx.bar.advance(STAGES_PER_CANDIDATE - step["done"])  # the candidate's remaining stages will not run
    stage = step["stage"]
    hub_repo = cand.ref if cand.kind == "hub" else None
    message = record_failure(ctx.store, spec=cand.spec, stage=stage, error=exc, model_id=res.model_id or hub_repo,
                             revision=res.revision or cand.revision, fingerprint=ctx.ref.fingerprint,
                             token=ctx.token, repo_id=hub_repo)  # fmt: skip
    res.status, res.error_type, res.error = "failed", type(exc).__name__, message
    if not isinstance(exc, EmbedselectError):
        log.debug("unexpected error for %s", cand.name, exc_info=exc)
    log.warning("%s failed at %s: %s: %s", cand.name, stage, type(exc).__name__, message)


def select(
    data: Any,
    candidates: Any,
    *,
    metrics: Sequence[str] = DEFAULT_METRICS,
    column: str | None = None,
    labels: Any = None,
    max_items: int | None = None,
    seed: int = 0,
    on_error: str = "fail",
    cache_dir: str | Path | None = None,
    device: str | None = None,
    batch_size: int | None = None,
    policy: LoadPolicy | None = None,
    metric_options: Mapping[str, Mapping[str, Any]] | None = None,
    weights: Mapping[str, float] | None = None,
    bootstrap: int = 0,
    token: str | None = None,
    progress: bool = False,
    save: bool = True,
    drop_duplicates: str | None = None,
) -> Ranking:
    """Rank candidate embedders on ``data`` without labels.

    Args:
        data: a file (CSV/TSV/JSONL/Parquet/TXT), an image folder, a list of texts or image paths, a pandas
            Series, or a :class:`~embedselect.data.ReferenceData`.
        candidates: hub ids (``org/name[@revision]``), local model directories, baseline names
            (``tfidf-svd``, ``random-projection``, ``pixel-pca``), ``catalog:text`` / ``catalog:image``,
            :class:`~embedselect.candidates.Candidate` objects, or a comma-separated string of these.
        metrics: metric names; see :func:`embedselect.metrics.available_metrics`.
        column: the text column of a table file.
        labels: optional label column name (file data) or array aligned with the items. Labels are used only to
            *validate* the label-free ranking (held-out probe accuracy and rank correlations), never by the
            label-free scores, unless a metric is explicitly asked for a label prior
            (``metric_options={"task_prior": {"prior": "labels"}}``).
        max_items: seeded sub-sample of the reference data to at most this many items.
        seed: root seed for sampling, baselines, metrics and bootstrap.
        on_error: "fail" or "skip" undecodable items.
        cache_dir: cache root (default ``$EMBEDSELECT_CACHE_DIR`` or the user cache directory).
        device: "cpu", "cuda", "cuda:1", or None for automatic.
        batch_size: embedding batch size (None = backend default).
        policy: safe-loading policy (default: safetensors only, no remote code, no gated repos).
        metric_options: per-metric options, e.g. ``{"task_prior": {"tau": 0.1}}``.
        weights: metric weights for the combined rank; metrics not named keep their default weight
            (:attr:`embedselect.metrics.base.MetricSpec.weight`; the weights used are in
            ``settings["combined_weights"]``).
        bootstrap: number of bootstrap resamples of the reference items for score intervals (0 = off).
        token: hub token (never logged or stored); default from ``HF_TOKEN``.
        progress: show progress bars (only on a terminal).
        save: store the ranking in the cache database.
        drop_duplicates: ``"exact"`` or ``"near"``: rank on the reference data without its duplicates (see
            :meth:`~embedselect.data.ReferenceData.drop_duplicates`; near duplicates are found on cheap text /
            pixel features, the same for every candidate); how many were dropped is in
            ``ranking.dataset["report"]["n_dropped_duplicates"]``. None (default): keep every item.

    Returns:
        a :class:`~embedselect.ranking.Ranking`, best candidate first.

    Raises:
        DataError: the data cannot be used (missing file/column, empty, too few items, undecodable).
        ConfigError: invalid arguments (unknown metric, ...).
        AllCandidatesFailedError: no candidate could be embedded.
        StoreError: the cache cannot be used.
    """
    from embedselect.store import Store

    metrics = _checked_metrics(metrics, weights)
    ref = load_reference_data(data, column=column, labels=labels, max_items=max_items, seed=seed, on_error=on_error,
                              drop_duplicates=drop_duplicates)
    for m in metrics:
        ref.require(get_spec(m).min_items, purpose=f"the {m} metric")
    ref.require_distinct()
    ctx = _run_context(ref, candidates, store=Store.open(cache_dir), seed=seed, device=device, batch_size=batch_size,
                       policy=policy, token=token, progress=progress, metrics=metrics, metric_options=metric_options,
                       weights=weights, bootstrap=bootstrap)  # fmt: skip
    try:
        t_start = time.perf_counter()
        _embed_stage(ctx, keep_vectors=True)
        return _rank_embedded(ctx, t_start, save=save, max_items=max_items, on_error=on_error)
    finally:
        ctx.bar.close()


def _rank_embedded(ctx: RunContext, t_start: float, *, save: bool, max_items: int | None, on_error: str) -> Ranking:
    """Stages 3 to 6 over the candidates of ``ctx`` that are embedded: metrics, combined rank, validation against
    labels (if any), the :class:`~embedselect.ranking.Ranking` (stored when ``save``)."""
    _metrics_stage(ctx)
    decision = _rank_stage(ctx)
    validation = _validate_stage(ctx)
    if save and not ctx.store.can_record("the ranking"):
        ctx.warnings.append(f"the cache at {ctx.store.root} is read-only: this ranking is not stored (leaderboard "
                            "and history will not show it)")  # fmt: skip
    ranking = _report(ctx, decision, validation, max_items=max_items, on_error=on_error)
    ctx.timings["total"] = time.perf_counter() - t_start
    if save:
        _save(ctx, ranking)
    return ranking


def select_embedded(ref: Any, candidates: Sequence[Any], outcomes: Sequence[EmbedOutcome], *, store: Any,
                    metrics: Sequence[str] = DEFAULT_METRICS, seed: int = 0, device: str | None = None,
                    batch_size: int | None = None, metric_options: Mapping[str, Mapping[str, Any]] | None = None,
                    weights: Mapping[str, float] | None = None, bootstrap: int = 0, token: str | None = None,
                    save: bool = True) -> Ranking:
    """:func:`select` over ``candidates`` already resolved and embedded into ``store`` (the nightly job's executor
    did it): ``outcomes`` are their :class:`EmbedOutcome` objects, in order; an ok one's vectors are read back by run
    key, a failed one stays failed. Nothing is resolved (no hub request) or embedded again. The other arguments and
    the errors are :func:`select`'s."""
    metrics = _checked_metrics(metrics, weights)
    if [c.name for c in candidates] != [o.result.name for o in outcomes]:
        raise ConfigError("select_embedded needs one outcome per candidate, in the same order")
    for m in metrics:
        ref.require(get_spec(m).min_items, purpose=f"the {m} metric")
    ref.require_distinct()
    ctx = _run_context(ref, list(candidates), store=store, seed=seed, device=device, batch_size=batch_size,
                       policy=None, token=token, progress=False, metrics=metrics, metric_options=metric_options,
                       weights=weights, bootstrap=bootstrap)  # fmt: skip
    try:
        t_start = time.perf_counter()
        for cand, outcome in zip(ctx.candidates, outcomes):
            r = outcome.result
            ctx.outcomes.append(outcome)
            ctx.timings["candidates"][r.name] = outcome.wall_seconds
            if not r.ok:
                continue
            vectors = store.load_vectors(r.run_key, mmap=True) if r.run_key else None
            if vectors is None:  # e.g. removed by `cache rm` since it was embedded
                _record_failure(ctx, cand, r, StoreError(f"the embeddings of {r.name} are no longer in {store.root}"),
                                {"stage": "cache", "done": 0})  # fmt: skip
            else:
                ctx.vectors[r.name] = vectors
        return _rank_embedded(ctx, t_start, save=save, max_items=None, on_error="fail")
    finally:
        ctx.bar.close()


def _checked_metrics(metrics: Sequence[str], weights: Mapping[str, float] | None) -> list[str]:
    """The requested metric names without repeats, in order.

    Raises:
        UnknownMetricError: a metric that is not registered.
        ConfigError: no metric, or a weight for a metric that was not requested.
    """
    metrics = list(dict.fromkeys(metrics))
    unknown = [m for m in metrics if m not in available_metrics()]
    if unknown:
        from embedselect.errors import UnknownMetricError

        raise UnknownMetricError(f"unknown metric(s) {unknown}; available: {available_metrics()}")
    if not metrics:
        raise ConfigError("choose at least one metric")
    if weights and set(weights) - set(metrics):
        raise ConfigError(
            f"weights for metric(s) not requested: {sorted(set(weights) - set(metrics))}; metrics: {metrics}"
        )
    return metrics


def _metrics_stage(ctx: RunContext) -> None:
    """Stage 3: every metric over the embedded candidates (from the store or computed), with its bootstrap; fills
    ``ctx.per_metric``, ``ctx.details``, ``ctx.uncertainty``, each result's scores, per-metric ranks, columns and
    intervals, and the warnings (failed candidates, duplicates in the data, the metrics' own warnings).

    Raises:
        AllCandidatesFailedError: no candidate could be embedded.
        MetricError: no metric could be computed.
    """
    results, ok, warnings = ctx.results, ctx.vectors, ctx.warnings
    if not ok:
        if ctx.store.read_only and all(r.error_type == "StoreReadOnlyError" for r in results):
            ctx.store.require_writable("store the embeddings of any of the candidates (none is cached)")  # exit 6
        reasons = "; ".join(f"{r.name}: {r.error_type}: {r.error}" for r in results)
        raise AllCandidatesFailedError(f"no candidate could be embedded ({reasons})")
    warnings += [note for r in results if (note := r.failure_note) is not None]  # None exactly when ok
    if ctx.ref.duplicates_note():
        warnings.append(ctx.ref.duplicates_note())
    run_keys = {r.name: r.run_key or "" for r in results if r.ok}  # an ok result always has its run key
    by_name = {r.name: r for r in results}
    for m in ctx.metrics:
        opts = ctx.metric_options.get(m, {})
        mctx = MetricContext(
            embeddings=ok,
            run_keys=run_keys,
            seed=ctx.seed,
            options=opts,
            labels=ctx.ref.labels if opts.get("prior") == "labels" else None,
            pair_cache=ctx.store,
            device=ctx.device,
        )
        t_metric = time.perf_counter()
        with ctx.bar.stage(f"metric {m}"):
            mr = _run_metric(m, mctx, ctx, run_keys=run_keys, opts=opts)
        ctx.timings["metrics"][m] = time.perf_counter() - t_metric
        if mr is None:
            continue
        ctx.per_metric[m] = mr.scores
        ctx.details[m] = mr.details
        for w in mr.details.get("warnings") or []:  # the metric's own warnings, also at the top level
            note = f"{m}: {w}" if not str(w).startswith(m) else str(w)
            (ctx.pool_notes if w == mr.details.get("pool_warning") else warnings).append(note)
        for name, why in (mr.details.get("excluded") or {}).items():  # degenerate for this metric only
            if not any(w.startswith(m) and name in w and why in w for w in warnings):  # unless this metric said so
                warnings.append(f"{m} did not score {name}: {why}")
                log.warning("%s did not score %s: %s", m, name, why)
        ranks = rank_scores(mr.scores)
        for name, score in mr.scores.items():
            by_name[name].scores[m] = _num(score)
            by_name[name].ranks[m] = _competition_rank(ranks[name])
        for col, values in mr.columns.items():
            for name, v in values.items():
                by_name[name].columns[col if col.startswith(m) else f"{m}.{col}"] = _num(v)
        boot = ctx.uncertainty.get(m)
        if boot is not None:
            # the interval belongs to the score that was bootstrapped: the headline, or a cheaper proxy of it
            # (task_prior bootstraps its closed-form alignment, not the probes)
            key = m if boot.get("score_name") in (None, m, mr.details.get("headline")) else boot["score_name"]
            for name, (lo, hi) in boot["intervals"].items():
                by_name[name].intervals[key] = [_num(lo), _num(hi)]
    if not ctx.per_metric:
        raise MetricError("no metric could be computed: " + "; ".join(warnings))


def _rank_stage(ctx: RunContext) -> Any:
    """Stage 4: combine the metrics (:data:`embedselect.aggregate.DEFAULT_METHOD`; metrics not named in ``weights``
    keep their spec's default weight, weights of metrics that failed are dropped), put derived copies below their
    parents (:func:`embedselect.aggregate.copies_below_parents`), give each result its combined score and rank,
    sort the outcomes best first (ties share a rank and are listed by name, so the first row, ``best`` and the
    validation's top pick agree) and decide whether there is a clear winner.

    Returns:
        the :class:`~embedselect.aggregate.Decision`.
    """
    from embedselect.aggregate import MIN_POOL, combine_ranks, copies_below_parents, decide
    from embedselect.backends.base import vector_options
    from embedselect.metrics.copies import derived_copies

    by_name = {r.name: r for r in ctx.results}
    full_weights = {m: float((ctx.weights or {}).get(m, get_spec(m).weight)) for m in ctx.per_metric}
    if not ctx.weights and not any(full_weights.values()):
        # only metrics that are shown, not combined, by default (sufficiency) were asked for: they are the score
        full_weights = {m: 1.0 for m in full_weights}
    ctx.combined_weights = full_weights
    combined = combine_ranks(ctx.per_metric, weights=full_weights, method=DEFAULT_METHOD)
    # a quantised or truncated copy of another candidate never ranks above it, and its parent takes its score
    # when it was higher (data processing inequality: the parent is at least as good)
    # what the specs say first: another pooling, max_length, resolution or layer of one model is a variant, not a copy
    origins = {c.name: (by_name[c.name].model_id, by_name[c.name].revision, vector_options(c.options))
               for c in ctx.candidates if c.name in by_name}
    copies = derived_copies({n: ctx.vectors[n] for n in combined if n in ctx.vectors}, seed=ctx.seed, origins=origins)
    combined, moved = copies_below_parents(combined, [(d.copy, d.parent) for d in copies])
    ctx.details["copies"] = {"pairs": [d.to_dict() for d in copies], "moved_below_parent": [list(p) for p in moved]}
    for c, p in moved:
        d = next(x for x in copies if (x.copy, x.parent) == (c, p))
        ctx.warnings.append(f"{c} is a {d.relation} copy of {p} (median per-coordinate |Spearman| "
                            f"{d.median_abs_spearman:.2f}): ranked below it, and {p} takes its combined score, "
                            "since a copy cannot carry more information")
    for name, score in combined.items():
        by_name[name].combined_score = float(score)
    for name, r in rank_scores({n: by_name[n].combined_score for n in combined}).items():
        by_name[name].rank = _competition_rank(r)
    ctx.outcomes.sort(key=lambda o: (not o.result.ok, o.result.rank if o.result.rank is not None else math.inf,
                                     o.result.name))  # fmt: skip
    decision = decide(combined, intervals={n: _intervals_in_score(by_name[n].intervals, full_weights) for n in combined})
    ctx.warnings += [f"no clear winner: {why}" for why in decision.reasons]
    if sum(1 for v in combined.values() if math.isfinite(v)) >= MIN_POOL:  # else decide() said it
        ctx.warnings += ctx.pool_notes
    return decision


def _intervals_in_score(intervals: Mapping[str, Any], weights: Mapping[str, float]) -> dict[str, Any]:
    """The bootstrap intervals of one candidate that belong to scores in the combination: only those can separate
    its leaders (a weight-0 metric is shown, not combined). An interval's key is a metric's name or a score of it
    (task_prior bootstraps ``task_prior_alignment``)."""
    in_score = [m for m, w in weights.items() if w > 0]
    return {k: v for k, v in intervals.items() if any(k == m or k.startswith((m + "_", m + ".")) for m in in_score)}


def _validate_stage(ctx: RunContext) -> dict[str, Any] | None:
    """Stage 5, only when the data has labels: held-out probe accuracy on the user's labels, and how well each
    label-free score (the headlines, the secondary scores a metric names, and the combined score) predicts it.
    Adds ``labels.*`` columns to the results.

    Returns:
        the validation report as a dict, or None without labels.
    """
    if ctx.ref.labels is None:
        return None
    from embedselect.validate import validate

    by_name = {r.name: r for r in ctx.results}
    # also check the secondary scores a metric names (e.g. task_prior's probe accuracy when the headline is the
    # closed-form alignment), so that users see which of them their labels agree with
    label_free = dict(ctx.per_metric)
    for m, det in ctx.details.items():
        for col in det.get("secondary", []) or []:
            name = col if col.startswith(m) else f"{m}.{col}"
            values = {r: by_name[r].columns[name] for r in ctx.vectors if name in by_name[r].columns}
            if values:
                label_free[name] = values
    t_validation = time.perf_counter()
    with ctx.bar.stage("validation against your labels"):
        combined = {n: s for n in ctx.vectors if (s := by_name[n].combined_score) is not None}
        report = validate(ctx.vectors, ctx.ref.labels, {**label_free, "combined": combined}, seed=ctx.seed)
        for name, row in report.table.iterrows():
            for col, v in row.items():
                if col not in label_free and col != "combined":
                    by_name[str(name)].columns[f"labels.{col}"] = _num(v)
        validation = report.to_dict()
    ctx.timings["validation"] = time.perf_counter() - t_validation
    return validation


def _report(ctx: RunContext, decision: Any, validation: dict[str, Any] | None, *, max_items: int | None,
            on_error: str) -> Ranking:
    """Stage 6: the :class:`~embedselect.ranking.Ranking` of the run (results best first, settings, versions,
    details, validation, uncertainty, warnings, the decision and the timings)."""
    return Ranking(
        candidates=ctx.results,
        metrics=[m for m in ctx.metrics if m in ctx.per_metric],
        combine=DEFAULT_METHOD,
        dataset=ctx.ref.to_dict(),
        settings={
            "seed": ctx.seed,
            "max_items": max_items,
            "on_error": on_error,
            "device": ctx.device,
            "batch_size": ctx.batch_size,
            "metric_options": ctx.metric_options,
            "weights": dict(ctx.weights) if ctx.weights else None,
            "combined_weights": ctx.combined_weights,
            "bootstrap": ctx.bootstrap,
            "policy": {"allow_pickle": ctx.policy.allow_pickle, "trust_remote_code": ctx.policy.trust_remote_code},
        },
        versions=_versions(),
        details=ctx.details,
        validation=validation,
        uncertainty=ctx.uncertainty or None,
        warnings=ctx.warnings,
        ranking_id=uuid.uuid4().hex,
        created_at=datetime.now(timezone.utc).isoformat(),
        decided=decision.decided,
        leaders=decision.leaders,
        undecided_reasons=decision.reasons,
        timings=ctx.timings,
    )


def _save(ctx: RunContext, ranking: Ranking) -> None:
    """Store the ranking and one row per (metric, embedded candidate) in the cache database."""
    rows = [
        {
            "metric": m,
            "candidate": r.name,
            "model_id": r.model_id,
            "revision": r.revision,
            "run_key": r.run_key,
            "score": r.scores.get(m),
            "rank": r.ranks.get(m),
            "columns": {k: v for k, v in r.columns.items() if k.startswith(m)},
        }
        for r in ranking.candidates
        if r.ok
        for m in ranking.metrics
    ]
    ctx.store.save_ranking(ranking.ranking_id, ranking.to_dict(), rows)


def _run_metric(m: str, mctx: MetricContext, ctx: RunContext, *, run_keys: Mapping[str, str],
                opts: Mapping[str, Any]) -> MetricResult | None:
    """One metric's result (from the store, or computed and stored), and its bootstrap into ``ctx.uncertainty[m]``
    when asked; None (with a warning) when the metric cannot be computed."""
    fn = get_metric(m)
    mkey = _metric_key(m, run_keys, opts, ctx.seed, ctx.ref.labels if mctx.labels is not None else None)
    cached = ctx.store.get_metric_result(mkey)
    if cached is not None:
        mr = MetricResult(**cached)
        mr.scores = {k: _num(v) for k, v in mr.scores.items()}
        mr.columns = {c: {k: _num(v) for k, v in vals.items()} for c, vals in mr.columns.items()}
        mr.intervals = {k: (v[0], v[1]) for k, v in mr.intervals.items()}
        log.info("metric %s: cached", m)
    else:
        try:
            mr = fn(mctx)
        except MetricError as exc:
            ctx.warnings.append(f"metric {m} was not computed: {exc}")
            log.warning("metric %s failed: %s", m, exc)
            return None
        ctx.store.put_metric_result(mkey, m, to_jsonable(asdict(mr)))
    if ctx.bootstrap and ctx.bootstrap > 0:
        bkey = f"{mkey}:bootstrap:{ctx.bootstrap}"
        boot = ctx.store.get_metric_result(bkey)
        if boot is None:
            from embedselect.uncertainty import bootstrap_metric

            boot = to_jsonable(bootstrap_metric(fn, mctx, n_boot=ctx.bootstrap, seed=ctx.seed).to_dict())
            ctx.store.put_metric_result(bkey, f"{m}:bootstrap", boot)
        ctx.uncertainty[m] = boot
    return mr


def refresh_catalog(*, store: Any = None, cache_dir: str | Path | None = None, record: bool = True,
                    token: str | None = None, **query: Any):
    """Crawl the hub (:func:`embedselect.hub.crawl` with ``query``: library, pipeline_tag, tags, author, search,
    sort, limit, min_params, max_params, licenses, include_gated) and record the result in the store's catalogue
    (all of it or nothing). The one path the ``crawl`` command and the nightly job share.

    Returns:
        ``(CrawlResult, crawl_id)``; ``crawl_id`` is None when nothing was recorded (``record=False`` or no model).
    """
    from embedselect.hub import crawl
    from embedselect.store import Store
    from embedselect.store.catalog import record_crawl

    result = crawl(token=token, **query)
    crawl_id = None
    if record and result.models:
        crawl_id = record_crawl(store if store is not None else Store.open(cache_dir), result)
    return result, crawl_id

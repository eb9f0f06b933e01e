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

from embedselect.errors import (
    AllCandidatesFailedError,
    ConfigError,
    EmbedselectError,
    MetricError,
)
from embedselect.metrics.base import MetricContext, MetricResult, available_metrics, get_metric, get_spec
from embedselect.policy import LoadPolicy
from embedselect.ranking import CandidateResult, Ranking, to_jsonable, rank_scores

log = logging.getLogger(__name__)

DEFAULT_METRICS = ("task_prior", "sufficiency")


@dataclass
class EmbedOutcome:
    """What happened to one candidate in :func:`embed`.

    ``vectors`` is the float32 (n, d) matrix when ``status == "ok"`` and ``keep_vectors`` was set.
    """

    result: CandidateResult
    vectors: np.ndarray | None = field(default=None, repr=False)
    wall_seconds: float = 0.0
    """Wall time of this call for the candidate (resolve, load and embed, or the cache read), in seconds."""


def _versions() -> dict[str, str]:
    from importlib import metadata

    from embedselect import __version__

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


def _metric_key(metric: str, run_keys: Mapping[str, str], options: Mapping[str, Any], seed: int, labels) -> str:
    """Cache key of a whole metric result: the metric, embedselect's version and metric code, the options, the
    seed, the embedding runs it read (by candidate name) and, only for a label prior, the labels."""
    from embedselect import __version__

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


def load_reference_data(data: Any, *, column, labels, max_items, seed, on_error):
    """``data`` as a :class:`~embedselect.data.ReferenceData` (a ReferenceData is returned as it is; a path or a
    list of items is loaded with the given column, labels, sub-sampling and error rule), the one way ``select()``,
    ``embed()`` and the search index read reference data."""
    from embedselect.data import ReferenceData

    if isinstance(data, ReferenceData):
        if max_items is not None and len(data) > max_items:
            raise ConfigError("max_items cannot sub-sample an existing ReferenceData; load it with max_items=")
        if labels is not None and not isinstance(labels, str):
            raise ConfigError("pass labels when building the ReferenceData, not to select()")
        return data
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
    return ReferenceData.load(data, **kw)


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
    _data=None,
    _store=None,
    _progress=None,
) -> list[EmbedOutcome]:
    """Make sure every candidate's embeddings of ``data`` are in the cache; compute only what is missing.

    A candidate that cannot be resolved, loaded or run is returned with ``status="failed"`` and its reason,
    recorded in the store's ``failures`` table, and the others go on.

    Returns:
        one :class:`EmbedOutcome` per candidate, in the order given.
    """
    from embedselect.candidates import parse_candidates
    from embedselect.backends.device import resolve_device
    from embedselect.store import Store

    policy = policy or LoadPolicy()
    ref = _data if _data is not None else load_reference_data(
        data, column=column, labels=labels, max_items=max_items, seed=seed, on_error=on_error
    )
    store = _store if _store is not None else Store.open(cache_dir)
    store.record_dataset(
        fingerprint=ref.fingerprint, modality=ref.modality, n_items=len(ref), source=ref.source, summary=ref.to_dict()
    )
    cands = parse_candidates(candidates, modality=ref.modality)
    if not cands:
        raise ConfigError("no candidates given: pass model ids, local directories, baselines or catalog:NAME")
    dev = resolve_device(device)
    from embedselect.progress import RunProgress

    bar = _progress if _progress is not None else RunProgress(STAGES_PER_CANDIDATE * len(cands), enabled=progress)
    try:
        return [
            _embed_one(cand, ref, store, bar, dev=dev, seed=seed, batch_size=batch_size, policy=policy, token=token,
                       progress=progress, keep_vectors=keep_vectors)
            for cand in cands
        ]  # fmt: skip
    finally:
        if _progress is None:
            bar.close()


STAGES_PER_CANDIDATE = 3
"""Steps of the run's progress display per candidate: resolve, load (or the cache look-up), embed."""


def _embed_one(cand, ref, store, bar, *, dev, seed, batch_size, policy, token, progress, keep_vectors) -> EmbedOutcome:
    """One candidate's embeddings of ``ref`` (from the cache or computed), or its failure; see :func:`embed`."""
    from embedselect.candidates import resolve_candidate
    from embedselect.backends.base import vector_options
    from embedselect.backends.loader import weight_bytes
    from embedselect.backends.device import library_progress, progress_enabled
    from embedselect.store import run_key

    t_start = time.perf_counter()
    res = CandidateResult(name=cand.name, spec=cand.spec)
    outcome = EmbedOutcome(res)
    stage = "resolve"
    done = 0  # progress steps counted for this candidate
    try:
        with bar.stage(f"{cand.name}: resolve"):
            done += 1
            with library_progress(progress_enabled(progress)):
                rc = resolve_candidate(cand, policy=policy.for_model(cand.ref), token=token)
            res.model_id, res.revision, res.backend, res.modality = rc.model_id, rc.revision, rc.backend, rc.modality
            res.model_bytes = weight_bytes(rc.local_dir) if rc.local_dir else None
            if rc.modality != ref.modality:
                raise ConfigError(
                    f"{cand.name} embeds {rc.modality} but the reference data is {ref.modality}; "
                    "choose candidates of the data's modality"
                )
            store.record_model(
                model_id=rc.model_id,
                revision=rc.revision,
                backend=rc.backend,
                modality=rc.modality,
                spec=cand.spec,
                local_dir=str(rc.local_dir) if rc.local_dir else None,
            )
            is_baseline = rc.model_id.startswith("baseline:")
            precision = "fp16" if dev.startswith("cuda") and not is_baseline else "fp32"
            key_options = vector_options(cand.options)
            if is_baseline:
                key_options["seed"] = seed  # fitted / random baselines depend on the seed
            key = run_key(
                model_id=rc.model_id,
                revision=rc.revision,
                backend=rc.backend,
                options=key_options,
                fingerprint=ref.fingerprint,
                precision=precision,
            )
            res.run_key = key
        stage = "cache"
        vectors = store.load_vectors(key)
        if vectors is not None:
            rec = store.get_run(key)
            res.cached, res.seconds = True, rec.seconds if rec else None
            log.info("%s: cached (%d x %d)", cand.name, *vectors.shape)
            bar.advance(STAGES_PER_CANDIDATE - done)
            done = STAGES_PER_CANDIDATE
        else:
            store.require_writable(f"store the embeddings of {cand.name}")  # before any work that could not be kept
            stage = "load"
            from embedselect.backends.loader import load_embedder

            with bar.stage(f"{cand.name}: load"), library_progress(progress_enabled(progress)):
                done += 1
                embedder = load_embedder(
                    rc, device=dev, policy=policy.for_model(cand.ref), options=cand.options, seed=seed
                )
            stage = "embed"
            log.info("%s: embedding %d %s items on %s", cand.name, len(ref), ref.modality, embedder.device)
            with bar.stage(f"{cand.name}: embed {len(ref)} {ref.modality} items"):
                done += 1
                t0 = time.perf_counter()
                vectors = embedder.embed(list(ref.items), batch_size=batch_size, progress=progress)
                seconds = time.perf_counter() - t0
            bar.rate(cand.name, len(ref), seconds)
            if vectors.ndim != 2 or vectors.shape[0] != len(ref):
                raise MetricError(f"{cand.name} returned an array of shape {vectors.shape} for {len(ref)} items")
            stage = "store"
            store.save_run(
                key=key,
                vectors=vectors,
                model_id=rc.model_id,
                revision=rc.revision,
                backend=rc.backend,
                settings=embedder.settings(),
                fingerprint=ref.fingerprint,
                device=embedder.device,
                seconds=seconds,
            )
            res.seconds = seconds
        res.n, res.dim = int(vectors.shape[0]), int(vectors.shape[1])
        if keep_vectors:
            outcome.vectors = vectors
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as exc:  # noqa: BLE001 - one model's failure must not end the run
        from embedselect.redaction import redact

        bar.advance(STAGES_PER_CANDIDATE - done)  # the candidate's remaining stages will not run
        message = redact(str(exc), token)
        res.status, res.error_type, res.error = "failed", type(exc).__name__, message
        if not isinstance(exc, EmbedselectError):
            log.debug("unexpected error for %s", cand.name, exc_info=True)
        log.warning("%s failed at %s: %s: %s", cand.name, stage, type(exc).__name__, message)
        store.record_failure(
            spec=cand.spec,
            stage=stage,
            error_type=type(exc).__name__,
            message=message,
            model_id=res.model_id,
            revision=res.revision,
            fingerprint=ref.fingerprint,
        )
        if cand.kind == "hub" and stage in ("resolve", "load"):
            _record_hub_refusal(store, cand.ref, res.revision, exc, message)
    outcome.wall_seconds = time.perf_counter() - t_start
    return outcome


def _record_hub_refusal(store, repo_id: str, revision: str | None, exc: Exception, message: str) -> None:
    """Put a hub model that was refused or could not be fetched into the catalogue's ``hub_refusals``, so
    that the ``candidates`` view (and the nightly job) skip it until it has a new commit."""
    from embedselect.errors import HubError, UnsafeModelError
    from embedselect.store import catalog

    if isinstance(exc, UnsafeModelError):
        reason = exc.reason
    elif isinstance(exc, HubError):
        reason = "fetch_error"
    elif isinstance(exc, EmbedselectError) and "not found" in message.lower():
        reason = "not_found"
    else:
        return
    catalog.record_refusal(store, repo_id, revision, reason, message)


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
        weights: metric weights for the combined rank; metrics not named keep weight 1 (default: equal).
        bootstrap: number of bootstrap resamples of the reference items for score intervals (0 = off).
        token: hub token (never logged or stored); default from ``HF_TOKEN``.
        progress: show progress bars (only on a terminal).
        save: store the ranking in the cache database.

    Returns:
        a :class:`~embedselect.ranking.Ranking`, best candidate first.

    Raises:
        DataError: the data cannot be used (missing file/column, empty, too few items, undecodable).
        ConfigError: invalid arguments (unknown metric, ...).
        AllCandidatesFailedError: no candidate could be embedded.
        StoreError: the cache cannot be used.
    """
    from embedselect.backends.device import resolve_device
    from embedselect.store import Store

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
    metric_options = {k: dict(v) for k, v in (metric_options or {}).items()}
    ref = load_reference_data(data, column=column, labels=labels, max_items=max_items, seed=seed, on_error=on_error)
    for m in metrics:
        ref.require(get_spec(m).min_items, purpose=f"the {m} metric")
    ref.require_distinct()
    store = Store.open(cache_dir)
    dev = resolve_device(device)
    from embedselect.candidates import parse_candidates
    from embedselect.progress import RunProgress

    cands = parse_candidates(candidates, modality=ref.modality)
    bar = RunProgress(
        STAGES_PER_CANDIDATE * len(cands) + len(metrics) + (ref.labels is not None), enabled=progress
    )
    try:
        return _select(ref, cands, store, bar, metrics=metrics, max_items=max_items, seed=seed, on_error=on_error,
                       dev=dev, batch_size=batch_size, policy=policy, metric_options=metric_options, weights=weights,
                       bootstrap=bootstrap, token=token, progress=progress, save=save)  # fmt: skip
    finally:
        bar.close()


def _select(ref, cands, store, bar, *, metrics, max_items, seed, on_error, dev, batch_size, policy, metric_options,
            weights, bootstrap, token, progress, save) -> Ranking:
    """:func:`select` after its arguments were checked, the data loaded and the candidates parsed."""
    t_start = time.perf_counter()
    outcomes = embed(
        None, cands, seed=seed, device=dev, batch_size=batch_size, policy=policy, token=token,
        progress=progress, keep_vectors=True, _data=ref, _store=store, _progress=bar,
    )  # fmt: skip
    results = [o.result for o in outcomes]
    timings: dict[str, Any] = {"candidates": {o.result.name: o.wall_seconds for o in outcomes}, "metrics": {},
                               "validation": None, "total": None}  # fmt: skip
    ok = {o.result.name: o.vectors for o in outcomes if o.result.ok}
    if not ok:
        if store.read_only and all(r.error_type == "StoreReadOnlyError" for r in results):
            store.require_writable("store the embeddings of any of the candidates (none is cached)")  # exit 6
        reasons = "; ".join(f"{r.name}: {r.error_type}: {r.error}" for r in results)
        raise AllCandidatesFailedError(f"no candidate could be embedded ({reasons})")
    warnings: list[str] = [r.failure_note for r in results if not r.ok]
    if ref.duplicates_note():
        warnings.append(ref.duplicates_note())
    run_keys = {r.name: r.run_key for r in results if r.ok}
    details: dict[str, Any] = {}
    pool_notes: list[str] = []  # the metrics' caveats about the pool's size: the ranking states it once
    per_metric: dict[str, dict[str, float]] = {}
    uncertainty: dict[str, Any] = {}
    by_name = {r.name: r for r in results}
    for m in metrics:
        opts = metric_options.get(m, {})
        ctx = MetricContext(
            embeddings=ok,
            run_keys=run_keys,
            seed=seed,
            options=opts,
            labels=ref.labels if opts.get("prior") == "labels" else None,
            pair_cache=store,
            device=dev,
        )
        t_metric = time.perf_counter()
        with bar.stage(f"metric {m}"):
            mr = _run_metric(m, ctx, store, warnings, run_keys=run_keys, opts=opts, seed=seed, ref=ref,
                             bootstrap=bootstrap, uncertainty=uncertainty)  # fmt: skip
        timings["metrics"][m] = time.perf_counter() - t_metric
        if mr is None:
            continue
        per_metric[m] = mr.scores
        details[m] = mr.details
        for w in mr.details.get("warnings") or []:  # the metric's own warnings, also at the top level
            note = f"{m}: {w}" if not str(w).startswith(m) else str(w)
            (pool_notes if w == mr.details.get("pool_warning") else warnings).append(note)
        for name, why in (mr.details.get("excluded") or {}).items():  # degenerate for this metric only
            if not any(name in w and why in w for w in warnings):  # unless the metric's own warning said so
                warnings.append(f"{m} did not score {name}: {why}")
                log.warning("%s did not score %s: %s", m, name, why)
        ranks = rank_scores(mr.scores)
        for name, score in mr.scores.items():
            by_name[name].scores[m] = _num(score)
            by_name[name].ranks[m] = ranks[name]
        for col, values in mr.columns.items():
            for name, v in values.items():
                by_name[name].columns[col if col.startswith(m) else f"{m}.{col}"] = _num(v)
        boot = uncertainty.get(m)
        if boot is not None:
            # the interval belongs to the score that was bootstrapped: the headline, or a cheaper proxy of it
            # (task_prior bootstraps its closed-form alignment, not the probes)
            key = m if boot.get("score_name") in (None, m, mr.details.get("headline")) else boot["score_name"]
            for name, (lo, hi) in boot["intervals"].items():
                by_name[name].intervals[key] = [_num(lo), _num(hi)]
    if not per_metric:
        raise MetricError("no metric could be computed: " + "; ".join(warnings))

    from embedselect.aggregate import combine_ranks

    # metrics not named in ``weights`` keep weight 1; weights of metrics that failed are dropped
    full_weights = {m: float((weights or {}).get(m, 1.0)) for m in per_metric}
    combined = combine_ranks(per_metric, weights=full_weights)
    combine_method = "mean-rank"
    for name, score in combined.items():
        by_name[name].combined_score = float(score)
    order = rank_scores({n: by_name[n].combined_score for n in combined})
    for name, r in order.items():
        by_name[name].rank = r
    # ties share a rank and are listed by name (embedselect.ranking.tie_groups), so the first row, best and
    # the validation's top pick for "combined" are the same candidate
    results.sort(key=lambda r: (not r.ok, r.rank if r.rank is not None else math.inf, r.name))
    from embedselect.aggregate import MIN_POOL, decide

    decision = decide(combined, intervals={n: by_name[n].intervals for n in combined})
    warnings += [f"no clear winner: {why}" for why in decision.reasons]
    if sum(1 for v in combined.values() if math.isfinite(v)) >= MIN_POOL:  # else decide() said it
        warnings += pool_notes

    validation = None
    if ref.labels is not None:
        # also check the secondary scores a metric names (e.g. task_prior's probe accuracy when the headline
        # is the closed-form alignment), so that users see which of them their labels agree with
        label_free = dict(per_metric)
        for m, det in details.items():
            for col in det.get("secondary", []) or []:
                name = col if col.startswith(m) else f"{m}.{col}"
                values = {r: by_name[r].columns[name] for r in ok if name in by_name[r].columns}
                if values:
                    label_free[name] = values
        t_validation = time.perf_counter()
        with bar.stage("validation against your labels"):
            validation = _validate(ok, ref.labels, label_free, by_name, seed=seed)
        timings["validation"] = time.perf_counter() - t_validation

    if save and not store.can_record("the ranking"):
        warnings.append(f"the cache at {store.root} is read-only: this ranking is not stored (leaderboard and "
                        "history will not show it)")  # fmt: skip
    ranking = Ranking(
        candidates=results,
        metrics=[m for m in metrics if m in per_metric],
        combine=combine_method,
        dataset=ref.to_dict(),
        settings={
            "seed": seed,
            "max_items": max_items,
            "on_error": on_error,
            "device": dev,
            "batch_size": batch_size,
            "metric_options": metric_options,
            "weights": dict(weights) if weights else None,
            "bootstrap": bootstrap,
            "policy": {
                "allow_pickle": (policy or LoadPolicy()).allow_pickle,
                "trust_remote_code": (policy or LoadPolicy()).trust_remote_code,
            },
        },
        versions=_versions(),
        details=details,
        validation=validation,
        uncertainty=uncertainty or None,
        warnings=warnings,
        ranking_id=uuid.uuid4().hex,
        created_at=datetime.now(timezone.utc).isoformat(),
        decided=decision.decided,
        leaders=decision.leaders,
        undecided_reasons=decision.reasons,
        timings=timings,
    )
    timings["total"] = time.perf_counter() - t_start
    if save:
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
            for r in results
            if r.ok
            for m in ranking.metrics
        ]
        store.save_ranking(ranking.ranking_id, ranking.to_dict(), rows)
    return ranking


def _run_metric(m, ctx, store, warnings, *, run_keys, opts, seed, ref, bootstrap, uncertainty) -> MetricResult | None:
    """One metric's result (from the store, or computed and stored), and its bootstrap into ``uncertainty[m]``
    when asked; None (with a warning) when the metric cannot be computed."""
    fn = get_metric(m)
    mkey = _metric_key(m, run_keys, opts, seed, ref.labels if ctx.labels is not None else None)
    cached = store.get_metric_result(mkey)
    if cached is not None:
        mr = MetricResult(**cached)
        mr.scores = {k: _num(v) for k, v in mr.scores.items()}
        mr.columns = {c: {k: _num(v) for k, v in vals.items()} for c, vals in mr.columns.items()}
        mr.intervals = {k: tuple(v) for k, v in mr.intervals.items()}
        log.info("metric %s: cached", m)
    else:
        try:
            mr = fn(ctx)
        except MetricError as exc:
            warnings.append(f"metric {m} was not computed: {exc}")
            log.warning("metric %s failed: %s", m, exc)
            return None
        store.put_metric_result(mkey, m, to_jsonable(asdict(mr)))
    if bootstrap and bootstrap > 0:
        bkey = f"{mkey}:bootstrap:{bootstrap}"
        boot = store.get_metric_result(bkey)
        if boot is None:
            from embedselect.uncertainty import bootstrap_metric

            boot = to_jsonable(bootstrap_metric(fn, ctx, n_boot=bootstrap, seed=seed).to_dict())
            store.put_metric_result(bkey, f"{m}:bootstrap", boot)
        uncertainty[m] = boot
    return mr


def _validate(embeddings, labels, per_metric, by_name, *, seed: int) -> dict[str, Any]:
    """Held-out probe accuracy on the user's labels, and how well each label-free metric (and the combined
    score) predicts it."""
    from embedselect.validate import validate

    combined = {n: by_name[n].combined_score for n in embeddings if by_name[n].combined_score is not None}
    report = validate(embeddings, labels, {**per_metric, "combined": combined}, seed=seed)
    for name, row in report.table.iterrows():
        for col, v in row.items():
            if col not in per_metric and col != "combined":
                by_name[str(name)].columns[f"labels.{col}"] = _num(v)
    return report.to_dict()


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

"""The entry points of a ranking run: select() over data, select_embedded() over candidates embedded already."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from embedselect.errors import CandidatesFailedError, ConfigError, StoreError
from embedselect.metrics.base import DEFAULT_METRICS, get_spec
from embedselect.models.policy import LoadPolicy
from embedselect.ranking.result import Ranking
from embedselect.pipeline.context import EmbedOutcome, load_reference_data, run_context
from embedselect.pipeline.embedding import embed_stage, record_candidate_failure
from embedselect.pipeline.scoring import checked_metrics
from embedselect.pipeline.conclude import rank_embedded


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
    strict: bool = False,
) -> Ranking:
    """Rank candidate embedders on ``data`` without labels.

    Args:
        data: a file (CSV/TSV/JSONL/Parquet/TXT), an image folder, a list of texts or image paths, a pandas
            Series, or a :class:`~embedselect.data.ReferenceData`.
        candidates: hub ids (``org/name[@revision]``), local model directories, baseline names
            (``tfidf-svd``, ``random-projection``, ``pixel-pca``), ``catalog:text`` / ``catalog:image``,
            :class:`~embedselect.models.candidates.Candidate` objects, or a comma-separated string of these.
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
        strict: raise :class:`~embedselect.errors.CandidatesFailedError` when any candidate failed (after the others
            were ranked and the ranking stored; the error carries it). False (default): a failed candidate is a
            ``failed`` row and a ``candidate-failed`` warning.

    Returns:
        a :class:`~embedselect.ranking.result.Ranking`, best candidate first.

    Raises:
        DataError: the data cannot be used (missing file/column, empty, too few items, undecodable).
        ConfigError: invalid arguments (unknown metric, ...).
        AllCandidatesFailedError: no candidate could be embedded.
        CandidatesFailedError: ``strict`` and some candidate failed.
        StoreError: the cache cannot be used.
    """
    from embedselect.store import Store

    metrics = checked_metrics(metrics, weights)
    ref = load_reference_data(data, column=column, labels=labels, max_items=max_items, seed=seed, on_error=on_error,
                              drop_duplicates=drop_duplicates)
    for m in metrics:
        ref.require(get_spec(m).min_items, purpose=f"the {m} metric")
    ref.require_distinct()
    ctx = run_context(ref, candidates, store=Store.open(cache_dir), seed=seed, device=device, batch_size=batch_size,
                       policy=policy, token=token, progress=progress, metrics=metrics, metric_options=metric_options,
                       weights=weights, bootstrap=bootstrap)
    try:
        t_start = time.perf_counter()
        embed_stage(ctx, keep_vectors=True)
        ranking = rank_embedded(ctx, t_start, save=save, max_items=max_items, on_error=on_error)
    finally:
        ctx.bar.close()
    if strict:
        raise_if_failed(ranking)
    return ranking


def raise_if_failed(ranking: Ranking) -> None:
    """Raise :class:`~embedselect.errors.CandidatesFailedError` (carrying ``ranking``) when a candidate failed."""
    failed = ranking.failed
    if failed:
        raise CandidatesFailedError(
            f"{len(failed)} of {len(ranking.candidates)} candidate(s) failed (strict): "
            + "; ".join(c.failure_note or c.name for c in failed), ranking=ranking, failed=[c.name for c in failed])


def select_embedded(ref: Any, candidates: Sequence[Any], outcomes: Sequence[EmbedOutcome], *, store: Any,
                    metrics: Sequence[str] = DEFAULT_METRICS, seed: int = 0, device: str | None = None,
                    batch_size: int | None = None, metric_options: Mapping[str, Mapping[str, Any]] | None = None,
                    weights: Mapping[str, float] | None = None, bootstrap: int = 0, token: str | None = None,
                    save: bool = True) -> Ranking:
    """:func:`select` over ``candidates`` already resolved and embedded into ``store`` (the nightly job's executor
    did it): ``outcomes`` are their :class:`EmbedOutcome` objects, in order; an ok one's vectors are read back by run
    key, a failed one stays failed. Nothing is resolved (no hub request) or embedded again. The other arguments and
    the errors are :func:`select`'s."""
    metrics = checked_metrics(metrics, weights)
    if [c.name for c in candidates] != [o.result.name for o in outcomes]:
        raise ConfigError("select_embedded needs one outcome per candidate, in the same order")
    for m in metrics:
        ref.require(get_spec(m).min_items, purpose=f"the {m} metric")
    ref.require_distinct()
    ctx = run_context(ref, list(candidates), store=store, seed=seed, device=device, batch_size=batch_size,
                       policy=None, token=token, progress=False, metrics=metrics, metric_options=metric_options,
                       weights=weights, bootstrap=bootstrap)
    try:
        t_start = time.perf_counter()
        for cand, outcome in zip(ctx.candidates, outcomes):
            r = outcome.result
            ctx.outcomes.append(outcome)
            ctx.timings["candidates"][r.name] = outcome.wall_seconds
            if outcome.card is not None:  # resolved by the executor: what its card declares, for the copy rule
                ctx.cards[r.name] = outcome.card
            if not r.ok:
                continue
            vectors = store.load_vectors(r.run_key, mmap=True) if r.run_key else None
            if vectors is None:  # e.g. removed by `cache rm` since it was embedded
                record_candidate_failure(ctx, cand, r, StoreError(f"the embeddings of {r.name} are no longer in {store.root}"),
                                {"stage": "cache", "done": 0})
            else:
                ctx.vectors[r.name] = vectors
        return rank_embedded(ctx, t_start, save=save, max_items=None, on_error="fail")
    finally:
        ctx.bar.close()

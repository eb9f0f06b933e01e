"""The entry points of a ranking run: select() over data, select_embedded() over candidates embedded already."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from embedselect.config import DropDuplicates, OnError, RankConfig, Runtime, from_keywords
from embedselect.errors import CandidatesFailedError, ConfigError, CacheError, EmbedselectError
from embedselect.metrics.base import DEFAULT_METRICS, get_spec
from embedselect.models.policy import LoadPolicy
from embedselect.ranking.result import Ranking
from embedselect.pipeline.context import BeforeMetrics, EmbedOutcome, load_reference_data, run_context
from embedselect.pipeline.embedding import embed_stage
from embedselect.pipeline.failed import record_candidate_failure
from embedselect.pipeline.conclude import rank_embedded
from embedselect.pipeline.answers import load_answers


def select(
    data: Any,
    candidates: Any,
    *,
    metrics: Sequence[str] = DEFAULT_METRICS,
    column: str | None = None,
    labels: Any = None,
    id_column: str | None = None,
    max_items: int | None = None,
    seed: int = 0,
    on_error: OnError = "fail",
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
    drop_duplicates: DropDuplicates | None = None,
    strict: bool = False,
    config: RankConfig | None = None,
    runtime: Runtime | None = None,
    queries: Any = None,
    answers: Any = None,
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
        id_column: a table's column whose values are the items' ids (in the load report, ``answers``, ``queries``)
            in place of row numbers; see :meth:`~embedselect.data.ReferenceData.from_file`.
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
        save: store the ranking in the cache database (not stored: its ``ranking_id`` is None).
        drop_duplicates: ``"exact"`` or ``"near"``: rank on the reference data without its duplicates (see
            :meth:`~embedselect.data.ReferenceData.drop_duplicates`; near duplicates are found on cheap text /
            pixel features, the same for every candidate); how many were dropped is in
            ``ranking.dataset["report"]["n_dropped_duplicates"]``. None (default): keep every item.
        strict: raise :class:`~embedselect.errors.CandidatesFailedError` when any candidate failed (after the others
            were ranked and the ranking stored; the error carries it). False (default): a failed candidate is a
            ``failed`` row and a ``candidate-failed`` warning. A run option: ``Runtime.strict``.
        config, runtime: the same settings as objects (:class:`~embedselect.config.RankConfig`: metrics to
            drop_duplicates, column, a label column and policy; :class:`~embedselect.config.Runtime`: cache_dir,
            device, batch_size, token, progress, save, strict), instead of the keywords: a keyword given with the
            object that holds it is a ConfigError. Labels as an array are always a keyword.
        queries: a search check (text data only): a file with columns ``query`` and ``relevant`` (the id(s) of the
            reference items each query should find, ``;``-separated, or an item's exact text; see
            :mod:`embedselect.data.queries`), a list of such dicts, a DataFrame or a
            :class:`~embedselect.data.queries.QuerySet`. Every candidate embeds the queries as it embeds queries and
            searches the items; ``ranking.retrieval`` holds its MRR@10, nDCG@10, recall@1/@10 with bootstrap
            intervals over the queries, each label-free score's rank correlation with MRR@10; the table then follows
            MRR@10 and the queries decide (``pipeline.queries.queries_stage``); read before any model is loaded.
        answers: a person's answers to :func:`~embedselect.pipeline.asking.ask`'s questions (the CSV's path or the
            DataFrame, checked before the cache is opened); see :func:`embedselect.pipeline.answers.answers_stage`.

    Returns:
        a :class:`~embedselect.ranking.result.Ranking`, best candidate first.

    Raises:
        DataError: the data cannot be used (missing file/column, empty, too few items, undecodable).
        AnswersError: the answers do not fit this data or are malformed (the message names the row); nothing stored
            was touched.
        ConfigError: invalid arguments (unknown metric, ...).
        AllCandidatesFailedError: no candidate could be embedded.
        CandidatesFailedError: ``strict`` and some candidate failed.
        CacheError: the cache cannot be used.
    """
    from embedselect.store import Store

    label_column, label_array = (labels, None) if labels is None or isinstance(labels, str) else (None, labels)
    config, runtime = _configs(config, runtime, dict(
        metrics=metrics, column=column, labels=label_column, id_column=id_column, max_items=max_items, seed=seed, on_error=on_error,
        cache_dir=cache_dir, device=device, batch_size=batch_size, policy=policy, metric_options=metric_options,
        weights=weights, bootstrap=bootstrap, token=token, progress=progress, save=save, strict=strict,
        drop_duplicates=drop_duplicates))
    ref = load_reference_data(data, config, labels=label_array)
    _require(ref, config)
    query_set = None
    if queries is not None:
        from embedselect.data.queries import load_queries

        query_set = load_queries(queries, ref)  # read and matched before any model is loaded
    answered = load_answers(answers, ref) if answers is not None else None  # before the store is opened
    ctx = run_context(ref, candidates, store=Store.open(runtime.cache_dir), config=config, runtime=runtime)
    ctx.queries = query_set
    ctx.answers = answered
    try:
        t_start = time.perf_counter()
        embed_stage(ctx, keep_vectors=True)
        ranking = rank_embedded(ctx, t_start, save=runtime.save)
    finally:
        ctx.bar.close()
    if runtime.strict:
        raise_if_failed(ranking)
    return ranking


def raise_if_failed(ranking: Ranking) -> None:
    """Raise :class:`~embedselect.errors.CandidatesFailedError` (carrying ``ranking``) when a candidate failed."""
    failed = ranking.failed
    if failed:
        raise CandidatesFailedError(
            f"{len(failed)} of {len(ranking.candidates)} candidate(s) failed (strict): "
            + "; ".join(c.failure_note or c.name for c in failed), ranking=ranking, failed=[c.name for c in failed])


_KEYWORD_DEFAULTS: dict[str, Any] = {
    "metrics": DEFAULT_METRICS, "column": None, "labels": None, "id_column": None, "max_items": None, "seed": 0, "on_error": "fail",
    "policy": None, "metric_options": None, "weights": None, "bootstrap": 0, "drop_duplicates": None,
    "cache_dir": None, "device": None, "batch_size": None, "token": None, "progress": False, "save": True,
    "strict": False,
}
"""select()'s keyword defaults: a keyword that differs from its default was given."""
_RUNTIME_KEYS = frozenset({"cache_dir", "device", "batch_size", "token", "progress", "save", "strict"})


def _configs(config: RankConfig | None, runtime: Runtime | None,
             keywords: dict[str, Any]) -> tuple[RankConfig, Runtime]:
    """The run's :class:`RankConfig` and :class:`Runtime`: the objects given, or built from the keywords
    (:func:`embedselect.config.from_keywords`); a keyword given beside the object that holds it is refused."""
    given = {k for k, v in keywords.items() if not _same(v, _KEYWORD_DEFAULTS[k])}
    for obj, keys, what in ((config, given - _RUNTIME_KEYS, "config"), (runtime, given & _RUNTIME_KEYS, "runtime")):
        if obj is not None and keys:
            raise ConfigError(f"{', '.join(sorted(keys))} given both as keyword(s) and by {what}=: set them in the "
                              f"{type(obj).__name__} (e.g. {what}.replace({sorted(keys)[0]}=...))")
    built_config, built_runtime = from_keywords(**keywords)
    return config or built_config, runtime or built_runtime


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - an array compared with a default
        return False


def _require(ref: Any, config: RankConfig) -> None:
    """Enough items for every metric of ``config``, and at least two distinct ones. Too few for some metrics: the
    error names the one that needs the most and, among its fixes, the metrics to rank with instead (those asked for
    that fit the data, else any that do)."""
    from embedselect.metrics.base import available_metrics

    n = len(ref)
    short = sorted((m for m in config.metrics if get_spec(m).min_items > n), key=lambda m: -get_spec(m).min_items)
    if short:
        alternative: str | None
        fit = [m for m in config.metrics if m not in short]
        if fit:
            them = short[0] if len(short) == 1 else f"{', '.join(short[:-1])} and {short[-1]}"
            alternative = f"leave {them} out: --metrics {','.join(fit)} / metrics={fit!r}"
        else:
            fit = [m for m in available_metrics() if get_spec(m).min_items <= n]
            alternative = (f"rank with metrics that need at most {n} items: --metrics {','.join(fit)} / "
                           f"metrics={fit!r}") if fit else None
        ref.require(get_spec(short[0]).min_items, purpose=f"the {short[0]} metric", alternative=alternative)
    ref.require_distinct()


def select_embedded(ref: Any, candidates: Sequence[Any], outcomes: Sequence[EmbedOutcome], *, store: Any,
                    config: RankConfig, runtime: Runtime,
                    before_metrics: BeforeMetrics | None = None) -> Ranking:
    """:func:`select` over ``candidates`` already resolved and embedded into ``store`` (the nightly job's executor
    did it): ``outcomes`` are their :class:`EmbedOutcome` objects, in order; an ok one's vectors are read back by run
    key, or are those it carries when no cache holds them (precomputed vectors, an API without a revision:
    :meth:`EmbedOutcome.stored_or_carried`); a failed one stays failed. Nothing is resolved (no hub request) or embedded again. ``ref`` was loaded with
    ``config`` (its sub-sample and error rule are recorded in the ranking's settings); ``runtime.cache_dir`` is not
    read (``store`` is the cache). ``before_metrics``: called once with the reference points the metrics set aside,
    the embedded candidates' families (``MetricContext.references``, ``.families``) and the run's pair caches (metric
    name -> the pair cache it reads: a write the cache refuses is a saving, kept in memory for the metric), before any
    metric (the nightly job's executor estimates the sufficiency pairs there). The errors are :func:`select`'s."""
    if [c.name for c in candidates] != [o.result.name for o in outcomes]:
        raise ConfigError("select_embedded needs one outcome per candidate, in the same order")
    _require(ref, config)
    ctx = run_context(ref, list(candidates), store=store, config=config, runtime=runtime, embedded=True)
    ctx.before_metrics = before_metrics
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
            vectors = outcome.stored_or_carried(store)
            if vectors is None:
                lost = (CacheError(f"the embeddings of {r.name} are no longer in {store.root}")  # e.g. `cache rm`
                        if r.cache_scope == "cache" else EmbedselectError(
                            f"the vectors of {r.name} are not stored in any cache ({r.cache_scope} only) and its "
                            "outcome does not carry them: the executor must hand them on"))
                record_candidate_failure(ctx, cand, r, lost, {"stage": "cache", "done": 0})
            else:
                ctx.vectors[r.name] = vectors
        return rank_embedded(ctx, t_start, save=runtime.save)
    finally:
        ctx.bar.close()

"""Stages 1 and 2 of a run, candidate by candidate (embed, embed_reference): pin it
(:mod:`~embedselect.pipeline.pinning`), read its vectors from the cache or embed and store them
(:mod:`~embedselect.pipeline.candidate_vectors`), and its search-check vectors
(:mod:`~embedselect.pipeline.candidate_queries`); a candidate's failure is recorded by :mod:`embedselect.pipeline.failed`."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from embedselect.errors import ConfigError
from embedselect.config import LoadPolicy, OnError, RankConfig, Runtime
from embedselect.models.backends.reduce import bytes_per_vector, reduction_of
from embedselect.models.backends.weights import UNTRAINED_SETTING
from embedselect.ranking.result import CandidateResult
from embedselect.pipeline.candidate_queries import embed_candidate_queries
from embedselect.pipeline.candidate_vectors import candidate_vectors
from embedselect.pipeline.context import EmbedOutcome, RunContext, load_reference_data, run_context
from embedselect.pipeline.failed import record_candidate_failure
from embedselect.pipeline.pinning import pin_candidate

log = logging.getLogger(__name__)


def embed(
    data: Any,
    candidates: Any,
    *,
    column: str | None = None,
    max_items: int | None = None,
    seed: int = 0,
    on_error: OnError = "fail",
    id_column: str | None = None,
    cache_dir: str | Path | None = None,
    device: str | None = None,
    batch_size: int | None = None,
    policy: LoadPolicy | None = None,
    token: str | None = None,
    progress: bool = False,
    keep_vectors: bool = False,
    config: RankConfig | None = None,
    runtime: Runtime | None = None,
) -> list[EmbedOutcome]:
    """Make sure every candidate's embeddings of ``data`` are in the cache; compute only what is missing.

    A candidate that cannot be resolved, loaded or run is returned with ``status="failed"`` and its reason,
    recorded in the store's ``failures`` table, and the others go on. The arguments mean what they mean for
    :func:`~embedselect.pipeline.run.select` (``config`` / ``runtime`` instead of the keywords likewise; of a
    RankConfig only the data settings, ``seed`` and ``policy`` apply: embedding reads no labels and computes no
    metric, so a config with ``labels``, ``drop_duplicates``, weights or options is refused);
    ``keep_vectors`` puts each float32 (n, d) matrix into its outcome (a read-only memory map of the cached file;
    see :class:`EmbedOutcome`).

    Returns:
        one :class:`EmbedOutcome` per candidate, in the order given.

    Raises:
        ConfigError: a setting embedding does not use (see above), or an invalid one.
    """
    from embedselect.store import Store

    config, runtime = _embed_configs(config, runtime, dict(
        column=column, id_column=id_column, max_items=max_items, seed=seed, on_error=on_error, policy=policy,
        cache_dir=cache_dir, device=device, batch_size=batch_size, token=token, progress=progress))
    ref = load_reference_data(data, config)
    return embed_reference(ref, candidates, store=Store.open(runtime.cache_dir), config=config, runtime=runtime,
                           keep_vectors=keep_vectors)


def _embed_configs(config: RankConfig | None, runtime: Runtime | None,
                   keywords: dict[str, Any]) -> tuple[RankConfig, Runtime]:
    """:func:`embed`'s RankConfig and Runtime: the objects given, or built from its keywords; refuses a keyword
    beside the object that holds it and the settings of a RankConfig that embedding would not use."""
    from embedselect.config import from_keywords

    built, built_runtime = from_keywords(**keywords)
    defaults, default_runtime = from_keywords()
    if config is not None:
        clash = [k for k in ("column", "id_column", "max_items", "seed", "on_error", "policy")
                 if getattr(built, k) != getattr(defaults, k)]
        if clash:
            raise ConfigError(f"{', '.join(clash)} given both as keyword(s) and by config=")
        unused = [f"{k}={getattr(config, k)!r}" for k in ("labels", "drop_duplicates", "weights", "bootstrap")
                  if getattr(config, k) != getattr(defaults, k)] + (["metric_options"] if config.metric_options else [])
        if unused:
            raise ConfigError(f"embed() does not use {', '.join(unused)} (it reads no labels and computes no metric); "
                              "drop them, or call select()")
    if runtime is not None and built_runtime != default_runtime:
        raise ConfigError("cache_dir, device, batch_size, token or progress given both as keyword(s) and by runtime=")
    return config or built, runtime or built_runtime


def embed_reference(
    ref: Any,
    candidates: Any,
    *,
    store: Any,
    config: RankConfig | None = None,
    runtime: Runtime | None = None,
    keep_vectors: bool = False,
) -> list[EmbedOutcome]:
    """:func:`embed` for a caller that already holds the loaded data and an open store (the search index, the
    nightly job, the executors' workers), so that neither is loaded or opened twice.

    Args:
        ref: a :class:`~embedselect.data.ReferenceData`.
        candidates: as for :func:`embed` (specs, :class:`~embedselect.models.candidates.Candidate` objects, or both).
        store: the :class:`~embedselect.store.Store` the embeddings are read from and written to.
        config: its ``seed`` (baselines) and ``policy`` apply (default :class:`~embedselect.config.RankConfig()`).
        runtime: its ``device``, ``batch_size``, ``token`` and ``progress`` apply (``cache_dir``: ``store`` is the
            cache).
        keep_vectors: as for :func:`embed`.

    Returns:
        one :class:`EmbedOutcome` per candidate, in the order given.
    """
    ctx = run_context(ref, candidates, store=store, config=config or RankConfig(), runtime=runtime or Runtime(),
                      rank=False)
    try:
        return embed_stage(ctx, keep_vectors=keep_vectors)
    finally:
        ctx.bar.close()


def embed_stage(ctx: RunContext, *, keep_vectors: bool) -> list[EmbedOutcome]:
    """Stages 1 and 2, one candidate at a time: resolve it (:func:`~embedselect.pipeline.pinning.pin_candidate`),
    then read its vectors from the cache or compute and store them
    (:func:`~embedselect.pipeline.candidate_vectors.candidate_vectors`). A candidate's failure is recorded and the
    others go on. Fills ``ctx.outcomes``, ``ctx.vectors`` (with ``keep_vectors``) and ``ctx.timings["candidates"]``."""
    for cand in ctx.candidates:
        outcome = _embed_candidate(ctx, cand, keep_vectors=keep_vectors)
        ctx.outcomes.append(outcome)
        ctx.timings["candidates"][cand.name] = outcome.wall_seconds
        if outcome.result.ok and outcome.vectors is not None:
            ctx.vectors[cand.name] = outcome.vectors
    return ctx.outcomes


def _embed_candidate(ctx: RunContext, cand: Any, *, keep_vectors: bool) -> EmbedOutcome:
    """One candidate's embeddings of ``ctx.ref`` (from the cache or computed), or its failure; see :func:`embed`."""
    t_start = time.perf_counter()
    res = CandidateResult(name=cand.name, spec=cand.spec)
    outcome = EmbedOutcome(res)
    step = {"stage": "resolve", "done": 0}  # where a failure happened, and the progress steps counted so far
    try:
        pinned = pin_candidate(ctx, cand, res, step)
        outcome.card = ctx.cards.get(cand.name)
        loaded: dict[str, Any] = {}  # the embedder, when _vectors loaded one (the queries reuse it)
        if pinned.key is None:
            vectors = candidate_vectors(ctx, cand, pinned, res, step, loaded)
        else:
            with ctx.store.run_lock(pinned.key, what=cand.name):  # a concurrent run of the same key: wait, read it
                vectors = candidate_vectors(ctx, cand, pinned, res, step, loaded)
        reduction = reduction_of(cand.options, name=cand.name)
        if reduction is not None:  # ?truncate_dim= / ?precision=: computed from the model's own vectors
            vectors, ctx.reductions[cand.name] = reduction.apply(vectors, name=cand.name)
        res.n, res.dim = int(vectors.shape[0]), int(vectors.shape[1])
        res.bytes_per_vector = bytes_per_vector(res.dim, cand.options)
        if cand.kind != "vectors" and res.seconds and res.seconds > 0:
            res.items_per_second = (res.embedded_items or res.n) / res.seconds  # the items those seconds embedded
        if ctx.queries is not None:
            step["stage"] = "queries"
            embed_candidate_queries(ctx, cand, pinned, vectors, loaded.get("embedder"))
        if keep_vectors:
            outcome.vectors = vectors
        outcome.untrained_norms = int(loaded.get(UNTRAINED_SETTING) or 0)
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as exc:  # noqa: BLE001 - one model's failure must not end the run
        record_candidate_failure(ctx, cand, res, exc, step)
    outcome.wall_seconds = time.perf_counter() - t_start
    return outcome

"""One night: lock → data → crawl → plan → embed (through an executor) → pairs → rank → publish → history.

Operations rules:

- **lock**: ``nightly.lock`` in the store root, taken without waiting; a second run raises
  :class:`~embedselect.errors.NightlyLockedError` (exit code 9) at once. The OS releases it when the process
  dies, however it dies.
- **budget**: no new model is started once ``budget_minutes * (1 - rank_reserve)`` have passed; what was not
  embedded is listed under ``left`` and is planned again the next night.
- **failures**: a model that cannot be fetched, loaded or run, returns NaN, or runs past
  ``model_timeout_minutes`` is recorded with its reason (:mod:`embedselect.store.failures`, the one place) and
  skipped; a passing hub fault is planned again the next night, a safety-policy refusal never at that revision.
- **resume**: every finished embedding is in the store at once and the night is recorded only at its end, so a
  killed night is simply planned again and reuses what it had finished.
- **outputs**: replaced atomically (:mod:`embedselect.nightly.outputs`); a night that ranked nothing keeps the
  previous outputs and raises :class:`~embedselect.errors.NightlyEmptyError` (exit code 10).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

import embedselect.store.nightly as history
from embedselect.errors import AllCandidatesFailedError, NightlyEmptyError, NightlyLockedError
from embedselect.models.policy import configured_by
from embedselect.nightly.config import NightlyConfig

log = logging.getLogger(__name__)

_clock = time.monotonic  # the budget's clock (tests replace it)


@contextlib.contextmanager
def night_lock(root: Path) -> Iterator[None]:
    """Hold ``root/nightly.lock`` for the block, or raise :class:`NightlyLockedError` at once."""
    import filelock

    from embedselect._fs import guard as fsguard
    from embedselect.errors import ConfigError, CacheError

    path = fsguard.own_file(Path(root) / "nightly.lock", what="the nightly lock file", error=CacheError)
    lock = filelock.FileLock(str(path))
    try:
        lock.acquire(timeout=0)
    except filelock.Timeout:
        holder = ""
        with contextlib.suppress(OSError):
            holder = (Path(root) / "nightly.pid").read_text().strip()
        raise NightlyLockedError(
            f"another nightly run holds {path}" + (f" (pid {holder})" if holder else "")
            + "; this run did nothing. Runs must not overlap: schedule them further apart."
        ) from None
    try:
        try:  # never through a link planted there (it would overwrite the file the link names)
            fsguard.write_text(Path(root) / "nightly.pid", str(os.getpid()))
        except (OSError, ConfigError) as exc:
            log.warning("nightly: the pid file was not written: %s", exc)
        yield
    finally:
        lock.release()


class _Stages:
    """Wall seconds per stage; a stage run inside another counts as its own, not in the other's seconds."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._inner = [0.0]  # per open stage (and the outermost level): seconds of the stages run inside it

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        self._inner.append(0.0)
        try:
            yield
        finally:
            took = time.perf_counter() - t0
            inner = self._inner.pop()
            self._inner[-1] += took
            self.seconds[name] = round(self.seconds.get(name, 0.0) + took - inner, 3)


def _crawl(cfg: NightlyConfig, store: Any, token: str | None, *, record: bool, should_stop: Any = None):
    """The night's crawl: ``crawl.max_pages`` pages at most, and none once ``should_stop()`` (the budget) says so."""
    from embedselect.pipeline import refresh_hub_models

    c = cfg.crawl
    result, _ = refresh_hub_models(
        store=store, record=record, token=token, library=c.library, pipeline_tag=c.pipeline_tag, tags=c.tags,
        author=c.author, search=c.search, sort=c.sort, limit=c.limit, min_params=c.min_params,
        max_params=c.max_params, licenses=c.licenses, include_gated=not c.exclude_gated, max_pages=c.max_pages,
        should_stop=should_stop,
    )
    return result


def _leaderboard(ranking: Any, planned: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for r in ranking.ok:
        p = planned.get(r.name)
        prev = p.prev_rank if p is not None else None
        rows.append({
            "rank": r.rank, "name": r.name, "model_id": r.model_id, "revision": r.revision,
            "why": p.why if p is not None else None, "prev_rank": prev,
            "delta": (prev - r.rank) if prev is not None and r.rank is not None else None,
            "combined_score": r.combined_score, "scores": dict(r.scores),
        })
    return sorted(rows, key=lambda x: (x["rank"] is None, x["rank"] or 0, x["name"]))


def run_night(cfg: NightlyConfig, *, dry_run: bool = False, executor: Any = None,
              token: str | None = None, progress: bool = False) -> dict[str, Any]:
    """Run one night (or, with ``dry_run``, only crawl and plan, writing nothing).

    Args:
        cfg: the validated configuration (:func:`~embedselect.nightly.config.load_config`).
        dry_run: crawl the hub and print what would be embedded and computed; no store or output is written.
        executor: an :class:`~embedselect.nightly.executors.Executor`; default from ``cfg.executor``.
        token: hub token (default ``HF_TOKEN``); never logged or stored.
        progress: draw a progress line on a terminal while models embed in this process and while the night ranks
            (``embedselect nightly`` without ``--quiet``; a cron job has no terminal, so it draws nothing).

    Returns:
        the run summary (also written as ``run.json`` into the output folder): see docs/nightly.md.

    Raises:
        ConfigError / DataError: bad configuration or reference data (before any work).
        NightlyLockedError: another night holds the lock (exit code 9).
        NightlyEmptyError: nothing could be ranked; previous outputs kept (exit code 10).
    """
    from embedselect.store import Store

    token = token if token is not None else (os.environ.get("HF_TOKEN") or None)
    if not dry_run:  # every output checked before any work: writable, and a folder the tool may replace
        from embedselect.nightly.outputs import check_outputs
        from embedselect.store import default_cache_dir

        check_outputs(cfg.output_path, cache=cfg.cache_path or default_cache_dir(), data=cfg.data_path,
                      config_dir=Path(cfg.base_dir))
    store = Store.open(cfg.cache_path)
    with configured_by("nightly"):  # a refusal names the YAML's policy: keys, not the CLI's flags
        if dry_run:
            return _night(cfg, store, dry_run=True, executor=None, token=token, progress=progress)
        with night_lock(store.root):
            return _night(cfg, store, dry_run=False, executor=executor, token=token, progress=progress)


def _night(cfg: NightlyConfig, store: Any, *, dry_run: bool, executor: Any, token: str | None,
           progress: bool) -> dict[str, Any]:
    from embedselect.nightly.executors import EmbedJob, get_executor
    from embedselect.pipeline.context import load_reference_data
    from embedselect.nightly.plan import build_plan

    t_start = _clock()
    config, runtime = cfg.rank_config(), cfg.runtime(token, progress=progress)
    budget_s = cfg.budget_minutes * 60.0
    embed_deadline = budget_s * (1.0 - cfg.rank_reserve)
    stages = _Stages()
    run_id = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + uuid.uuid4().hex[:6]
    summary: dict[str, Any] = {
        "run_id": run_id,
        "started_at": datetime.now(timezone.utc).isoformat(),
        "status": "dry-run" if dry_run else "running",
        "ranking_key": cfg.ranking_key(),
        "output": str(cfg.output_path),
        "cache": str(store.root),
        "executor": cfg.executor.kind if executor is None else executor.name,
        "budget": {"minutes": cfg.budget_minutes, "embed_stop_after_s": round(embed_deadline, 1), "exhausted": False},
    }
    with stages("data"):
        ref = load_reference_data(cfg.data_path, config)
    summary["data"] = {"path": str(cfg.data_path), "items": len(ref), "fingerprint": ref.fingerprint}
    with stages("crawl"):
        crawled = _crawl(cfg, store, token, record=not dry_run,
                         should_stop=lambda: _clock() - t_start >= embed_deadline)
    summary["crawl"] = {"query": crawled.query, "models": len(crawled.models), "pages": crawled.pages,
                        "complete": crawled.complete, "errors": [e.message for e in crawled.errors]}
    with stages("plan"):
        plan = build_plan(cfg, store, crawled, ref, token=token)
    planned = {p.name: p for p in plan.candidates}
    summary["candidates"] = {
        "considered": len(plan.candidates),
        **{why: [p.name for p in plan.candidates if p.why == why] for why in ("new", "updated", "retry", "top", "pinned")},
        "skipped": plan.skipped,
    }
    if dry_run:
        n = len(plan.candidates)
        summary["plan"] = plan.to_dict()
        summary["would_compute"] = {
            "forward_passes": len(plan.to_embed),
            "sufficiency_pairs_at_most": n * (n - 1) if "sufficiency" in cfg.metrics else 0,
        }
        summary["stages"] = stages.seconds
        return summary

    # --- embed: only what the store lacks, through the executor, within the budget -------------------------
    def over_budget() -> bool:
        spent = _clock() - t_start
        if spent >= embed_deadline:
            summary["budget"]["exhausted"] = True
            return True
        return False

    job = EmbedJob(config=config, runtime=runtime,
                   timeout_s=cfg.model_timeout_minutes * 60.0 if cfg.model_timeout_minutes else None)
    own_executor = executor is None
    if own_executor:
        executor = get_executor(cfg.executor.kind, **cfg.executor.model_dump(exclude={"kind"}))
    ranking = None
    kept: dict[str, Any] = {}  # the rank step's sufficiency pair cache (Savings.pairs), once it is known
    pairs_before = store.count_pairs()
    try:
        with stages("embed"):
            outcomes, left = _embed(cfg, executor, store, ref, plan, job, over_budget)
        pool = [p for p in plan.candidates if p.name in outcomes]
        if pool:
            # --- rank what was embedded: no candidate is resolved again (one model_info per hub candidate per
            # night); once select() knows the pool's reference points and families, the executor (Ray) estimates
            # the sufficiency pairs its scores will read, and select's metrics only read them --------------------
            from embedselect.pipeline import select_embedded

            summary["pairs_on_executor"] = 0

            def pairs(references: frozenset[str], families: dict[str, str], pair_cache: Any) -> None:
                kept["pairs"] = pair_cache("sufficiency")  # the store's, its refused writes carried in memory
                with stages("pairs"):
                    summary["pairs_on_executor"] = _pairs_on_executor(
                        cfg, executor, store, kept["pairs"], [outcomes[p.name] for p in pool], ref.modality,
                        references, families)

            with stages("rank"):
                try:
                    ranking = select_embedded(ref, [p.candidate for p in pool], [outcomes[p.name] for p in pool],
                                              store=store, config=config, runtime=runtime, before_metrics=pairs)
                except AllCandidatesFailedError as exc:  # every candidate failed tonight
                    log.warning("nightly: nothing could be ranked: %s", exc)
                    summary["rank_error"] = str(exc)
    finally:
        if own_executor:
            executor.close()
    results = [outcomes[p.name].result for p in pool]
    failed = [_failure(r, planned[r.name]) for r in results if not r.ok]
    embedded = [r.name for r in results if r.ok and r.cached is False]  # precomputed vectors (None): neither list
    reused = [r.name for r in results if r.ok and r.cached]
    pairs_computed = store.count_pairs() - pairs_before + _carried_pairs(kept.get("pairs"))
    n_ok = len(ranking.ok) if ranking is not None else 0
    suff = ranking.metric_details("sufficiency") if ranking is not None and "sufficiency" in ranking.metrics else None
    # the ordered pairs estimated (those the scores read, or every one: the metric's ``pairs`` option), once per
    # averaged estimate (SufficiencySettings.repeats)
    estimated = suff.get("pairs") if suff is not None else None
    pairs_total = len(estimated) if isinstance(estimated, list) else 0
    summary.update({
        "embedded": {"count": len(embedded), "names": embedded},
        "reused": {"count": len(reused), "names": reused},
        "failed": failed,
        "left": [{"name": c.name, "reason": "budget"} for c in left]
        + [{"name": p.name, "reason": "max_new"} for p in plan.deferred],
        "pairs": {"computed": pairs_computed, "reused": max(pairs_total - pairs_computed, 0), "total": pairs_total},
        "ranked": n_ok,
    })
    summary["not_ranked"] = not_ranked(plan, crawled, {r.name for r in ranking.ok} if ranking is not None else set(),
                                       summary, keep_top=cfg.keep_top)
    not_stored = [w.message for w in ranking.warnings_with("not-stored")] if ranking is not None else []
    if not_stored:  # what the cache refused to keep (pairs, metric results, the ranking): the night went on
        summary["not_stored"] = not_stored[0]
    return _close_night(cfg, store, summary, stages, t_start, ranking=ranking, planned=planned, failed=failed)


def _close_night(cfg: NightlyConfig, store: Any, summary: dict[str, Any], stages: _Stages, t_start: float, *,
                 ranking: Any, planned: dict[str, Any], failed: list[dict[str, Any]]) -> dict[str, Any]:
    """The night's end: the leaderboard, then publish (atomically) and record the night in the history (its
    commit point); a night that ranked nothing keeps the published outputs and raises :class:`NightlyEmptyError`."""
    leaderboard = _leaderboard(ranking, planned) if ranking is not None else []
    summary["leader"] = leaderboard[0]["name"] if leaderboard else None
    if ranking is not None and leaderboard:  # an undecided night has leaders, not a winner (Ranking.decided)
        summary["decided"] = bool(ranking.decided)
        summary["leaders"] = list(ranking.leaders) if not ranking.decided else [summary["leader"]]
    if not leaderboard:
        summary["status"] = "empty"
        _finish(summary, stages, t_start)
        _save_summary(store, summary)
        history.record_night(store, summary, [], failed)
        empty = NightlyEmptyError(
            "the night ranked no candidate (" + ("; ".join(f"{f['name']}: {f['reason']}" for f in failed)
                                                 or "nothing to rank") + "); the published outputs were kept"
        )
        empty.summary = summary
        raise empty
    summary["status"] = night_status(summary, failed)
    with stages("publish"):
        from embedselect.nightly.outputs import publish

        _finish(summary, stages, t_start)
        publish(cfg.output_path, summary["run_id"], ranking, leaderboard, summary)
    _finish(summary, stages, t_start)
    history.record_night(store, summary, leaderboard, failed)
    _save_summary(store, summary)
    return summary


def not_ranked(plan: Any, crawled: Any, ranked: set[str], summary: dict[str, Any], *,
               keep_top: int) -> list[dict[str, Any]]:
    """The previous night's ranked candidates that tonight's leaderboard does not hold, best first, each with why:
    ``failed tonight`` (its reason is in ``failed``), ``left for the next night`` (budget, ``max_new``), ``no longer
    pinned``, ``no longer in the crawl`` (off the trending list), or unchanged and outside the previous night's top
    ``keep_top`` (only new, updated, top and pinned candidates are ranked again)."""
    from embedselect._util.kinds import kind_of_model_id

    listed = {m.repo_id for m in (crawled.models if crawled is not None else ())}
    failed = {f["name"] for f in summary.get("failed") or []}
    left = {x["name"] for x in summary.get("left") or []}
    out = []
    for r in plan.previous_rows:
        name = r["name"]
        if r["status"] != "ok" or name in ranked:
            continue
        if name in failed:
            why = "failed tonight"
        elif name in left:
            why = "left for the next night"
        elif kind_of_model_id(r["model_id"]) != "hub":
            why = "no longer pinned"
        elif name not in listed:
            why = "no longer in the crawl"
        else:
            why = f"unchanged, and outside the previous night's top {keep_top} (keep_top): not ranked again"
        out.append({"name": name, "model_id": r["model_id"], "revision": r["revision"], "prev_rank": r["rank"],
                    "why": why})
    return out


def night_status(summary: dict[str, Any], failed: list[dict[str, Any]]) -> str:
    """The status of a night that ranked something: ``degraded`` when its crawl failed (a page of the hub's listing
    could not be read after retries, so new models may be missing; ``summary["degraded"]`` says why; exit code 12),
    else ``partial`` when a candidate failed or was left for the next night, else ``ok``."""
    crawl = summary.get("crawl") or {}
    if crawl.get("errors"):
        summary["degraded"] = [f"the crawl failed: {e}" for e in crawl["errors"]]
        return "degraded"
    return "partial" if (failed or summary["left"]) else "ok"


def _finish(summary: dict[str, Any], stages: _Stages, t_start: float) -> None:
    summary["stages"] = dict(stages.seconds)
    summary["wall_seconds"] = round(_clock() - t_start, 3)
    summary["finished_at"] = datetime.now(timezone.utc).isoformat()


def _save_summary(store: Any, summary: dict[str, Any]) -> None:
    """Every night's summary also goes to ``<store>/nightly/runs/<run_id>.json`` (empty nights included)."""
    d = Path(store.root) / "nightly" / "runs"
    d.mkdir(parents=True, exist_ok=True)
    from embedselect._fs import guard as fsguard

    fsguard.write_text(d / f"{summary['run_id']}.json", json.dumps(summary, indent=2, default=str))  # never via a link


def _embed(cfg: NightlyConfig, executor: Any, store: Any, ref: Any, plan: Any, job: Any,
           over_budget: Any) -> tuple[dict[str, Any], list[Any]]:
    """Every planned candidate resolved once and embedded or read from the store: what the store lacks goes to the
    executor (within the budget); the candidates the plan found cached are resolved here and read back.

    Returns:
        (candidate name -> :class:`~embedselect.pipeline.EmbedOutcome`, the candidates left for the next night).
    """
    from embedselect.nightly.executors.base import hand_on
    from embedselect.pipeline.embedding import embed_reference

    todo = [p.candidate for p in plan.candidates if not p.cached]
    units, left = executor.embed(ref, todo, store=store, job=job, should_stop=over_budget)
    outcomes = {u.outcome.result.name: u.outcome for u in units}
    skip = {c.name for c in left} | set(outcomes)
    cached = [p.candidate for p in plan.candidates if p.name not in skip]
    if cached:
        for o in embed_reference(ref, cached, store=store, config=job.config, runtime=job.runtime, keep_vectors=True):
            outcomes[o.result.name] = hand_on(o)
    return outcomes, left


def _failure(r: Any, p: Any) -> dict[str, Any]:
    """A failed candidate's row of the night (``run.json``'s ``failed``, ``nightly_results``): ``transient`` says
    whether it is retried the next night at the same revision (:func:`embedselect.store.failures.is_transient`)."""
    from embedselect.store.failures import is_transient

    return {"name": r.name, "model_id": r.model_id or p.model_id, "revision": r.revision or p.revision, "why": p.why,
            "error_type": r.error_type, "reason": r.error, "transient": is_transient(r.error_type)}


def _carried_pairs(pair_cache: Any) -> int:
    """How many sufficiency pairs the night computed that the cache refused to store: the run carried them in memory
    (:attr:`embedselect.pipeline.savings.Savings.carried`), so ``count_pairs`` does not see them."""
    from embedselect._util.kinds import PAIR_KEY_PREFIX

    carried = getattr(pair_cache, "carried", None) or {}
    return sum(1 for k in carried if k.startswith(PAIR_KEY_PREFIX))


def _pairs_on_executor(cfg: NightlyConfig, executor: Any, store: Any, pair_cache: Any, outcomes: list,
                       modality: str, references: frozenset[str], families: dict[str, str]) -> int:
    """Let the executor estimate the missing sufficiency pairs that select() will read (Ray spreads them over
    workers; local does nothing and leaves them to the rank stage), into ``pair_cache``: the one the metric reads
    (the store's, a write it refuses a saving carried in memory: :meth:`embedselect.pipeline.savings.Savings.pairs`).
    ``store`` holds the vectors; ``references`` and ``families``: the pool's reference points and families as
    select()'s metrics receive them (:attr:`embedselect.metrics.base.MetricContext.references`, ``.families``).
    Returns the number of pairs computed by the executor."""
    if "sufficiency" not in cfg.metrics or not executor.computes_pairs:
        return 0
    embs, keys = {}, {}
    for o in outcomes:
        v = o.stored_or_carried(store)
        if v is not None and o.result.run_key:
            embs[o.result.name], keys[o.result.name] = v, o.result.run_key
    if len(embs) < 2:
        return 0
    from embedselect.pipeline.defaults import metric_options

    options = metric_options(cfg.metric_options, modality).get("sufficiency", {})  # as select() will read them
    return executor.precompute_pairs(embs, keys, seed=cfg.seed, options=options, pair_cache=pair_cache,
                                     device=cfg.device or "cpu", references=references, families=families)

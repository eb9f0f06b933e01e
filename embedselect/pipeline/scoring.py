"""Stage 3 of a run: the requested metrics checked, then computed (or read from the store) with their bootstrap."""

from __future__ import annotations

import logging
import math
import time
from dataclasses import asdict
from typing import Any, Mapping

from embedselect.errors import AllCandidatesFailedError, CacheError, MetricError, cache_error_names
from embedselect._util.kinds import is_baseline_id
from embedselect.metrics.base import MetricContext, MetricResult, get_metric
from embedselect.ranking.io import to_jsonable
from embedselect.ranking.result import RankingWarning
from embedselect.ranking.ties import rank_scores
from embedselect.pipeline.context import RunContext, competition_rank, metric_key, num
from embedselect.pipeline.defaults import combined_weights
from embedselect.pipeline.families import pool_relations

log = logging.getLogger(__name__)


def _evidence_references(ctx: RunContext, references: frozenset[str], run_keys: dict[str, str],
                         families: dict[str, str]) -> frozenset[str]:
    """The reference points the metrics set aside: the built-in baselines, less those as central as the models.

    The metrics that compare a candidate with the pool consult the models, not the built-in baselines, on the grounds
    that a baseline learned nothing about the data. When a baseline's nearest neighbours agree with every model's at
    least as much as the models' agree with each other (:func:`embedselect.metrics.comparators.agreement.central_in_pool`), that
    ground is gone, and it counts as evidence like a model (docs/validation.md; docs/validity.md, "Reference points":
    of the benchmark's views, only the 8×8 digits, where raw pixels are the most accurate representation)."""
    from embedselect.metrics.comparators.agreement import central_in_pool, central_warning

    if not references:
        return references
    nn = {k: v for k, v in ctx.metric_options.get("nn_agreement", {}).items() if k in ("k", "max_items")}
    central = central_in_pool(MetricContext(embeddings=ctx.vectors, run_keys=run_keys, seed=ctx.seed, options=nn,
                                            pair_cache=ctx.savings.pairs(ctx.store, "nn_agreement"), device=ctx.device, references=references,
                                            families=families))  # its pairs serve nn_agreement after it
    if central:
        ctx.details["central_references"] = central
        ctx.warnings.append(RankingWarning("baselines-central", central_warning(central, counted=True), central))
    return references - frozenset(central)


def metrics_stage(ctx: RunContext) -> None:
    """Stage 3: every metric over the embedded candidates (from the store or computed), with its bootstrap; fills
    ``ctx.per_metric``, ``ctx.details``, ``ctx.uncertainty``, each result's scores, per-metric ranks, columns and
    intervals, and the warnings (failed candidates, duplicates in the data, items it left out, the metrics' own warnings).

    Raises:
        AllCandidatesFailedError: no candidate could be embedded.
        CacheError: no candidate could be embedded because the cache could not store any (read-only, a full disk):
            the cache's error, said once (exit 6).
        MetricError: no metric could be computed.
    """
    results, ok, warnings = ctx.results, ctx.vectors, ctx.warnings
    if not ok:
        raise no_candidate_embedded(results, ctx.store)
    warnings += [RankingWarning("candidate-failed", note, [r.name])
                 for r in results if (note := r.failure_note) is not None]  # None exactly when ok
    if ctx.ref.duplicates_note():
        warnings.append(RankingWarning("duplicates", ctx.ref.duplicates_note()))
    if ctx.ref.skipped_note():
        warnings.append(RankingWarning("skipped-items", ctx.ref.skipped_note()))
    run_keys = {r.name: r.run_key or "" for r in results if r.ok}  # an ok result always has its run key
    by_name = {r.name: r for r in results}
    references = frozenset(r.name for r in results if r.ok and is_baseline_id(r.model_id))
    with ctx.bar.stage("the pool: copies, families, reference points", steps=0):  # named, not counted
        ctx.copies, ctx.families = pool_relations(ctx)
        families = {k: v for k, v in ctx.families.items() if k in ok}
        references = _evidence_references(ctx, references, run_keys, families)
    if ctx.before_metrics is not None:  # e.g. the nightly job's executor estimating the sufficiency pairs, into the
        ctx.before_metrics(references, families, lambda m: ctx.savings.pairs(ctx.store, m))  # pair cache m reads
    shared = {f: [n for n, g in ctx.families.items() if g == f] for f in set(ctx.families.values())}
    if any(len(v) > 1 for v in shared.values()):  # who counted once in the pool's evidence (JSON: details.families)
        ctx.details["families"] = {f: v for f, v in sorted(shared.items()) if len(v) > 1}
    left_out: dict[str, str] = {}  # metric -> its "left out of the score" warning, said once the weights are known
    for m in ctx.metrics:
        opts = ctx.metric_options.get(m, {})
        mctx = MetricContext(
            embeddings=ok,
            run_keys=run_keys,
            seed=ctx.seed,
            options=opts,
            labels=ctx.ref.labels if opts.get("prior") == "labels" else None,
            pair_cache=ctx.savings.pairs(ctx.store, m),  # a write the cache refuses does not end the run
            device=ctx.device,
            references=references,
            families=families,
        )
        t_metric = time.perf_counter()
        with ctx.bar.stage(f"metric {m}"):
            mr = _run_metric(m, mctx, ctx, run_keys=run_keys, opts=opts)
        ctx.timings["metrics"][m] = time.perf_counter() - t_metric
        if mr is None:
            continue
        ctx.per_metric[m] = mr.scores
        ctx.details[m] = mr.details
        not_comparable = mr.details.get("not_comparable")
        for w in mr.details.get("warnings") or []:  # the metric's own warnings, also at the top level
            note = f"{m}: {w}" if not str(w).startswith(m) else str(w)
            if not_comparable and str(w).endswith(not_comparable):
                left_out[m] = note
            elif w == mr.details.get("pool_warning"):
                ctx.pool_notes.append(RankingWarning("small-pool", note))
            else:
                warnings.append(RankingWarning("metric-note", note))
        for name, why in (mr.details.get("excluded") or {}).items():  # degenerate for this metric only
            if not any(w.startswith(m) and name in w and why in w for w in warnings):  # unless this metric said so
                warnings.append(RankingWarning("metric-excluded", f"{m} did not score {name}: {why}", [name]))
                # said once, by the ranking's warning (the note under rank's table, the JSON, select()'s warnings):
                # the log line is for --verbose
                log.info("%s did not score %s: %s", m, name, why)
        ranks = rank_scores(mr.scores)
        for name, score in mr.scores.items():
            by_name[name].scores[m] = num(score)
            by_name[name].ranks[m] = competition_rank(ranks[name])
        for col, values in mr.columns.items():
            for name, v in values.items():
                by_name[name].columns[col if col.startswith(m) else f"{m}.{col}"] = num(v)
        boot = ctx.uncertainty.get(m)
        if boot is not None:
            # the interval belongs to the score that was bootstrapped: the headline, or a cheaper proxy of it
            # (task_prior bootstraps its closed-form alignment, not the probes)
            key = m if boot.get("score_name") in (None, m, mr.details.get("headline")) else boot["score_name"]
            for name, (lo, hi) in boot["intervals"].items():
                if math.isfinite(num(lo)) and math.isfinite(num(hi)):  # none where the metric left it out: not NaN
                    by_name[name].intervals[key] = [num(lo), num(hi)]
    if not ctx.per_metric:
        raise MetricError("no metric could be computed: " + "; ".join(warnings))
    ctx.combined_weights = combined_weights(list(ctx.per_metric), ctx.ref.modality, ctx.weights)
    # a metric's warning that it is "left out of the score" would be untrue when it has weight 0 in the combined
    # score anyway: then it says why its column shows "-" instead. The weights are those of the metrics computed, so
    # a weight-0 metric that became the score (every weighted metric failed) keeps its warning
    warnings += [RankingWarning("metric-note", note if ctx.combined_weights.get(m) else
                                note.replace("left out of the score", "not scored (its column shows -)", 1))
                 for m, note in left_out.items()]


def _run_metric(m: str, mctx: MetricContext, ctx: RunContext, *, run_keys: Mapping[str, str],
                opts: Mapping[str, Any]) -> MetricResult | None:
    """One metric's result (from the store, or computed and stored, :attr:`RunContext.savings`), and its bootstrap
    into ``ctx.uncertainty[m]`` when asked; None (with a warning) when the metric cannot be computed. Under the
    result's lock (:meth:`~embedselect.store.Store.metric_lock`): two runs at once on the same candidates compute it
    once."""
    fn = get_metric(m)
    mkey = metric_key(m, run_keys, opts, ctx.seed, ctx.ref.labels if mctx.labels is not None else None,
                      references=mctx.references, families=mctx.families)
    with ctx.store.metric_lock(mkey, m):  # a second run computing the same result waits, then reads it
        cached = ctx.store.get_metric_result(mkey)
        if cached is not None:
            mr = MetricResult(**cached)
            mr.scores = {k: num(v) for k, v in mr.scores.items()}
            mr.columns = {c: {k: num(v) for k, v in vals.items()} for c, vals in mr.columns.items()}
            mr.intervals = {k: (v[0], v[1]) for k, v in mr.intervals.items()}
            log.info("metric %s: cached", m)
        else:
            try:
                mr = fn(mctx)
            except MetricError as exc:
                ctx.warnings.append(RankingWarning("metric-failed", f"metric {m} was not computed: {exc}"))
                # said once, by the ranking's warning (the note under rank's table, the JSON, select()'s warnings): the
                # log line is for --verbose
                log.info("metric %s failed: %s", m, exc)
                return None
            value = to_jsonable(asdict(mr))
            ctx.savings.keep(f"the result of metric {m}", lambda: ctx.store.put_metric_result(mkey, m, value))
        if ctx.bootstrap and ctx.bootstrap > 0:
            bkey = f"{mkey}:bootstrap:{ctx.bootstrap}"
            boot = ctx.store.get_metric_result(bkey)
            if boot is None:
                from embedselect.ranking.bootstrap import bootstrap_metric

                boot = to_jsonable(bootstrap_metric(fn, mctx, n_boot=ctx.bootstrap, seed=ctx.seed).to_dict())
                ctx.savings.keep(f"the bootstrap of metric {m}",
                                 lambda: ctx.store.put_metric_result(bkey, f"{m}:bootstrap", boot))
            ctx.uncertainty[m] = boot
    return mr


def no_candidate_embedded(results: list[Any], store: Any = None) -> CacheError | AllCandidatesFailedError:
    """Why a run in which no candidate could be embedded stops (``results``: each candidate's failed
    :class:`~embedselect.ranking.result.CandidateResult`), the one rule for ``rank`` and ``embed``: when each failed
    because of the cache (read-only, a full disk, a file-size limit), the cache's error, said once (exit 6): a
    read-only ``store``'s own message, else the first candidate's CacheError naming the others; otherwise
    :class:`AllCandidatesFailedError` naming each with its reason (exit 4)."""
    if results and all(r.error_type in cache_error_names() for r in results):
        if store is not None and all(r.error_type == "CacheReadOnlyError" for r in results):
            error = store.read_only_error("store the embeddings of any of the candidates (none is cached)")
            if error is not None:
                return error
        first, others = results[0], [r.name for r in results[1:]]
        more = f"; {', '.join(others)} failed the same way" if others else ""
        return CacheError(f"no candidate could be embedded: {first.name}: {first.error}{more}")
    why = {r.name: f"{r.error_type}: {r.error}" for r in results}
    return AllCandidatesFailedError(f"no candidate could be embedded ({'; '.join(f'{k}: {v}' for k, v in why.items())})",
                                    failed=list(why), reasons=why)


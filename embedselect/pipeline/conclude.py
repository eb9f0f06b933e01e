"""Stages 4 to 6 of a run: the combined rank and decision, validation against labels, the Ranking and its storage."""

from __future__ import annotations

import math
import time
import uuid
from datetime import datetime, timezone
from typing import Any, Mapping, cast

from embedselect._util.kinds import is_baseline_id
from embedselect.pipeline.defaults import default_method
from embedselect.ranking.result import Ranking, RankingWarning, ValidationReport
from embedselect.ranking.ties import rank_scores
from embedselect.pipeline.context import RunContext, competition_rank, num, versions
from embedselect.pipeline.savings import RANKING
from embedselect.pipeline.scoring import metrics_stage
from embedselect.pipeline.answers import answers_stage
from embedselect.pipeline.queries import queries_stage, retrieval_stage


def rank_embedded(ctx: RunContext, t_start: float, *, save: bool) -> Ranking:
    """Stages 3 to 6 over the candidates of ``ctx`` that are embedded: metrics, combined rank and decision (the answers
    and the search queries, if any, decide between the contenders), validation against labels (if any), the
    :class:`~embedselect.ranking.result.Ranking` (stored when ``save``; its ``ranking_id`` is None when it was not
    stored: ``save`` False, a read-only cache, or a cache that refused it)."""
    ctx.warnings += _untrained_notes(ctx)
    metrics_stage(ctx)
    decision = answers_stage(ctx, _rank_stage(ctx))
    validation = _validate_stage(ctx)
    decision = _labels_settle(decision, validation)
    retrieval, reciprocal_ranks = retrieval_stage(ctx, _label_free_scores(ctx))
    decision = queries_stage(ctx, decision, retrieval, reciprocal_ranks)
    recordable = save and ctx.store.can_record("the ranking")
    if save and not recordable:
        ctx.warnings.append(RankingWarning("not-stored", f"the cache at {ctx.store.root} is read-only: this ranking is "
                                           "not stored (leaderboard and history will not show it)"))
    ranking = _report(ctx, decision, validation)
    ranking.retrieval = retrieval
    ctx.timings["total"] = time.perf_counter() - t_start
    if save:
        _save(ctx, ranking)
    if not recordable or RANKING in ctx.savings.lost:  # its id would name a ranking the store does not have
        ranking.ranking_id = None
    if (not_stored := ctx.savings.warning()) is not None:  # said once, by the ranking's notes
        ranking.warnings.append(not_stored)
    return ranking


def _untrained_notes(ctx: RunContext) -> list[RankingWarning]:
    """An ``untrained-checkpoint`` note for each embedded candidate whose model looked untrained
    (:attr:`~embedselect.pipeline.context.EmbedOutcome.untrained_norms`: found at its load, or read from the cache's
    record of its run): it is ranked, and the ranking says so whether its vectors were computed or read."""
    from embedselect.models.backends.weights import untrained_message

    return [RankingWarning("untrained-checkpoint", untrained_message(name, norms), [name])
            for name, norms in _untrained(ctx).items()]


def _untrained(ctx: RunContext) -> dict[str, int]:
    """The embedded candidates whose model looked untrained, each with its count of normalisation layers at their
    initial values: the notes' candidates and :func:`~embedselect.ranking.combine.decide`'s ``untrained``."""
    return {o.result.name: o.untrained_norms for o in ctx.outcomes if o.result.ok and o.untrained_norms}


def _rank_stage(ctx: RunContext) -> Any:
    """Stage 4: combine the metrics (the data's default method and weights, :mod:`embedselect.pipeline.defaults`;
    metrics not named in ``weights`` keep their default weight, weights of metrics that failed are dropped), put derived copies below their
    parents (:func:`embedselect.ranking.combine.copies_below_parents`), give each result its combined score and rank,
    sort the outcomes best first (ties share a rank and are listed by name, so the first row, ``best`` and the
    validation's top pick agree) and decide whether there is a clear winner (the reference points and the untrained
    checkpoints are not picks).

    Returns:
        the :class:`~embedselect.ranking.combine.Decision`.
    """
    from embedselect.ranking.combine import combine_ranks, copies_below_parents, decide
    by_name = {r.name: r for r in ctx.results}
    modality = ctx.ref.modality
    full_weights = ctx.combined_weights  # decided once, by the metrics stage (defaults.combined_weights)
    families = {k: v for k, v in ctx.families.items() if k in ctx.vectors}
    combined = combine_ranks(ctx.per_metric, weights=full_weights, method=default_method(modality), families=families)
    # a quantised or truncated copy of another candidate never ranks above it (data processing inequality: the
    # parent is at least as good); nor does the same model with its input cut shorter (declared by the specs); the
    # copies were found before the metrics (pipeline.families.pool_relations)
    copies = [d for d in ctx.copies if d.copy in combined and d.parent in combined]
    combined, moved = copies_below_parents(combined, [(d.copy, d.parent) for d in copies])
    ctx.details["copies"] = {"pairs": [d.to_dict() for d in copies], "moved_below_parent": [list(p) for p in moved]}
    for c, p in moved:
        d = next(x for x in copies if (x.copy, x.parent) == (c, p))
        if d.relation == "truncated-input":
            why, since = "the same model with its input cut to fewer tokens", "it reads less of each item"
        elif d.declared and d.relation in ("truncated", "quantized") and c in ctx.reductions:
            options = next((dict(x.options) for x in ctx.candidates if x.name == c), {})
            why = "&".join(f"?{k}={options[k]}" for k in ("truncate_dim", "precision") if k in options) + \
                " of the same model"
            since = "its vectors are computed from its parent's and cannot carry more information"
        elif d.declared:
            why, since = f"its model card names {p} as its base_model", "a copy approximates its parent"
        else:
            why = f"median per-coordinate |Spearman| {d.median_abs_spearman:.2f}"
            since = "a copy cannot carry more information"
        ctx.warnings.append(RankingWarning("copy-below-parent", f"{c} is a {d.relation} copy of {p} ({why}): ranked "
                                           f"just below it, since {since}", [c, p]))
    for name, score in combined.items():
        by_name[name].combined_score = float(score)
    for name, r in rank_scores({n: by_name[n].combined_score for n in combined}).items():
        by_name[name].rank = competition_rank(r)
    ctx.outcomes.sort(key=lambda o: (not o.result.ok, o.result.rank if o.result.rank is not None else math.inf,
                                     o.result.name))
    references = frozenset(r.name for r in ctx.results if r.ok and is_baseline_id(r.model_id))
    decision = decide(combined, intervals={n: _intervals_in_score(by_name[n].intervals, full_weights) for n in combined},
                      per_metric=ctx.per_metric, weights=full_weights, method=default_method(modality),
                      families=families, references=references, copies=[(d.copy, d.parent) for d in copies],
                      untrained=frozenset(_untrained(ctx)))
    ctx.warnings += [RankingWarning(code, f"no clear winner: {why}", decision.leaders)
                     for code, why in zip(decision.codes, decision.reasons)]
    ctx.warnings += _baseline_wins(ctx, decision.leaders)
    if "small-pool" not in decision.codes:  # else the ranking says it already, counting families
        ctx.warnings += ctx.pool_notes
    return decision


def _baseline_wins(ctx: RunContext, leaders: list[str]) -> list[RankingWarning]:
    """The ``baseline-wins`` warning when a built-in baseline is first or among the leaders (none otherwise)."""
    from embedselect._util.kinds import is_baseline_id

    by_name = {r.name: r for r in ctx.results}
    found = [n for n in leaders if n in by_name and is_baseline_id(by_name[n].model_id)]
    if not found:
        return []
    where = "first" if found[0] == (leaders[0] if leaders else None) and len(leaders) == 1 else "among the leaders"
    return [RankingWarning("baseline-wins", f"the built-in baseline(s) {', '.join(found)} rank {where}: no model "
                                            "beat them on this data", found)]


def _intervals_in_score(intervals: Mapping[str, Any], weights: Mapping[str, float]) -> dict[str, Any]:
    """The bootstrap intervals of one candidate that belong to scores in the combination: only those can separate
    its leaders (a weight-0 metric is shown, not combined). An interval's key is a metric's name or a score of it
    (task_prior bootstraps ``task_prior_alignment``)."""
    in_score = [m for m, w in weights.items() if w > 0]
    return {k: v for k, v in intervals.items() if any(k == m or k.startswith((m + "_", m + ".")) for m in in_score)}


def _validate_stage(ctx: RunContext) -> ValidationReport | None:
    """Stage 5, only when the data has labels: held-out probe accuracy on the user's labels, and how well each
    label-free score (the headlines, the secondary scores a metric names, and the combined score) predicts it.
    Adds ``labels.*`` columns to the results.

    Returns:
        the validation report as a dict, or None without labels.
    """
    if ctx.ref.labels is None:
        return None
    from embedselect.validation.check import validate

    by_name = {r.name: r for r in ctx.results}
    # also check the secondary scores a metric names, so that users see which of them their labels agree with
    label_free = _label_free_scores(ctx)
    t_validation = time.perf_counter()
    with ctx.bar.stage("validation against your labels"):
        report = validate(ctx.vectors, ctx.ref.labels, label_free, seed=ctx.seed)
        for name, row in report.table.iterrows():
            for col, v in row.items():
                if col not in label_free:
                    by_name[str(name)].columns[f"labels.{col}"] = num(v)
        validation = cast(ValidationReport, report.to_dict())
    ctx.timings["validation"] = time.perf_counter() - t_validation
    return validation


def _labels_settle(decision: Any, validation: ValidationReport | None) -> Any:
    """An undecided ranking checked against labels: ``settle`` (``Ranking.next_step``) says what the labels' held-out
    probes show, instead of asking for the labels the user has just given: the candidate with the highest probe
    accuracy and those whose interval reaches its accuracy (labelling more items separates those). The label-free
    order and ``decided`` / ``leaders`` stay as they are: the labels check the ranking, they do not make it."""
    if validation is None or decision.decided:
        return decision
    from dataclasses import replace

    col = validation.get("accuracy_column", "accuracy")
    rows = {c: r for c, r in (validation.get("table") or {}).items()
            if isinstance(r.get(col), (int, float)) and math.isfinite(float(r[col]))}
    if not rows:
        return decision
    best = max(sorted(rows), key=lambda c: float(rows[c][col]))
    top = float(rows[best][col])
    lo, hi = rows[best].get(f"{col}_lo"), rows[best].get(f"{col}_hi")
    interval = f" [{float(lo):.3f}, {float(hi):.3f}]" if lo is not None and hi is not None else ""
    close = [c for c in sorted(rows, key=lambda c: -float(rows[c][col]))
             if c != best and rows[c].get(f"{col}_hi") is not None and float(rows[c][f"{col}_hi"]) >= top]
    text = f"your labels' held-out probes put {best} first (accuracy {top:.3f}{interval}; the check against your labels)"
    if close:
        text += f"; {', '.join(close)} {'is' if len(close) == 1 else 'are'} within its interval: more labelled items " \
                "separate them"
    return replace(decision, settle=text)


def _label_free_scores(ctx: RunContext) -> dict[str, dict[str, float]]:
    """What a check against the user's answers compares: every metric's headline, the secondary scores a metric
    names (e.g. task_prior's probe accuracy when the headline is the closed-form alignment), and the combined score."""
    by_name = {r.name: r for r in ctx.results}
    label_free = dict(ctx.per_metric)
    for m, det in ctx.details.items():
        for col in det.get("secondary", []) or []:
            name = col if col.startswith(m) else f"{m}.{col}"
            values = {r: by_name[r].columns[name] for r in ctx.vectors if name in by_name[r].columns}
            if values:
                label_free[name] = values
    label_free["combined"] = {n: s for n in ctx.vectors if (s := by_name[n].combined_score) is not None}
    return label_free


def _report(ctx: RunContext, decision: Any, validation: ValidationReport | None) -> Ranking:
    """Stage 6: the :class:`~embedselect.ranking.result.Ranking` of the run (results best first, settings, versions,
    details, validation, uncertainty, warnings, the decision and the timings)."""
    return Ranking(
        candidates=ctx.results,
        metrics=[m for m in ctx.metrics if m in ctx.per_metric],
        combine=default_method(ctx.ref.modality),
        dataset=ctx.ref.to_dict(),
        settings={
            "seed": ctx.seed,
            "max_items": ctx.config.max_items,
            "on_error": ctx.config.on_error,
            "drop_duplicates": ctx.config.drop_duplicates,
            "device": ctx.device,
            "batch_size": ctx.batch_size,
            "metric_options": ctx.metric_options,
            "weights": dict(ctx.weights) if ctx.weights else None,
            "combined_weights": ctx.combined_weights,
            "bootstrap": ctx.bootstrap,
            "policy": {"allow_pickle": ctx.policy.allow_pickle, "trust_remote_code": ctx.policy.trust_remote_code},
        },
        versions=versions(),
        details=ctx.details,
        validation=validation,
        uncertainty=ctx.uncertainty or None,
        warnings=ctx.warnings,
        ranking_id=uuid.uuid4().hex,
        created_at=datetime.now(timezone.utc).isoformat(),
        decided=decision.decided,
        leaders=decision.leaders,
        undecided_reasons=decision.reasons,
        next_step=decision.settle,
        timings=ctx.timings,
        answers=ctx.answers_summary,
    )


def _save(ctx: RunContext, ranking: Ranking) -> None:
    """Store the ranking and one row per (metric, embedded candidate) in the cache database. A cache that cannot
    store it (a full disk, a file-size limit: :class:`~embedselect.errors.CacheError`) does not lose the ranking
    computed: it is a saving (:attr:`RunContext.savings`), said in the warning ``not-stored`` with the reason."""
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
    ctx.savings.keep(RANKING, lambda: ctx.store.save_ranking(ranking.ranking_id, ranking.to_dict(), rows))

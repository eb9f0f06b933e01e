"""Search queries in a run (``select(..., queries=)``, ``rank`` / ``validate --queries``): every candidate searches the
reference items with them and is scored (:func:`retrieval_stage`), and where the queries separate the contenders they
decide between them (:func:`queries_stage`), as a person's answers do."""

from __future__ import annotations

import time
from typing import Any, Mapping

import numpy as np

from embedselect.pipeline.evidence import fold_verdict
from embedselect.validation.duels import DECIDE_LEVEL, MIN_ANSWERED, contenders, verdict


def retrieval_stage(ctx: Any, label_free: Mapping[str, Mapping[str, float]]
                    ) -> tuple[dict[str, Any] | None, dict[str, np.ndarray]]:
    """Stage 5b, only with queries: each candidate searches the reference items with the queries (exact cosine search
    over its item vectors, or over the items embedded with its document prompt where it has one) and is scored by
    MRR@10, nDCG@10, recall@1 and recall@10 with bootstrap intervals over the queries
    (:func:`embedselect.validation.retrieval.retrieval_quality`, the run's seed); then each label-free score of
    ``label_free`` (score name -> candidate -> value) is checked by Spearman and Kendall against MRR@10
    (:func:`embedselect.validation.check.validate_scores`). Adds ``search.*`` columns to the results.

    Returns:
        (``{"queries": the query set's summary, "prompts": {candidate: {"query": name|None, "document": ...}},
        "scores": {candidate: scores with intervals}, "score_column": "mrr@10", "metrics": [...], "level", "n_boot",
        "seed", "warnings"}``, candidate -> float64 (m,) each query's reciprocal rank at 10), or (None, {}) without
        queries.
    """
    if ctx.queries is None:
        return None, {}
    from embedselect.errors import DataError
    from embedselect.validation.check import validate_scores
    from embedselect.validation.retrieval import retrieval_quality

    by_name = {r.name: r for r in ctx.results}
    t0 = time.perf_counter()
    relevant = [list(r) for r in ctx.queries.relevant]
    scores: dict[str, dict[str, Any]] = {}
    reciprocal: dict[str, np.ndarray] = {}
    with ctx.bar.stage("search check against your queries", steps=0):
        for name in ctx.vectors:
            if name not in ctx.query_vectors:
                continue
            docs = ctx.search_vectors.get(name, ctx.vectors[name])
            quality = retrieval_quality(ctx.query_vectors[name], docs, relevant, seed=ctx.seed)
            scores[name] = quality.to_dict()
            reciprocal[name] = quality.per_query["mrr@10"]
            for key, v in quality.scores.items():
                by_name[name].columns[f"search.{key}"] = float(v)
        mrr = {n: s["mrr@10"] for n, s in scores.items()}
        try:
            report = validate_scores(label_free, mrr, seed=ctx.seed)
            check = report.to_dict()
        except DataError as exc:
            why = (f"only {len(mrr)} candidate has search scores: they are reported, but a ranking needs at least "
                   "two candidates to be checked" if len(mrr) < 2 else str(exc))
            check = {"metrics": [], "warnings": [why], "level": 0.9, "n_boot": 1000, "seed": ctx.seed}
    ctx.timings["retrieval"] = time.perf_counter() - t0
    return ({"queries": ctx.queries.to_dict(), "prompts": dict(ctx.query_prompts), "scores": scores,
             "score_column": "mrr@10", "metrics": check.get("metrics", []), "level": check.get("level"),
             "n_boot": check.get("n_boot"), "seed": ctx.seed, "warnings": check.get("warnings", [])}, reciprocal)


def queries_stage(ctx: Any, decision: Any, retrieval: dict[str, Any] | None,
                  reciprocal: Mapping[str, np.ndarray]) -> Any:
    """Let the queries decide between the contenders (a no-op without queries).

    The contenders are :func:`~embedselect.validation.duels.contenders` of ``decision``'s leaders (one candidate per
    model family, in the table's order). Two contenders are compared on the queries where one ranks the first relevant
    item higher than the other (each query's reciprocal rank at 10, ``reciprocal``: candidate -> float (m,)), by the
    paired rule of :func:`~embedselect.validation.duels.verdict` (99.9 % Wilson interval, at least
    :data:`~embedselect.validation.duels.MIN_ANSWERED` queries); the decision follows as
    :func:`~embedselect.pipeline.evidence.fold_verdict` says. ``retrieval["decision"]`` records the contenders and
    the verdict (JSON-ready).

    Returns:
        the (possibly new) :class:`~embedselect.ranking.combine.Decision`.
    """
    if retrieval is None or not reciprocal:
        return decision
    ok = [o.result for o in ctx.outcomes if o.result.ok and o.result.name in reciprocal and o.result.rank is not None]
    names = contenders(decision.leaders, [r.name for r in ok], ctx.families)
    v = verdict(reciprocal, names, unit="queries")
    retrieval["decision"] = {"contenders": names, "level": DECIDE_LEVEL, "min_queries": MIN_ANSWERED, **v.to_dict()}
    n = len(next(iter(reciprocal.values())))
    return fold_verdict(ctx, decision, names, v, code="queries", said=f"your {n} quer{'ies' if n != 1 else 'y'}",
                        by="your queries",
                        on_what="the queries where one of the two finds the first relevant item higher",
                        more="add queries to the file")

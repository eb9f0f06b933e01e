"""Search queries in a run (``select(..., queries=)``, ``validate --queries``): every candidate searches the
reference items with them and is scored (:func:`retrieval_stage`), and the queries order the candidates and, where they
separate the best from the others, decide (:func:`queries_stage`)."""

from __future__ import annotations

import time
from typing import Any, Mapping

import numpy as np

from embedselect.pipeline.evidence import drop_label_free_notes, reorder
from embedselect.validation.duels import DECIDE_LEVEL, MIN_ANSWERED, Verdict, verdict


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
            report = validate_scores(label_free, mrr, seed=ctx.seed, truth="mrr@10")
            check = report.to_dict()
        except DataError as exc:
            why = (f"only {len(mrr)} candidate has search scores: they are reported, but a ranking needs at least "
                   "two candidates to be checked" if len(mrr) < 2 else str(exc))
            check = {"metrics": [], "warnings": [why], "level": 0.9, "n_boot": 1000, "seed": ctx.seed}
    ctx.timings["retrieval"] = time.perf_counter() - t0
    return ({"queries": ctx.queries.to_dict(), "prompts": dict(ctx.query_prompts), "scores": scores,
             "score_column": "mrr@10", "metrics": check.get("metrics", []), "level": check.get("level"),
             "n_boot": check.get("n_boot"), "seed": ctx.seed, "warnings": check.get("warnings", [])}, reciprocal)


def queries_verdict(reciprocal: Mapping[str, np.ndarray], table: list[str], families: Mapping[str, str]
                    ) -> tuple[list[str], list[str], Verdict]:
    """The queries' rule, on the candidates ``table`` (in label-free order) with each query's reciprocal rank at 10
    (``reciprocal``: candidate -> float (m,)): the candidates ordered by MRR@10 on the queries (equal MRR keeps
    ``table``'s order), the contenders (each family's best on the queries; ``families``: candidate -> family, a
    candidate not in it is its own), and :func:`~embedselect.validation.duels.verdict` between them. The verdict's
    winner is first in the order.

    Returns:
        (order, contenders, verdict).
    """
    mrr = {c: float(np.mean(reciprocal[c])) for c in table}
    order = sorted(table, key=lambda c: (-mrr[c], table.index(c)))
    heads: dict[str, str] = {}  # family -> its best candidate on the queries
    for c in order:
        heads.setdefault(families.get(c, c), c)
    names = list(heads.values())
    v = verdict(reciprocal, names, unit="queries")
    order = [c for c in order if c in v.remaining[:1]] + [c for c in order if c not in v.remaining[:1]]
    return order, names, v


def queries_stage(ctx: Any, decision: Any, retrieval: dict[str, Any] | None,
                  reciprocal: Mapping[str, np.ndarray]) -> Any:
    """Let the queries order the candidates and decide between them (a no-op without queries).

    The queries measure search quality directly, so with them the table follows each candidate's MRR@10 on them
    (``reciprocal``: candidate -> float (m,) each query's reciprocal rank at 10; equal MRR keeps the label-free
    order). The contenders are each model family's best candidate on the queries. Two contenders are compared on the
    queries where one finds the first relevant item higher than the other, by the paired rule of
    :func:`~embedselect.validation.duels.verdict` (99.9 % Wilson interval, at least
    :data:`~embedselect.validation.duels.MIN_ANSWERED` queries): the queries decide when the first contender beats
    every other; otherwise the ranking is undecided and its leaders are the contenders no other beats. The label-free
    "no clear winner" notes give way to one saying what the queries settled. ``retrieval["decision"]`` records the
    order, the contenders and the verdict (JSON-ready).

    Returns:
        the new :class:`~embedselect.ranking.combine.Decision`, or ``decision`` without queries.
    """
    from embedselect.ranking.combine import Decision
    from embedselect.ranking.result import RankingWarning

    if retrieval is None or not reciprocal:
        return decision
    table = [o.result.name for o in ctx.outcomes
             if o.result.ok and o.result.name in reciprocal and o.result.rank is not None]
    if len(table) < 2:
        return decision
    order, names, v = queries_verdict(reciprocal, table, ctx.families)
    reorder(ctx, table, order)
    retrieval["decision"] = {"order": order, "contenders": names, "level": DECIDE_LEVEL,
                             "min_queries": MIN_ANSWERED, **v.to_dict()}
    n = len(reciprocal[table[0]])
    said = f"your {n} quer{'ies' if n != 1 else 'y'}"
    drop_label_free_notes(ctx, decision)
    if len(names) < 2:  # one model family: its members are not compared with each other
        why = f"{said} put {order[0]} first, but every candidate is of one model family"
        ctx.warnings.append(RankingWarning("small-pool", f"no clear winner: {why}", [order[0]]))
        return Decision(False, [order[0]], [why], ["small-pool"], settle=decision.settle, causes=["one-family"])
    if v.decided:
        beaten = ", ".join(f"{p['other']} ({p['wins']}:{p['losses']})" for p in v.pairs)
        ctx.warnings.append(RankingWarning("queries", f"decided by {said}: {v.winner} finds the relevant items best "
                                           f"(MRR@10 {float(np.mean(reciprocal[str(v.winner)])):.3f}); it beats {beaten} on the queries "
                                           "where one of the two finds the first relevant item higher "
                                           f"({DECIDE_LEVEL:.1%} Wilson interval above one half)", [str(v.winner)]))
        return Decision(True, [str(v.winner)], [], [])
    why = f"{said} {'does' if n == 1 else 'do'} not separate {', '.join(v.remaining)} yet{v.need()}; {v.pair_counts()}"
    ctx.warnings.append(RankingWarning("queries", f"the table follows {said} (MRR@10 on them; equal scores keep the "
                                       "label-free order)", v.remaining))
    ctx.warnings.append(RankingWarning("undecided", f"no clear winner: {why}", v.remaining))
    return Decision(False, list(v.remaining), [why], ["undecided"],
                    settle="to settle it, add queries with their relevant items to the file", causes=["contenders-left"])

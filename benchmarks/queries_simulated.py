"""Do a few search queries settle the pick for search? ``validate --queries`` (and ``select(..., queries=)``) lets
the queries order the candidates and decide between them (:func:`embedselect.pipeline.queries.queries_stage`); this
reads that rule on the retrieval views of ``validity_retrieval.py`` with a simulated user who brings ``k`` of the
set's real queries.

For every retrieval view (a set's documents under a named pool of ``validity_retrieval.VIEWS``):

1. label-free: the view read as ``validity_retrieval.view_result`` reads it (the package's text default on the
   documents alone, each model family once, copies below their parents, ``decide`` with its witness): the order and
   the leaders;
2. each candidate's reciprocal rank at 10 on every query of the set (exact cosine search over the documents,
   ``embedselect.validation.retrieval``), computed once per set and candidate;
3. for each budget ``k`` and each of ``--draws`` seeded draws: ``k`` queries drawn without replacement are the user's;
   the truth is each candidate's MRR@10 on the set's *other* queries (so the evidence and the truth never share a
   query);
4. picks on that draw:
   - *label-free*: the first of the label-free order;
   - *best on the queries* (the product's rule, :func:`embedselect.pipeline.queries.queries_stage`): the candidate
     with the highest MRR@10 on the ``k`` queries (ties by label-free order), decided when it beats each other model
     family's best on them (:func:`embedselect.validation.duels.verdict`, 99.9 %): exactly the first row of
     ``validate --queries``;
   - *leaders' verdict* (a variant, the rule of ``rank --answers``): the winner of the verdict between
     :func:`~embedselect.validation.duels.contenders` of the label-free leaders (the label-free pick when they rule
     nothing out).

Reported per budget: the share of (view, draw) pairs whose pick is within ``--tolerance`` (0.02 MRR) of the best on the
other queries, for each pick, the share decided and the share where the pick is worse than label-free's by more than
the tolerance, and the mean regret. ``--half`` restricts the sets to one half of the protocol (``protocol.half``).

    python -m benchmarks.queries_simulated --half selection --out /tmp/queries_sim.md

Every number is a benchmark result, never a test threshold.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from benchmarks import validity_retrieval as vr
from benchmarks.named_pools import pool_roles
from benchmarks.protocol import half
from benchmarks.retrieval_pools import load_set, root
from benchmarks.sets.retrieval_registry import SETS
from embedselect.pipeline.queries import queries_verdict
from embedselect.validation.duels import Z_DECIDE, contenders, verdict
from embedselect.validation.retrieval import query_scores, search_ranks

BUDGETS = (10, 20, 40, 80)
MIN_LEFT = 50
"""A budget is read on a set only when at least this many queries are left for the truth."""


def reciprocal_ranks(name: str) -> dict[str, np.ndarray]:
    """candidate -> float64 (m,): each query's reciprocal rank at 10 on set ``name`` (its cached vectors: the documents'
    rows first, then the queries')."""
    meta, relevant, _entries, vectors = load_set(name)
    n = meta["n_docs"]
    return {c: query_scores(search_ranks(v[n:], v[:n]), relevant)["mrr@10"] for c, v in vectors.items()}


def picks(rr: Mapping[str, np.ndarray], order: Sequence[str], leaders: Sequence[str], families: Mapping[str, str],
          chosen: np.ndarray, z: float = Z_DECIDE) -> dict[str, Any]:
    """The three picks of one draw (module docstring, step 4): ``chosen`` int (k,) the user's query rows. The best on
    the queries is the product's own rule (:func:`embedselect.pipeline.queries.queries_verdict`, at its 99.9 %);
    ``z`` is the leaders' verdict's level."""
    names = contenders(leaders, order, families)
    v = verdict({c: rr[c][chosen] for c in names}, names, z=z, unit="queries")
    by_queries, _heads, w = queries_verdict({c: rr[c][chosen] for c in order}, list(order), families)
    return {"label-free": order[0], "queries": v.winner if len(names) >= 2 else order[0],
            "best-on-queries": by_queries[0], "decided": bool(v.decided), "decided-best": bool(w.decided),
            "ruled_out": sorted(v.ruled_out)}


def simulate(view: Mapping[str, Any], rr: Mapping[str, np.ndarray], budgets: Sequence[int], draws: int,
             tolerance: float, z: float = Z_DECIDE) -> dict[str, Any]:
    """Per budget, per draw: each pick's regret on the queries not drawn, and whether the queries decided."""
    order = list(view["order"])
    _refs, fams = pool_roles(view["raw"]["entries"], order)
    m = len(next(iter(rr.values())))
    out: dict[str, Any] = {"set": view["set"], "view": view["view"], "half": view["half"], "budgets": {}}
    for k in budgets:
        if m - k < MIN_LEFT:
            continue
        rows = []
        for d in range(draws):
            rng = np.random.default_rng([d, k])
            chosen = np.sort(rng.choice(m, size=k, replace=False))
            rest = np.setdiff1d(np.arange(m), chosen)
            truth = {c: float(rr[c][rest].mean()) for c in order}
            best = max(truth.values())
            p = picks(rr, order, view["leaders"], fams, chosen, z)
            reg = {who: best - truth[p[who]] for who in ("label-free", "queries", "best-on-queries")}
            rows.append({"regret": reg, "decided": p["decided"], "decided-best": p["decided-best"],
                         "worse": reg["queries"] - reg["label-free"] > tolerance,
                         "worse-best": reg["best-on-queries"] - reg["label-free"] > tolerance})
        out["budgets"][k] = rows
    return out


def table(results: Sequence[Mapping[str, Any]], budgets: Sequence[int], tolerance: float) -> list[str]:
    """Markdown rows: per budget, the shares over (view, draw) pairs."""
    lines = ["| queries | (view, draw) pairs | label-free: within / mean regret | best on the queries (product): within / "
             "decided / worse than label-free / mean regret | leaders' verdict: within / decided / worse than "
             "label-free / mean regret |",
             "|---|---|---|---|---|"]
    for k in budgets:
        rows = [r for res in results for r in res["budgets"].get(k, [])]
        if not rows:
            continue

        def share(who: str) -> str:
            return f"{np.mean([r['regret'][who] <= tolerance for r in rows]):.1%}"

        def mean(key: str) -> str:
            return f"{np.mean([r[key] for r in rows]):.1%}"

        def regret(who: str) -> str:
            return f"{np.mean([r['regret'][who] for r in rows]):.3f}"

        lines.append(f"| {k} | {len(rows)} | {share('label-free')} / {regret('label-free')} | "
                     f"{share('best-on-queries')} / {mean('decided-best')} / {mean('worse-best')} / "
                     f"{regret('best-on-queries')} | {share('queries')} / {mean('decided')} / {mean('worse')} / "
                     f"{regret('queries')} |")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--half", choices=("selection", "confirmation"), help="only the sets of this half")
    ap.add_argument("--sets", default="", help="comma-separated set names (default: every built set)")
    ap.add_argument("--views", default=",".join(vr.VIEWS), help="comma-separated views (validity_retrieval.VIEWS)")
    ap.add_argument("--budgets", type=int, nargs="+", default=list(BUDGETS))
    ap.add_argument("--draws", type=int, default=10, help="seeded draws of the user's queries per view and budget")
    ap.add_argument("--tolerance", type=float, default=0.02)
    ap.add_argument("--out", type=Path, help="also write the Markdown table and the per-view JSON here (.md, .json)")
    a = ap.parse_args(argv)
    names = [s for s in (a.sets.split(",") if a.sets else SETS) if (root() / s / "meta.json").is_file()]
    if a.half:
        names = [s for s in names if half(s) == a.half]
    t0 = time.perf_counter()
    results = []
    for name in names:
        rr = reciprocal_ranks(name)
        for view in a.views.split(","):
            try:
                r = vr.view_result(name, view, jobs=1)
            except vr.MissingCandidates:
                continue
            results.append(simulate(r, rr, a.budgets, a.draws, a.tolerance))
    lines = [f"{len(results)} views of {len(names)} sets ({a.half or 'both halves'}), {a.draws} draws per budget, "
             f"{time.perf_counter() - t0:.0f} s", "", *table(results, a.budgets, a.tolerance)]
    print("\n".join(lines))
    if a.out:
        a.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
        a.out.with_suffix(".json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The search check's vectors of one candidate (``select(..., queries=)``): its queries, and its reference items
embedded as documents when the model has a document prompt (:func:`embed_candidate_queries`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from embedselect._util.arrays import check_embeddings
from embedselect.errors import MetricError
from embedselect._util.kinds import FITTED_BASELINES
from embedselect.models.backends.reduce import reduction_of
from embedselect.ranking.result import RankingWarning
from embedselect.pipeline.candidate_vectors import item_keys
from embedselect.pipeline.context import RunContext
from embedselect.pipeline.pinning import Pinned


def embed_candidate_queries(ctx: RunContext, cand: Any, pinned: Pinned, vectors: np.ndarray, embedder: Any) -> None:
    """The search check's vectors for one candidate (``select(..., queries=)``): ``ctx.query_vectors[name]`` float32
    (m, d), the queries embedded as the model embeds queries, and, only when the model embeds documents with a prompt
    of its own, ``ctx.search_vectors[name]`` float32 (n, d), the reference items embedded with it (else the search
    runs over the ranking's own ``vectors``). Both are read from the cache when an earlier run stored them, and stored
    otherwise (:mod:`embedselect.pipeline.query_vectors`: keyed by model, revision, options and the texts' content;
    a run that finds them all loads no model).

    The rule: a sentence-transformers model that defines a non-empty ``query`` prompt (``document`` / ``passage`` /
    ``corpus`` for the documents) gets it, as ``encode_query`` / ``encode_document`` would; a candidate's own
    ``?prompt=`` / ``?prompt_name=`` is used for queries and documents alike; every other model embeds a query as it
    embeds an item. A fitted baseline (tfidf-svd) is fitted on the reference items, the fit its item vectors come
    from, and transforms the queries with it (never refitted on the queries). ``embedder``: the model
    :func:`~embedselect.pipeline.candidate_vectors.candidate_vectors` loaded, or None (it is loaded here when some
    text must be embedded)."""
    from embedselect.models.backends.loader import load_embedder
    from embedselect.models.backends.device import library_output
    from embedselect.pipeline.query_vectors import RoleTexts, role_vectors, texts_fingerprint

    rc, ref, queries = pinned.rc, ctx.ref, list(ctx.queries.queries)
    if cand.kind == "vectors":  # precomputed vectors: there is no model to embed the queries with
        ctx.warnings.append(RankingWarning("metric-excluded", f"{cand.name} is precomputed vectors: it cannot embed "
                                           "the queries and is left out of the search check", [cand.name]))
        return
    fitted = rc.backend in FITTED_BASELINES
    held = {"embedder": None if fitted else embedder}

    def model() -> Any:
        if held["embedder"] is None:
            with ctx.bar.stage(f"{cand.name}: load for the queries", steps=0), \
                    library_output():
                held["embedder"] = load_embedder(rc, device=ctx.device, policy=ctx.policy.for_model(cand.ref),
                                                 options=cand.options, seed=ctx.seed,
                                                 fit_items=list(ref.items) if fitted else None)
        return held["embedder"]

    asked = RoleTexts("query", queries)
    if fitted:  # its fit is the reference items': the queries' vectors depend on them too
        asked.fingerprint = texts_fingerprint([ref.fingerprint, asked.fingerprint])
    with ctx.bar.stage(f"{cand.name}: embed {len(queries)} queries", steps=0):
        q, prompts = role_vectors(ctx, cand.name, pinned, asked, model)
    reduction = reduction_of(cand.options, name=cand.name)
    if reduction is not None:  # as its items: truncated and quantised with the items' int8 ranges
        q, _ = reduction.apply(q, name=cand.name, ranges=ctx.reductions.get(cand.name))
    ctx.query_vectors[cand.name] = check_embeddings(q, what=f"{cand.name}'s query vectors", n=len(queries),
                                                    dtype=None, error=MetricError)
    if prompts["document"]:
        documents = RoleTexts("document", [str(t) for t in ref.items], fingerprint=ref.fingerprint,
                              item_keys=item_keys(ctx))
        with ctx.bar.stage(f"{cand.name}: embed {len(ref)} items as documents", steps=0):
            d, _ = role_vectors(ctx, cand.name, pinned, documents, model, prompts=prompts)
        if reduction is not None:
            d, _ = reduction.apply(d, name=cand.name, ranges=ctx.reductions.get(cand.name))
        ctx.search_vectors[cand.name] = check_embeddings(d, what=f"{cand.name}'s document vectors", n=len(ref),
                                                         dtype=None, error=MetricError)
    if ctx.query_vectors[cand.name].shape[1] != vectors.shape[1]:
        raise MetricError(f"{cand.name} embeds queries in {ctx.query_vectors[cand.name].shape[1]} dimensions but its "
                          f"items in {vectors.shape[1]}")
    ctx.query_prompts[cand.name] = prompts

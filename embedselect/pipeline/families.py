"""The pool's relations, found once per run before the metrics: which candidates are copies of which (quantised or
truncated as the vectors show, distilled or quantised as a card declares) and which are variants of one model (the
same weights under other options). The metrics weigh a family once (``MetricContext.families``); the rank stage puts
a copy below its parent."""

from __future__ import annotations

from typing import Any

from embedselect.pipeline.context import RunContext


def pool_relations(ctx: RunContext) -> tuple[list[Any], dict[str, str]]:
    """The copy pairs of the embedded candidates (:func:`embedselect.metrics.copies.pool_copies`, a list of
    :class:`~embedselect.metrics.copies.DerivedCopy`) and each embedded candidate's family key (candidate -> the name
    of its family's first member, in candidate order, that is not a copy of another member; the family's first member
    when all are copies). The key names the family's *head*, the one member the pool-relative metrics consult
    (:func:`embedselect.metrics.pool.evidence`).

    A family is a connected group under two relations: the same model (model id and resolved revision: another
    pooling, layer, resolution or max_length is a variant of the same weights, :func:`embedselect.models.backends.base.
    vector_options`) and copy -> parent.
    """
    from embedselect.models.backends.base import vector_options
    from embedselect.metrics.copies import pool_copies

    by_name = {r.name: r for r in ctx.results if r.ok and r.name in ctx.vectors}
    names = [c.name for c in ctx.candidates if c.name in by_name]
    origins = {c.name: (by_name[c.name].model_id, by_name[c.name].revision, vector_options(c.options))
               for c in ctx.candidates if c.name in by_name}
    # what the vectors cannot show, the cards say: a model2vec distillation or a quantisation of a pool member
    identities = {n: (model, aliases, not origins[n][2]) for n, (model, aliases, _) in ctx.cards.items()
                  if n in origins}
    copies = pool_copies({n: ctx.vectors[n] for n in names}, seed=ctx.seed, origins=origins,
                         cards={n: ctx.cards[n][2] for n in identities}, identities=identities)
    parent = {n: n for n in names}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a: str, b: str) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:  # the earlier candidate names the family
            first, second = sorted((ra, rb), key=names.index)
            parent[second] = first

    same_model: dict[tuple[Any, Any], str] = {}
    for n in names:
        key = origins[n][:2]
        if key in same_model:
            union(same_model[key], n)
        else:
            same_model[key] = n
    for d in copies:
        if d.copy in parent and d.parent in parent:
            union(d.copy, d.parent)
    is_copy = {d.copy for d in copies}
    named: dict[str, str] = {}  # root -> the family's first member that is not a copy (else its first member)
    for n in names:
        r = find(n)
        if r not in named or (named[r] in is_copy and n not in is_copy):
            named[r] = n
    return copies, {n: named[find(n)] for n in names}

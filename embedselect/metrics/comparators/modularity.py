"""``modularity``: how strongly the data falls into communities in a candidate's nearest-neighbour graph.

A label-free signal of each candidate *on its own* (it consults no other candidate, so a pool's consensus, its
families and its reference points do not enter it). The items are the nodes; each item is joined to its k nearest
other items by the cosine similarity of the centred vectors (less their mean over the items, so that a direction
every item shares, as in most text models, does not decide the neighbours). The graph (undirected, unweighted: the
union of the k-NN lists) is partitioned by Louvain (networkx, seeded), and the score is the Newman modularity of the
best partition over ``restarts`` runs, in [-0.5, 1] (higher is better). An embedding whose neighbourhoods form
well-separated groups of items scores high; one whose neighbourhoods are a uniform tangle (noise, a collapsed or
degenerate space) scores low. Classes of a downstream task are such groups when the embedding separates them, which
is why it predicts the probe's accuracy on the text datasets of the validity benchmark (docs/validity.md, "Current
defaults", has its weight per modality). It does not see which groups a task needs: on
sentiment data the topical communities of a text model are not the classes, and an early layer's surface-level
communities can score high.

Computed on at most ``max_items`` items, the same seeded subsample for every candidate (the score depends on n and
k, so candidates are compared on equal terms only); O(n·k) graph, Louvain about linear in its edges.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from embedselect.errors import MetricError
from embedselect.metrics.comparators.agreement import neighbour_lists
from embedselect.metrics.base import MetricContext, MetricResult
from embedselect.metrics.sampling import checked_options, seeded_rows, usable_keys

_OPTION_DEFAULTS: dict[str, Any] = {"k": 10, "max_items": 2048, "restarts": 3}


def knn_graph_modularity(neighbours: np.ndarray, *, restarts: int, seed: int) -> tuple[float, int]:
    """Best Louvain modularity of the undirected union of k-NN lists, and its number of communities.

    Args:
        neighbours: int (n, k) indices of each row's k nearest other rows (no self-loops).
        restarts: Louvain runs, each seeded from ``seed`` and its index; the best modularity is kept.
        seed: root seed.

    Returns:
        (modularity in [-0.5, 1], communities of the best partition).
    """
    import networkx as nx
    from networkx.algorithms.community import louvain_communities, modularity

    n, k = neighbours.shape
    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from(zip(np.repeat(np.arange(n), k).tolist(), neighbours.reshape(-1).tolist()))
    best, parts = -1.0, 0
    for r in range(restarts):
        rseed = int(np.random.default_rng([seed, 14, r]).integers(2**32))
        comms = louvain_communities(g, seed=rseed)
        q = float(modularity(g, comms))
        if q > best:
            best, parts = q, len(comms)
    return best, parts


def compute(ctx: MetricContext) -> MetricResult:
    """The ``modularity`` metric.

    Options: k (10, neighbours per item), max_items (2048, a seeded subsample beyond it), restarts (3, Louvain runs
    per candidate; the best partition counts).
    """
    opt = checked_options("modularity", ctx.options, _OPTION_DEFAULTS, {"k": 1, "max_items": 3, "restarts": 1})
    keys, excluded = usable_keys(ctx)
    if not keys:
        raise MetricError("modularity: no usable candidate" + "".join(f"; {k}: {v}" for k, v in excluded.items()))
    sub = seeded_rows(ctx, keys, "modularity", int(opt["max_items"]), salt=13)
    k = min(int(opt["k"]), len(sub) - 1)
    nbs, knn_device = neighbour_lists(ctx, keys, sub, k, centre=True)
    scores: dict[str, float] = {}
    communities: dict[str, float] = {}
    for key, nb in zip(keys, nbs):
        scores[key], parts = knn_graph_modularity(nb, restarts=int(opt["restarts"]), seed=ctx.seed)
        communities[key] = float(parts)
    details: dict[str, Any] = {"k": k, "n_items": len(sub), "restarts": int(opt["restarts"]), "knn_device": knn_device}
    if excluded:
        details["excluded"] = excluded
        scores.update({key: float("nan") for key in excluded})
    return MetricResult(name="modularity", scores=scores, columns={"modularity_communities": communities},
                        details=details)

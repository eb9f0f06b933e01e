"""Nearest-neighbour metrics over FAISS k-NN (:mod:`embedselect.nn.knn`): k-NN voting (a scikit-learn drop-in
classifier) and mutual-nearest-neighbour agreement between candidates. The k-NN primitives themselves (``knn``,
``build_index``, ``search_index``, ``near_duplicates``, the GPU placement) live in :mod:`embedselect.nn.knn`, below
data, metrics and search; import them from there.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from embedselect.errors import ConfigError, MetricError
from embedselect.metrics.comparators.agreement import agreement_matrix
from embedselect.nn.knn import APPROX_THRESHOLD, Neighbours, knn, prepare

log = logging.getLogger(__name__)


def knn_predict(
    train_x: Any,
    train_y: Sequence[Any] | np.ndarray,
    test_x: Any,
    *,
    k: int = 5,
    metric: str = "l2",
    device: str = "cpu",
) -> np.ndarray:
    """k-nearest-neighbour classification by majority vote, with FAISS exact search.

    The vote matches scikit-learn's ``KNeighborsClassifier(weights="uniform")``: each of the ``k`` nearest
    training rows (``k`` capped at the training size) casts one vote; a tie between classes goes to the
    class that sorts first. Neighbour ties are broken by the lower training row.

    Args:
        train_x: (n, d) training vectors; train_y: (n,) labels; test_x: (m, d) vectors to classify.
        k: neighbours; metric: ``l2`` (default, as scikit-learn), ``cosine`` or ``ip``.

    Returns:
        (m,) array of predicted labels (dtype of ``np.unique(train_y)``).
    """
    y = np.asarray(train_y)
    if y.shape[0] != np.asarray(train_x).shape[0]:
        raise ConfigError(f"train_y has {y.shape[0]} labels for {np.asarray(train_x).shape[0]} training rows")
    classes, codes = np.unique(y, return_inverse=True)
    kk = max(1, min(int(k), y.shape[0]))
    nb = knn(train_x, kk, queries=test_x, metric=metric, exact=True, exclude_self=False, device=device)
    votes = np.zeros((nb.ids.shape[0], len(classes)), dtype=np.int64)
    np.add.at(votes, (np.repeat(np.arange(nb.ids.shape[0]), kk), codes[nb.ids.ravel()]), 1)
    return classes[np.argmax(votes, axis=1)]


def _sklearn_base():
    from sklearn.base import BaseEstimator, ClassifierMixin

    return BaseEstimator, ClassifierMixin


class FaissKNeighborsClassifier(*_sklearn_base()):  # type: ignore[misc]  # bases imported lazily: sklearn is slow to import
    """A drop-in for scikit-learn's ``KNeighborsClassifier(n_neighbors, weights="uniform")`` that searches
    with FAISS (:func:`knn_predict`): usable in pipelines, ``clone`` and cross-validation.

    Args:
        n_neighbors: k; metric: ``l2`` (scikit-learn's default Euclidean), ``cosine`` or ``ip``.
    """

    def __init__(self, n_neighbors: int = 5, metric: str = "l2") -> None:
        self.n_neighbors = n_neighbors
        self.metric = metric

    def fit(self, X: Any, y: Any) -> "FaissKNeighborsClassifier":
        self.X_ = prepare(X, "l2")  # validated float32 copy; the metric's own preparation happens at search
        self.y_ = np.asarray(y)
        self.classes_ = np.unique(self.y_)
        return self

    def predict(self, X: Any) -> np.ndarray:
        return knn_predict(self.X_, self.y_, X, k=self.n_neighbors, metric=self.metric)


@dataclass
class KnnAgreement:
    """Mutual k-NN agreement between candidates (:func:`mutual_knn_agreement`).

    Attributes:
        names: candidate names, in matrix order.
        matrix: float64 (c, c), symmetric, entry [a, b] = mean over items i of |N_a(i) ∩ N_b(i)| / k, where
            N_a(i) is the set of i's k nearest other items under candidate a. 1 on the diagonal; about k/(n-1)
            for unrelated embeddings.
        k: neighbours per item; n: items compared (all, or the sampled ``items``).
        exact: whether every k-NN search was exact; device: where the k-NN searches ran (one label, or several
            joined by " + ").
    """

    names: list[str]
    matrix: np.ndarray
    k: int
    n: int
    exact: bool
    device: str = "cpu"

    def to_dict(self) -> dict[str, Any]:
        return {"names": list(self.names), "matrix": self.matrix.tolist(), "k": self.k, "n": self.n,
                "exact": self.exact, "device": self.device}

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame(self.matrix, index=self.names, columns=self.names)

    def communities(self, *, seed: int = 0) -> list[list[str]]:
        """Louvain communities (networkx, seeded) of the agreement graph (edge weight = agreement), largest
        first: candidates that agree on who is near whom, to set beside the information-sufficiency ones."""
        import networkx as nx
        from networkx.algorithms.community import louvain_communities

        g = nx.Graph()
        g.add_nodes_from(self.names)
        for a in range(len(self.names)):
            for b in range(a + 1, len(self.names)):
                if self.matrix[a, b] > 0:
                    g.add_edge(self.names[a], self.names[b], weight=float(self.matrix[a, b]))
        comms = louvain_communities(g, weight="weight", seed=int(seed) % (2**32))
        return sorted((sorted(c, key=self.names.index) for c in comms), key=lambda c: (-len(c), self.names.index(c[0])))


def mutual_knn_agreement(
    embeddings: Mapping[str, Any],
    *,
    k: int = 10,
    metric: str = "cosine",
    exact: bool | None = None,
    threshold: int = APPROX_THRESHOLD,
    device: str = "cpu",
    graphs: Mapping[str, Neighbours] | None = None,
) -> KnnAgreement:
    """How much the candidates agree on who is near whom: the mutual k-NN overlap of every pair.

    Args:
        embeddings: name -> (n, d_name) matrix; every matrix has the same n and row order.
        k: neighbours per item (at most n - 1).
        graphs: optional name -> self-join :class:`Neighbours` with at least k columns, computed already
            (their first k columns are used; the matrices are then not searched again).

    Returns:
        :class:`KnnAgreement`. Cost: one k-NN graph per candidate (n·k ids each, held at once) and
        O(c²·n·k²) integer comparisons.
    """
    names = list(embeddings)
    if not names:
        raise ConfigError("mutual_knn_agreement needs at least one candidate")
    sizes = {int(np.asarray(embeddings[nm]).shape[0]) for nm in names}
    if len(sizes) != 1:
        raise MetricError(f"candidates embed different numbers of items: {sorted(sizes)}")
    given = graphs or {}
    ids: list[np.ndarray] = []
    all_exact, devices = True, []
    for nm in names:
        nb = given.get(nm)
        if nb is None or nb.ids.shape[1] < k:
            nb = knn(embeddings[nm], k, metric=metric, exact=exact, threshold=threshold, device=device)
        all_exact &= nb.exact
        devices.append(nb.device)
        ids.append(nb.ids[:, :k])
    return KnnAgreement(names=names, matrix=agreement_matrix(ids), k=int(k), n=int(ids[0].shape[0]),
                        exact=bool(all_exact), device=" + ".join(dict.fromkeys(devices)))


__all__ = ["FaissKNeighborsClassifier", "KnnAgreement", "knn_predict", "mutual_knn_agreement"]

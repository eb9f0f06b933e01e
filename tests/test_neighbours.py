"""FAISS nearest neighbours: equal to brute force (ties included), approximate index, voting, mutual k-NN
agreement, near-duplicates."""

from __future__ import annotations

import numpy as np
import pytest

from embedselect.errors import ConfigError, EmbedselectError, MetricError
from embedselect.metrics.neighbours import knn_predict, mutual_knn_agreement
from embedselect.nn.knn import build_index, knn, near_duplicates, search_index


def brute_force(x, q, k, metric, exclude_self):
    """Reference: float64 scores, stable sort by (score, lower index)."""
    x = np.asarray(x, np.float64)
    q = np.asarray(q, np.float64)
    if metric == "cosine":
        x = x / np.linalg.norm(x, axis=1, keepdims=True)
        q = q / np.linalg.norm(q, axis=1, keepdims=True)
    if metric == "l2":
        s = ((q[:, None, :] - x[None, :, :]) ** 2).sum(-1)
        key = s
    else:
        s = q @ x.T
        key = -s
    if exclude_self:
        key = key.copy()
        np.fill_diagonal(key, np.inf)
    order = np.argsort(key, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(s, order, 1), order


@pytest.mark.parametrize("metric", ["cosine", "ip", "l2"])
def test_knn_equals_brute_force_on_random_data(metric):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 16)).astype(np.float32)
    q = rng.normal(size=(40, 16)).astype(np.float32)
    s_ref, i_ref = brute_force(x, q, 7, metric, False)
    nb = knn(x, 7, queries=q, metric=metric)
    assert nb.exact
    np.testing.assert_array_equal(nb.ids, i_ref)
    np.testing.assert_allclose(nb.scores, s_ref, rtol=1e-4, atol=1e-4)
    # self-join: row i is never its own neighbour
    s_ref, i_ref = brute_force(x, x, 5, metric, True)
    nb = knn(x, 5, metric=metric)
    np.testing.assert_array_equal(nb.ids, i_ref)
    assert not (nb.ids == np.arange(300)[:, None]).any()


@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_ties_are_broken_by_lower_row_like_a_stable_brute_force(metric):
    # integer vectors: every score is exact in float32, and many rows are exact copies (ties across place k)
    rng = np.random.default_rng(1)
    base = rng.integers(-3, 4, size=(6, 8)).astype(np.float32)
    x = base[rng.integers(0, 6, size=120)]  # 120 rows, only 6 distinct: ~20 copies of each
    for k in (1, 3, 25, 60):
        s_ref, i_ref = brute_force(x, x, k, metric, True)
        nb = knn(x, k, metric=metric)
        np.testing.assert_array_equal(nb.ids, i_ref)
        np.testing.assert_array_equal(nb.scores, s_ref.astype(np.float32))
        s_ref, i_ref = brute_force(x, base, k, metric, False)
        nb = knn(x, k, queries=base, metric=metric)
        np.testing.assert_array_equal(nb.ids, i_ref)


def test_cosine_self_join_with_exact_duplicates_excludes_only_self():
    x = np.array([[1, 0], [1, 0], [1, 0], [0, 1], [0.9, 0.1]], dtype=np.float32)
    nb = knn(x, 2)
    # row 0's nearest are its copies 1 and 2 (not itself); row 1's are 0 and 2
    assert nb.ids[0].tolist() == [1, 2]
    assert nb.ids[1].tolist() == [0, 2]
    assert nb.ids[2].tolist() == [0, 1]
    np.testing.assert_allclose(nb.scores[:3], 1.0, atol=1e-6)


def test_approximate_index_above_threshold_has_high_recall():
    rng = np.random.default_rng(2)
    centers = rng.normal(size=(20, 24))
    x = (centers[rng.integers(0, 20, 2000)] + 0.3 * rng.normal(size=(2000, 24))).astype(np.float32)
    exact = knn(x, 10)
    approx = knn(x, 10, threshold=1000)  # 2000 rows > threshold -> HNSW
    assert exact.exact and not approx.exact and exact.recall is None
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(exact.ids, approx.ids)])
    assert recall > 0.9
    # the approximate search measures its own recall on sampled queries, close to the true one
    assert abs(approx.recall - recall) < 0.05
    forced = knn(x, 10, threshold=1000, exact=True)
    assert forced.exact
    np.testing.assert_array_equal(forced.ids, exact.ids)


def test_build_and_search_index_reject_bad_input():
    x = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    index = build_index(x)
    with pytest.raises(ConfigError, match="index holds 5"):
        search_index(index, x, 6)
    with pytest.raises(ConfigError, match="itself excluded"):
        search_index(index, x, 5, self_ids=np.arange(5))
    with pytest.raises(MetricError, match="dimension 4"):
        search_index(index, np.ones((1, 4)), 2)
    with pytest.raises(MetricError, match="NaN"):
        knn(np.array([[np.nan, 1.0], [1.0, 1.0]]), 1)
    with pytest.raises(ConfigError, match="unknown nearest-neighbour metric"):
        knn(x, 1, metric="manhattan")
    assert issubclass(ConfigError, EmbedselectError)


def test_knn_predict_matches_scikit_learn():
    from sklearn.neighbors import KNeighborsClassifier

    rng = np.random.default_rng(3)
    centers = rng.normal(size=(4, 10)) * 2
    y = rng.integers(0, 4, 400)
    x = (centers[y] + rng.normal(size=(400, 10))).astype(np.float32)
    train, test = slice(0, 300), slice(300, 400)
    ours = knn_predict(x[train], y[train], x[test], k=5)
    ref = KNeighborsClassifier(n_neighbors=5).fit(x[train], y[train]).predict(x[test])
    assert (ours == ref).mean() >= 0.99  # sklearn breaks exact distance ties arbitrarily
    # string labels, vote tie -> the class that sorts first; k capped at the training size
    xt = np.array([[0.0], [1.0], [10.0], [11.0]], np.float32)
    pred = knn_predict(xt, np.array(["b", "b", "a", "a"]), np.array([[5.5]], np.float32), k=50)
    assert pred.tolist() == ["a"]
    with pytest.raises(ConfigError, match="labels for 4"):
        knn_predict(xt, ["a"], xt)


def test_mutual_knn_agreement():
    rng = np.random.default_rng(4)
    a = rng.normal(size=(200, 16)).astype(np.float32)
    rot = np.linalg.qr(rng.normal(size=(16, 16)))[0]
    emb = {
        "a": a,
        "a rotated": (a @ rot).astype(np.float32),  # same geometry: identical neighbours
        "noise": rng.normal(size=(200, 8)).astype(np.float32),
    }
    agr = mutual_knn_agreement(emb, k=5)
    m = agr.to_frame()
    assert agr.names == ["a", "a rotated", "noise"] and agr.exact and agr.n == 200
    assert m.loc["a", "a"] == 1.0
    assert m.loc["a", "a rotated"] > 0.97
    assert m.loc["a", "noise"] < 0.15  # chance level is 5/199
    np.testing.assert_array_equal(agr.matrix, agr.matrix.T)
    with pytest.raises(MetricError, match="different numbers"):
        mutual_knn_agreement({"a": a, "b": a[:10]})


def test_near_duplicates_found_grouped_and_dropped():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(50, 32)).astype(np.float32)
    x[10] = x[3]  # exact copy
    x[20] = x[3] + 0.01 * rng.normal(size=32)  # near copy of the same item: one group {3, 10, 20}
    x[40] = x[7] * 3.0  # same direction: cosine 1
    nd = near_duplicates(x, threshold=0.98)
    assert [g.tolist() for g in nd.groups] == [[3, 10, 20], [7, 40]]
    assert nd.n_drop == 3
    assert np.flatnonzero(~nd.keep).tolist() == [10, 20, 40]
    assert {tuple(p) for p in nd.pairs.tolist()} >= {(3, 10), (3, 20), (7, 40)}
    assert (nd.similarities >= 0.98 - 1e-6).all()
    d = nd.to_dict()
    assert d["n_drop"] == 3 and d["n_groups"] == 2 and d["n_items"] == 50
    assert near_duplicates(rng.normal(size=(50, 32)), threshold=0.98).n_drop == 0
    with pytest.raises(ConfigError, match="threshold"):
        near_duplicates(x, threshold=1.5)


def test_faiss_classifier_is_a_drop_in_for_scikit_learn_in_a_pipeline():
    from sklearn.model_selection import cross_val_score
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from embedselect.metrics.neighbours import FaissKNeighborsClassifier

    rng = np.random.default_rng(6)
    y = rng.integers(0, 3, 300)
    x = rng.normal(size=(3, 12))[y] * 1.5 + rng.normal(size=(300, 12))
    ours = cross_val_score(make_pipeline(StandardScaler(), FaissKNeighborsClassifier(n_neighbors=5)), x, y, cv=5)
    ref = cross_val_score(make_pipeline(StandardScaler(), KNeighborsClassifier(n_neighbors=5)), x, y, cv=5)
    np.testing.assert_allclose(ours, ref, atol=1 / 60)  # at most one of 60 held-out items differs per fold
    assert ours.mean() > 0.6


def test_precomputed_graphs_give_the_same_agreement_and_duplicates():
    rng = np.random.default_rng(7)
    a = rng.normal(size=(120, 8)).astype(np.float32)
    a[5] = a[9]
    emb = {"a": a, "b": (a + 0.3 * rng.normal(size=a.shape)).astype(np.float32)}
    graphs = {k: knn(v, 12) for k, v in emb.items()}
    np.testing.assert_array_equal(mutual_knn_agreement(emb, k=10, graphs=graphs).matrix,
                                  mutual_knn_agreement(emb, k=10).matrix)
    with_graph = near_duplicates(a, threshold=0.99, graph=graphs["a"])
    fresh = near_duplicates(a, threshold=0.99)
    assert [g.tolist() for g in with_graph.groups] == [g.tolist() for g in fresh.groups] == [[5, 9]]


def test_a_low_recall_approximate_search_warns(caplog):
    rng = np.random.default_rng(8)
    x = rng.normal(size=(8000, 384)).astype(np.float32)  # no structure: hard for a graph index
    with caplog.at_level("WARNING", logger="embedselect.nn.knn"):
        nb = knn(x, 10, threshold=1000, ef_search=1)
    assert not nb.exact and nb.recall < 0.9
    assert "recall@10" in caplog.text and "exact=True" in caplog.text


def test_gpu_smoke_test_reports_a_child_that_aborts():
    """A FAISS build without kernels for the GPU aborts the process (SIGABRT) on its first GPU search: the
    check runs it in a child, so the parent survives and learns why."""
    from embedselect.nn.knn import gpu_smoke_test

    ok, reason = gpu_smoke_test("import os, sys\nsys.stderr.write('no kernel image is available\\n')\nos.abort()\n")
    assert not ok
    assert "SIGABRT" in reason and "no kernel image" in reason
    ok, reason = gpu_smoke_test("raise SystemExit(3)")
    assert (ok, reason) == (False, "exit status 3")
    assert gpu_smoke_test("pass") == (True, "")



def test_near_duplicates_rescored_pairs_decide():
    rng = np.random.default_rng(8)
    x = rng.normal(size=(40, 16)).astype(np.float32)
    x[11] = x[2] + 0.05 * rng.normal(size=16)  # cosine ~0.999 in x
    x[30] = x[4] + 0.05 * rng.normal(size=16)
    # the rescorer says only (2, 11) is a duplicate; (4, 30) is refused although x proposes it
    truth = {(2, 11): 0.97, (4, 30): 0.6}
    seen = []

    def rescore(a, b):
        seen.append(list(zip(a.tolist(), b.tolist())))
        return np.array([truth.get(p, 0.0) for p in zip(a.tolist(), b.tolist())])

    nd = near_duplicates(x, threshold=0.95, rescore=rescore)
    assert [g.tolist() for g in nd.groups] == [[2, 11]] and nd.similarities.tolist() == [np.float32(0.97)]
    assert set(seen[0]) == {(2, 11), (4, 30)}  # only the pairs x proposes (cosine >= 0.95 - margin) are rescored
    assert near_duplicates(x, threshold=0.95).n_drop == 2  # without the rescorer both pairs count


def test_given_graphs_are_used_not_searched_again(monkeypatch):
    """mutual_knn_agreement(graphs=...) reuses the k-NN graphs it is given (it used to overwrite the argument
    before reading it and searched every candidate again)."""
    from embedselect.metrics import neighbours

    rng = np.random.default_rng(9)
    emb = {k: rng.normal(size=(80, 6)).astype(np.float32) for k in "ab"}
    graphs = {k: knn(v, 5) for k, v in emb.items()}

    def no_search(*a, **kw):
        raise AssertionError("searched again although a graph was given")

    monkeypatch.setattr(neighbours, "knn", no_search)
    got = mutual_knn_agreement(emb, k=5, graphs=graphs)
    assert got.matrix.shape == (2, 2) and got.device == "cpu"

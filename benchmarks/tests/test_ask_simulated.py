"""Pure functions of the simulated-person benchmark of `ask` (benchmarks/ask_simulated.py), on synthetic inputs."""

import numpy as np

from benchmarks.ask_simulated import first_answered, pick_with_answers, random_triplets, simulated_answers


def test_the_simulated_person_answers_from_the_labels():
    labels = np.array([0, 0, 1, 1, 0])
    t = np.array([[0, 1, 2], [0, 2, 1], [0, 1, 4], [0, 2, 3], [2, 3, 0]])
    assert simulated_answers(t, labels).tolist() == [1, -1, 0, 0, 1]  # a, b, both share: skip, neither: skip


def test_first_answered_skips_the_skips():
    t = np.arange(15).reshape(5, 3)
    tt, ss = first_answered(t, np.array([0, 1, 0, -1, 1], dtype=np.int8), 2)
    assert tt.tolist() == [[3, 4, 5], [9, 10, 11]] and ss.tolist() == [1, -1]


def test_random_triplets_are_three_distinct_usable_items():
    usable = np.ones(20, dtype=bool)
    usable[:5] = False
    t = random_triplets(20, 50, usable, np.random.default_rng(0))
    assert t.shape == (50, 3) and (t >= 5).all()
    assert all(len(set(r)) == 3 for r in t.tolist())


def test_the_pick_is_the_separated_winner_else_the_label_free_one():
    rng = np.random.default_rng(0)
    good = rng.normal(size=(60, 4))
    t = np.array([[i, i + 1, i + 2] for i in range(0, 48, 3)])
    bad = good.copy()
    bad[t[:, 0]] *= -1  # the anchors turned around: bad orders every triplet the other way
    d = np.einsum("ij,ij->i", _u(good)[t[:, 0]], _u(good)[t[:, 1]]) - np.einsum("ij,ij->i", _u(good)[t[:, 0]], _u(good)[t[:, 2]])
    signs = np.where(d > 0, 1, -1).astype(np.int8)  # answers exactly as "good" orders them
    vec = {"good": good, "bad": bad}
    assert pick_with_answers(vec, ["bad", "good"], "bad", t, signs) == ("good", True)
    assert pick_with_answers(vec, ["bad", "good"], "bad", t[:4], signs[:4]) == ("bad", False)  # too few answers


def _u(x):
    """Rows about their mean, unit length: the cosines with which the answers are scored (answers.orders)."""
    x = x - x.mean(0)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_a_stricter_level_needs_more_answers_to_override_the_label_free_pick():
    rng = np.random.default_rng(1)
    good = rng.normal(size=(60, 4))
    good -= good.mean(0)
    t = np.array([[i, i + 1, i + 2] for i in range(0, 36, 3)])  # 12 questions
    bad = good.copy()
    bad[t[:, 0]] *= -1
    ug = _u(good)
    d = np.einsum("ij,ij->i", ug[t[:, 0]], ug[t[:, 1]]) - np.einsum("ij,ij->i", ug[t[:, 0]], ug[t[:, 2]])
    signs = np.where(d > 0, 1, -1).astype(np.int8)
    vec = {"good": good, "bad": bad}
    # 12:0 for "good": above one half at 95 % and 99.9 % (1 / (1 + z²/12) > 0.5), not at z = 4
    assert pick_with_answers(vec, ["bad", "good"], "bad", t, signs, z=1.96) == ("good", True)
    assert pick_with_answers(vec, ["bad", "good"], "bad", t, signs) == ("good", True)
    assert pick_with_answers(vec, ["bad", "good"], "bad", t, signs, z=4.0) == ("bad", False)


def test_the_wide_variant_adds_the_first_families_in_label_free_order():
    from benchmarks.ask_simulated import wide_contenders

    fam = {"m": "m", "m-int8": "m", "n": "n", "g": "g", "t": "t"}
    order = ["g", "m", "m-int8", "t", "n"]
    assert wide_contenders(["g", "t"], order, fam) == ["g", "m", "t"]
    assert wide_contenders(["g", "n", "t"], order, fam) == ["g", "m", "t", "n"]


def test_a_view_asks_the_witness_as_the_product_does(monkeypatch):
    """view_data computes the signals the product shows with weight 0 and decide() asks about first place
    (combine.WITNESSES: nn_agreement for texts), so its leaders are the ones `rank` gives `ask`."""
    import benchmarks.ask_simulated as sim
    from benchmarks.default_grid import default_witnesses

    rng = np.random.default_rng(0)
    names = ["a", "b", "c", "d"]  # four model families, no reference point
    labels = np.repeat(np.arange(4), 10)
    vectors = {c: rng.normal(size=(40, 8)).astype(np.float32) for c in names}
    asked: list[list[str]] = []
    first_b = {"a": 0.8, "b": 0.9, "c": 0.2, "d": 0.1}
    by_signal = {"task_prior": {"a": 0.9, "b": 0.6, "c": 0.3, "d": 0.1},
                 "sufficiency": {"a": 0.9, "b": 0.5, "c": 0.4, "d": 0.2}, "nn_agreement": first_b}

    def fake_signals(name, sub, *, metrics, **_):
        asked.append(list(metrics))
        return {m: {"scores": dict(by_signal[m]), "seconds": 0.0} for m in metrics}

    monkeypatch.setattr(sim, "load_pool", lambda name: ({"modality": "text"}, labels, [f"item {i}" for i in range(40)],
                                                        [{"name": c} for c in names], vectors))
    monkeypatch.setattr(sim, "ground_truth", lambda *a, **k: {c: {"acc": 0.5} for c in names})
    monkeypatch.setattr(sim, "signals", fake_signals)
    monkeypatch.setattr(sim, "copy_pairs", lambda *a, **k: [])
    view = sim.view_data("fake", "all", max_items=300, seed=0, folds=2, jobs=1)
    assert default_witnesses("text") == ("nn_agreement",) and default_witnesses("image") == ()
    assert "nn_agreement" in asked[0]
    assert view["decided"] is False and view["leaders"] == ["a", "b"]  # nn_agreement puts b first: b is a leader
    by_signal["nn_agreement"] = {"a": 0.9, "b": 0.8, "c": 0.2, "d": 0.1}
    view = sim.view_data("fake", "all", max_items=300, seed=0, folds=2, jobs=1)
    assert view["decided"] is True and view["leaders"] == ["a"]  # the witness agrees: decided


def test_the_reference_variant_adds_the_best_reference_point_once():
    from benchmarks.ask_simulated import reference_contenders

    fam = {"m": "m", "n": "n", "t": "t", "r": "r"}
    order = ["m", "r", "n", "t"]
    assert reference_contenders(["m", "n"], order, fam, ["t", "r"]) == ["m", "r", "n"]  # r: the first in order
    assert reference_contenders(["m", "t"], order, fam, ["t", "r"]) == ["m", "t"]  # already one among them
    assert reference_contenders(["m", "n"], order, fam, []) == ["m", "n"]

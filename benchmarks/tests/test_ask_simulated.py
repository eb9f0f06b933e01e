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

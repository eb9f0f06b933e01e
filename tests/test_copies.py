"""Derived copies (quantised / truncated) are found label-free and never ranked above their parent."""

from __future__ import annotations


import numpy as np
import pytest

from embedselect.aggregate import copies_below_parents
from embedselect.errors import MetricError
from embedselect.metrics.copies import derived_copies
from embedselect.ranking import tie_groups


def _teacher(n: int = 600, d: int = 64, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = np.tanh(rng.normal(size=(n, 16)) @ rng.normal(size=(16, d)) / 4) + 0.1 * rng.normal(size=(n, d))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _int8(x: np.ndarray) -> np.ndarray:
    lo, hi = x.min(axis=0), x.max(axis=0)
    return np.round((x - lo) / (hi - lo) * 255 - 128).astype(np.float32)


def test_quantised_and_truncated_copies_are_found_with_their_direction():
    t = _teacher()
    trunc = t[:, :16] / np.linalg.norm(t[:, :16], axis=1, keepdims=True)
    pool = {"teacher": t, "int8": _int8(t), "binary": np.where(t > 0, 1.0, -1.0).astype(np.float32),
            "first16": trunc, "other": _teacher(seed=1)}
    found = {(d.copy, d.parent): d for d in derived_copies(pool)}
    for copy in ("int8", "binary", "first16"):
        assert (copy, "teacher") in found, sorted(found)
        assert ("teacher", copy) not in found  # the direction: the copy has fewer values or fewer dimensions
    assert found[("first16", "teacher")].relation == "truncated"
    assert found[("binary", "teacher")].relation == "quantized"
    assert found[("int8", "teacher")].median_abs_spearman > 0.99
    assert ("binary", "int8") in found  # two bits per coordinate are a function of 256 levels too
    assert not [p for p in found if "other" in p]  # an independent model shares no coordinates


def test_rotations_pca_and_a_plain_duplicate_are_not_copies():
    t = _teacher()
    rot = np.linalg.qr(np.random.default_rng(2).normal(size=(64, 64)))[0]
    xc = t - t.mean(axis=0)
    pca = xc @ np.linalg.svd(xc, full_matrices=False)[2][:32].T  # a static-model-like PCA basis, not aligned
    pool = {"teacher": t, "rotated": (t @ rot).astype(np.float32), "pca32": pca.astype(np.float32),
            "same": t.copy()}
    assert derived_copies(pool) == []  # equal width and resolution: neither is the copy of the other


def test_bad_input_is_a_typed_error():
    with pytest.raises(MetricError, match="NaN"):
        derived_copies({"a": np.full((10, 4), np.nan), "b": np.ones((10, 4))})
    assert derived_copies({"only": _teacher()}) == []


def test_copies_rank_below_their_parents_who_inherit_their_score():
    scores = {"full": 0.5, "first128": 0.9, "first64": 0.95, "binary": 0.5, "other": 0.7}
    pairs = [("first128", "full"), ("first64", "first128"), ("first64", "full"), ("binary", "full")]
    out, moved = copies_below_parents(scores, pairs)
    assert out["full"] > out["first128"] > out["first64"] and out["full"] > out["binary"]
    assert out["full"] == 0.95  # the parent is at least as good as its best copy (data processing inequality)
    assert out["other"] == 0.7  # a candidate outside the family keeps its score
    assert {("first128", "full"), ("first64", "first128")} <= set(moved) and ("binary", "full") not in moved
    assert max(out, key=out.get) == "full"
    assert all(len(g) == 1 for g in tie_groups(out))  # a copy right below its parent is not tied with it
    # a copy already below its parent, or a candidate without a score, is left alone
    out2, moved2 = copies_below_parents({"full": 0.9, "first64": 0.1}, [("first64", "full"), ("x", "full")])
    assert out2 == {"full": 0.9, "first64": 0.1} and moved2 == []

"""check_embeddings: the one validator of (n, d) matrices at every boundary; is_missing: the one rule for a missing
value."""

from __future__ import annotations

import decimal

import numpy as np
import pandas as pd
import pytest

from embedselect._util.arrays import check_embeddings, is_missing
from embedselect.errors import DataError, MetricError, ModelLoadError, CacheError


def test_a_good_matrix_passes_without_a_copy():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    assert check_embeddings(x) is x
    assert check_embeddings(x, n=4, d=3, min_rows=4, dtype=None) is x
    y = check_embeddings(x.tolist(), dtype=np.float64)
    assert y.dtype == np.float64 and y.shape == (4, 3)


def test_a_memory_map_is_not_copied(tmp_path):
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.save(tmp_path / "x.npy", x)
    m = np.load(tmp_path / "x.npy", mmap_mode="r")
    assert np.shares_memory(check_embeddings(m, dtype=None), m)


@pytest.mark.fault
@pytest.mark.parametrize(
    "x, kw, match",
    [
        (np.zeros(5), {}, r"x: expected a 2-D array of shape \(n, d\), got shape \(5,\)"),
        (np.zeros((2, 3, 4)), {}, "2-D"),
        ([["a", "b"]], {}, "x: not numeric"),
        (np.array([["a", "b"]], dtype=object), {"dtype": None}, "expected real numbers, got dtype object"),
        (np.ones((2, 2), dtype=complex), {"dtype": None}, "expected real numbers"),
        (np.ones((2, 2), dtype=bool), {"dtype": None}, "expected real numbers, got dtype bool"),
        (np.zeros((4, 3)), {"n": 5}, r"x has 4 rows \(shape \(4, 3\)\), expected 5"),
        (np.zeros((4, 3)), {"d": 2}, r"x has 3 columns \(shape \(4, 3\)\), expected 2"),
        (np.zeros((1, 3)), {"min_rows": 2}, r"need at least 2 row\(s\) and 1 column\(s\), got shape \(1, 3\)"),
        (np.zeros((3, 0)), {}, r"got shape \(3, 0\)"),
    ],
)
def test_each_problem_is_named_with_the_shape_or_dtype(x, kw, match):
    with pytest.raises(DataError, match=match):
        check_embeddings(x, what="x", **kw)


@pytest.mark.fault
def test_non_finite_rows_are_counted_and_the_hint_says_what_to_do():
    x = np.zeros((10, 3), dtype=np.float32)
    x[2, 1], x[7, 0] = np.nan, np.inf
    with pytest.raises(DataError, match=r"m: 2 of 10 row\(s\) hold non-finite values \(NaN or inf\); re-embed"):
        check_embeddings(x, what="m", hint="; re-embed")
    assert check_embeddings(x, finite=False) is x


@pytest.mark.fault
@pytest.mark.parametrize("finite", [True, False])
def test_finite_values_too_large_for_float32_are_named_so_without_a_numpy_warning(finite, recwarn):
    """Finite float64 values beyond float32's range became inf in the cast, with numpy's "overflow encountered in
    cast" warning, and were refused as "non-finite values (NaN or inf)"."""
    x = np.ones((10, 3))
    x[2, 1], x[7, 0], x[8, 2] = 1e300, -4e38, np.nan
    with pytest.raises(DataError, match=r"m: 2 of 10 row\(s\) hold values too large for float32 \(the largest seen "
                                        r"1e\+300; float32 holds up to 3.4e\+38\); rescale") as ei:
        check_embeddings(x, what="m", hint="; rescale", finite=finite)
    assert "NaN" not in str(ei.value) and not [w for w in recwarn if "overflow" in str(w.message)]
    with pytest.raises(DataError, match=r"1 of 1 row\(s\) hold values too large for float32 \(the largest seen "
                                        r"3.5e\+38"):
        check_embeddings([[3.5e38, 0.0]], what="m")
    edge = check_embeddings([[3.4e38, -3.4e38]], what="m")  # within range: kept
    assert edge.dtype == np.float32 and np.isfinite(edge).all()
    assert check_embeddings(x[:1], dtype=None) is not None  # no cast: nothing to lose


@pytest.mark.fault
@pytest.mark.parametrize("error", [MetricError, CacheError, ModelLoadError])
def test_the_caller_chooses_the_error_class_of_its_layer(error):
    with pytest.raises(error):
        check_embeddings(np.zeros(3), error=error)


@pytest.mark.fault
def test_the_boundaries_use_it():
    """The store, the metrics' kernels and the backends' output refuse a bad matrix with check_embeddings' words."""
    from embedselect.models.backends.base import as_embedding_matrix
    from embedselect.metrics.kernels import as_matrix

    with pytest.raises(MetricError, match=r"emb: expected a 2-D array"):
        as_matrix(np.zeros(4), "emb")
    with pytest.raises(ModelLoadError, match=r"the model's output has 3 rows \(shape \(3, 2\)\), expected 4"):
        as_embedding_matrix(np.zeros((3, 2)), 4)


@pytest.mark.parametrize(
    "v, missing",
    [(None, True), (float("nan"), True), (np.float32("nan"), True), (decimal.Decimal("NaN"), True),
     (np.datetime64("NaT"), True), (np.timedelta64("NaT"), True), (pd.NA, True), (pd.NaT, True),
     ("", False), ("nan", False), (0, False), (0.0, False), (np.datetime64("2020-01-01"), False),
     (decimal.Decimal("1.5"), False), ([None], False), (False, False)],
)
def test_one_rule_for_a_missing_value(v, missing):
    assert is_missing(v) is missing


def test_labels_and_data_readers_share_the_rule():
    import embedselect.data.readers as readers
    import embedselect.validation.heldout as heldout

    assert readers.is_missing is is_missing and heldout.is_missing is is_missing
    # a NaT label is missing for the probes as for the loaders (the loaders' old rule kept it)
    rows, _y, _folds, _dropped = heldout.clean_labels([0, 1] * 10 + [np.datetime64("NaT")], 21, cv=2)
    assert len(rows) == 20

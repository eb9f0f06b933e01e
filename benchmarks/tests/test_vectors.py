"""The derivations of benchmarks/vectors.py (truncation, quantisation, pooling), on tiny synthetic arrays."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.vectors import cls_pool, l2_normalize, mean_pool, quantize_binary, quantize_int8, truncate
from embedselect.errors import ConfigError


def _rng(seed=0):
    return np.random.default_rng(seed)


def test_truncate_keeps_first_k_and_renormalises():
    x = _rng().normal(size=(5, 8)).astype(np.float32)
    t = truncate(x, 3)
    assert t.shape == (5, 3) and t.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(t, axis=1), 1.0, rtol=1e-6)
    # same direction as the first 3 coordinates
    np.testing.assert_allclose(t * np.linalg.norm(x[:, :3], axis=1, keepdims=True), x[:, :3], rtol=1e-5)
    with pytest.raises(ConfigError):
        truncate(x, 9)


def test_l2_normalize_leaves_zero_rows_zero():
    x = np.array([[3.0, 4.0], [0.0, 0.0]], dtype=np.float32)
    np.testing.assert_allclose(l2_normalize(x), [[0.6, 0.8], [0.0, 0.0]])


def test_quantize_binary_is_the_sign_bit_of_sentence_transformers():
    try:
        from sentence_transformers.util.quantization import quantize_embeddings
    except ImportError:  # sentence-transformers < 5.2
        from sentence_transformers.quantization import quantize_embeddings

    x = _rng(1).normal(size=(6, 16)).astype(np.float32)
    b = quantize_binary(x)
    assert set(np.unique(b)) == {-1.0, 1.0} and b.dtype == np.float32
    bits = np.unpackbits(quantize_embeddings(x, precision="ubinary"), axis=1)
    np.testing.assert_array_equal(b > 0, bits.astype(bool))


def test_quantize_int8_has_256_levels_and_keeps_order():
    x = _rng(2).normal(size=(300, 4)).astype(np.float32)
    q = quantize_int8(x)
    assert q.shape == x.shape and q.dtype == np.float32
    assert q.min() >= -128 and q.max() <= 127 and np.all(q == np.round(q))
    for j in range(4):  # monotone per dimension: quantisation never swaps two values
        o = np.argsort(x[:, j])
        assert np.all(np.diff(q[o, j]) >= 0)


def test_mean_and_cls_pool_respect_the_mask():
    h = np.arange(2 * 3 * 2, dtype=np.float32).reshape(2, 3, 2)
    mask = np.array([[1, 1, 0], [1, 0, 0]])
    np.testing.assert_allclose(mean_pool(h, mask), [[1.0, 2.0], [6.0, 7.0]])
    np.testing.assert_allclose(cls_pool(h), [[0.0, 1.0], [6.0, 7.0]])
    np.testing.assert_allclose(mean_pool(h, np.zeros((2, 3))), 0.0)

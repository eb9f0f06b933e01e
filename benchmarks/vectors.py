"""Vector derivations of the validity benchmark's candidates (pure numpy; shapes (n, d) float32 unless said):
normalisation, truncation, quantisation and the poolings of a transformer's hidden states."""

from __future__ import annotations

import numpy as np

from embedselect.errors import ConfigError


def l2_normalize(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (norms in float64); all-zero rows stay zero. float32 (n, d)."""
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x.astype(np.float64), axis=1, keepdims=True)
    return (x / np.where(norms > 0, norms, 1.0)).astype(np.float32)


def truncate(x: np.ndarray, k: int) -> np.ndarray:
    """First ``k`` dimensions, re-normalised (Matryoshka-style truncation). float32 (n, k)."""
    if not 1 <= k <= x.shape[1]:
        raise ConfigError(f"cannot keep the first {k} of {x.shape[1]} dimensions")
    return l2_normalize(x[:, :k])


def quantize_int8(x: np.ndarray) -> np.ndarray:
    """sentence-transformers' int8 scalar quantisation (per-dimension min/max of ``x`` itself as the
    calibration, 256 buckets), returned as float32 (n, d) with values in [-128, 127]."""
    from embedselect._util.compat import ensure_torchvision_importable

    ensure_torchvision_importable()  # sentence-transformers imports torchvision; no model pass may have run first
    try:
        from sentence_transformers.util.quantization import quantize_embeddings
    except ImportError:  # sentence-transformers < 5.2
        from sentence_transformers.quantization import quantize_embeddings

    return np.asarray(quantize_embeddings(np.asarray(x, dtype=np.float32), precision="int8"), dtype=np.float32)


def quantize_binary(x: np.ndarray) -> np.ndarray:
    """Binary quantisation (the bit is ``x > 0``, as sentence-transformers' "binary"/"ubinary"), unpacked
    to ±1. float32 (n, d)."""
    return np.where(np.asarray(x) > 0, 1.0, -1.0).astype(np.float32)


def mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean of the token vectors where ``mask`` is 1. hidden (B, T, D), mask (B, T) -> float32 (B, D);
    sums in float64; a row with no token gives zeros."""
    m = np.asarray(mask, dtype=np.float64)[:, :, None]
    s = (np.asarray(hidden, dtype=np.float64) * m).sum(axis=1)
    return (s / np.maximum(m.sum(axis=1), 1.0)).astype(np.float32)


def cls_pool(hidden: np.ndarray) -> np.ndarray:
    """The first token's vector. hidden (B, T, D) -> float32 (B, D)."""
    return np.asarray(hidden[:, 0, :], dtype=np.float32)

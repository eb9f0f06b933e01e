"""Smaller vectors of a model, as its users deploy them: ``?truncate_dim=N`` (Matryoshka: the first N dimensions,
rows re-normalised) and ``?precision=int8|binary`` (sentence-transformers' ``quantize_embeddings``). A candidate with
these options is a variant of its model computed from the model's own vectors (the same cache entry: the model is
run once for the parent and all its variants) and a declared copy of it
(:func:`embedselect.metrics.copies.declared_reductions`), so it is never ranked above its parent by accident.

What the metrics get, float32 (n, d'):

- ``truncate_dim=N``: the first N coordinates of each vector, divided by their L2 norm (as sentence-transformers'
  ``truncate_dim`` followed by ``normalize_embeddings=True``; a zero row stays zero). N above the model's width is
  an error.
- ``precision="int8"``: the codes of sentence-transformers' ``quantize_embeddings(x, precision="int8")`` (the same
  formula, here without importing the library: per-dimension ranges = minimum and maximum, 255 steps between them,
  ``floor`` then ``-128``), the ranges taken from the reference items' vectors and used as they are for the same
  candidate's query vectors; the int8 codes (-128..127) as float32.
- ``precision="binary"``: the bits of ``quantize_embeddings(x, precision="ubinary")`` (1 where the value is above 0),
  unpacked as ±1 float32: Euclidean and cosine neighbours of these are the Hamming neighbours of the packed bits
  (``|a-b|² = 4·hamming``). tests/test_reduce.py checks both against the library.

Truncation comes first, then quantisation, as in sentence-transformers (``encode(truncate_dim=...)`` then
``quantize_embeddings``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from embedselect.errors import CandidateSpecError
PRECISIONS = ("int8", "binary")


@dataclass(frozen=True)
class Reduction:
    """A candidate's ``truncate_dim`` (None: every dimension) and ``precision`` (None: float as computed)."""

    truncate_dim: int | None = None
    precision: str | None = None

    def apply(self, x: np.ndarray, *, name: str, ranges: np.ndarray | None = None) -> tuple[np.ndarray, Any]:
        """``x`` (n, d) reduced: float32 (n, truncate_dim or d), and the int8 ranges used (float32 (2, d'): the
        minimum and maximum per dimension; None for other precisions). ``ranges`` given: used as they are (the
        query vectors of a candidate whose items set them); else taken from ``x``.

        Raises:
            CandidateSpecError: ``truncate_dim`` is wider than ``x``.
        """
        out = np.asarray(x, dtype=np.float32)
        if self.truncate_dim is not None:
            if self.truncate_dim > out.shape[1]:
                raise CandidateSpecError(f"candidate {name!r}: ?truncate_dim={self.truncate_dim} but the model's "
                                         f"vectors are {out.shape[1]} wide; give a width of at most {out.shape[1]}")
            out = np.array(out[:, :self.truncate_dim], dtype=np.float32)
            norms = np.linalg.norm(out.astype(np.float64), axis=1, keepdims=True)
            out = (out / np.where(norms > 0, norms, 1.0)).astype(np.float32)
        if self.precision is None or out.shape[0] == 0:
            return np.ascontiguousarray(out), None
        if self.precision == "int8":
            if ranges is None:
                ranges = np.vstack([out.min(axis=0), out.max(axis=0)]).astype(np.float32)
            starts = ranges[0]
            steps = (ranges[1] - starts) / 255
            steps = np.where(steps == 0, 1, steps)
            codes = np.clip(np.floor((out - starts) / steps), 0, 255) - 128
            return np.ascontiguousarray(codes.astype(np.int8).astype(np.float32)), ranges
        return np.ascontiguousarray(np.where(out > 0, 1.0, -1.0).astype(np.float32)), None


def reduction_of(options: Mapping[str, Any], *, name: str) -> Reduction | None:
    """The :class:`Reduction` a candidate's options ask for, None when they ask for none.

    Raises:
        CandidateSpecError: ``truncate_dim`` is not a whole number >= 1, or ``precision`` is not ``int8`` or
            ``binary`` (``float32`` means none).
    """
    dim, precision = options.get("truncate_dim"), options.get("precision")
    if dim is not None and (isinstance(dim, bool) or not isinstance(dim, int) or dim < 1):
        raise CandidateSpecError(f"?truncate_dim={dim!r} of candidate {name!r}: give a whole number of dimensions "
                                 ">= 1 (the first N are kept)")
    if precision is not None and str(precision).lower() == "float32":
        precision = None
    if precision is not None and str(precision).lower() not in PRECISIONS:
        raise CandidateSpecError(f"?precision={precision!r} of candidate {name!r}: use one of "
                                 f"{', '.join(PRECISIONS)} (or float32 for none)")
    if dim is None and precision is None:
        return None
    return Reduction(int(dim) if dim is not None else None, str(precision).lower() if precision is not None else None)


def bytes_per_vector(width: int, options: Mapping[str, Any]) -> int:
    """Bytes one vector takes as deployed: 4 per dimension (float32), 1 with ``precision=int8``, one bit per
    dimension (rounded up to bytes) with ``precision=binary``; ``width`` is the candidate's (truncated) width."""
    precision = str(options.get("precision") or "float32").lower()
    return width if precision == "int8" else (width + 7) // 8 if precision == "binary" else 4 * width

"""Validation of what crosses a boundary: every (n, d) embedding matrix (:func:`check_embeddings`, in the spirit of
scikit-learn's ``check_array``) and missing values in data (:func:`is_missing`).

A low module (it imports only the errors): backends check their output with it, the store what it caches and reads
back, the metrics and probes what they are given; each caller names the error class its layer raises.
"""

from __future__ import annotations

import decimal
import math
from typing import Any, Iterator

import numpy as np

from embedselect.errors import DataError, EmbedselectError

BLOCK_ELEMENTS = 1 << 23
"""Elements per row block (32 MiB of float32) of the checks that read a whole (n, d) matrix: they hold one block's
temporaries at a time, not a matrix-sized copy (a candidate's matrix may be a memory map of its cached file)."""


def row_blocks(a: np.ndarray, elements: int | None = None) -> Iterator[np.ndarray]:
    """Consecutive row slices (views, no copy) of the 2-D array ``a`` of about ``elements`` (default
    :data:`BLOCK_ELEMENTS`) elements each (at least one row; a single slice, ``a`` itself, when it is smaller)."""
    rows = max(1, (elements or BLOCK_ELEMENTS) // max(1, a.shape[1]))
    if a.shape[0] <= rows:
        yield a
        return
    for i in range(0, a.shape[0], rows):
        yield a[i:i + rows]


def nonfinite_rows(a: np.ndarray) -> int:
    """How many rows of the 2-D array ``a`` hold a NaN or infinite value (read in :func:`row_blocks`: no
    matrix-sized mask)."""
    return sum(int(np.count_nonzero(~np.isfinite(b).all(axis=1))) for b in row_blocks(a))


def check_embeddings(
    x: Any,
    *,
    what: str = "the embeddings",
    n: int | None = None,
    d: int | None = None,
    min_rows: int = 0,
    min_dims: int = 1,
    dtype: Any = np.float32,
    finite: bool = True,
    error: type[EmbedselectError] = DataError,
    hint: str = "; drop or re-embed those items",
) -> np.ndarray:
    """``x`` as a 2-D numpy array of real numbers, shape (n, d), or a clear ``error`` saying what is wrong.

    Args:
        x: an array-like (a read-only memory map is fine: with ``dtype`` None or its own dtype it is not copied).
        what: how the message names the matrix (e.g. "embeddings['bert']").
        n, d: the exact number of rows / columns required (None: any).
        min_rows, min_dims: the least number of rows / columns.
        dtype: the dtype of the result (converted with :func:`numpy.asarray`); None keeps the input's. Finite
            values the conversion cannot hold (float64's 1e300 in float32) are refused whatever ``finite`` says,
            naming the largest seen (the conversion would make them inf; numpy's overflow warning is not printed).
        finite: refuse rows holding NaN or inf (counted in row blocks, no matrix-sized mask).
        error: the :class:`~embedselect.errors.EmbedselectError` subclass raised (the caller's layer decides).
        hint: appended to the non-finite message: what to do about it.

    Returns:
        The array (no copy when none is needed).

    Raises:
        ``error``: not numeric, not real, not 2-D, the wrong number of rows or columns, values too large for
            ``dtype``, or non-finite values.
    """
    try:
        given = np.asarray(x)
        with np.errstate(over="ignore"):  # what the cast lost is counted below, and said in words
            a = given if dtype is None else given.astype(dtype, copy=False)
    except (TypeError, ValueError) as exc:
        raise error(f"{what}: not numeric ({exc}); pass a 2-D float array of shape (n, d)") from None
    if not np.issubdtype(a.dtype, np.number) or np.issubdtype(a.dtype, np.complexfloating):
        raise error(f"{what}: expected real numbers, got dtype {a.dtype}")
    if a.ndim != 2:
        raise error(f"{what}: expected a 2-D array of shape (n, d), got shape {a.shape}")
    if n is not None and a.shape[0] != n:
        raise error(f"{what} has {a.shape[0]} rows (shape {a.shape}), expected {n}: one row per item, in order")
    if d is not None and a.shape[1] != d:
        raise error(f"{what} has {a.shape[1]} columns (shape {a.shape}), expected {d}")
    if a.shape[0] < min_rows or a.shape[1] < min_dims:
        raise error(f"{what}: need at least {min_rows} row(s) and {min_dims} column(s), got shape {a.shape}")
    lost, largest = _overflowed_rows(given, a)
    if lost:
        raise error(f"{what}: {lost} of {a.shape[0]} row(s) hold values too large for {a.dtype} (the largest seen "
                    f"{largest:.3g}; {a.dtype} holds up to {float(np.finfo(a.dtype).max):.2g}){hint}")
    if finite:
        bad = nonfinite_rows(a)
        if bad:
            raise error(f"{what}: {bad} of {a.shape[0]} row(s) hold non-finite values (NaN or inf){hint}")
    return a


def _overflowed_rows(given: np.ndarray, a: np.ndarray) -> tuple[int, float]:
    """How many rows of ``given`` hold finite values that the cast ``a`` of it made infinite, and the largest magnitude
    among those values (0, 0.0 when the cast could lose none: no cast, or to a type of no smaller range)."""
    if a is given or not np.issubdtype(a.dtype, np.floating) or not np.issubdtype(given.dtype, np.number):
        return 0, 0.0
    kind = np.finfo if np.issubdtype(given.dtype, np.inexact) else np.iinfo
    if float(kind(given.dtype).max) <= float(np.finfo(a.dtype).max):
        return 0, 0.0
    rows, largest = 0, 0.0
    for src, out in zip(row_blocks(given), row_blocks(a)):
        gone = ~np.isfinite(out) & np.isfinite(src)
        if gone.any():
            rows += int(np.count_nonzero(gone.any(axis=1)))
            largest = max(largest, float(np.abs(src[gone]).max()))
    return rows, largest


def is_missing(v: Any) -> bool:
    """Whether one data value (a label, a cell) is missing: None, a float / numpy float NaN, a decimal NaN, a numpy
    datetime / timedelta NaT, ``pandas.NA`` or ``pandas.NaT``. Strings (even empty), containers and every other
    value are not."""
    if v is None:
        return True
    if isinstance(v, (float, np.floating)):
        return bool(math.isnan(v))
    if isinstance(v, decimal.Decimal):
        return v.is_nan()
    if isinstance(v, (np.datetime64, np.timedelta64)):
        return bool(np.isnat(v))
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is a dependency
        return False
    return v is pd.NA or v is pd.NaT

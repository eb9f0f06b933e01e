"""Seeds derived from what a metric reads (the vectors), never from a candidate's name, path or run key."""

from __future__ import annotations

import hashlib

import numpy as np

_ROW_BLOCK = 65536


def fingerprint(x: np.ndarray, rows: np.ndarray | None = None) -> str:
    """blake2b (hex, 32 chars) of ``x``'s float32 values in ``rows`` (int64 row ids; all rows when None), with the
    shape. Two candidates whose vectors are equal on those rows get the same fingerprint whatever they are called
    or wherever their model folder lies, so seeds derived from it make a score a function of the data alone.

    Args:
        x: array (n, d), any real dtype (hashed as float32, C order).
        rows: optional int64 (m,) row ids; hashed in row blocks of :data:`_ROW_BLOCK`, so memory stays bounded.
    """
    h = hashlib.blake2b(digest_size=16)
    idx = np.arange(x.shape[0]) if rows is None else np.asarray(rows, dtype=np.int64)
    h.update(f"{len(idx)}x{x.shape[1]}".encode())
    for s in range(0, len(idx), _ROW_BLOCK):
        h.update(np.ascontiguousarray(np.asarray(x[idx[s:s + _ROW_BLOCK]], dtype=np.float32)).tobytes())
    return h.hexdigest()

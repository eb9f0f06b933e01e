"""Duplicate items of reference data: exact digests, near-duplicate features (text n-grams, image thumbnails) and
the copy of a :class:`~embedselect.data.ReferenceData` without them."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from typing import Sequence, TypeVar

import numpy as np

from embedselect.data.items import ReferenceItems
from embedselect.data.load_report import DUPLICATE_RULES
from embedselect.data.readers import fingerprint, labels_array
from embedselect.errors import ConfigError, DecodeError

R = TypeVar("R", bound=ReferenceItems)


def without_duplicates(ref: R, rule: str, *, threshold: float, k: int, seed: int) -> R:
    """:meth:`ReferenceData.drop_duplicates` (rules, arguments and errors are documented there)."""
    if rule not in DUPLICATE_RULES:
        raise ConfigError(f"drop_duplicates must be one of {', '.join(map(repr, DUPLICATE_RULES))} or None, "
                          f"got {rule!r}")
    if rule == "near" and not (0.0 < float(threshold) <= 1.0):
        raise ConfigError(f"near-duplicate threshold must be in (0, 1], got {threshold}")
    digests = item_digests(ref)
    keep = ~np.asarray(duplicate_mask(digests), dtype=bool)
    if rule == "near" and keep.sum() >= 2:
        rows = np.flatnonzero(keep)
        keep[rows[~near_duplicate_mask(ref, rows, threshold=float(threshold), k=k, seed=seed)]] = False
    sel = np.flatnonzero(keep).tolist()
    labels = None if ref.labels is None else [ref.labels[i] for i in sel]
    items = [ref.items[i] for i in sel]
    report = dataclasses.replace(
        ref.report, n_used=len(sel), n_distinct=len(sel), deduped=True, duplicates_dropped=rule,
        n_dropped_duplicates=ref.report.n_dropped_duplicates + len(ref) - len(sel),
        near_duplicate_threshold=float(threshold) if rule == "near" else ref.report.near_duplicate_threshold,
    )
    return type(ref)(
        modality=ref.modality, items=tuple(items), labels=labels_array(labels),
        ids=tuple(ref.ids[i] for i in sel),
        fingerprint=fingerprint(ref.modality, [digests[i] for i in sel], ref._sample_settings),
        source=ref.source, report=report, _sample_settings=dict(ref._sample_settings), id_column=ref.id_column,
        _positions=None if ref._positions is None else tuple(ref._positions[i] for i in sel),
    )


def item_digests(ref: ReferenceItems) -> list[bytes]:
    """The bytes the fingerprint covers, per item: UTF-8 text, or the sha256 of the image file (read again)."""
    if ref.modality == "text":
        return [t.encode("utf-8") for t in ref.items]
    out = []
    for i, path in enumerate(ref.items):
        try:
            out.append(hashlib.sha256(Path(path).read_bytes()).digest())
        except OSError as exc:
            raise DecodeError(f"image {ref.ids[i]} ({path}) can no longer be read: {exc}. Load the reference "
                              "data again.") from exc
    return out


def near_duplicate_mask(ref: ReferenceItems, rows: np.ndarray, *, threshold: float, k: int,
                        seed: int) -> np.ndarray:
    """bool (len(rows),): False for the items among ``rows`` that are near duplicates of an earlier one."""
    from embedselect.nn.knn import near_duplicates

    if ref.modality == "text":
        sparse, dense = _text_duplicate_features([ref.items[i] for i in rows], seed=seed)

        def rescore(a: np.ndarray, b: np.ndarray) -> np.ndarray:
            out = np.empty(len(a), dtype=np.float64)
            for s in range(0, len(a), 65536):  # exact sparse cosine, in blocks of pairs
                sl = slice(s, s + 65536)
                out[sl] = np.asarray(sparse[a[sl]].multiply(sparse[b[sl]]).sum(axis=1)).ravel()
            return out

        return near_duplicates(dense, threshold=threshold, k=k, rescore=rescore).keep
    return near_duplicates(thumbnails(ref, rows), threshold=threshold, k=k).keep


def thumbnails(ref: ReferenceItems, rows: np.ndarray, size: int = 16, block: int = 256) -> np.ndarray:
    """float32 (len(rows), size²): grayscale thumbnails of the images at ``rows``, each minus its mean."""
    from PIL import Image

    out = np.empty((len(rows), size * size), dtype=np.float32)
    for s in range(0, len(rows), block):
        for j, im in enumerate(ref.load_images(rows[s:s + block])):
            px = np.asarray(im.convert("L").resize((size, size), Image.Resampling.BILINEAR), dtype=np.float32).ravel()
            out[s + j] = px - px.mean()
    return out


def duplicate_mask(digests: Sequence[bytes]) -> list[bool]:
    """True for each item whose digest (exact text bytes, or an image file's sha256) equals an earlier one's."""
    seen: set[bytes] = set()
    mask = []
    for d in digests:
        mask.append(d in seen)
        seen.add(d)
    return mask


def _text_duplicate_features(texts: list[str], *, seed: int, dim: int = 128):
    """Near-duplicate features of texts (see :meth:`ReferenceData.drop_duplicates`): the l2-normalised hashed
    word 1-2-gram counts (sparse CSR float32, (n, 2**20)) and their seeded sparse random projection (dense
    float32, (n, ``dim``)), whose cosines approximate the sparse ones."""
    from sklearn.feature_extraction.text import HashingVectorizer
    from sklearn.random_projection import SparseRandomProjection

    x = HashingVectorizer(ngram_range=(1, 2), n_features=2**20, alternate_sign=False, norm="l2",
                          dtype=np.float32).transform(texts).tocsr()
    proj = SparseRandomProjection(n_components=dim, dense_output=True, random_state=int(seed) % (2**32))
    return x, np.asarray(proj.fit_transform(x), dtype=np.float32)

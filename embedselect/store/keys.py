"""Keys of the cache: the content key of an embedding run, its row (:class:`RunRecord`), the cache root."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping

DB_NAME = "embedselect.duckdb"
RUN_KEY_VERSION = 1
"""Part of every run key: bump it only to invalidate every cached embedding (not with the database schema)."""
RUN_KEY_RE = re.compile(r"^[0-9a-f]{64}$")
"""What a run key looks like (sha256 hex); anything else never becomes a path."""
PARTIAL_SETTING = "partial_of"
"""The settings key that marks a stored run as a chunk of an embedding still under way (a partial run): its value is
the run key of the whole run it is part of (:mod:`embedselect.pipeline.chunked`)."""


def default_cache_dir() -> Path:
    """The cache root: ``$EMBEDSELECT_CACHE_DIR`` if set, else the platform's user cache directory."""
    from embedselect._util import env

    given = env.cache_dir()
    if given is not None:
        return given
    import platformdirs

    return Path(platformdirs.user_cache_dir("embedselect"))


def utc_now() -> datetime:
    """Now, in UTC (the time stamps of the cache's rows)."""
    return datetime.now(timezone.utc)


def run_key(
    *, model_id: str, revision: str, backend: str, options: Mapping[str, Any], fingerprint: str, precision: str
) -> str:
    """Content key of an embedding run: sha256 over everything that changes the vectors.

    ``options`` are the user-chosen backend options (pooling, max_length, dim, ...), ``precision`` is "fp32"
    or "fp16". Device is *not* part of the key for fp32 runs (CPU and GPU fp32 vectors agree to ~1e-6). A local
    folder (``model_id`` ``"local:<path>"``) is keyed by its content (``revision``), not its path: a copy shares it.
    """
    payload = json.dumps(
        {
            "v": RUN_KEY_VERSION,
            "model_id": "local" if model_id.startswith("local:") else model_id,
            "revision": revision,
            "backend": backend,
            "options": dict(sorted((str(k), options[k]) for k in options)),
            "fingerprint": fingerprint,
            "precision": precision,
        },
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def space_key(*, model_id: str, revision: str, backend: str, options: Mapping[str, Any], precision: str) -> str:
    """Key of a vector space: everything :func:`run_key` covers except the data (sha256 hex). Two runs of one
    space give an item the same vector, so a run takes the vectors of items any earlier run of its space embedded
    (the item index, ``item_vectors``)."""
    return run_key(model_id=model_id, revision=revision, backend=backend, options=options, precision=precision,
                   fingerprint="\0space")  # no data fingerprint is this string (they are sha256 hex)


def item_key(digest: bytes) -> str:
    """Key of one item's content in the item index: blake2b (32 bytes, hex) of the bytes the data fingerprint
    covers for it (a text's UTF-8 bytes, an image file's sha256; :func:`embedselect.data.duplicates.item_digests`)."""
    return hashlib.blake2b(digest, digest_size=32).hexdigest()


@dataclass(frozen=True)
class RunRecord:
    """One row of ``embedding_runs``."""

    run_key: str
    model_id: str
    revision: str
    backend: str
    settings: dict[str, Any]
    fingerprint: str
    n: int
    dim: int
    dtype: str
    device: str | None
    seconds: float | None
    vector_file: str
    sha256: str
    bytes: int

    @property
    def partial(self) -> bool:
        """Whether the run is a chunk of an embedding still under way (:data:`PARTIAL_SETTING`), not a user's run."""
        return PARTIAL_SETTING in self.settings

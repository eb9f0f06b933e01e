"""The files of a search index: their names, the manifest (:class:`IndexManifest`), checksums, the one candidate."""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from embedselect.errors import ConfigError, SearchIndexError

INDEX_FORMAT = 2
"""2: a fitted baseline's fit is saved in ``baseline.npz`` (format 1 refitted it on load)."""
MANIFEST = "manifest.json"
INDEX_FILE = "index.faiss"
ROWS_FILE = "rows.jsonl"
FIT_FILE = "baseline.npz"
FIT_CHECK_ROWS = 256
"""Rows on which a fitted baseline's saved fit is checked against the cached vectors when an index is built."""


@dataclass
class IndexManifest:
    """What a search index was built from (``manifest.json``). ``files``: file name -> sha256 hex."""

    name: str
    spec: str
    model_id: str
    revision: str
    backend: str
    options: dict[str, Any]
    seed: int
    run_key: str
    fingerprint: str
    modality: str
    source: str
    n: int
    dim: int
    metric: str
    index_type: str
    exact: bool
    versions: dict[str, str]
    created_at: str
    files: dict[str, str] = field(default_factory=dict)
    format: int = INDEX_FORMAT
    index_device: str = "cpu"
    """Where the FAISS index was built: ``cpu``, ``cuda:N`` or ``cuda:0,1,… (sharded)`` (written to disk on CPU)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "IndexManifest":
        if int(d.get("format", 0)) > INDEX_FORMAT:
            raise SearchIndexError(f"this index was written by a newer embedselect (format {d.get('format')}); "
                                   "upgrade embedselect or rebuild the index")
        names = {f.name for f in dataclasses.fields(cls)}
        missing = names - set(d) - {"files", "format", "index_device"}
        if missing:
            raise SearchIndexError(f"manifest.json lacks {sorted(missing)}; rebuild the index with `embedselect index`")
        return cls(**{k: v for k, v in d.items() if k in names})


def sha256_file(path: Path) -> str:
    """The sha256 hex digest of the file at ``path``, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def one_candidate(model: Any, modality: str):
    """The one :class:`~embedselect.models.candidates.Candidate` ``model`` names (a Candidate or a spec); ConfigError if
    it names several."""
    from embedselect.models.candidates import Candidate, parse_candidates

    if isinstance(model, Candidate):
        return model
    cands = parse_candidates(model, modality=modality)
    if len(cands) != 1:
        raise ConfigError(f"an index is built for one model; {model!r} names {len(cands)}")
    return cands[0]

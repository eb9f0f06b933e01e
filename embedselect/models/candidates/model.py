"""The candidate data classes: :class:`Candidate` (what the user named), :class:`ResolvedCandidate` (pinned to
exact bytes), :class:`FrozenOptions` (hashable backend options), and a candidate's default display name."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from embedselect.errors import CandidateSpecError, ConfigError
from embedselect._util.kinds import MODALITIES


def _freeze(value: Any) -> Any:
    if isinstance(value, Mapping):
        return FrozenOptions(value)
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, set):
        return frozenset(_freeze(v) for v in value)
    return value


class FrozenOptions(Mapping[str, Any]):
    """An immutable, hashable mapping of backend options (keys sorted; nested values frozen)."""

    __slots__ = ("_dict", "_items")

    def __init__(self, data: Mapping[str, Any] | Iterable[tuple[str, Any]] | None = None) -> None:
        d = dict(data or {})
        for k in d:
            if not isinstance(k, str):
                raise ConfigError(f"option names must be strings, got {k!r}")
        self._items = tuple(sorted((k, _freeze(v)) for k, v in d.items()))
        self._dict = dict(self._items)

    def __getitem__(self, key: str) -> Any:
        return self._dict[key]

    def __iter__(self):
        return iter(self._dict)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(self._items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return dict(self._dict) == dict(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"FrozenOptions({dict(self._items)!r})"

    def to_dict(self) -> dict[str, Any]:
        """A plain (JSON-friendly) dict copy."""
        return {k: (v.to_dict() if isinstance(v, FrozenOptions) else list(v) if isinstance(v, tuple) else v)
                for k, v in self._items}


@dataclass(frozen=True)
class Candidate:
    """One model to rank, as the user named it.

    Attributes:
        spec: the spec as written by the user (or catalog entry id).
        kind: ``"hub"``, ``"local"`` or ``"baseline"``.
        ref: hub repo id | absolute local directory | baseline name.
        backend: ``"sentence-transformers"``, ``"timm"``, ``"transformers"``, the baseline name, or
            ``None`` (infer from the model's files).
        revision: requested hub revision (branch, tag or sha), or ``None`` (default branch).
        options: backend options (``pooling``, ``max_length``, ``dim``...), frozen and hashable.
        name: display key, unique within a run.
        modality: modality of the data the candidate will embed (``"text"``/``"image"``), when known;
            it picks the tower of dual encoders (CLIP) and the input of ``random-projection``.
        notes: free text from a catalog entry (empty otherwise).
    """

    spec: str
    kind: Literal["hub", "local", "baseline"]
    ref: str
    backend: str | None = None
    revision: str | None = None
    options: Mapping[str, Any] = field(default_factory=FrozenOptions)
    name: str = ""
    modality: str | None = None
    notes: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.options, FrozenOptions):
            object.__setattr__(self, "options", FrozenOptions(self.options))
        if not self.name:
            object.__setattr__(self, "name", default_name(self.kind, self.ref, self.revision, self.options))
        if self.kind not in ("hub", "local", "baseline"):
            raise CandidateSpecError(f"candidate kind must be 'hub', 'local' or 'baseline', got {self.kind!r}")
        if self.modality is not None and self.modality not in MODALITIES:
            raise CandidateSpecError(f"candidate modality must be 'text' or 'image', got {self.modality!r}")


@dataclass(frozen=True)
class ResolvedCandidate:
    """A candidate pinned to exact bytes.

    Attributes:
        candidate: the :class:`Candidate`.
        model_id: hub repo id, ``"local:<abs dir>"``, or ``"baseline:<name>"``.
        revision: hub commit sha (40 hex) | sha256 hex digest of the local directory's files |
            ``"builtin-<embedselect version>-v<baseline version>"``.
        local_dir: folder to load from (``None`` for baselines).
        backend: concrete backend name.
        modality: ``"text"`` or ``"image"``.
    """

    candidate: Candidate
    model_id: str
    revision: str
    local_dir: Path | None
    backend: str
    modality: str


def _fmt_opts(options: Mapping[str, Any]) -> str:
    return "&".join(f"{k}={_fmt_value(v)}" for k, v in sorted(options.items()))


def _fmt_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


_MODEL_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,79}$")
_GENERIC_DIRS = frozenset({"model", "models", "snapshot", "snapshots", "checkpoint", "weights", "main"})


def _local_model_name(directory: str) -> str:
    """A readable name for a local model folder: the model card's title (the first ``# NAME`` heading of its
    README.md, as sentence-transformers writes it, when NAME looks like a model name), else the folder's name, or
    its parent's when the folder is called ``model`` or the like. The card is untrusted text: only a plain name
    (letters, digits, ``_.-``) is taken from it."""
    path = Path(directory)
    try:
        with open(path / "README.md", encoding="utf-8", errors="replace") as fh:
            head = fh.read(16384)
    except OSError:
        head = ""
    for line in head.splitlines():
        if line.startswith("# "):
            title = line[2:].strip()
            if _MODEL_NAME_RE.match(title):
                return title
            break
    if path.name.lower() in _GENERIC_DIRS and path.parent.name:
        return path.parent.name
    return path.name


def default_name(kind: str, ref: str, revision: str | None, options: Mapping[str, Any]) -> str:
    """A candidate's display name: its ref (a local folder's readable name), then ``@revision`` and
    ``?key=value&...`` options (sorted) when it has them."""
    base = _local_model_name(ref) if kind == "local" else ref
    if revision:
        base += f"@{revision}"
    if options:
        base += "?" + _fmt_opts(options)
    return base


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
        kind: ``"hub"``, ``"local"``, ``"baseline"``, ``"embedder"`` (a user's object), ``"vectors"``
            (precomputed vectors; these two are set from ``embedder=`` / ``vectors=``) or ``"api"`` (a hosted
            embedding API, ``openai:MODEL``: ref is the provider's model name, backend ``"openai"``).
        ref: hub repo id | absolute local directory | baseline name | the candidate's name (vectors given as an
            array or mapping) | the absolute path of a vectors file | for an embedder, the name of the model it
            embeds with (its model id ``embedder:REF``): its own name, which ``parse_candidates`` replaces by the
            name of the first candidate of the list giving the same object and revision that is not a
            ``truncate_dim`` / ``precision`` variant (else the first of them).
        backend: ``"sentence-transformers"``, ``"timm"``, ``"transformers"``, the baseline name, or
            ``None`` (infer from the model's files).
        revision: requested hub revision (branch, tag or sha), or ``None`` (default branch).
        options: backend options (``pooling``, ``max_length``, ``dim``...), frozen and hashable.
        name: display key, unique within a run.
        modality: modality of the data the candidate will embed (``"text"``/``"image"``), when known;
            it picks the tower of dual encoders (CLIP) and the input of ``random-projection``.
        notes: free text from a catalog entry (empty otherwise).
        embedder: for ``kind="embedder"``: the user's object that embeds the items (see
            :mod:`embedselect.models.backends.custom`): anything with ``encode(items, batch_size=...)`` returning an
            array of shape (n, d), a ``SentenceTransformer``, or a plain callable ``items -> array``.
            ``Candidate(name="mine", embedder=obj, revision="v3")`` builds one; without ``revision`` its vectors are
            kept for the run only (no cache entry can tell two states of an object apart).
        vectors: for ``kind="vectors"``: precomputed vectors (see :meth:`from_vectors`).
    """

    spec: str = ""
    kind: Literal["hub", "local", "baseline", "embedder", "vectors", "api"] = "hub"
    ref: str = ""
    backend: str | None = None
    revision: str | None = None
    options: Mapping[str, Any] = field(default_factory=FrozenOptions)
    name: str = ""
    modality: str | None = None
    notes: str = field(default="", compare=False)
    embedder: Any = field(default=None, compare=False, repr=False)
    vectors: Any = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.options, FrozenOptions):
            object.__setattr__(self, "options", FrozenOptions(self.options))
        if self.embedder is not None and self.vectors is not None:
            raise CandidateSpecError("a candidate has either an embedder or precomputed vectors, not both")
        if self.embedder is not None or self.vectors is not None:
            kind = "embedder" if self.embedder is not None else "vectors"
            if kind == "embedder" and not (callable(self.embedder) or callable(getattr(self.embedder, "encode", None))):
                raise CandidateSpecError(
                    f"embedder={type(self.embedder).__name__} object: an embedder needs an encode(items, batch_size) "
                    "method returning an (n, d) array, or must be a callable items -> array")
            if not self.name:
                raise CandidateSpecError(f"a candidate with {'an embedder' if kind == 'embedder' else 'vectors'} "
                                         "needs a name: Candidate(name='mine', ...)")
            object.__setattr__(self, "kind", kind)
            object.__setattr__(self, "ref", self.ref or self.name)
            object.__setattr__(self, "spec", self.spec or self.name)
        elif self.kind in ("embedder", "vectors"):
            raise CandidateSpecError(f"a candidate of kind {self.kind!r} needs its {self.kind}= object")
        if not self.ref:
            raise CandidateSpecError("a candidate needs a ref (hub id, folder or baseline), an embedder= or vectors=")
        if not self.name:
            object.__setattr__(self, "name", default_name(self.kind, self.ref, self.revision, self.options))
        if self.kind not in ("hub", "local", "baseline", "embedder", "vectors", "api"):
            raise CandidateSpecError(f"candidate kind must be 'hub', 'local', 'baseline', 'embedder', 'vectors' or "
                                     f"'api', got {self.kind!r}")
        if self.modality is not None and self.modality not in MODALITIES:
            raise CandidateSpecError(f"candidate modality must be 'text' or 'image', got {self.modality!r}")


    @classmethod
    def from_embedder(cls, embedder: Any, *, name: str | None = None, revision: str | None = None,
                      options: Mapping[str, Any] | None = None, modality: str | None = None) -> "Candidate":
        """A candidate for a user's embedder object (see the ``embedder`` attribute); ``name`` defaults to the
        object's own name (a ``SentenceTransformer``'s model name, a function's ``__name__``, else its class)."""
        return cls(name=name or embedder_name(embedder), embedder=embedder, revision=revision,
                   options=options or {}, modality=modality)

    @classmethod
    def from_vectors(cls, name: str, vectors: Any, ids: Any = None, *, modality: str | None = None) -> "Candidate":
        """A candidate whose vectors were computed elsewhere (a vector store, another pipeline).

        Args:
            name: its display name.
            vectors: a float array of shape (n, d) whose row i belongs to item i of the data (or, when it has one row
                per row of the data's source, to source row i: the sample and the dropped rows pick theirs); or a
                mapping item id -> vector; or the path of a ``.npy`` file (rows as for an array) or a ``.parquet``
                file with ``id`` and ``vector`` columns. Item ids are those of
                :class:`~embedselect.data.ReferenceData` (for a file, the 1-based data row number).
            ids: with an array: the item id of each of its rows (then it is keyed by id, not by position).
            modality: the data's modality, when known.

        Nothing is read here except that a file must exist; the vectors are checked against the data when the run
        uses them (rows missing, of another width or not finite are an error naming them).

        Raises:
            CandidateSpecError: no name, a file that does not exist or is neither ``.npy`` nor ``.parquet``, or an
                unsupported type.
            PrecomputedVectorsError: a mapping or ``ids=`` that gives an id twice (also as ``1`` and ``"1"``: ids
                are compared as text, the form item ids take).
        """
        import os

        import numpy as np

        if isinstance(vectors, (str, os.PathLike)):
            path = Path(os.path.expanduser(os.fspath(vectors)))
            if path.suffix.lower() not in (".npy", ".parquet"):
                raise CandidateSpecError(f"vectors file {str(path)!r} of candidate {name!r}: give a .npy file (rows "
                                         "follow the data's rows) or a .parquet file with 'id' and 'vector' columns")
            if not path.is_file():
                raise CandidateSpecError(f"vectors file {str(path)!r} of candidate {name!r} does not exist; check "
                                         "the path")
            if ids is not None:
                raise CandidateSpecError(f"ids= goes with an array; the vectors file of {name!r} carries its own")
            return cls(name=name, vectors=path.resolve(), ref=str(path.resolve()), spec=f"{name}=vectors:{path}",
                       modality=modality)
        from embedselect.models.backends.custom import keyed_vectors

        if isinstance(vectors, Mapping):
            if ids is not None:
                raise CandidateSpecError(f"ids= goes with an array; the mapping of {name!r} is keyed by id already")
            return cls(name=name, vectors=keyed_vectors(vectors.items(), name=name), modality=modality)
        if hasattr(vectors, "__array__") or isinstance(vectors, (list, tuple)):
            arr = np.asarray(vectors)
            if ids is not None:
                ids = [str(i) for i in ids]
                if len(ids) != len(arr):
                    raise CandidateSpecError(f"vectors of {name!r}: {len(arr)} rows but {len(ids)} ids; give one id "
                                             "per row")
                return cls(name=name, vectors=keyed_vectors(zip(ids, arr), name=name), modality=modality)
            return cls(name=name, vectors=arr, modality=modality)
        raise CandidateSpecError(f"vectors of {name!r} is a {type(vectors).__name__}: give an (n, d) array, a "
                                 "mapping id -> vector, or a .npy / .parquet path")


def embedder_name(obj: Any) -> str:
    """The default display name of a user's embedder object: a ``SentenceTransformer``'s model name (its card's),
    a function's ``__name__``, else the object's class name."""
    card = getattr(obj, "model_card_data", None)
    for value in (getattr(card, "model_name", None), getattr(card, "base_model", None)):
        if isinstance(value, str) and value.strip():
            return value.strip()
    named = getattr(obj, "__name__", None)
    if isinstance(named, str) and named and named != "<lambda>":
        return named
    return type(obj).__name__


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
    """A candidate's display name: its ref (a local folder's readable name; ``openai:MODEL`` for an API), then
    ``@revision`` and ``?key=value&...`` options (sorted) when it has them (an API's: those that change its vectors)."""
    base = _local_model_name(ref) if kind == "local" else f"openai:{ref}" if kind == "api" else ref
    if kind == "api":  # how it is called (base_url, key_env, ...) is not part of its name
        from embedselect.models.backends.base import vector_options

        options = vector_options(options)
    if revision:
        base += f"@{revision}"
    if options:
        base += "?" + _fmt_opts(options)
    return base


"""``parse_candidates``: what a user passes as candidates (a comma-separated string, :class:`Candidate` objects, a
list of these, ``catalog:NAME`` entries) -> one deduplicated list of :class:`Candidate`, each with a unique name."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from embedselect.models.candidates.catalogs import load_catalog
from embedselect.models.candidates.model import Candidate
from embedselect.models.candidates.spec import ACCEPTED_FORMS, parse_spec, split_name
from embedselect.errors import CandidateSpecError, ConfigError
from embedselect._util.kinds import BASELINES, MODALITIES, REDUCTION_OPTIONS


def parse_candidates(
    specs: str | Candidate | Sequence[str | Candidate],
    *,
    catalog_dir: Path | None = None,
    modality: str | None = None,
) -> list[Candidate]:
    """Turn user specs into :class:`Candidate` objects (no network, no model loading).

    Args:
        specs: one spec string (comma-separated specs allowed), a :class:`Candidate`, an embedder object (anything
            with ``encode(items, batch_size)``, a ``SentenceTransformer``, or a callable ``items -> array``: see
            :meth:`Candidate.from_embedder`), or a sequence of these.
        catalog_dir: folder with ``<name>.yaml`` catalogs for ``catalog:<name>``; default the shipped catalogs.
        modality: the data's modality (``"text"``/``"image"``). Catalogs then keep only entries of that
            modality, and candidates without a modality get this one.

    Returns:
        candidates in the order given, duplicates (same name) removed, first kept.

    Raises:
        CandidateSpecError: a spec is empty or none of the accepted forms; a baseline or catalog is unknown;
            a baseline cannot embed ``modality``; a local directory does not exist.
        ConfigError: ``modality`` is not ``"text"`` or ``"image"``.
    """
    if modality is not None and modality not in MODALITIES:
        raise ConfigError(f"modality must be 'text' or 'image', got {modality!r}")
    if isinstance(specs, (str, Candidate)) or callable(getattr(specs, "encode", None)) or callable(specs):
        specs = [specs]  # type: ignore[list-item]  # an embedder object is one candidate, not a list of them
    if specs is None:
        raise CandidateSpecError("no candidates given; " + ACCEPTED_FORMS)
    if isinstance(specs, Mapping):
        raise CandidateSpecError(
            "candidates must be a list (or a comma-separated string), not a mapping: a mapping would be read by its "
            "keys only; to name candidates pass NAME=SPEC strings, e.g. ['minilm=./model']; " + ACCEPTED_FORMS
        )
    if not isinstance(specs, Iterable):
        raise CandidateSpecError(
            f"candidates must be a str, a Candidate or a list of these, got {type(specs).__name__}; " + ACCEPTED_FORMS
        )
    out: list[Candidate] = []
    for item in specs:
        if isinstance(item, Candidate):
            out.append(item)
        elif isinstance(item, str):
            parts = [p.strip() for p in item.split(",")]
            if not any(parts):
                raise CandidateSpecError(f"empty candidate spec {item!r}; " + ACCEPTED_FORMS)
            for p in parts:
                if p:
                    name, spec = split_name(p)
                    if spec.startswith("vectors:"):
                        out.append(_vectors_spec(name, spec, p))
                        continue
                    parsed = _parse_one(spec, catalog_dir=catalog_dir, modality=modality)
                    if name is not None:
                        if len(parsed) != 1:
                            raise CandidateSpecError(f"{p!r}: a NAME= can name one candidate, not a catalog")
                        parsed = [dataclasses.replace(parsed[0], name=name)]
                    out.extend(parsed)
        elif callable(getattr(item, "encode", None)) or callable(item):
            out.append(Candidate.from_embedder(item))
        else:
            raise CandidateSpecError(
                f"candidate must be a str, a Candidate, an object with encode(items, batch_size) or a callable "
                f"items -> array, got {type(item).__name__}; " + ACCEPTED_FORMS)
    result: list[Candidate] = []
    by_name: dict[str, Candidate] = {}
    for c in out:
        if modality is not None and c.modality is None:
            c = dataclasses.replace(c, modality=modality)
        if c.kind == "baseline" and c.modality is not None and c.modality not in BASELINES[c.ref]:
            raise CandidateSpecError(
                f"baseline {c.ref!r} embeds {'/'.join(BASELINES[c.ref])} only, not {c.modality}; "
                f"baselines for {c.modality}: {', '.join(b for b, m in BASELINES.items() if c.modality in m)}"
            )
        prev = by_name.get(c.name)
        if prev is not None:
            if ((prev.kind, prev.ref, prev.revision, prev.options, prev.backend) == (c.kind, c.ref, c.revision, c.options, c.backend)
                    and prev.embedder is c.embedder and prev.vectors is c.vectors):
                continue  # duplicate (an embedder or vectors: the same object)
            if c.kind == "local":  # two different folders with the same basename
                c = dataclasses.replace(c, name=f"local:{c.ref}")
            else:
                c = dataclasses.replace(c, name=f"{c.name}#{sum(1 for n in by_name if n.startswith(c.name))+1}")
            if c.name in by_name:
                continue
        by_name[c.name] = c
        result.append(c)
    return _name_embedder_models(result)


def _name_embedder_models(cands: list[Candidate]) -> list[Candidate]:
    """Each embedder object's ``ref``: the name of the model it embeds with, which its model id and cache keys use
    (``embedder:REF``). Candidates giving one object (the same Python object) with one revision are one model, named
    after the first of them without ``truncate_dim`` / ``precision`` (the model itself), else after the first of them:
    so the model and its variants (``m``, ``m4`` with ``truncate_dim=4``) share one embedding and one stored run, and
    a later run that names the model alike reads it."""
    heads: dict[tuple[int, str | None], str] = {}
    for c in cands:
        if c.kind == "embedder":
            group = (id(c.embedder), c.revision)
            if group not in heads or (not _is_variant(c) and _is_variant(_named(cands, heads[group]))):
                heads[group] = c.name
    return [dataclasses.replace(c, ref=heads[(id(c.embedder), c.revision)]) if c.kind == "embedder" else c
            for c in cands]


def _is_variant(c: Candidate) -> bool:
    """Whether ``c`` asks for vectors the run computes from its model's own (``truncate_dim``, ``precision``)."""
    return any(c.options.get(k) is not None for k in REDUCTION_OPTIONS)


def _named(cands: list[Candidate], name: str) -> Candidate:
    return next(c for c in cands if c.name == name)


def input_files(specs: str) -> list[Path]:
    """The files a candidate string reads as inputs (the ``PATH`` of each ``NAME=vectors:PATH``), as written
    (``~`` expanded); nothing is checked. For the CLI's rule that no output overwrites an input."""
    import os

    out = []
    for part in (p.strip() for p in str(specs).split(",")):
        try:
            _name, spec = split_name(part)
        except CandidateSpecError:
            continue
        if spec.startswith("vectors:") and spec[len("vectors:"):].strip():
            out.append(Path(os.path.expanduser(spec[len("vectors:"):].strip())))
    return out


def _vectors_spec(name: str | None, spec: str, written: str) -> Candidate:
    """``NAME=vectors:PATH``: precomputed vectors in a ``.npy`` file (rows follow the data file's rows) or a
    ``.parquet`` file (``id`` and ``vector`` columns), as :meth:`Candidate.from_vectors`."""
    if name is None:
        raise CandidateSpecError(f"{written!r}: precomputed vectors need a name: write NAME=vectors:PATH, e.g. "
                                 "mine=vectors:./vectors.npy")
    path = spec[len("vectors:"):].strip()
    if not path or "?" in path:
        raise CandidateSpecError(f"{written!r}: write NAME=vectors:PATH with the path of a .npy or .parquet file "
                                 "(no options)")
    return dataclasses.replace(Candidate.from_vectors(name, path), spec=written)


def _parse_one(spec: str, *, catalog_dir: Path | None, modality: str | None) -> list[Candidate]:
    if spec.startswith("catalog:"):
        name = spec[len("catalog:"):].strip()
        return load_catalog(name, catalog_dir=catalog_dir, modality=modality)
    return [parse_spec(spec)]

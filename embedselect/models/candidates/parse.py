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
from embedselect._util.kinds import BASELINES, MODALITIES


def parse_candidates(
    specs: str | Candidate | Sequence[str | Candidate],
    *,
    catalog_dir: Path | None = None,
    modality: str | None = None,
) -> list[Candidate]:
    """Turn user specs into :class:`Candidate` objects (no network, no model loading).

    Args:
        specs: one spec string (comma-separated specs allowed), a :class:`Candidate`, or a sequence of these.
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
    if isinstance(specs, (str, Candidate)):
        specs = [specs]
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
                    parsed = _parse_one(spec, catalog_dir=catalog_dir, modality=modality)
                    if name is not None:
                        if len(parsed) != 1:
                            raise CandidateSpecError(f"{p!r}: a NAME= can name one candidate, not a catalog")
                        parsed = [dataclasses.replace(parsed[0], name=name)]
                    out.extend(parsed)
        else:
            raise CandidateSpecError(f"candidate must be a str or Candidate, got {type(item).__name__}; " + ACCEPTED_FORMS)
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
            if (prev.kind, prev.ref, prev.revision, prev.options, prev.backend) == (c.kind, c.ref, c.revision, c.options, c.backend):
                continue  # duplicate
            if c.kind == "local":  # two different folders with the same basename
                c = dataclasses.replace(c, name=f"local:{c.ref}")
            else:
                c = dataclasses.replace(c, name=f"{c.name}#{sum(1 for n in by_name if n.startswith(c.name))+1}")
            if c.name in by_name:
                continue
        by_name[c.name] = c
        result.append(c)
    return result


def _parse_one(spec: str, *, catalog_dir: Path | None, modality: str | None) -> list[Candidate]:
    if spec.startswith("catalog:"):
        name = spec[len("catalog:"):].strip()
        return load_catalog(name, catalog_dir=catalog_dir, modality=modality)
    return [parse_spec(spec)]

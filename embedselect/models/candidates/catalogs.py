"""Catalogs: curated candidate lists in YAML (``catalog:text``, ``catalog:image``, or a file path), where they
are looked for, their schema (docs/backends.md), and their entries as :class:`Candidate` objects."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from embedselect.models.candidates.model import Candidate, FrozenOptions, default_name
from embedselect.models.candidates.spec import parse_spec
from embedselect.errors import CandidateError, CandidateSpecError
from embedselect._util.kinds import BACKENDS, BASELINES, MODALITIES

CATALOG_SCHEMA_VERSION = 1


def catalog_dirs(catalog_dir: Path | None = None) -> list[Path]:
    """Folders searched for ``catalog:<name>``, first match wins: ``catalog_dir`` if given; else
    ``$EMBEDSELECT_CATALOG_DIR``, the source tree's top-level ``catalog/`` (in a checkout), and the copy
    packaged inside embedselect (``embedselect/catalog/``, what an installed wheel has; kept identical to
    ``catalog/`` by a test)."""
    if catalog_dir is not None:
        return [Path(catalog_dir)]
    dirs = []
    from embedselect._util import env

    given = env.catalog_dir()
    if given is not None:
        dirs.append(given)
    package = Path(__file__).resolve().parents[2]  # embedselect/
    if (package.parent / "pyproject.toml").is_file():  # a source checkout, not site-packages
        dirs.append(package.parent / "catalog")
    dirs.append(package / "catalog")
    return dirs


def available_catalogs(catalog_dir: Path | None = None) -> list[str]:
    """Names usable as ``catalog:<name>``, sorted."""
    names: set[str] = set()
    for d in catalog_dirs(catalog_dir):
        if d.is_dir():
            names.update(p.stem for p in d.glob("*.yaml"))
    return sorted(names)


def _catalog_path(name: str, catalog_dir: Path | None) -> Path:
    if not name:
        raise CandidateSpecError("empty catalog name: use 'catalog:text', 'catalog:image' or 'catalog:/path/list.yaml'")
    if name.endswith((".yaml", ".yml")) or "/" in name or os.sep in name:
        p = Path(os.path.expanduser(name))
        if not p.is_file():
            raise CandidateSpecError(f"catalog file {name!r} does not exist")
        return p
    for d in catalog_dirs(catalog_dir):
        p = d / f"{name}.yaml"
        if p.is_file():
            return p
    known = available_catalogs(catalog_dir)
    raise CandidateSpecError(f"unknown catalog {name!r}: known catalogs are {', '.join(known) or '(none found)'}; "
                             "or pass a path to a .yaml file")


def read_catalog(path: Path) -> dict[str, Any]:
    """Read and validate a catalog YAML file (schema in docs/backends.md); revisions follow
    :func:`embedselect.models.hub.check_revision`, as a spec's ``@revision`` does.

    Returns:
        the parsed document: ``{"schema": 1, "modality": ..., "models": [entry, ...]}``.

    Raises:
        CandidateSpecError: the file is not valid YAML or violates the schema (message names the entry).
    """
    import yaml

    from embedselect.models.hub import check_revision

    try:
        doc = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise CandidateSpecError(f"catalog {path} is not valid YAML: {exc}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("models"), list):
        raise CandidateSpecError(f"catalog {path} must be a mapping with a 'models' list")
    if doc.get("schema", CATALOG_SCHEMA_VERSION) != CATALOG_SCHEMA_VERSION:
        raise CandidateSpecError(f"catalog {path} has schema {doc.get('schema')!r}; this embedselect reads schema "
                                 f"{CATALOG_SCHEMA_VERSION}")
    default_mod = doc.get("modality")
    if default_mod is not None and default_mod not in MODALITIES:
        raise CandidateSpecError(f"catalog {path}: modality must be 'text' or 'image'")
    for i, e in enumerate(doc["models"]):
        where = f"catalog {path}, entry {i}"
        if not isinstance(e, dict):
            raise CandidateSpecError(f"{where}: each entry must be a mapping")
        if ("id" in e) == ("baseline" in e):
            raise CandidateSpecError(f"{where}: give exactly one of 'id' (hub id or directory) or 'baseline'")
        mod = e.get("modality", default_mod)
        if mod not in MODALITIES:
            raise CandidateSpecError(f"{where}: modality must be 'text' or 'image' (per entry or at top level)")
        if "baseline" in e and e["baseline"] not in BASELINES:
            raise CandidateSpecError(f"{where}: unknown baseline {e['baseline']!r}; use one of {', '.join(BASELINES)}")
        if e.get("backend") is not None and "id" in e and e["backend"] not in BACKENDS:
            raise CandidateSpecError(f"{where}: backend must be one of {', '.join(BACKENDS)}")
        if e.get("options") is not None and not isinstance(e["options"], dict):
            raise CandidateSpecError(f"{where}: options must be a mapping")
        if e.get("revision") is not None:
            try:
                check_revision(str(e["revision"]))
            except CandidateError as exc:
                raise CandidateSpecError(f"{where}: {exc}") from None
    return doc


def load_catalog(name: str, *, catalog_dir: Path | None = None, modality: str | None = None) -> list[Candidate]:
    """The candidates listed in catalog ``name`` (a shipped name or a path to a YAML file).

    Args:
        name: ``"text"``, ``"image"``, another ``<name>.yaml`` in the catalog folders, or a file path.
        catalog_dir: folder to look in instead of the defaults.
        modality: keep only entries of this modality.

    Raises:
        CandidateSpecError: unknown catalog, or a malformed file.
    """
    path = _catalog_path(name, catalog_dir)
    doc = read_catalog(path)
    out = []
    for i, e in enumerate(doc["models"]):
        mod = e.get("modality", doc.get("modality"))
        if modality is not None and mod != modality:
            continue
        opts = dict(e.get("options") or {})
        notes = str(e.get("notes") or "")
        if "baseline" in e:
            out.append(Candidate(spec=f"catalog:{name}:{e['baseline']}", kind="baseline", ref=e["baseline"],
                                 backend=e["baseline"], options=opts, modality=mod, notes=notes,
                                 name=e["baseline"]))
            continue
        try:
            c = parse_spec(str(e["id"]))  # a hub id, a folder or a baseline; never another catalog
        except CandidateSpecError as exc:
            raise CandidateSpecError(f"catalog {path}, entry {i}: {exc}") from None
        revision = e.get("revision") or c.revision
        out.append(dataclasses.replace(c, spec=f"catalog:{name}:{e['id']}", backend=e.get("backend") or c.backend,
                                       revision=revision, options=FrozenOptions({**dict(c.options), **opts}),
                                       modality=mod, notes=notes, name=default_name(c.kind, c.ref, revision, {})))
    return out


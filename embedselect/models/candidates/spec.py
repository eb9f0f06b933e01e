"""One candidate spec string -> :class:`~embedselect.models.candidates.model.Candidate`: the ``NAME=SPEC`` prefix, the
``?key=value&...`` options, and the forms a spec may take (hub id, local folder, baseline). No network, no files
read except checking that a local folder exists. Catalogs (``catalog:NAME``) are expanded by
:mod:`embedselect.models.candidates.catalogs`, lists of specs by :mod:`embedselect.models.candidates.parse`."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from embedselect.models.candidates.model import Candidate
from embedselect.errors import CandidateError, CandidateSpecError
from embedselect._util.kinds import BACKENDS, BASELINES, MODALITIES
from embedselect._util.suggest import close_match, did_you_mean

ACCEPTED_FORMS = (
    "accepted forms: a hub id 'org/name' or 'org/name@revision'; an existing model directory "
    "(or 'local:PATH'); a baseline ('tfidf-svd', 'random-projection', 'pixel-pca', or 'baseline:NAME'); "
    "'catalog:text', 'catalog:image' or 'catalog:/path/list.yaml'; options as '?key=value&key=value'; "
    "a name first as 'NAME=SPEC'; precomputed vectors as 'NAME=vectors:PATH' (.npy or .parquet); a hosted "
    "embedding API as 'openai:MODEL?base_url=URL&dimensions=N'"
)
"""The end of every "cannot understand this candidate" message: what a spec may be."""

# Hub repo ids: "owner/name", letters, digits, '-', '_', '.'; no '--' or '..'; at most 96 characters.
_REPO_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,95}/[A-Za-z0-9_.\-]{1,96}$")
_OPTION_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_HUB_PREFIXES = ("https://huggingface.co/", "http://huggingface.co/", "huggingface.co/", "hf://", "hf:")

def _parse_value(text: str) -> Any:
    low = text.lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    if low in ("none", "null"):
        return None
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def _split_options(spec: str) -> tuple[str, dict[str, Any]]:
    if "?" not in spec:
        return spec, {}
    head, _, query = spec.partition("?")
    opts: dict[str, Any] = {}
    for part in filter(None, query.split("&")):
        key, eq, value = part.partition("=")
        key = key.strip()
        if not eq or not _OPTION_KEY_RE.match(key):
            raise CandidateSpecError(f"bad option {part!r} in candidate {spec!r}: write options as '?key=value&key2=value2'")
        opts[key] = _parse_value(value.strip())
    return head, opts


_MAX_NAME = 80
"""The longest name a candidate may be given (``NAME=SPEC``)."""
_CAND_NAME_RE = re.compile(r"^[^=?/\\,]{1,%d}$" % _MAX_NAME)


def split_name(text: str) -> tuple[str | None, str]:
    """``"minilm=./model?pooling=cls"`` -> ``("minilm", "./model?pooling=cls")``; a spec without a name (its first
    ``=`` comes after the ``?`` of its options, or there is none) -> ``(None, text)``."""
    name, eq, rest = text.partition("=")
    if not eq or "?" in name or "/" in name or "\\" in name or ":" in name:
        return None, text
    name = name.strip()
    if len(name) > _MAX_NAME:
        raise CandidateSpecError(f"bad candidate {text!r}: its name has {len(name)} characters; give it a name of at "
                                 f"most {_MAX_NAME}")
    if not _CAND_NAME_RE.match(name) or not rest.strip():
        raise CandidateSpecError(
            f"bad candidate {text!r}: write NAME=SPEC with a non-empty name and spec, e.g. minilm=./model"
        )
    return name, rest.strip()


def _looks_like_path(s: str) -> bool:
    return s.startswith(("/", "./", "../", "~", "\\")) or (len(s) > 2 and s[1] == ":" and s[2] in "/\\") or s in (".", "..")




def spec_against(text: str, base_dir: str | Path) -> str:
    """One candidate string (``NAME=SPEC`` or ``SPEC``) with its relative path made absolute against ``base_dir`` (a
    configuration file's folder): the path of ``vectors:PATH`` and ``local:PATH``, a bare spec that reads as a path
    (``./m``, ``../m``) and one naming a folder that exists under ``base_dir`` (``models/mine``, otherwise read as a
    hub id). Anything else (a baseline, a hub id, an API, a catalog, an absolute or ``~`` path) is returned as
    written."""
    name, spec = split_name(text)
    prefix = next((p for p in ("vectors:", "local:") if spec.startswith(p)), "")
    body = spec[len(prefix):].strip()
    path, q, opts = (body, "", "") if prefix == "vectors:" else body.partition("?")
    relative = bool(path) and not Path(path).is_absolute() and not path.startswith("~")
    if not prefix:
        relative = relative and (path.startswith(("./", "../")) or path in (".", "..")
                                 or (":" not in path and (Path(base_dir) / path).is_dir()))
    if not relative:
        return text
    rebased = f"{prefix}{os.path.abspath(Path(base_dir) / path)}{q}{opts}"
    return f"{name}={rebased}" if name is not None else rebased


def parse_spec(spec: str) -> Candidate:
    """One spec (without a ``NAME=`` prefix, not a catalog) as a :class:`Candidate`.

    Forms: ``baseline:NAME`` or a baseline name; an existing folder (``local:PATH`` forces it); a hub id
    ``org/name[@revision]`` (``hf:``, ``hf://`` and ``https://huggingface.co/`` prefixes are dropped). Options
    follow a ``?``; ``backend=`` and ``modality=`` among them become the candidate's fields.

    Raises:
        CandidateSpecError: none of the forms; an unknown backend, baseline or modality; a bad option; a missing
            local folder; a bad revision.
    """
    from embedselect.models.backends.reduce import reduction_of

    head, opts = _split_options(spec)
    reduction_of(opts, name=spec)  # ?truncate_dim= / ?precision= of any model, checked before any work
    backend = opts.pop("backend", None)
    if backend is not None and backend not in BACKENDS:
        raise CandidateSpecError(f"unknown backend {backend!r} in {spec!r}: use one of {', '.join(BACKENDS)}")
    cand_modality = opts.pop("modality", None)
    if cand_modality is not None and cand_modality not in MODALITIES:
        raise CandidateSpecError(f"modality must be 'text' or 'image' in {spec!r}")
    if not head:
        raise CandidateSpecError(f"empty candidate in {spec!r}; " + ACCEPTED_FORMS)
    if head.startswith("openai:"):
        return _api_spec(spec, head[len("openai:"):].strip(), opts, backend=backend, modality=cand_modality)
    name_or_base = head.removeprefix("baseline:")
    if head.startswith("baseline:") or name_or_base in BASELINES:
        if name_or_base not in BASELINES:
            raise CandidateSpecError(f"unknown baseline {name_or_base!r}{did_you_mean(name_or_base, BASELINES)}: use "
                                     f"one of {', '.join(BASELINES)}")
        if backend is not None:
            raise CandidateSpecError(f"a baseline has no backend option ({spec!r})")
        return Candidate(spec=spec, kind="baseline", ref=name_or_base, backend=name_or_base, options=opts,
                         modality=cand_modality)
    forced_local = head.startswith("local:")
    path_text = head[len("local:"):] if forced_local else head
    path = Path(os.path.expanduser(path_text))
    if path.is_dir():
        return Candidate(spec=spec, kind="local", ref=str(path.resolve()), backend=backend, options=opts,
                         modality=cand_modality)
    if forced_local or _looks_like_path(path_text):
        raise CandidateSpecError(f"local model directory {path_text!r} does not exist (spec {spec!r}); check the path")
    hub_text = head
    for prefix in _HUB_PREFIXES:
        if hub_text.startswith(prefix):
            hub_text = hub_text[len(prefix):].rstrip("/")
            break
    repo, at, rev = hub_text.partition("@")
    if _REPO_RE.match(repo) and "--" not in repo and ".." not in repo and not repo.endswith((".", "-")):
        if at:
            from embedselect.models.hub import check_revision

            try:
                check_revision(rev)
            except CandidateError as exc:
                raise CandidateSpecError(f"{exc} (in candidate {spec!r})") from None
        return Candidate(spec=spec, kind="hub", ref=repo, backend=backend, revision=rev or None, options=opts,
                         modality=cand_modality)
    near = close_match(head, BASELINES)
    hint = f" (did you mean the baseline {near!r}?)" if near is not None else ""
    raise CandidateSpecError(f"cannot understand candidate {spec!r}{hint}; " + ACCEPTED_FORMS)


def _api_spec(spec: str, model: str, opts: dict[str, Any], *, backend: str | None, modality: str | None) -> Candidate:
    """``openai:MODEL?options``: a model behind an OpenAI-compatible embeddings API (text only). ``?revision=`` is
    the candidate's revision (the user's name for the model's current state): with one its vectors are cached
    across runs, without one for the run only. The other options are checked here
    (:func:`~embedselect.models.backends.openai_api.check_api_options`)."""
    from embedselect.models.backends.openai_api import check_api_options, shown_spec

    spec = shown_spec(spec, opts)  # a ?key_env= naming no variable (perhaps the key) is never repeated
    if not model or any(ch.isspace() for ch in model):
        raise CandidateSpecError(f"{spec!r}: write openai:MODEL with the provider's model name, e.g. "
                                 "openai:text-embedding-3-small?dimensions=256")
    if backend is not None:
        raise CandidateSpecError(f"an API candidate has no backend option ({spec!r})")
    if modality not in (None, "text"):
        raise CandidateSpecError(f"an embedding API candidate embeds text, not {modality} ({spec!r})")
    revision = opts.pop("revision", None)
    check_api_options(opts, spec=spec)
    return Candidate(spec=spec, kind="api", ref=model, backend="openai",
                     revision=str(revision) if revision is not None else None, options=opts, modality=modality)

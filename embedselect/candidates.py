"""Candidates: what the user asks to rank, and how each one is pinned to an exact model revision.

A candidate spec is one of (comma-separated in one string, or a list):

- a hub repo id ``org/name`` with optional ``@revision`` (branch, tag or commit sha); ``hf:org/name`` and
  ``https://huggingface.co/org/name`` are accepted too;
- an existing local model directory (absolute, relative, or ``~``-prefixed; ``local:PATH`` forces it);
- a baseline: ``tfidf-svd``, ``random-projection``, ``pixel-pca`` (optionally ``baseline:NAME``);
- a catalog: ``catalog:text``, ``catalog:image`` (shipped lists) or ``catalog:/path/to/list.yaml``.

Any spec may carry backend options as a query string: ``BAAI/bge-small-en-v1.5?pooling=cls&max_length=256``,
``tfidf-svd?dim=128``, and a backend with ``backend=``: ``org/name?backend=transformers``.

This module imports no torch; hashing a local directory and reading YAML are the heaviest things it does.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Literal, Mapping, Sequence

from embedselect.errors import CandidateError, CandidateSpecError, ConfigError, HubError
from embedselect.kinds import BACKENDS, BASELINE_VERSION, BASELINES, MODALITIES
from embedselect.policy import LoadPolicy


_ACCEPTED_FORMS = (
    "accepted forms: a hub id 'org/name' or 'org/name@revision'; an existing model directory "
    "(or 'local:PATH'); a baseline ('tfidf-svd', 'random-projection', 'pixel-pca', or 'baseline:NAME'); "
    "'catalog:text', 'catalog:image' or 'catalog:/path/list.yaml'; options as '?key=value&key=value'; "
    "a name first as 'NAME=SPEC'"
)
# Hub repo ids: "owner/name", letters, digits, '-', '_', '.'; no '--' or '..'; at most 96 characters.
_REPO_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,95}/[A-Za-z0-9_.\-]{1,96}$")
_OPTION_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# --- data classes -------------------------------------------------------------------------------
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

    __slots__ = ("_items", "_dict")

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
            object.__setattr__(self, "name", _default_name(self.kind, self.ref, self.revision, self.options))
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


def _default_name(kind: str, ref: str, revision: str | None, options: Mapping[str, Any]) -> str:
    base = _local_model_name(ref) if kind == "local" else ref
    if revision:
        base += f"@{revision}"
    if options:
        base += "?" + _fmt_opts(options)
    return base


# --- parsing ------------------------------------------------------------------------------------
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


_CAND_NAME_RE = re.compile(r"^[^=?/\\,]{1,80}$")


def _split_name(text: str) -> tuple[str | None, str]:
    """``"minilm=./model?pooling=cls"`` -> ``("minilm", "./model?pooling=cls")``; a spec without a name (its first
    ``=`` comes after the ``?`` of its options, or there is none) -> ``(None, text)``."""
    name, eq, rest = text.partition("=")
    if not eq or "?" in name or "/" in name or "\\" in name or ":" in name:
        return None, text
    name = name.strip()
    if not _CAND_NAME_RE.match(name) or not rest.strip():
        raise CandidateSpecError(
            f"bad candidate {text!r}: write NAME=SPEC with a non-empty name and spec, e.g. minilm=./model"
        )
    return name, rest.strip()


def _looks_like_path(s: str) -> bool:
    return s.startswith(("/", "./", "../", "~", "\\")) or (len(s) > 2 and s[1] == ":" and s[2] in "/\\") or s in (".", "..")


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
        raise CandidateSpecError("no candidates given; " + _ACCEPTED_FORMS)
    if isinstance(specs, Mapping):
        raise CandidateSpecError(
            "candidates must be a list (or a comma-separated string), not a mapping: a mapping would be read by its "
            "keys only; to name candidates pass NAME=SPEC strings, e.g. ['minilm=./model']; " + _ACCEPTED_FORMS
        )
    if not isinstance(specs, Iterable):
        raise CandidateSpecError(
            f"candidates must be a str, a Candidate or a list of these, got {type(specs).__name__}; " + _ACCEPTED_FORMS
        )
    out: list[Candidate] = []
    for item in specs:
        if isinstance(item, Candidate):
            out.append(item)
        elif isinstance(item, str):
            parts = [p.strip() for p in item.split(",")]
            if not any(parts):
                raise CandidateSpecError(f"empty candidate spec {item!r}; " + _ACCEPTED_FORMS)
            for p in parts:
                if p:
                    name, spec = _split_name(p)
                    parsed = _parse_one(spec, catalog_dir=catalog_dir, modality=modality)
                    if name is not None:
                        if len(parsed) != 1:
                            raise CandidateSpecError(f"{p!r}: a NAME= can name one candidate, not a catalog")
                        parsed = [dataclasses.replace(parsed[0], name=name)]
                    out.extend(parsed)
        else:
            raise CandidateSpecError(f"candidate must be a str or Candidate, got {type(item).__name__}; " + _ACCEPTED_FORMS)
    result: list[Candidate] = []
    by_name: dict[str, Candidate] = {}
    for c in out:
        if modality is not None and c.modality is None:
            c = _replace(c, modality=modality)
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
                c = _replace(c, name=f"local:{c.ref}")
            else:
                c = _replace(c, name=f"{c.name}#{sum(1 for n in by_name if n.startswith(c.name))+1}")
            if c.name in by_name:
                continue
        by_name[c.name] = c
        result.append(c)
    return result


def _replace(c: Candidate, **changes: Any) -> Candidate:
    from dataclasses import replace

    return replace(c, **changes)


def _parse_one(spec: str, *, catalog_dir: Path | None, modality: str | None) -> list[Candidate]:
    if spec.startswith("catalog:"):
        name = spec[len("catalog:"):].strip()
        return load_catalog(name, catalog_dir=catalog_dir, modality=modality)
    head, opts = _split_options(spec)
    backend = opts.pop("backend", None)
    if backend is not None and backend not in BACKENDS:
        raise CandidateSpecError(f"unknown backend {backend!r} in {spec!r}: use one of {', '.join(BACKENDS)}")
    cand_modality = opts.pop("modality", None)
    if cand_modality is not None and cand_modality not in MODALITIES:
        raise CandidateSpecError(f"modality must be 'text' or 'image' in {spec!r}")
    if not head:
        raise CandidateSpecError(f"empty candidate in {spec!r}; " + _ACCEPTED_FORMS)
    name_or_base = head[len("baseline:"):] if head.startswith("baseline:") else head
    if head.startswith("baseline:") or name_or_base in BASELINES:
        if name_or_base not in BASELINES:
            raise CandidateSpecError(f"unknown baseline {name_or_base!r}: use one of {', '.join(BASELINES)}")
        if backend is not None:
            raise CandidateSpecError(f"a baseline has no backend option ({spec!r})")
        return [Candidate(spec=spec, kind="baseline", ref=name_or_base, backend=name_or_base, options=opts,
                          modality=cand_modality)]
    forced_local = head.startswith("local:")
    path_text = head[len("local:"):] if forced_local else head
    path = Path(os.path.expanduser(path_text))
    if path.is_dir():
        return [Candidate(spec=spec, kind="local", ref=str(path.resolve()), backend=backend, options=opts,
                          modality=cand_modality)]
    if forced_local or _looks_like_path(path_text):
        raise CandidateSpecError(f"local model directory {path_text!r} does not exist (spec {spec!r}); check the path")
    hub_text = head
    for prefix in ("https://huggingface.co/", "http://huggingface.co/", "huggingface.co/", "hf://", "hf:"):
        if hub_text.startswith(prefix):
            hub_text = hub_text[len(prefix):].rstrip("/")
            break
    repo, at, rev = hub_text.partition("@")
    if _REPO_RE.match(repo) and "--" not in repo and ".." not in repo and not repo.endswith((".", "-")):
        if at:
            from embedselect.hub import check_revision

            try:
                check_revision(rev)
            except CandidateError as exc:
                raise CandidateSpecError(f"{exc} (in candidate {spec!r})") from None
        return [Candidate(spec=spec, kind="hub", ref=repo, backend=backend, revision=rev or None, options=opts,
                          modality=cand_modality)]
    raise CandidateSpecError(f"cannot understand candidate {spec!r}; " + _ACCEPTED_FORMS)


# --- catalogs -----------------------------------------------------------------------------------
CATALOG_SCHEMA_VERSION = 1


def catalog_dirs(catalog_dir: Path | None = None) -> list[Path]:
    """Folders searched for ``catalog:<name>``, first match wins: ``catalog_dir`` if given; else
    ``$EMBEDSELECT_CATALOG_DIR``, the source tree's top-level ``catalog/`` (in a checkout), and the copy
    packaged inside embedselect (``embedselect/catalog/``, what an installed wheel has; kept identical to
    ``catalog/`` by a test)."""
    if catalog_dir is not None:
        return [Path(catalog_dir)]
    dirs = []
    env = os.environ.get("EMBEDSELECT_CATALOG_DIR")
    if env:
        dirs.append(Path(env))
    here = Path(__file__).resolve().parent
    if (here.parent / "pyproject.toml").is_file():  # a source checkout, not site-packages
        dirs.append(here.parent / "catalog")
    dirs.append(here / "catalog")
    return dirs


def available_catalogs(catalog_dir: Path | None = None) -> list[str]:
    """Names usable as ``catalog:<name>``, sorted."""
    names = set()
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
    """Read and validate a catalog YAML file (schema in docs/backends.md).

    Returns:
        the parsed document: ``{"schema": 1, "modality": ..., "models": [entry, ...]}``.

    Raises:
        CandidateSpecError: the file is not valid YAML or violates the schema (message names the entry).
    """
    import yaml

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
    for e in doc["models"]:
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
        (c,) = _parse_one(str(e["id"]), catalog_dir=catalog_dir, modality=modality)
        out.append(_replace(c, spec=f"catalog:{name}:{e['id']}", backend=e.get("backend") or c.backend,
                            revision=e.get("revision") or c.revision,
                            options=FrozenOptions({**dict(c.options), **opts}), modality=mod, notes=notes,
                            name=_default_name(c.kind, c.ref, e.get("revision") or c.revision, {})))
    return out


# --- resolution ---------------------------------------------------------------------------------
_HASH_CACHE: dict[tuple[str, int, int], str] = {}
_HASH_LOCK = threading.Lock()
_SKIP_DIRS = {".git", "__pycache__", ".cache", ".ipynb_checkpoints"}


def _file_sha256(path: Path) -> str:
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns)
    with _HASH_LOCK:
        hit = _HASH_CACHE.get(key)
    if hit is not None:
        return hit
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    digest = h.hexdigest()
    with _HASH_LOCK:
        _HASH_CACHE[key] = digest
    return digest


def local_dir_revision(directory: Path) -> str:
    """sha256 hex digest over the directory's files: their relative paths and byte contents.

    Hidden caches (``.git``, ``__pycache__``, ``.cache``) are skipped. Per-file digests are cached in
    memory by (path, size, mtime), so hashing the same unchanged multi-GB folder twice is instant.

    Raises:
        CandidateSpecError: the directory does not exist.
    """
    root = Path(directory)
    if not root.is_dir():
        raise CandidateSpecError(f"local model directory {str(root)!r} does not exist")
    total = hashlib.sha256()
    files = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        for fn in filenames:
            files.append(Path(dirpath) / fn)
    for p in sorted(files, key=lambda q: q.relative_to(root).as_posix()):
        if not p.is_file():
            continue
        total.update(p.relative_to(root).as_posix().encode("utf-8") + b"\0")
        total.update(_file_sha256(p).encode("ascii") + b"\n")
    return total.hexdigest()


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (ValueError, UnicodeDecodeError) as exc:
        raise CandidateError(f"{path} is not valid JSON ({exc}); the model folder is damaged") from exc


_IMAGE_MODEL_TYPES = {
    "vit", "dinov2", "deit", "beit", "convnext", "convnextv2", "swin", "swinv2", "resnet", "regnet",
    "efficientnet", "mobilevit", "levit", "dit", "data2vec-vision", "clip_vision_model", "siglip_vision_model",
    "vit_mae", "vit_msn", "dinov2_with_registers", "hiera", "pvt", "poolformer", "focalnet",
}
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "vocab.json", "sentencepiece.bpe.model",
                    "spiece.model", "tokenizer.model")


def infer_backend(local_dir: Path) -> str:
    """The backend that can load a model folder, from its files.

    ``modules.json`` -> sentence-transformers; ``config.json`` with ``architecture`` and ``pretrained_cfg``
    (or ``num_features``) -> timm; ``config.json`` with ``model_type`` -> transformers.

    Raises:
        CandidateError: none of these layouts.
    """
    d = Path(local_dir)
    if (d / "modules.json").is_file():
        return "sentence-transformers"
    cfg = _read_json(d / "config.json")
    if isinstance(cfg, dict):
        if "architecture" in cfg and ("pretrained_cfg" in cfg or "num_features" in cfg):
            return "timm"
        if "model_type" in cfg:
            return "transformers"
    raise CandidateError(
        f"cannot tell which library loads {d}: expected modules.json (sentence-transformers), or config.json with "
        "'architecture' + 'pretrained_cfg' (timm) or 'model_type' (transformers). Pass backend= explicitly."
    )


def infer_modality(local_dir: Path, backend: str, requested: str | None = None) -> str:
    """``"text"`` or ``"image"`` for a model folder. Dual encoders (CLIP-style: text and vision configs,
    tokenizer and image processor) take ``requested`` (default ``"image"``).

    Raises:
        CandidateSpecError: the model embeds only one modality and ``requested`` is the other.
    """
    d = Path(local_dir)
    if backend == "timm":
        found: tuple[str, ...] = ("image",)
    elif backend == "sentence-transformers":
        modules = _read_json(d / "modules.json") or []
        types = " ".join(str(m.get("type", "")) for m in modules if isinstance(m, dict))
        found = ("text", "image") if "CLIPModel" in types else ("text",)
    else:
        cfg = _read_json(d / "config.json") or {}
        has_tok = any((d / f).is_file() for f in _TOKENIZER_FILES)
        has_proc = (d / "preprocessor_config.json").is_file() or (d / "processor_config.json").is_file()
        dual = isinstance(cfg, dict) and "vision_config" in cfg and "text_config" in cfg
        if dual or (has_tok and has_proc):
            found = ("text", "image")
        elif has_proc or cfg.get("model_type") in _IMAGE_MODEL_TYPES:
            found = ("image",)
        else:
            found = ("text",)
    if requested is None:
        return "image" if "image" in found else found[0]
    if requested not in found:
        raise CandidateSpecError(
            f"{d.name} embeds {'/'.join(found)} but the data is {requested}: choose a {requested} model"
        )
    return requested


def _builtin_revision() -> str:
    from embedselect import __version__

    return f"builtin-{__version__}-v{BASELINE_VERSION}"


def resolve_candidate(c: Candidate, *, policy: LoadPolicy = LoadPolicy(), token: str | None = None) -> ResolvedCandidate:
    """Pin a candidate to exact bytes: a hub commit (downloading into the HF cache), a content hash of a
    local folder, or the built-in baseline version. No model is loaded.

    Args:
        c: the candidate.
        policy: safety policy passed to the hub fetch (checked again when loading).
        token: hub token, for private or gated repos.

    Raises:
        CandidateSpecError: missing local directory, or a model of the wrong modality.
        CandidateError: a folder no backend understands.
        HubError / UnsafeModelError: from the hub fetch (see ``embedselect.hub.fetch_model``).
    """
    if not isinstance(c, Candidate):
        raise CandidateSpecError(f"resolve_candidate needs a Candidate, got {type(c).__name__}; use parse_candidates()")
    if c.kind == "baseline":
        mods = BASELINES.get(c.ref)
        if mods is None:
            raise CandidateSpecError(f"unknown baseline {c.ref!r}: use one of {', '.join(BASELINES)}")
        modality = c.modality or str(c.options.get("modality") or mods[0])
        if modality not in mods:
            raise CandidateSpecError(f"baseline {c.ref!r} embeds {'/'.join(mods)} only, not {modality}")
        return ResolvedCandidate(c, f"baseline:{c.ref}", _builtin_revision(), None, c.ref, modality)
    requested = c.modality or c.options.get("modality")
    if c.kind == "local":
        d = Path(c.ref)
        revision = local_dir_revision(d)
        backend = c.backend or infer_backend(d)
        return ResolvedCandidate(c, f"local:{d}", revision, d, backend, infer_modality(d, backend, requested))
    try:
        from embedselect.hub import fetch_model
    except ImportError as exc:  # pragma: no cover - hub.py ships with embedselect
        raise HubError(f"hub support is unavailable ({exc}); reinstall embedselect") from exc
    fetched = fetch_model(c.ref, revision=c.revision, backend=c.backend, policy=policy, token=token)
    d = Path(fetched.local_dir)
    backend = c.backend or getattr(fetched, "backend", None) or _backend_from_files_or_library(d, fetched.library)
    modality = infer_modality(d, backend, requested)
    return ResolvedCandidate(c, fetched.repo_id, fetched.revision, d, backend, modality)


def _backend_from_files_or_library(d: Path, library: str | None) -> str:
    try:
        return infer_backend(d)
    except CandidateError:
        if library in BACKENDS:
            return library
        raise

"""Resolution: pin a :class:`Candidate` to exact bytes (:class:`ResolvedCandidate`): a hub commit sha (fetched into
the Hugging Face cache), a content hash of a local folder, or the built-in baseline version; and the rules that
tell a model folder's backend and modality from its files."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from embedselect.models.candidates.digests import file_sha256
from embedselect.models.candidates.model import Candidate, ResolvedCandidate
from embedselect.errors import CandidateError, CandidateSpecError, HubError
from embedselect._util.kinds import BACKENDS, BASELINE_PREFIX, BASELINE_VERSION, BASELINES
from embedselect.models.layout import TOKENIZER_FILES, model_folder_files, read_json
from embedselect.models.policy import LoadPolicy

def local_dir_revision(directory: Path, *, digest_dir: Path | None = None) -> str:
    """sha256 hex digest of a model folder's content: the relative path and the sha256 of the bytes of each file
    inside it (:func:`~embedselect.models.layout.model_folder_files`), so a copy of the folder elsewhere has the same
    revision (and so the same cache keys) and any changed byte gives another.

    Links are never followed out of the folder: a link leading out counts by its name and its target as written
    (a link to ``/`` is one entry, not a walk of the file system), and, when it names a regular file, by that file's
    size and mtime (never its bytes): new weights behind the same link are a new revision. Hidden caches (``.git``, ``__pycache__``,
    ``.cache``) are skipped. Every byte is hashed once: per-file digests are kept in memory, and with ``digest_dir``
    (the cache's ``digests/``) on disk for big files, by (device, inode, path, size, mtime)
    (:func:`~embedselect.models.candidates.digests.file_sha256`), so resolving an unchanged folder again reads no weights.

    Raises:
        CandidateSpecError: the directory does not exist.
    """
    root = Path(directory)
    if not root.is_dir():
        raise CandidateSpecError(f"local model directory {str(root)!r} does not exist")
    real = Path(os.path.realpath(root))
    if real == Path(real.anchor) or real == Path(os.path.realpath(Path.home())):
        raise CandidateSpecError(f"local model directory {str(root)!r} is the {'root' if real == Path(real.anchor) else 'home'} "
                                 "folder, not a model folder; name the folder that holds the model's files")
    total = hashlib.sha256()
    for rel, kind, value in model_folder_files(root):
        if kind == "file":
            total.update(rel.encode("utf-8") + b"\0" + file_sha256(Path(value), digest_dir).encode("ascii") + b"\n")
        else:
            total.update(rel.encode("utf-8") + b"\0link\0" + str(value).encode("utf-8", "surrogateescape")
                         + _outside_stamp(root / rel) + b"\n")
    return total.hexdigest()


def _outside_stamp(link: Path) -> bytes:
    """For a link out of a model folder to a regular file (weights kept elsewhere): the file's size and mtime, so
    that new weights behind the same link give a new revision (the loader reads them; the cache must not serve the
    old vectors). Its bytes are never read; a link to a folder, a device or nothing is only its name."""
    try:
        st = os.stat(link)
    except OSError:
        return b""
    return f"\0{st.st_size}:{st.st_mtime_ns}".encode() if stat.S_ISREG(st.st_mode) else b""


_IMAGE_MODEL_TYPES = {
    "vit", "dinov2", "deit", "beit", "convnext", "convnextv2", "swin", "swinv2", "resnet", "regnet",
    "efficientnet", "mobilevit", "levit", "dit", "data2vec-vision", "clip_vision_model", "siglip_vision_model",
    "vit_mae", "vit_msn", "dinov2_with_registers", "hiera", "pvt", "poolformer", "focalnet",
}


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
    cfg = read_json(d / "config.json")
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
        modules = read_json(d / "modules.json") or []
        types = " ".join(str(m.get("type", "")) for m in modules if isinstance(m, dict))
        found = ("text", "image") if "CLIPModel" in types else ("text",)
    else:
        cfg = read_json(d / "config.json") or {}
        has_tok = any((d / f).is_file() for f in TOKENIZER_FILES)
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
    from embedselect.version import __version__

    return f"builtin-{__version__}-v{BASELINE_VERSION}"


def resolve_candidate(c: Candidate, *, policy: LoadPolicy = LoadPolicy(), token: str | None = None,
                      digest_dir: Path | None = None) -> ResolvedCandidate:
    """Pin a candidate to exact bytes: a hub commit (downloading into the HF cache), a content hash of a
    local folder, or the built-in baseline version; a hosted API (``openai:MODEL``) has only the ``?revision=`` its
    user gave (``""`` without one) and the model id ``openai:HOST/MODEL``. No model is loaded, no API called.

    Args:
        c: the candidate.
        policy: safety policy passed to the hub fetch (checked again when loading).
        token: hub token, for private or gated repos.
        digest_dir: where the file digests of local folders are kept between processes (see
            :func:`local_dir_revision`); None: in memory only.

    Raises:
        CandidateSpecError: missing local directory, or a model of the wrong modality.
        CandidateError: a folder no backend understands.
        HubError / UnsafeModelError: from the hub fetch (see ``embedselect.models.hub.fetch_model``).
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
        return ResolvedCandidate(c, f"{BASELINE_PREFIX}{c.ref}", _builtin_revision(), None, c.ref, modality)
    requested = c.modality or c.options.get("modality")
    if c.kind == "api":  # a hosted model: no bytes to pin; the user's ?revision= is all the revision there is
        from embedselect.models.backends.openai_api import base_url_host

        if requested not in (None, "text"):
            raise CandidateSpecError(f"{c.name} is an embedding API, which embeds text, but the data is {requested}")
        return ResolvedCandidate(c, f"openai:{base_url_host(c.options)}/{c.ref}", c.revision or "", None, "openai",
                                 "text")
    if c.kind in ("embedder", "vectors"):  # an embedder by the model it embeds with (parse_candidates sets its ref)
        model = c.ref if c.kind == "embedder" else c.name
        return ResolvedCandidate(c, f"{c.kind}:{model}", _user_revision(c), None, c.kind, str(requested or "text"))
    if c.kind == "local":
        d = Path(c.ref)
        # which library loads it, before any byte is hashed: a folder that holds no model (`-m ~`, `-m /`) is
        # refused at once instead of having every file under it read
        backend = c.backend or (infer_backend(d) if d.is_dir() else None)
        revision = local_dir_revision(d, digest_dir=digest_dir)
        backend = backend or infer_backend(d)
        return ResolvedCandidate(c, f"local:{d}", revision, d, backend, infer_modality(d, backend, requested))
    try:
        from embedselect.models.hub import fetch_model
    except ImportError as exc:  # pragma: no cover - hub.py ships with embedselect
        raise HubError(f"hub support is unavailable ({exc}); reinstall embedselect") from exc
    fetched = fetch_model(c.ref, revision=c.revision, backend=c.backend, policy=policy, token=token)
    d = Path(fetched.local_dir)
    backend = c.backend or getattr(fetched, "backend", None) or _backend_from_files_or_library(d, fetched.library)
    modality = infer_modality(d, backend, requested)
    return ResolvedCandidate(c, fetched.repo_id, fetched.revision, d, backend, modality)


def _user_revision(c: Candidate) -> str:
    """The revision of a candidate the user brings: an embedder's own ``revision`` (``""`` without one: its vectors
    are then kept for the run only); for precomputed vectors, the sha256 of their file's bytes or of the array
    (a mapping: of its ids and vectors)."""
    if c.kind == "embedder":
        return c.revision or ""
    if c.revision:
        return c.revision
    if isinstance(c.vectors, Path):
        return file_sha256(c.vectors, None)
    import numpy as np

    h = hashlib.sha256()
    if isinstance(c.vectors, dict):
        for key in sorted(c.vectors):
            h.update(str(key).encode("utf-8", "surrogateescape") + b"\0")
            h.update(np.ascontiguousarray(np.asarray(c.vectors[key], dtype=np.float64)).tobytes())
    else:
        arr = np.ascontiguousarray(np.asarray(c.vectors, dtype=np.float64))
        h.update(str(arr.shape).encode() + arr.tobytes())
    return h.hexdigest()


def _backend_from_files_or_library(d: Path, library: str | None) -> str:
    try:
        return infer_backend(d)
    except CandidateError:
        if library in BACKENDS:
            return library
        raise

"""Which files of a hub repo a backend needs, and the safe-loading rules applied to them (remote code,
pickle-only weights, size cap, gated repos)."""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from embedselect.errors import CandidateError, ConfigError, UnsafeModelError
from embedselect._util.kinds import BACKENDS
from embedselect.models.layout import ST_NO_MODULES_JSON, TOKENIZER_FILES
from embedselect.models.policy import (ADAPTER_CONFIG, TRANSFORMERS_MODULES, WEIGHTS_READ_ORDER, LoadPolicy,
                                       WeightsReader, is_safetensors, remedy, split_weights, weights_read)




_PROCESSOR_FILES = frozenset({"preprocessor_config.json", "processor_config.json", "image_processor_config.json"})


_ST_CONFIG_FILES = frozenset(
    {"modules.json", "sentence_bert_config.json", "config_sentence_transformers.json", "config.json",
     "router_config.json"}
)




_LAYOUT_FILES = ("config.json", "modules.json", "router_config.json")
"""The files at a repo's root that say how the rest is read (remote code, ``transformers_weights``, a
sentence-transformers model's module folders): downloaded and read before anything else (:func:`layout_files`)."""


def infer_backend(library: str | None, tags: Sequence[str] = (), files: Iterable[str] = ()) -> str | None:
    """The backend for a repo: from ``library_name``, then tags, then the files present; None if unknown."""
    if library in BACKENDS:
        return library
    tagset = set(tags or ())
    for b in BACKENDS:
        if b in tagset:
            return b
    fileset = set(files)
    if "modules.json" in fileset:
        return "sentence-transformers"
    if "config.json" in fileset and ("pytorch_model.bin" in fileset or "model.safetensors" in fileset):
        return "transformers"
    return None


def _weights_in(files: Iterable[str], folder: str, reader: WeightsReader) -> tuple[list[str], list[str]]:
    """(the safetensors files ``reader`` reads, the pickle weights) directly inside ``folder`` (repo-relative), by
    the one rule for what a weight file is (:func:`~embedselect.models.policy.split_weights`, the loader's too): of
    the folder's safetensors, the one ``reader`` reads (:func:`~embedselect.models.policy.weights_read`:
    ``model.safetensors``, timm's ``open_clip_model.safetensors``, ...) and, when that is a shard index, every other
    safetensors file beside it (its shards); a PEFT adapter's weights (``adapter_model.*``) are left out of both, as
    they are the adapter's (:func:`select_files`)."""
    adapter = set(WEIGHTS_READ_ORDER["adapter"])
    prefix = f"{folder}/" if folder else ""
    names = [f[len(prefix):] for f in files if f.rpartition("/")[0] == folder and f[len(prefix):] not in adapter]
    safe, pickle = split_weights(names)
    read = weights_read(reader, safe)
    chosen = [] if read is None else [n for n in safe if n == read or (read.endswith(".index.json") and
                                                                         n.endswith(".safetensors"))]
    return [prefix + n for n in chosen], [prefix + n for n in pickle]


def adapter_alone(files: Iterable[str]) -> bool:
    """Whether a repo of the files ``files`` is a PEFT adapter alone: ``adapter_config.json`` at its root, and no
    weights of the model it adapts there (no safetensors transformers reads, no pickle weights: :func:`_weights_in`)
    nor a Router's ``router_config.json`` (whose weights are in its routes' folders). transformers would fetch that
    model by the name the adapter records, past every check of the fetch; :class:`~embedselect.errors.AdapterOnlyError`
    says so."""
    files = list(files)
    safe, pickle = _weights_in(files, "", "transformers")
    return ADAPTER_CONFIG in files and not safe and not pickle and "router_config.json" not in files


def layout_files(backend: str, files: Iterable[str], modules: Mapping[str, str] | None = None) -> list[str]:
    """The small files of a repo (listing ``files``) that decide which of its other files ``backend`` needs and
    whether it may load them, to be downloaded and read first: ``config.json`` (and for sentence-transformers
    ``modules.json`` and a root ``router_config.json``); with ``modules`` (the module folders read from them,
    :func:`~embedselect.models.layout.module_types`) also the ``router_config.json`` of each module folder, a Router
    saved below the root (``0_Router/router_config.json``). Sorted."""
    fileset = set(files)
    names = list(_LAYOUT_FILES) if backend == "sentence-transformers" else ["config.json"]
    names += [f"{m}/router_config.json" for m in modules or {} if m]
    return sorted(f for f in set(names) if f in fileset)


def select_files(
    repo_id: str, backend: str, files: Iterable[str], *, allow_pickle: bool = False,
    modules: Mapping[str, str] | None = None,
) -> tuple[list[str], list[str]]:
    """The repo files ``backend`` needs, and which of them are weights.

    sentence-transformers: ``modules.json``, ST configs, ``config.json``, tokenizer files, and the files of each module
    folder ``modules`` names (the one rule, :func:`~embedselect.models.layout.module_types` of the repo's
    ``modules.json`` and ``router_config.json`` files: ``1_Pooling/``, ``mods/2_Dense/``, a Router's routes
    ``query_0_Transformer/`` or, for a Router saved below the root, ``0_Router/query_0_Transformer/``; None: read as
    a repo without ``modules.json``, one ``Transformer`` at the root): each folder's configs, tokenizer files and
    weights, not its subfolders. The root needs weights when a module other than a ``Router`` is read from it. timm:
    ``config.json`` + weights. transformers: ``config.json``, tokenizer / processor files, weights. A weight file is
    what the loader counts as one (:func:`_weights_in`, by suffix: training state such as ``training_args.bin`` is
    not). Safetensors are preferred, in every folder (the one its library reads); pickle weights are taken only when
    a folder has none and ``allow_pickle`` (timm's: the one it reads, ``pytorch_model.bin``, ``model.pth``, ...).
    A PEFT adapter (``adapter_config.json``) at the root of a transformers or sentence-transformers repo, or in the
    folder of a sentence-transformers module that transformers reads (:data:`~embedselect.models.policy.
    TRANSFORMERS_MODULES`: ``0_Transformer/``, a route's ``query_0_Transformer/``), is taken with the weights
    transformers reads of it (``weights_read("adapter")``), a pickle only with ``allow_pickle``: left behind, the model
    would load without it. Every backend also takes the model card, ``README.md``, when the repo
    has one (:mod:`embedselect.models.candidates.card` reads its ``base_model``).

    Returns:
        (files to download, the weight files among them), both sorted.

    Raises:
        UnsafeModelError(reason="pickle_only"): a folder holds only pickle weights and ``allow_pickle`` is False.
        CandidateError: the repo lacks what the backend needs (no config, no weights).
    """
    if backend not in BACKENDS:
        raise ConfigError(f"unknown backend {backend!r} for {repo_id}; use one of: {', '.join(BACKENDS)}")
    files = sorted(set(files))
    fileset = set(files)
    wanted: set[str] = set()
    weights: set[str] = set()

    def take_weights(folder: str, required: bool, reader: WeightsReader) -> None:
        safe, pickle = _weights_in(files, folder, reader)
        where = f"{folder}/" if folder else "the repo root"
        if safe:  # the pickles are left behind, so the library reads these
            chosen = safe
        elif pickle and allow_pickle:  # timm reads one file; the others read every pickle (shards and their index)
            read = weights_read(reader, [p.rpartition("/")[2] for p in pickle]) if reader == "timm" else None
            chosen = [p for p in pickle if p.rpartition("/")[2] == read] if read else pickle
        elif pickle:
            raise UnsafeModelError(
                f"{repo_id} ships only pickle weights ({', '.join(pickle)}) in {where}; loading them can run "
                f"arbitrary code. {remedy('allow_pickle', repo_id)} if you trust it.",
                reason="pickle_only",
            )
        elif required:
            raise CandidateError(
                f"{repo_id} has no weight files (model.safetensors or shards) in {where}; it cannot be "
                f"loaded with the {backend} backend. Pick another model or backend."
            )
        else:
            chosen = []
        wanted.update(chosen)
        weights.update(c for c in chosen if not c.endswith(".json"))

    def take_adapter(folder: str = "") -> None:  # in a folder transformers reads (the loader's _reader, one rule)
        prefix = f"{folder}/" if folder else ""
        if prefix + ADAPTER_CONFIG not in fileset:
            return
        wanted.add(prefix + ADAPTER_CONFIG)
        adapter = weights_read("adapter", [f[len(prefix):] for f in files if f.rpartition("/")[0] == folder])
        if adapter is not None and not is_safetensors(adapter) and not allow_pickle:
            raise UnsafeModelError(
                f"{repo_id} is a PEFT adapter whose weights are a pickle ({prefix}{adapter}); loading them can run "
                f"arbitrary code. {remedy('allow_pickle', repo_id)} if you trust it.",
                reason="pickle_only",
            )
        if adapter is not None:
            wanted.add(prefix + adapter)
            weights.add(prefix + adapter)

    root = [f for f in files if "/" not in f]
    if backend == "timm":
        if "config.json" not in fileset:
            raise CandidateError(f"{repo_id} has no config.json, which timm needs. Is it a timm model?")
        wanted.add("config.json")
        take_weights("", True, "timm")  # an open_clip checkpoint's open_clip_model.safetensors too: timm reads it
    elif backend == "transformers":
        if "config.json" not in fileset:
            raise CandidateError(f"{repo_id} has no config.json, which transformers needs.")
        wanted.update(f for f in root if f == "config.json" or f in TOKENIZER_FILES or f in _PROCESSOR_FILES)
        take_adapter()
        take_weights("", True, "transformers")
    else:  # sentence-transformers
        if "modules.json" not in fileset and "config.json" not in fileset:
            raise CandidateError(f"{repo_id} has neither modules.json nor config.json; is it a sentence-transformers model?")
        wanted.update(f for f in root if f in _ST_CONFIG_FILES or f in TOKENIZER_FILES or f in _PROCESSOR_FILES)
        modules = {"": ST_NO_MODULES_JSON} if modules is None else modules
        take_adapter()  # a Router's weights are in its routes' folders, not in the folder of its router_config.json
        take_weights("", "" in modules and modules[""].rpartition(".")[2] != "Router", "transformers")
        for folder in sorted(m for m in modules if m):
            inside = [f for f in files if f.rpartition("/")[0] == folder]
            wanted.update(f for f in inside if f.endswith((".json", ".txt", ".model")) and not f.endswith(".index.json"))
            transformer = modules[folder].rpartition(".")[2] in TRANSFORMERS_MODULES  # transformers reads its folder
            take_weights(folder, False, "transformers" if transformer else "module")
            if transformer:  # and loads the adapter beside its weights
                take_adapter(folder)
        if not weights:
            raise CandidateError(
                f"{repo_id} has no weight files (model.safetensors or shards) in the folders its modules.json names "
                f"({', '.join(sorted(f'{m}/' if m else 'the repo root' for m in modules)) or 'none'}); it cannot be "
                f"loaded with the {backend} backend. Pick another model or backend."
            )
    if "README.md" in fileset:  # the model card: what it was made from (embedselect.models.candidates.card)
        wanted.add("README.md")
    return sorted(wanted), sorted(weights)


def check_explicit_weights(repo_id: str, backend: str, config: Any, policy: LoadPolicy) -> None:
    """Refuse a repo whose root ``config.json`` (``config``) names pickle weights in ``transformers_weights``, which
    transformers' ``from_pretrained`` reads instead of its own order (``weights_read``'s ``explicit``) at the root of a
    transformers or sentence-transformers repo, unless ``policy.allow_pickle``. Called once the config is downloaded,
    before any weights are.

    Raises:
        UnsafeModelError(reason="pickle_only"): the named file is a pickle."""
    explicit = config.get("transformers_weights") if isinstance(config, dict) and backend != "timm" else None
    if not isinstance(explicit, str) or policy.allow_pickle:
        return
    read = weights_read("transformers", (), explicit)
    if not is_safetensors(read):
        raise UnsafeModelError(
            f"{repo_id}'s config.json names pickle weights for transformers to read (transformers_weights: {read}); "
            f"loading them can run arbitrary code. {remedy('allow_pickle', repo_id)} if you trust it.",
            reason="pickle_only",
        )


def check_policy(
    repo_id: str,
    policy: LoadPolicy,
    *,
    gated: Any,
    remote_reason: str | None,
    weights: Sequence[str],
    sizes: Mapping[str, int | None],
) -> None:
    if gated and not policy.allow_gated:
        raise UnsafeModelError(
            f"{repo_id} is gated ({gated}); embedselect skips gated repos by default. "
            f"{remedy('allow_gated', repo_id)}, with a token that has access.",
            reason="gated",
        )
    if remote_reason and not policy.trust_remote_code:
        raise UnsafeModelError(
            f"{repo_id} needs remote code: {remote_reason}. Running it executes code from the repo. "
            f"{remedy('trust_remote_code', repo_id)}.",
            reason="remote_code",
        )
    if policy.max_bytes is not None:
        total = sum(int(sizes.get(w) or 0) for w in weights)
        if total > policy.max_bytes:
            raise UnsafeModelError(
                f"{repo_id}: its weight files are {total / 1e6:.1f} MB, over the cap of "
                f"{policy.max_bytes / 1e6:.1f} MB. {remedy('max_bytes', repo_id)}.",
                reason="too_large",
            )

"""``load_embedder``: the one way to turn a :class:`~embedselect.models.candidates.ResolvedCandidate` into an
:class:`~embedselect.models.backends.base.Embedder`, applying the safe-loading policy to the files first."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Mapping, Sequence

from embedselect.models.backends.base import Embedder
from embedselect.models.backends.device import resolve_device
from embedselect._util.kinds import REDUCTION_OPTIONS
from embedselect.errors import ConfigError, EmbedselectError, ModelLoadError, UnsafeModelError
from embedselect._util.kinds import BACKENDS, BASELINES, is_baseline_id
from embedselect.models.layout import module_types, read_json
from embedselect.models.policy import (ADAPTER_CONFIG, TRANSFORMERS_MODULES, LoadPolicy, WeightsReader,
                                       is_safetensors, remedy, remote_code_reason, split_weights, weight_kind,
                                       weights_read)

log = logging.getLogger(__name__)



def weight_bytes(local_dir: Path) -> int | None:
    """Bytes of the weight files in a model folder and its module folders (safetensors and pickle weights, not
    training state), or None when there are none: the model's size as a cost."""
    d = Path(local_dir)
    if not d.is_dir():
        return None
    total = sum(p.stat().st_size for p in d.rglob("*") if p.is_file() and weight_kind(p.name) is not None)
    return total or None


def parameter_count(local_dir: Path) -> int | None:
    """The parameters of the model in a folder (its safetensors files, module folders included: the product of each
    tensor's shape, read from the files' headers; no weights are loaded), or None when it has no safetensors file or
    one cannot be read."""
    d = Path(local_dir)
    if not d.is_dir():
        return None
    files = sorted(p for p in d.rglob("*.safetensors") if p.is_file())
    if not files:
        return None
    from safetensors import safe_open

    total = 0
    try:
        for path in files:
            with safe_open(str(path), framework="numpy") as f:
                for name in f.keys():
                    n = 1
                    for size in f.get_slice(name).get_shape():
                        n *= int(size)
                    total += n
    except Exception:  # noqa: BLE001 - a cost shown beside the scores: an unreadable header leaves it unknown
        return None
    return total


def object_parameter_count(obj: Any) -> int | None:
    """The parameter count of a user's embedder object that is a torch module (``parameters()``), else None."""
    params = getattr(obj, "parameters", None)
    if not callable(params):
        return None
    try:
        return int(sum(int(p.numel()) for p in params()))
    except Exception:  # noqa: BLE001 - the user's object: anything else is "not known"
        return None


def check_local_files(local_dir: Path, backend: str, policy: LoadPolicy, model_id: str) -> None:
    """Refuse a model folder that ``policy`` does not allow, before any library touches it.

    Checks, per folder that holds weights (the root and the module folders, :func:`_module_folders`): pickle weights
    (``.bin``/``.pt``/``.pth``/``.ckpt``, not training state: :func:`~embedselect.models.policy.weight_kind`, the
    rule the hub fetch reads too) need ``allow_pickle`` unless the file the library reads there is safetensors
    (:func:`~embedselect.models.policy.weights_read`, by the folder's reader, :func:`_reader`): transformers reads
    ``model.safetensors``, then its shards' index (whose shards must all be safetensors), then ``pytorch_model.bin``;
    timm reads ``model.safetensors``, ``pytorch_model.bin``, ..., ``open_clip_model.safetensors``, ...; a
    sentence-transformers module folder other than a ``Transformer`` reads ``model.safetensors`` else
    ``pytorch_model.bin``. A safetensors file the library does not read first does not count: timm reads
    ``pytorch_model.bin`` before ``open_clip_model.safetensors``, a ``Dense`` folder never reads a shard index.
    Custom code (``auto_map`` in a ``config.json``, or a ``modules.json`` module type outside
    ``sentence_transformers.``) needs ``trust_remote_code``. A PEFT adapter in a folder transformers reads
    (:func:`_check_adapter`) needs ``allow_pickle`` when its weights are a pickle, and peft installed.

    Raises:
        UnsafeModelError: ``reason="pickle_only"`` or ``reason="remote_code"``; the message names the option.
        ModelLoadError: the folder is missing or has no weight files at all, or holds a PEFT adapter and peft is
            not installed.
    """
    d = Path(local_dir)
    if not d.is_dir():
        raise ModelLoadError(f"{model_id}: model folder {d} does not exist (was the cache cleaned?)")
    if not policy.trust_remote_code:
        why = _remote_code_reason(d)
        if why:
            raise UnsafeModelError(
                f"{model_id} needs custom code from the model folder ({why}); running it executes arbitrary "
                f"Python. {remedy('trust_remote_code', model_id)} if you trust it.",
                reason="remote_code",
            )
    types = _module_types(d) if backend == "sentence-transformers" else {}
    folders = [d] + _module_folders(d)
    any_weights = False
    for folder in folders:
        names = {p.name for p in folder.iterdir() if p.is_file()}
        safe, pickles = split_weights(names)  # the one rule, the hub fetch's too
        any_weights = any_weights or bool(safe or pickles)
        reader = _reader(d, folder, backend, types)
        if reader == "transformers" and ADAPTER_CONFIG in names:
            _check_adapter(folder.relative_to(d).as_posix(), names, backend, policy, model_id)
        if not pickles or policy.allow_pickle:
            continue
        config = read_json(folder / "config.json") if reader == "transformers" else None
        explicit = config.get("transformers_weights") if isinstance(config, dict) else None
        first = weights_read(reader, names, explicit if isinstance(explicit, str) else None)
        unsafe = _unsafe_shards(folder, first) if first is not None and is_safetensors(first) else []
        if is_safetensors(first) and not unsafe:
            continue
        where = "the model folder" if folder == d else f"{folder.relative_to(d).as_posix()}/"
        pickled = ", ".join(pickles)
        if unsafe:
            what = (f"has a shard index in {where} ({first}) that names pickle shards ({', '.join(unsafe)}), which "
                    f"the {backend} backend unpickles")
        elif first is not None and safe:
            what = (f"has pickle weights in {where} ({pickled}) that the {backend} backend reads ({first}) before "
                    f"the safetensors beside them ({', '.join(safe)})")
        else:
            what = f"has only pickle weights in {where} ({pickled})" if not safe else (
                f"has pickle weights in {where} ({pickled}) and safetensors the {backend} backend does not read "
                f"there ({', '.join(safe)})")
        convert = weights_read(reader, {n for n in names if is_safetensors(n)} | {"model.safetensors"})
        raise UnsafeModelError(
            f"{model_id} {what}; unpickling can run arbitrary code. {remedy('allow_pickle', model_id)} if you "
            f"trust it, or convert it to safetensors ({convert}).",
            reason="pickle_only",
        )
    if not any_weights:
        raise ModelLoadError(
            f"{model_id}: no weight files (*.safetensors) in {d}; the {backend} backend cannot load it"
        )


def _check_adapter(where: str, names: set[str], backend: str, policy: LoadPolicy, model_id: str) -> None:
    """Check the PEFT adapter (:data:`~embedselect.models.policy.ADAPTER_CONFIG`) in the folder ``where`` (relative
    to the model folder, ``.`` for its root) holding the files ``names``, which transformers reads: with peft
    installed, ``from_pretrained`` loads the adapter's weights after the model's (``weights_read("adapter")``:
    ``adapter_model.safetensors``, else ``adapter_model.bin``, unpickled although the backend passes
    ``use_safetensors=True``); without peft, transformers loads the model alone, the adapter left out, and
    sentence-transformers fails.

    Raises:
        UnsafeModelError: ``reason="pickle_only"``: the adapter's weights that would be read are a pickle and
            ``policy`` does not allow pickle (whether or not peft is installed).
        ModelLoadError: peft is not installed, so the adapter would not be applied (the vectors would be the
            base model's, ranked under the adapter's name)."""
    place = "the model folder" if where == "." else f"{where}/"
    adapter = weights_read("adapter", names)
    if adapter is not None and not is_safetensors(adapter) and not policy.allow_pickle:
        raise UnsafeModelError(
            f"{model_id} has a PEFT adapter in {place} whose weights are a pickle ({adapter}); unpickling can run "
            f"arbitrary code. {remedy('allow_pickle', model_id)} if you trust it, or convert it to safetensors "
            "(adapter_model.safetensors).",
            reason="pickle_only",
        )
    if not _peft_available():
        raise ModelLoadError(
            f"{model_id} is a PEFT adapter ({ADAPTER_CONFIG} in {place}), and the peft package is not installed: "
            f"the {backend} backend would not apply the adapter (transformers loads the model without it, so the "
            "vectors would not be the adapter's). Install peft, or merge the adapter into its model (peft's "
            "merge_and_unload, then save_pretrained) and rank that folder."
        )


def _peft_available() -> bool:
    """Whether peft is installed as transformers sees it (``is_peft_available``, what decides whether
    ``from_pretrained`` loads an adapter)."""
    from transformers.utils import is_peft_available

    return bool(is_peft_available())


def _reader(d: Path, folder: Path, backend: str, types: Mapping[Path, str]) -> WeightsReader:
    """What reads the weights of ``folder`` in the model folder ``d``: timm at a timm model's root, transformers at
    any other root and in the folder of a sentence-transformers module whose class (``types``, the model's
    :func:`_module_types`: its ``modules.json`` or ``router_config.json`` type) is in
    :data:`~embedselect.models.policy.TRANSFORMERS_MODULES` (``Transformer``, ``CLIPModel``, ...), the module's own
    loader (``model.safetensors`` else ``pytorch_model.bin``) in every other folder."""
    if folder == d:
        return "timm" if backend == "timm" else "transformers"
    kind = types.get(folder) if backend == "sentence-transformers" else None
    return "transformers" if kind is not None and kind.rpartition(".")[2] in TRANSFORMERS_MODULES else "module"


def _module_types(d: Path) -> dict[Path, str]:
    """The module type of each module folder below the sentence-transformers model folder ``d``
    (:func:`~embedselect.models.layout.module_types`, the one rule: ``modules.json``'s paths and each Router's routes,
    at any depth), the root itself left out.

    Raises:
        ModelFileError: ``modules.json`` or a ``router_config.json`` is damaged (not JSON)."""
    def read(rel: str) -> Any:
        path = d / rel
        return read_json(path) if path.parent.is_dir() else None

    return {d / rel: kind for rel, kind in module_types(read).items() if rel}


def _unsafe_shards(folder: Path, first: str) -> list[str]:
    """The shards a safetensors shard index ``first`` in ``folder`` names that are not safetensors (transformers
    unpickles a ``.bin`` shard an index names, whatever the index's own name), sorted; [] for a single file.

    Raises:
        ModelFileError: the index is damaged (not JSON)."""
    if not first.endswith(".index.json"):
        return []
    index = read_json(folder / first)
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    shards = weight_map.values() if isinstance(weight_map, dict) else ()
    return sorted({str(s) for s in shards if not is_safetensors(str(s))})


def _module_folders(d: Path) -> list[Path]:
    """The folders of the model folder ``d`` whose files a library may load, sorted: each folder directly inside
    it (a link to a folder elsewhere too: the libraries follow it, as sentence-transformers does ``2_Dense``), and
    each module folder its ``modules.json`` or a Router's ``router_config.json`` names (:func:`_module_types`; which
    may lie deeper: ``mods/2_Dense``, ``0_Router/query_0_Transformer``).

    Raises:
        ModelFileError: ``modules.json`` or a ``router_config.json`` is damaged (not JSON)."""
    found = {p for p in d.iterdir() if p.is_dir() and not p.name.startswith(".")}
    found.update(p for p in _module_types(d) if p.is_dir())
    return sorted(found)


def _remote_code_reason(d: Path) -> str | None:
    """:func:`~embedselect.models.policy.remote_code_reason` for a local folder: its (and its module folders',
    :func:`_module_folders`) ``config.json`` and ``router_config.json``, and its ``modules.json``.

    Raises:
        ModelFileError: one of these files is damaged (not JSON), so what it asks for cannot be checked."""
    modules = read_json(d / "modules.json")
    for folder in [d, *_module_folders(d)]:
        where = "" if folder == d else f"{folder.relative_to(d).as_posix()}/: "
        why = remote_code_reason(config=read_json(folder / "config.json"), modules=modules if folder == d else None)
        why = why or remote_code_reason(router=read_json(folder / "router_config.json"))
        if why:
            return where + why
    return None


def load_embedder(
    rc: Any,
    *,
    device: str | None = None,
    policy: LoadPolicy = LoadPolicy(),
    options: Mapping[str, Any] | None = None,
    seed: int = 0,
    fit_items: Sequence[Any] | None = None,
    fit_state: Mapping[str, Any] | None = None,
) -> Embedder:
    """Load the embedder for a resolved candidate.

    Args:
        rc: :class:`~embedselect.models.candidates.ResolvedCandidate`.
        device: ``None``/``"auto"`` = CUDA when available, else CPU. Baselines always run on CPU.
        policy: safety policy; ``policy.for_model(rc.model_id)`` applies.
        options: backend options; default the candidate's own options (these override them).
        seed: seed of the baselines (ignored by the deterministic neural backends).
        fit_items: for ``tfidf-svd`` / ``pixel-pca``: fit once on these items (default: fit on each
            :meth:`embed` call's items).
        fit_state: for ``tfidf-svd`` / ``pixel-pca``: a saved fit (the embedder's ``fit_state()`` arrays), used
            as it is (no refit).

    Returns:
        an object implementing :class:`~embedselect.models.backends.base.Embedder`; neural models run in float16
        on CUDA (``settings()["dtype"]``) unless ``options["dtype"]`` says otherwise.

    Raises:
        UnsafeModelError: pickle-only weights or custom code that ``policy`` forbids.
        ModelLoadError: the library failed to load the model (the reason is in the message).
        ConfigError: unknown backend, option or device.
    """
    opts = {**dict(getattr(rc.candidate, "options", {}) or {}), **dict(options or {})}
    opts.pop("modality", None)
    for computed in REDUCTION_OPTIONS:  # computed from the model's vectors by the run (backends.reduce), not by it
        opts.pop(computed, None)
    backend = rc.backend
    if getattr(rc.candidate, "kind", None) == "embedder":  # the user's own object: nothing to load, nothing to check
        from embedselect.models.backends.custom import ObjectEmbedder

        return ObjectEmbedder(rc.candidate.embedder, name=rc.candidate.name, modality=rc.modality,
                              revision=rc.candidate.revision)
    if getattr(rc.candidate, "kind", None) == "api":  # a hosted model: nothing to load; the key is read per call
        from embedselect.models.backends.openai_api import ApiEmbedder

        return ApiEmbedder(rc.candidate.ref, name=rc.candidate.name, options=opts)
    if is_baseline_id(rc.model_id) or backend in BASELINES:
        from embedselect.models.backends.baselines import make_baseline

        return make_baseline(backend, modality=rc.modality, options=opts, seed=seed, fit_items=fit_items,
                             fit_state=fit_state)
    if backend not in BACKENDS:
        raise ConfigError(f"unknown backend {backend!r} for {rc.model_id}: use one of {', '.join(BACKENDS)}")
    if rc.local_dir is None:
        raise ModelLoadError(f"{rc.model_id}: no local folder to load from; resolve the candidate first")
    dev = resolve_device(device)
    ref = getattr(rc.candidate, "ref", rc.model_id)
    pol = policy.for_model(rc.model_id).for_model(ref)  # opt-in by model id or by the candidate's ref/path
    check_local_files(Path(rc.local_dir), backend, pol, ref)
    try:
        if backend == "sentence-transformers":
            from embedselect.models.backends.sentence_transformers import SentenceTransformerEmbedder

            return SentenceTransformerEmbedder(rc.local_dir, device=dev, modality=rc.modality,
                                               trust_remote_code=pol.trust_remote_code,
                                               allow_pickle=pol.allow_pickle, options=opts)
        if backend == "timm":
            if rc.modality != "image":
                raise ConfigError(f"{rc.model_id}: timm models embed images, not {rc.modality}")
            from embedselect.models.backends.timm import TimmEmbedder

            return TimmEmbedder(rc.local_dir, device=dev, options=opts)
        from embedselect.models.backends.transformers import TransformersEmbedder

        return TransformersEmbedder(rc.local_dir, device=dev, modality=rc.modality,
                                    trust_remote_code=pol.trust_remote_code, allow_pickle=pol.allow_pickle,
                                    options=opts)
    except EmbedselectError:
        raise
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as exc:  # noqa: BLE001 - any library failure becomes one typed error with its reason
        log.debug("loading %s failed", rc.model_id, exc_info=True)
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise ModelLoadError(
            f"{rc.model_id}@{rc.revision[:12]} could not be loaded with the {backend} backend: "
            f"{type(exc).__name__}: {msg[:500]}. Check that the folder is a complete {backend} model, or pass "
            f"another backend (?backend=...)."
        ) from exc

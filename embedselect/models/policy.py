"""Safety policy for loading models: safe by default, each risk unlockable explicitly."""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from typing import Any, Collection, Iterable, Iterator, Literal, Sequence

from embedselect.config import DEFAULT_MAX_MODEL_BYTES, LoadPolicy  # the policy is part of the run configuration

PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")
"""Weight files that are unpickled on load (arbitrary code): refused unless ``allow_pickle``."""

WeightsReader = Literal["transformers", "timm", "module", "adapter"]
"""What reads a folder's weights: ``transformers`` (``from_pretrained``: a transformers model's root, a
sentence-transformers model's root and its module folders of a type in :data:`TRANSFORMERS_MODULES`), ``timm``
(``create_model("local-dir:")`` at a timm model's root), ``module`` (any other sentence-transformers module folder:
``Module.load_torch_weights``) or ``adapter`` (a PEFT adapter beside a transformers model's weights,
:data:`ADAPTER_CONFIG`: transformers' ``load_adapter``, which ``from_pretrained`` calls when peft is installed)."""

TRANSFORMERS_MODULES = frozenset({"Transformer", "CLIPModel", "MLMTransformer"})
"""The sentence-transformers module classes whose folder transformers' ``from_pretrained`` reads (the reader
``transformers``): ``Transformer`` and its subclasses in sentence-transformers 6.2, the legacy ``CLIPModel``
(``sentence_transformers.models.CLIPModel``, a ``Transformer`` since 5.4) and the sparse encoders'
``MLMTransformer``. Every other module class reads its folder with ``Module.load_torch_weights`` (``module``)."""

ADAPTER_CONFIG = "adapter_config.json"
"""The file that makes a folder read by transformers a PEFT adapter: with peft installed, ``from_pretrained`` (and
sentence-transformers' ``Transformer``) then loads the adapter's weights too (:data:`WEIGHTS_READ_ORDER`
``adapter``); without peft transformers loads the model without the adapter, and sentence-transformers fails."""

WEIGHTS_READ_ORDER: dict[str, tuple[str, ...]] = {
    "transformers": ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                     "pytorch_model.bin.index.json"),
    "timm": ("model.safetensors", "pytorch_model.bin", "pytorch_model.pth", "model.pth", "open_clip_model.safetensors",
             "open_clip_pytorch_model.safetensors", "open_clip_pytorch_model.bin", "open_clip_pytorch_model.pth"),
    "module": ("model.safetensors", "pytorch_model.bin"),
    "adapter": ("adapter_model.safetensors", "adapter_model.bin"),
}
"""The weight files each reader looks for, in the order it looks (read from the installed libraries: transformers
5's ``_get_resolved_checkpoint_files``, timm 1.0's ``_hub._PREFERRED_FILES``, sentence-transformers 6's
``Module.load_torch_weights``, transformers 5's ``PeftAdapterMixin.load_adapter``, which falls back to
``adapter_model.bin`` even when called with ``use_safetensors=True``); the first one present is the one read."""

_TIMM_FALLBACK = (".safetensors", ".pth", ".pth.tar", ".bin")
"""timm's ``_EXT_PRIORITY``: with none of its preferred names present, it reads the first file (sorted) of the first
of these suffixes present."""


def weights_read(reader: WeightsReader, names: Collection[str], explicit: str | None = None) -> str | None:
    """The weight file ``reader`` reads from a folder holding the files ``names`` (the first of
    :data:`WEIGHTS_READ_ORDER` present; timm then falls back to the first file by suffix), or None when it reads
    none. ``explicit``: a transformers ``config.json``'s ``transformers_weights``, which transformers reads instead.
    The one rule for which file a library reads: pickle weights are refused unless this is safetensors
    (:func:`is_safetensors`)."""
    if reader == "transformers" and explicit:
        return explicit
    for name in WEIGHTS_READ_ORDER[reader]:
        if name in names:
            return name
    if reader == "timm":
        for ext in _TIMM_FALLBACK:
            found = sorted(n for n in names if n.endswith(ext))
            if found:
                return found[0]
    return None


def is_safetensors(name: str | None) -> bool:
    """Whether a weight file name (or shard index) is read as safetensors, never unpickled; a shard index is
    safe only when every shard it names is too, which its reader checks."""
    return bool(name) and str(name).endswith((".safetensors", ".safetensors.index.json"))


NOT_WEIGHTS = ("training_args.bin", "optimizer.pt", "scheduler.pt", "rng_state.pth")
"""Pickle files a model folder may carry that no backend loads (training state), so they never count as weights."""

WeightKind = Literal["safetensors", "pickle"]
"""What a weight file is read as: safetensors (never unpickled) or a pickle (unpickled on load)."""


def weight_kind(name: str) -> WeightKind | None:
    """What the file ``name`` (a file name in a model folder) is, by its suffix: ``"safetensors"`` (a
    ``.safetensors`` file or a shard index of them, :func:`is_safetensors`), ``"pickle"`` (a :data:`PICKLE_SUFFIXES`
    file, ``model.pth`` or ``pytorch_model.bin``, or a shard index of them, ``pytorch_model.bin.index.json``, but not
    the training state of :data:`NOT_WEIGHTS`), or None (not weights). The one rule for what a weight file is: the
    loader's check of a local folder and the hub fetch's choice of files both read it; which of a folder's weight
    files a library reads is :func:`weights_read`."""
    if is_safetensors(name):
        return "safetensors"
    if name.removesuffix(".index.json").endswith(PICKLE_SUFFIXES) and name not in NOT_WEIGHTS:
        return "pickle"
    return None


def split_weights(names: Iterable[str]) -> tuple[list[str], list[str]]:
    """``(safetensors, pickle)``: the weight files among the file names ``names`` of one folder, each sorted, by
    :func:`weight_kind`; every other name is left out."""
    kinds = {n: weight_kind(n) for n in names}
    return (sorted(n for n, k in kinds.items() if k == "safetensors"),
            sorted(n for n, k in kinds.items() if k == "pickle"))


def remote_code_reason(tags: Sequence[str] = (), config: Any = None, modules: Any = None,
                       router: Any = None, router_file: str = "router_config.json") -> str | None:
    """Why a model would run custom code, or None: the hub's ``custom_code`` tag, an ``auto_map`` in its
    ``config.json`` (Python files in the repo), a ``modules.json`` module type outside ``sentence_transformers.``, or
    such a type among the ``types`` of a sentence-transformers Router's ``router_config.json`` (``router``: the routes'
    modules, which the Router imports as modules.json's are; ``router_file``: how the reason names that file, a
    nested Router's path quoted by the caller). The one rule for hub repos and local folders alike."""
    if "custom_code" in set(tags or ()):
        return "the hub tags it 'custom_code'"
    if isinstance(config, dict) and config.get("auto_map"):
        return "its config.json has an 'auto_map' pointing at Python files"
    if isinstance(modules, list):
        for m in modules:
            t = m.get("type", "") if isinstance(m, dict) else ""
            if t and not t.startswith("sentence_transformers."):
                return f"its modules.json uses the custom module type {t!r}"
    types = router.get("types") if isinstance(router, dict) else None
    if isinstance(types, dict):
        for t in types.values():
            if not (isinstance(t, str) and t.startswith("sentence_transformers.")):
                return f"its {router_file} uses the custom module type {t!r}"
    return None


ConfiguredBy = Literal["python", "cli", "nightly"]
"""How the user sets the load policy of the run they are in: :class:`LoadPolicy`'s keywords (``select()``, the
default), the CLI's flags (``rank``, ``embed``, ``index``, ...), or the ``policy:`` keys of a nightly configuration."""

_CONFIGURED_BY: ContextVar[ConfiguredBy] = ContextVar("embedselect_policy_configured_by", default="python")

_FLAGS = {"allow_pickle": "--allow-pickle", "trust_remote_code": "--trust-remote-code", "allow_gated": "--allow-gated",
          "max_bytes": "--max-model-bytes"}


OPT_IN_LIFTS = ", which lifts every check for the model, remote code and pickle weights included"
"""What a refusal says of the per-model opt-in it offers beside the setting: a model refused for its pickle weights
may ship code too, and the opt-in runs it (``LoadPolicy.for_model``), which the refusal did not say."""


@contextlib.contextmanager
def configured_by(how: ConfiguredBy) -> Iterator[None]:
    """Within the block, a refusal's remedy (:func:`remedy`) names the settings as ``how`` configures them (set by the
    CLI's entry point for every command, and by a night, which its YAML configures, also on its Ray workers)."""
    token = _CONFIGURED_BY.set(how)
    try:
        yield
    finally:
        _CONFIGURED_BY.reset(token)


def remedy(setting: str, model_id: str) -> str:
    """How to lift a refusal of ``model_id`` by the policy's ``setting`` (``allow_pickle``, ``trust_remote_code``,
    ``allow_gated`` or ``max_bytes``), in the words of the way the user configures the run they are in
    (:func:`configured_by`): ``"Pass --allow-pickle or opt in for this model (--allow-model org/m, which lifts
    every check ...)"`` for the CLI, ``"Set allow_pickle: true under policy: in the nightly configuration, or opt in
    for this model (allow_models: [org/m] under policy:, which lifts ...)"`` for a night, ``"Pass allow_pickle=True or
    opt in for this model (allow_models={'org/m'}, which lifts ...)"`` for :class:`LoadPolicy`; the opt-in is said
    to lift every check (:data:`OPT_IN_LIFTS`). The one place every refusal's message takes it from."""
    if setting not in _FLAGS:
        raise ValueError(f"no load-policy setting {setting!r}")
    how = _CONFIGURED_BY.get()
    if how == "cli":
        lift = f"Raise {_FLAGS[setting]}" if setting == "max_bytes" else f"Pass {_FLAGS[setting]}"
        return f"{lift} or opt in for this model (--allow-model {model_id}{OPT_IN_LIFTS})"
    if how == "nightly":
        lift = "Raise max_bytes" if setting == "max_bytes" else f"Set {setting}: true"
        return (f"{lift} under policy: in the nightly configuration, or opt in for this model (allow_models: "
                f"[{model_id}] under policy:{OPT_IN_LIFTS})")
    lift = "Raise max_bytes" if setting == "max_bytes" else f"Pass {setting}=True"
    return f"{lift} or opt in for this model (allow_models={{{model_id!r}}}{OPT_IN_LIFTS})"


__all__ = ["ADAPTER_CONFIG", "DEFAULT_MAX_MODEL_BYTES", "NOT_WEIGHTS", "PICKLE_SUFFIXES", "TRANSFORMERS_MODULES",
           "WEIGHTS_READ_ORDER", "ConfiguredBy", "LoadPolicy", "WeightKind", "WeightsReader", "configured_by", "is_safetensors",
           "remedy", "remote_code_reason", "split_weights", "weight_kind", "weights_read"]

"""Safety policy for loading models: safe by default, each risk unlockable explicitly."""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from typing import Any, Iterator, Literal, Sequence

from embedselect.config import DEFAULT_MAX_MODEL_BYTES, LoadPolicy  # the policy is part of the run configuration

PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")
"""Weight files that are unpickled on load (arbitrary code): refused unless ``allow_pickle``."""

SAFETENSORS_READ_FIRST = ("model.safetensors", "model.safetensors.index.json")
"""The safetensors files the loaders read in preference to pickle weights beside them: ``model.safetensors`` (timm,
transformers, every sentence-transformers module), and at a transformers model's root also its shards' index
(transformers, told ``use_safetensors``). A pickle beside any other ``.safetensors`` name is what gets read."""

NOT_WEIGHTS = ("training_args.bin", "optimizer.pt", "scheduler.pt", "rng_state.pth")
"""Pickle files a model folder may carry that no backend loads (training state), so they never count as weights."""


def remote_code_reason(tags: Sequence[str] = (), config: Any = None, modules: Any = None,
                       router: Any = None) -> str | None:
    """Why a model would run custom code, or None: the hub's ``custom_code`` tag, an ``auto_map`` in its
    ``config.json`` (Python files in the repo), a ``modules.json`` module type outside ``sentence_transformers.``, or
    such a type among the ``types`` of a sentence-transformers Router's ``router_config.json`` (``router``: the routes'
    modules, which the Router imports as modules.json's are). The one rule for hub repos and local folders alike."""
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
                return f"its router_config.json uses the custom module type {t!r}"
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


__all__ = ["DEFAULT_MAX_MODEL_BYTES", "NOT_WEIGHTS", "PICKLE_SUFFIXES", "SAFETENSORS_READ_FIRST", "ConfiguredBy",
           "LoadPolicy", "configured_by", "remedy", "remote_code_reason"]

"""Safety policy for loading models: safe by default, each risk unlockable explicitly."""

from __future__ import annotations

from typing import Any, Sequence

from embedselect.config import DEFAULT_MAX_MODEL_BYTES, LoadPolicy  # the policy is part of the run configuration

PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")
"""Weight files that are unpickled on load (arbitrary code): refused unless ``allow_pickle``."""

NOT_WEIGHTS = ("training_args.bin", "optimizer.pt", "scheduler.pt", "rng_state.pth")
"""Pickle files a model folder may carry that no backend loads (training state), so they never count as weights."""


def remote_code_reason(tags: Sequence[str] = (), config: Any = None, modules: Any = None) -> str | None:
    """Why a model would run custom code, or None: the hub's ``custom_code`` tag, an ``auto_map`` in its
    ``config.json`` (Python files in the repo), or a ``modules.json`` module type outside ``sentence_transformers.``.
    The one rule for hub repos and local folders alike."""
    if "custom_code" in set(tags or ()):
        return "the hub tags it 'custom_code'"
    if isinstance(config, dict) and config.get("auto_map"):
        return "its config.json has an 'auto_map' pointing at Python files"
    if isinstance(modules, list):
        for m in modules:
            t = m.get("type", "") if isinstance(m, dict) else ""
            if t and not t.startswith("sentence_transformers."):
                return f"its modules.json uses the custom module type {t!r}"
    return None


__all__ = ["DEFAULT_MAX_MODEL_BYTES", "NOT_WEIGHTS", "PICKLE_SUFFIXES", "LoadPolicy", "remote_code_reason"]

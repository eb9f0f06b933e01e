"""Safety policy for loading models: safe by default, each risk unlockable explicitly."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

DEFAULT_MAX_MODEL_BYTES = 5 * 1024**3  # 5 GiB of weight files

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


@dataclass(frozen=True)
class LoadPolicy:
    """What a model may need before embedselect refuses to load it.

    Attributes:
        allow_pickle: load ``.bin`` / ``.pt`` / ``.pth`` pickle weights (arbitrary code on unpickling).
            Default ``False``: safetensors only.
        trust_remote_code: run Python code shipped in the model repo. Default ``False``.
        allow_gated: try gated repos (needs a token with access). Default ``False``.
        max_bytes: refuse repos whose weight files exceed this many bytes. ``None`` = no cap.
        allow_models: model ids for which all of the above are lifted (a per-model opt-in).
    """

    allow_pickle: bool = False
    trust_remote_code: bool = False
    allow_gated: bool = False
    max_bytes: int | None = DEFAULT_MAX_MODEL_BYTES
    allow_models: frozenset[str] = field(default_factory=frozenset)

    def for_model(self, model_id: str) -> "LoadPolicy":
        """The policy that applies to ``model_id`` (everything allowed if it was opted in)."""
        if model_id in self.allow_models:
            return LoadPolicy(True, True, True, None, self.allow_models)
        return self

"""Safety policy for loading models: safe by default, each risk unlockable explicitly."""

from __future__ import annotations

from dataclasses import dataclass, field

DEFAULT_MAX_MODEL_BYTES = 5 * 1024**3  # 5 GiB of weight files


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

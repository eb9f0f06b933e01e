"""sentence-transformers backend: a ``SentenceTransformer`` loaded from a local folder (hub snapshot or
user directory), encoded with the library's own batching, length sorting, pooling and normalisation."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from embedselect._util.compat import ensure_torchvision_importable
from embedselect.models.backends.base import (
    TEXT,
    as_embedding_matrix,
    check_items,
    check_max_length,
    check_max_length_value,
    load_image,
)
from embedselect._util.progress import progress_enabled
from embedselect.models.backends.device import resolve_dtype, torch_dtype
from embedselect.models.backends.weights import check_checkpoint_weights
from embedselect.errors import ConfigError

OPTIONS = ("max_length", "normalize", "prompt", "prompt_name", "batch_size", "dtype", "modality")


class SentenceTransformerEmbedder:
    """Embeds with ``SentenceTransformer.encode`` (one call over all items; the library sorts by length).

    Args:
        local_dir: folder with ``modules.json`` and the module folders.
        device: resolved device string.
        modality: ``"text"`` (default) or ``"image"`` (CLIP-style models taking PIL images).
        trust_remote_code: allow custom module code shipped with the model.
        allow_pickle: allow ``.bin`` pickle weights (otherwise ``use_safetensors=True`` is passed).
        options: ``max_length`` (tokens), ``normalize`` (``None`` = the model's own setting, ``True``
            forces L2 normalisation, ``False`` removes the model's ``Normalize`` module), ``prompt`` / ``prompt_name`` (prefix for every text),
            ``batch_size`` (default 32 on CPU, 128 on CUDA), ``dtype`` (``"auto"`` = float16 on CUDA).
    """

    backend = "sentence-transformers"

    def __init__(self, local_dir: Path, *, device: str, modality: str = TEXT, trust_remote_code: bool = False,
                 allow_pickle: bool = False, options: dict[str, Any] | None = None) -> None:
        opts = dict(options or {})
        unknown = sorted(set(opts) - set(OPTIONS))
        if unknown:
            # the model's own pooling is a module of it; another one is the transformers backend's option
            hint = ("; for another pooling, read the model with the transformers backend: "
                    "?backend=transformers&pooling=cls (or mean)") if "pooling" in unknown else ""
            raise ConfigError(f"sentence-transformers does not take option(s) {unknown}: allowed are {list(OPTIONS)}"
                              + hint)
        max_length = check_max_length_value(opts.get("max_length"), modality=modality, backend=self.backend)
        ensure_torchvision_importable()
        from sentence_transformers import SentenceTransformer

        self.modality = modality
        self.device = device
        self.dtype = resolve_dtype(opts.get("dtype"), device)
        model_kwargs: dict[str, Any] = {}
        if not allow_pickle:
            model_kwargs["use_safetensors"] = True
        # loaded on the CPU first: a move to another device drops the flags check_checkpoint_weights reads
        self.model = SentenceTransformer(
            str(local_dir),
            device="cpu",
            trust_remote_code=trust_remote_code,
            local_files_only=True,
            model_kwargs=model_kwargs,
        )
        self.untrained_norms = check_checkpoint_weights(self.model, str(local_dir))
        if device != "cpu":
            self.model.to(device)
        self.model.eval()
        if self.dtype != "float32":
            self.model.to(torch_dtype(self.dtype))
        if max_length is not None:
            first = self.model[0] if len(self.model) else None
            check_max_length(max_length, getattr(self.model, "tokenizer", None),
                             getattr(getattr(first, "auto_model", None), "config", None))
            self.model.max_seq_length = max_length
        self.normalize_forced = bool(opts.get("normalize")) if opts.get("normalize") is not None else False
        if opts.get("normalize") is not None and not opts["normalize"]:
            # normalize=False switches off the model's own Normalize module (Sequential re-numbers the rest)
            for idx in reversed([i for i, m in enumerate(self.model) if type(m).__name__ == "Normalize"]):
                del self.model[idx]
        self.prompt = opts.get("prompt")
        self.prompt_name = opts.get("prompt_name")
        self.batch_size = int(opts.get("batch_size") or (128 if device.startswith("cuda") else 32))
        self._module_types = [type(m).__name__ for m in self.model]

    def settings(self) -> dict[str, Any]:
        pooling = None
        for m in self.model:
            if type(m).__name__ == "Pooling":
                pm = getattr(m, "pooling_mode", None) or _pooling_mode(m)
                pooling = [str(x) for x in pm] if isinstance(pm, (list, tuple)) else pm
        return {
            "modules": self._module_types,
            "pooling": pooling,
            "normalize": self.normalize_forced or "Normalize" in self._module_types,
            "max_length": self.model.max_seq_length,
            "prompt": self.prompt,
            "prompt_name": self.prompt_name,
            "dtype": self.dtype,
        }

    def role_prompt(self, role: str) -> str | None:
        """The name of the model's own prompt for ``role`` (``"query"``, or ``"document"``: the first of document,
        passage, corpus it defines), as ``SentenceTransformer.encode_query`` / ``encode_document`` choose it; None when
        the model defines no non-empty prompt for the role or the candidate sets ``prompt`` / ``prompt_name`` itself
        (that prompt is then used for every text)."""
        if self.prompt is not None or self.prompt_name is not None or self.modality != TEXT:
            return None
        prompts = getattr(self.model, "prompts", None) or {}
        names = ("query",) if role == "query" else ("document", "passage", "corpus")
        return next((n for n in names if prompts.get(n)), None)

    def embed(self, items: Sequence[Any], *, batch_size: int | None = None, progress: bool = False,
              prompt_name: str | None = None) -> np.ndarray:
        """Embed texts (or images for image models) in order; float32 (n, d). ``prompt_name``: one of the model's
        prompts (:meth:`role_prompt`) instead of the candidate's own setting."""
        items = check_items(items, self.modality)
        inputs = items if self.modality == TEXT else [load_image(it) for it in items]
        kwargs: dict[str, Any] = {}
        if prompt_name is not None:
            kwargs["prompt_name"] = prompt_name
        elif self.prompt is not None:
            kwargs["prompt"] = self.prompt
        elif self.prompt_name is not None:
            kwargs["prompt_name"] = self.prompt_name
        if not inputs:
            get_dim = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
            dim = get_dim() or 0
            return np.zeros((0, dim), dtype=np.float32)
        out = self.model.encode(
            inputs,
            batch_size=int(batch_size or self.batch_size),
            show_progress_bar=progress_enabled(progress),
            convert_to_numpy=True,
            normalize_embeddings=self.normalize_forced,
            **kwargs,
        )
        return as_embedding_matrix(out, len(items), dtype=self.dtype)


def _pooling_mode(module: Any) -> str | None:
    """Best-effort name of a Pooling module's mode (its config keys vary across versions)."""
    try:
        cfg = module.get_config_dict()
    except Exception:  # noqa: BLE001 - settings are informative only
        return None
    if "pooling_mode" in cfg:
        return str(cfg["pooling_mode"])
    on = [k.removeprefix("pooling_mode_").removesuffix("_tokens").removesuffix("_token")
          for k, v in cfg.items() if k.startswith("pooling_mode_") and v is True]
    return "+".join(on) or None


__all__ = ["SentenceTransformerEmbedder"]

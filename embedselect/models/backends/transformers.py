"""transformers backend: ``AutoModel`` from a local folder, with explicit pooling.

Text (``AutoTokenizer``) pooling:
    ``"mean"`` (default): mean of the last hidden states over the attention mask;
    ``"cls"``: the first token's last hidden state;
    ``"pooler"``: the model's ``pooler_output``;
    ``"projection"``: ``get_text_features`` (CLIP-style dual encoders; the default for them).
Image (``AutoImageProcessor``) pooling:
    ``"cls"`` (default): the first token's last hidden state;
    ``"mean"``: mean over the patch tokens (all tokens after the first);
    ``"pooler"``: ``pooler_output``;
    ``"projection"``: ``get_image_features`` (CLIP-style; the default for them).
For models whose last hidden state is a feature map (B, C, H, W) (ConvNeXt, ResNet), ``"mean"``
averages over H×W and ``"cls"`` is not available.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from embedselect._util.compat import ensure_torchvision_importable
from embedselect.models.backends.base import (
    IMAGE,
    TEXT,
    as_embedding_matrix,
    check_items,
    check_max_length,
    check_max_length_value,
    load_image,
)
from embedselect._util.progress import progress_enabled
from embedselect.models.backends.device import progress_bar, resolve_dtype, torch_dtype
from embedselect.models.backends.weights import check_checkpoint_weights
from embedselect.errors import ConfigError

TEXT_POOLINGS = ("mean", "cls", "pooler", "projection")
IMAGE_POOLINGS = ("cls", "mean", "pooler", "projection")
OPTIONS = ("pooling", "max_length", "normalize", "batch_size", "dtype", "prefix", "modality")


class TransformersEmbedder:
    """A transformers ``AutoModel`` used as a text or image encoder.

    Args:
        local_dir: folder with ``config.json``, weights and the tokenizer / image processor files.
        device: resolved device string.
        modality: ``"text"`` or ``"image"``.
        trust_remote_code: allow model code shipped in the folder (``auto_map``).
        allow_pickle: allow ``.bin`` pickle weights (otherwise ``use_safetensors=True``).
        options: ``pooling`` (see module doc), ``max_length`` (tokens; default min(tokenizer limit, 512)),
            ``normalize`` (L2-normalise outputs, default False), ``prefix`` (string prepended to every text,
            e.g. ``"query: "`` for E5), ``batch_size`` (default 32 CPU / 128 CUDA), ``dtype``.

    Output of :meth:`embed`: float32 (n, hidden size or projection size).
    """

    backend = "transformers"

    def __init__(self, local_dir: Path, *, device: str, modality: str, trust_remote_code: bool = False,
                 allow_pickle: bool = False, options: dict[str, Any] | None = None) -> None:
        opts = dict(options or {})
        unknown = sorted(set(opts) - set(OPTIONS))
        if unknown:
            raise ConfigError(f"transformers does not take option(s) {unknown}: allowed are {list(OPTIONS)}")
        if modality not in (TEXT, IMAGE):
            raise ConfigError(f"modality must be 'text' or 'image', got {modality!r}")
        max_length = check_max_length_value(opts.get("max_length"), modality=modality, backend=self.backend)
        ensure_torchvision_importable()
        import transformers

        self.modality = modality
        self.device = device
        self.dtype = resolve_dtype(opts.get("dtype"), device)
        kwargs: dict[str, Any] = {"trust_remote_code": trust_remote_code, "local_files_only": True}
        if not allow_pickle:
            kwargs["use_safetensors"] = True
        model = transformers.AutoModel.from_pretrained(str(local_dir), **kwargs)
        has_proj = hasattr(model, "get_text_features" if modality == TEXT else "get_image_features")
        allowed = TEXT_POOLINGS if modality == TEXT else IMAGE_POOLINGS
        default = "projection" if has_proj else allowed[0]
        self.pooling = str(opts.get("pooling") or default)
        if self.pooling not in allowed:
            raise ConfigError(f"pooling {self.pooling!r} is not one of {list(allowed)} for {modality}")
        # before the move to the device, which may drop the flags it reads
        self.untrained_norms = check_checkpoint_weights(model, str(local_dir),
                                                        used_heads=("pooler.",) if self.pooling == "pooler" else ())
        model.eval()
        self.model = model.to(device=device, dtype=torch_dtype(self.dtype))
        if self.pooling == "projection" and not has_proj:
            raise ConfigError(f"pooling 'projection' needs a dual encoder (CLIP-style); use one of "
                              f"{[p for p in allowed if p != 'projection']}")
        # a dual encoder's forward needs both inputs: the other poolings run the matching tower alone
        tower = getattr(model, "text_model" if modality == TEXT else "vision_model", None) if has_proj else None
        self.encoder = tower if tower is not None else self.model
        self.normalize = bool(opts.get("normalize", False))
        self.prefix = str(opts.get("prefix") or "")
        self.batch_size = int(opts.get("batch_size") or (128 if device.startswith("cuda") else 32))
        auto_kw = {"trust_remote_code": trust_remote_code, "local_files_only": True}
        if modality == TEXT:
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(str(local_dir), **auto_kw)
            limit = getattr(self.tokenizer, "model_max_length", None) or 512
            limit = 512 if limit > 100_000 else int(limit)  # "unlimited" sentinel in some tokenizers
            max_pos = getattr(getattr(model, "config", None), "max_position_embeddings", None)
            if isinstance(max_pos, int) and max_pos > 0:
                limit = min(limit, max_pos)
            check_max_length(max_length, self.tokenizer, getattr(model, "config", None))
            self.max_length: int | None = max_length if max_length is not None else min(limit, 512)
            if self.tokenizer.pad_token is None:
                self.tokenizer.pad_token = self.tokenizer.eos_token or self.tokenizer.unk_token
        else:
            self.processor = transformers.AutoImageProcessor.from_pretrained(str(local_dir), **auto_kw)
            self.max_length = None
        self.model_type = getattr(getattr(model, "config", None), "model_type", None)

    def settings(self) -> dict[str, Any]:
        s: dict[str, Any] = {
            "model_type": self.model_type,
            "pooling": self.pooling,
            "normalize": self.normalize,
            "dtype": self.dtype,
        }
        if self.modality == TEXT:
            s.update(max_length=self.max_length, prefix=self.prefix)
        else:
            proc = self.processor
            s.update(processor=type(proc).__name__, size=_jsonable(getattr(proc, "size", None)),
                     crop_size=_jsonable(getattr(proc, "crop_size", None)),
                     image_mean=_jsonable(getattr(proc, "image_mean", None)),
                     image_std=_jsonable(getattr(proc, "image_std", None)))
        return s

    def _dim_hint(self) -> int:
        """Output dimension from the config (0 if unknown); used for empty inputs only."""
        cfg = getattr(self.model, "config", None)
        if self.pooling == "projection":
            return int(getattr(cfg, "projection_dim", 0) or 0)
        sizes = getattr(cfg, "hidden_sizes", None)
        return int(getattr(cfg, "hidden_size", 0) or (sizes[-1] if sizes else 0))

    # --- forward + pooling ----------------------------------------------------------------------
    def _pool(self, out: Any, mask=None):
        import torch

        if self.pooling == "pooler":
            pooled = getattr(out, "pooler_output", None)
            if pooled is None:
                raise ConfigError("this model has no pooler_output: use pooling='mean' or 'cls'")
            return pooled.reshape(pooled.shape[0], -1)
        h = out.last_hidden_state
        if h.ndim == 4:  # (B, C, H, W) feature maps
            if self.pooling == "cls":
                raise ConfigError("this model returns feature maps, not tokens: use pooling='mean' or 'pooler'")
            return h.float().mean(dim=(2, 3))
        if self.pooling == "cls":
            return h[:, 0]
        if mask is not None:  # text mean over real tokens, summed in float32
            m = mask.unsqueeze(-1).to(torch.float32)
            return (h.float() * m).sum(1) / m.sum(1).clamp_min(1.0)
        return h[:, 1:].float().mean(1) if h.shape[1] > 1 else h[:, 0].float()  # image patch tokens

    def _forward_text(self, texts: list[str]):
        enc = self.tokenizer([self.prefix + t for t in texts], padding=True, truncation=True,
                             max_length=self.max_length, return_tensors="pt")
        enc = {k: v.to(self.device) for k, v in enc.items()}
        if self.pooling == "projection":
            return _features(self.model.get_text_features(**enc))
        return self._pool(self.encoder(**enc), enc.get("attention_mask"))

    def _forward_images(self, items: list):
        images = [load_image(it, "RGB") for it in items]
        enc = self.processor(images=images, return_tensors="pt")
        pixel_values = enc["pixel_values"].to(self.device, dtype=torch_dtype(self.dtype))
        if self.pooling == "projection":
            return _features(self.model.get_image_features(pixel_values=pixel_values))
        return self._pool(self.encoder(pixel_values=pixel_values))

    def embed(self, items: Sequence[Any], *, batch_size: int | None = None, progress: bool = False) -> np.ndarray:
        """Embed texts or image paths in order; float32 (n, d). Texts are batched by length (longest
        first) to reduce padding, and returned in the input order."""
        import torch

        items = check_items(items, self.modality)
        if not items:
            return np.zeros((0, self._dim_hint()), dtype=np.float32)
        bs = int(batch_size or self.batch_size)
        if self.modality == TEXT:
            order = np.argsort([-len(t) for t in items], kind="stable")
        else:
            order = np.arange(len(items))
        out: np.ndarray | None = None
        with progress_bar(len(items), desc="transformers", enabled=progress_enabled(progress)) as bar, \
                torch.inference_mode():
            for start in range(0, len(items), bs):
                idx = order[start:start + bs]
                chunk = [items[i] for i in idx]
                feats = self._forward_text(chunk) if self.modality == TEXT else self._forward_images(chunk)
                if self.normalize:
                    feats = torch.nn.functional.normalize(feats.float(), dim=-1)
                arr = as_embedding_matrix(feats, len(chunk), dtype=self.dtype)
                if out is None:
                    out = np.empty((len(items), arr.shape[1]), dtype=np.float32)
                out[idx] = arr
                bar.update(len(chunk))
        assert out is not None
        return out


def _features(x: Any):
    """``get_*_features`` returns a tensor (transformers 4) or an output whose ``pooler_output`` is
    the projected embedding (transformers 5)."""
    if hasattr(x, "pooler_output") and x.pooler_output is not None:
        return x.pooler_output
    return x


def _jsonable(v: Any) -> Any:
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if hasattr(v, "items"):
        return {str(k): _jsonable(x) for k, x in dict(v.items()).items()}
    return str(v)

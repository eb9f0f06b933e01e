"""timm backend: an image model created from a local folder in the hub layout (``config.json`` with
``architecture`` + ``pretrained_cfg``, and ``model.safetensors``), pooled features (``num_classes=0``),
preprocessed with the model's own data config (``resolve_model_data_config`` + ``create_transform``).

Options that change the vectors (each is a candidate option, so each is in the embeddings' cache key):
``resolution`` (input size in pixels), ``pooling`` (``avg``, ``max``, or ``cls`` for models with a class token)
and ``layer`` (the output of feature stage / block N, pooled, through timm's ``forward_intermediates``)."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from embedselect._util.compat import ensure_torchvision_importable
from embedselect._util.extras import require
from embedselect.models.backends.base import IMAGE, as_embedding_matrix, check_items, load_image
from embedselect.models.backends.device import progress_bar, progress_enabled, resolve_dtype, torch_dtype
from embedselect.errors import ConfigError

OPTIONS = ("batch_size", "dtype", "num_workers", "modality", "resolution", "pooling", "layer")
POOLINGS = ("avg", "max", "cls")
_TIMM_POOL = {"avg": "avg", "max": "max", "cls": "token"}


class TimmEmbedder:
    """Pooled penultimate features of a timm model.

    Args:
        local_dir: folder with timm's ``config.json`` and weights.
        device: resolved device string.
        options: ``batch_size`` (default 32 on CPU, 128 on CUDA), ``dtype`` (``"auto"`` = float16 on
            CUDA), ``num_workers`` (threads decoding and transforming images, default min(4, CPUs)); and, changing the
            vectors: ``resolution`` (int, pixels: the model sees ``resolution``×``resolution`` crops; a ViT's position
            embeddings are resampled to it), ``pooling`` (``"avg"``, ``"max"`` or ``"cls"``; default the model's own),
            ``layer`` (int: pool the output of feature stage / block ``layer`` of ``forward_intermediates``, 0 the
            first, -1 the last; default the model's final pooled features).

    Output of :meth:`embed`: float32 (n, d): d = model.num_features, or the channels of stage ``layer``.

    Raises:
        ConfigError: an unknown option; a resolution that is not a positive int; a pooling other than avg/max/cls,
            or cls for a model without a class token; a layer out of range or on a model without intermediates.
    """

    backend = "timm"
    modality = IMAGE

    def __init__(self, local_dir: Path, *, device: str, options: dict[str, Any] | None = None) -> None:
        opts = dict(options or {})
        unknown = sorted(set(opts) - set(OPTIONS))
        if unknown:
            raise ConfigError(f"timm does not take option(s) {unknown}: allowed are {list(OPTIONS)}")
        resolution, pooling, layer = _checked(opts)
        ensure_torchvision_importable()
        require("timm", extra="image", purpose="a timm image model")
        import timm
        import timm.data

        self.device = device
        self.dtype = resolve_dtype(opts.get("dtype"), device)
        # "local-dir:" makes timm read config.json and the weights (safetensors preferred) from the folder.
        source = f"local-dir:{Path(local_dir)}"
        model: Any = timm.create_model(source, pretrained=True, num_classes=0)
        if resolution is not None and hasattr(model, "patch_embed"):  # fixed-size patch grid: resample positions
            model = timm.create_model(source, pretrained=True, num_classes=0, img_size=resolution)
        model.eval()
        has_token = int(getattr(model, "num_prefix_tokens", 0) or 0) > 0 and getattr(model, "cls_token", None) is not None
        if pooling == "cls" and not has_token:
            raise ConfigError(f"{type(model).__name__} has no class token: use pooling=avg or pooling=max")
        gp = getattr(model, "global_pool", None)  # a name (ViT: "token") or a pooling module (CNNs)
        gp = gp if isinstance(gp, str) else getattr(gp, "pool_type", None)
        own = next((k for k, v in _TIMM_POOL.items() if v == gp), gp or None)
        self.layer = None
        if layer is not None:
            n_layers = len(getattr(model, "feature_info", None) or [])
            if not hasattr(model, "forward_intermediates") or not n_layers:
                raise ConfigError(f"{type(model).__name__} does not give intermediate layers in this timm version: "
                                  "drop the layer option")
            if not -n_layers <= layer < n_layers:
                raise ConfigError(f"layer={layer} is out of range: {type(model).__name__} has {n_layers} feature "
                                  f"stages/blocks, layer 0..{n_layers - 1} (or -{n_layers}..-1 from the end)")
            self.layer = layer % n_layers
            self.dim = int(model.feature_info[self.layer]["num_chs"])
            self.pooling = pooling or (own if own in POOLINGS else "avg")
        else:
            if pooling is not None and pooling != own:
                try:
                    model.reset_classifier(0, global_pool=_TIMM_POOL[pooling])
                except Exception as exc:  # noqa: BLE001 - a model's own refusal becomes a typed error
                    raise ConfigError(f"{type(model).__name__} cannot pool by {pooling!r}: {exc}") from exc
            self.dim = int(model.num_features)
            self.pooling = pooling or own
        self.model: Any = model.to(device=device, dtype=torch_dtype(self.dtype))
        self.data_config = dict(timm.data.resolve_model_data_config(model))
        if resolution is not None:
            self.data_config["input_size"] = (3, resolution, resolution)
        self.transform = timm.data.create_transform(**self.data_config, is_training=False)
        self.batch_size = int(opts.get("batch_size") or (128 if device.startswith("cuda") else 32))
        self.num_workers = int(opts.get("num_workers") or min(4, os.cpu_count() or 1))
        self.architecture = getattr(model, "default_cfg", {}).get("architecture") or type(model).__name__

    def settings(self) -> dict[str, Any]:
        dc = self.data_config
        return {
            "architecture": self.architecture,
            "features": "pooled (num_classes=0)" if self.layer is None else f"stage {self.layer} (forward_intermediates)",
            "pooling": self.pooling,
            "layer": self.layer,
            "global_pool": str(getattr(self.model, "global_pool", "")) or None,
            "input_size": list(dc.get("input_size", ())),
            "interpolation": dc.get("interpolation"),
            "mean": [float(v) for v in dc.get("mean", ())],
            "std": [float(v) for v in dc.get("std", ())],
            "crop_pct": dc.get("crop_pct"),
            "crop_mode": dc.get("crop_mode"),
            "dtype": self.dtype,
        }

    def _layer_features(self, batch):
        """(B, C) pooled output of stage ``self.layer``: mean or max over its H×W map, or its class token."""
        cls = self.pooling == "cls"
        kw = {"return_prefix_tokens": True} if cls else {}
        (out,) = self.model.forward_intermediates(batch, indices=[self.layer], intermediates_only=True, **kw)
        if cls:
            return out[1][:, 0]
        return out.amax(dim=(2, 3)) if self.pooling == "max" else out.mean(dim=(2, 3))

    def _prepare(self, item: Any):
        return self.transform(load_image(item, "RGB"))

    def embed(self, items: Sequence[Any], *, batch_size: int | None = None, progress: bool = False) -> np.ndarray:
        """Embed image paths (or PIL images) in order, ``batch_size`` images per forward pass."""
        import torch

        items = check_items(items, IMAGE)
        bs = int(batch_size or self.batch_size)
        dim = self.dim
        if not items:
            return np.zeros((0, dim), dtype=np.float32)
        out = np.empty((len(items), dim), dtype=np.float32)
        dtype = torch_dtype(self.dtype)
        with ThreadPoolExecutor(max_workers=self.num_workers) as pool, \
                progress_bar(len(items), desc="timm", enabled=progress_enabled(progress), unit="img") as bar, \
                torch.inference_mode():
            starts = list(range(0, len(items), bs))
            # decode + transform of the next batch runs in the pool while the model runs on this one
            pending = [pool.submit(self._prepare, it) for it in items[0:bs]]
            for i, start in enumerate(starts):
                current = [f.result() for f in pending]
                nxt = starts[i + 1] if i + 1 < len(starts) else None
                pending = [pool.submit(self._prepare, it) for it in items[nxt:nxt + bs]] if nxt is not None else []
                batch = torch.stack(current).to(self.device, dtype=dtype)
                feats = self.model(batch) if self.layer is None else self._layer_features(batch)
                out[start:start + len(current)] = as_embedding_matrix(feats, len(current), dtype=self.dtype)
                bar.update(len(current))
        return out


def _checked(opts: dict[str, Any]) -> tuple[int | None, str | None, int | None]:
    """``(resolution, pooling, layer)`` from the options, checked (None where not given).

    Raises:
        ConfigError: a resolution that is not an int in [8, 4096], a pooling other than avg/max/cls, a layer that is
            not an int."""
    resolution, pooling, layer = opts.get("resolution"), opts.get("pooling"), opts.get("layer")
    if resolution is not None and (isinstance(resolution, bool) or not isinstance(resolution, int)
                                   or not 8 <= resolution <= 4096):
        raise ConfigError(f"resolution must be an integer number of pixels (8 to 4096), got {resolution!r}")
    if pooling is not None and pooling not in POOLINGS:
        raise ConfigError(f"pooling must be one of {', '.join(POOLINGS)} for a timm model, got {pooling!r}")
    if layer is not None and (isinstance(layer, bool) or not isinstance(layer, int)):
        raise ConfigError(f"layer must be an integer (0 the first stage, -1 the last), got {layer!r}")
    return resolution, pooling, layer

"""timm backend: an image model created from a local folder in the hub layout (``config.json`` with
``architecture`` + ``pretrained_cfg``, and ``model.safetensors``), pooled features (``num_classes=0``),
preprocessed with the model's own data config (``resolve_model_data_config`` + ``create_transform``)."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from embedselect._compat import ensure_torchvision_importable
from embedselect.backends.base import IMAGE, as_embedding_matrix, check_items, load_image
from embedselect.backends.device import progress_bar, progress_enabled, resolve_dtype, torch_dtype
from embedselect.errors import ConfigError

OPTIONS = ("batch_size", "dtype", "num_workers", "modality")


class TimmEmbedder:
    """Pooled penultimate features of a timm model.

    Args:
        local_dir: folder with timm's ``config.json`` and weights.
        device: resolved device string.
        options: ``batch_size`` (default 32 on CPU, 128 on CUDA), ``dtype`` (``"auto"`` = float16 on
            CUDA), ``num_workers`` (threads decoding and transforming images, default min(4, CPUs)).

    Output of :meth:`embed`: float32 (n, model.num_features).
    """

    backend = "timm"
    modality = IMAGE

    def __init__(self, local_dir: Path, *, device: str, options: dict[str, Any] | None = None) -> None:
        opts = dict(options or {})
        unknown = sorted(set(opts) - set(OPTIONS))
        if unknown:
            raise ConfigError(f"timm does not take option(s) {unknown}: allowed are {list(OPTIONS)}")
        ensure_torchvision_importable()
        import timm
        import timm.data

        self.device = device
        self.dtype = resolve_dtype(opts.get("dtype"), device)
        # "local-dir:" makes timm read config.json and the weights (safetensors preferred) from the folder.
        model = timm.create_model(f"local-dir:{Path(local_dir)}", pretrained=True, num_classes=0)
        model.eval()
        self.model = model.to(device=device, dtype=torch_dtype(self.dtype))
        self.data_config = timm.data.resolve_model_data_config(model)
        self.transform = timm.data.create_transform(**self.data_config, is_training=False)
        self.batch_size = int(opts.get("batch_size") or (128 if device.startswith("cuda") else 32))
        self.num_workers = int(opts.get("num_workers") or min(4, os.cpu_count() or 1))
        self.architecture = getattr(model, "default_cfg", {}).get("architecture") or type(model).__name__

    def settings(self) -> dict[str, Any]:
        dc = self.data_config
        return {
            "architecture": self.architecture,
            "features": "pooled (num_classes=0)",
            "global_pool": str(getattr(self.model, "global_pool", "")) or None,
            "input_size": list(dc.get("input_size", ())),
            "interpolation": dc.get("interpolation"),
            "mean": [float(v) for v in dc.get("mean", ())],
            "std": [float(v) for v in dc.get("std", ())],
            "crop_pct": dc.get("crop_pct"),
            "crop_mode": dc.get("crop_mode"),
            "dtype": self.dtype,
        }

    def _prepare(self, item: Any):
        return self.transform(load_image(item, "RGB"))

    def embed(self, items: Sequence[Any], *, batch_size: int | None = None, progress: bool = False) -> np.ndarray:
        """Embed image paths (or PIL images) in order, ``batch_size`` images per forward pass."""
        import torch

        items = check_items(items, IMAGE)
        bs = int(batch_size or self.batch_size)
        dim = int(getattr(self.model, "num_features"))
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
                feats = self.model(batch)
                out[start:start + len(current)] = as_embedding_matrix(feats, len(current), dtype=self.dtype)
                bar.update(len(current))
        return out

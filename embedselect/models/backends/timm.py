"""timm backend: an image model created from a local folder in the hub layout (``config.json`` with
``architecture`` + ``pretrained_cfg``, and ``model.safetensors``), pooled features (``num_classes=0``),
preprocessed with the model's own data config (``resolve_model_data_config`` + ``create_transform``).

Options that change the vectors (each is a candidate option, so each is in the embeddings' cache key):
``resolution`` (input size in pixels), ``pooling`` (``avg``, ``max``, or ``cls`` for models with a class token)
and ``layer`` (the output of feature stage / block N, pooled, through timm's ``forward_intermediates``)."""

from __future__ import annotations

import logging
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from embedselect._util.compat import ensure_torchvision_importable
from embedselect._util.extras import require
from embedselect.models.backends.base import IMAGE, as_embedding_matrix, check_items, load_image
from embedselect._util.progress import progress_enabled
from embedselect.models.backends.device import progress_bar, resolve_dtype, torch_dtype
from embedselect.models.backends.weights import check_checkpoint_weights
from embedselect.errors import ConfigError

log = logging.getLogger(__name__)

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
        ConfigError: an unknown option; a resolution that is not a positive int, or one whose single image would not
            fit half of the device's free memory (:func:`image_bytes`); a pooling other than avg/max/cls, or cls for a
            model without a class token; a layer out of range or on a model without intermediates.
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
        self.untrained_norms = check_checkpoint_weights(model, str(local_dir))
        # checked before the model is built at that size or sees one image of it
        self.max_batch = None if resolution is None else _max_batch(model, resolution, device,
                                                                    torch_dtype(self.dtype).itemsize)
        """Most images per forward pass that fit the device's memory at ``resolution`` (None: not bounded)."""
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
        if self.max_batch is not None and bs > self.max_batch:  # the batch size changes speed only, never the vectors
            log.info("timm: %d images per forward pass at this resolution (of %d asked): what fits the memory",
                     self.max_batch, bs)
            bs = self.max_batch
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


MEMORY_SHARE = 0.5
"""Share of the device's free memory (:func:`~embedselect.models.backends.device.available_memory`) one forward pass
at a chosen ``resolution`` may take by :func:`image_bytes`' estimate."""


def image_bytes(model: Any, resolution: int, itemsize: int) -> int | None:
    """Estimated peak bytes of activations for one ``resolution``×``resolution`` image through ``model``, or None
    when its structure is not one of these:

    - a ViT (``patch_embed``, ``pos_embed``, ``blocks`` with global attention): ``T = (resolution / patch)² + prefix``
      tokens; one block holds its ``heads × T²`` attention scores twice (scores and softmax) plus ``8 × T × dim``
      values;
    - other patch models (windowed attention): ``8 × T × dim``;
    - a model with ``feature_info`` (CNNs): four copies of every stage's map, ``(resolution / reduction)² × channels``.
    """
    pe = getattr(model, "patch_embed", None)
    if pe is not None:
        ps = getattr(pe, "patch_size", None)
        ps = ps[0] if isinstance(ps, (tuple, list)) else ps
        dim = int(getattr(model, "embed_dim", 0) or getattr(model, "num_features", 0) or 0)
        if isinstance(ps, int) and ps > 0 and dim > 0:
            t = (resolution // ps) ** 2 + int(getattr(model, "num_prefix_tokens", 0) or 0)
            blocks = getattr(model, "blocks", None)
            attn = getattr(blocks[0], "attn", None) if blocks is not None and len(blocks) else None
            heads = int(getattr(attn, "num_heads", 0) or 0)
            global_attention = heads > 0 and getattr(model, "pos_embed", None) is not None
            scores = 2 * heads * t * t if global_attention else 0
            return itemsize * (scores + 8 * t * dim)
    info = getattr(model, "feature_info", None)
    if info:
        try:
            maps = sum((resolution // max(1, int(f["reduction"]))) ** 2 * int(f["num_chs"]) for f in info)
        except (KeyError, TypeError, ValueError):
            return None
        return itemsize * 4 * maps
    return None


def _max_batch(model: Any, resolution: int, device: str, itemsize: int) -> int | None:
    """The most images of ``resolution`` pixels per forward pass of ``model`` whose :func:`image_bytes` fit
    :data:`MEMORY_SHARE` of the device's free memory; None when either is unknown.

    Raises:
        ConfigError: one image at ``resolution`` does not fit (saying the largest resolution that does).
    """
    from embedselect.models.backends.device import available_memory

    per_image = image_bytes(model, resolution, itemsize)
    free = available_memory(device)
    if per_image is None or free is None:
        return None
    budget = int(free * MEMORY_SHARE)
    arch = getattr(model, "default_cfg", {}).get("architecture") or type(model).__name__
    gib = 1024**3
    if per_image > budget:
        lo, hi = 8, resolution  # the largest resolution whose one image fits (the estimate grows with it)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            est = image_bytes(model, mid, itemsize)
            lo, hi = (mid, hi) if est is not None and est <= budget else (lo, mid - 1)
        fits = image_bytes(model, lo, itemsize)
        largest = (f"the largest resolution that fits is {lo}" if fits is not None and fits <= budget
                   else "no resolution fits")
        raise ConfigError(f"resolution={resolution} is too large for {arch} on {device}: one image would need about "
                          f"{per_image / gib:,.1f} GiB of activations, and {budget / gib:,.1f} GiB (half of the free "
                          f"memory) is the limit; {largest}")
    return max(1, budget // max(1, per_image))


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

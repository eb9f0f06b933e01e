"""Torch device choice shared by the metrics (one low module, so probes and taskprior need not import each other)."""

from __future__ import annotations

import torch

from embedselect.errors import ConfigError


def torch_device(device: str | None) -> torch.device:
    """The torch device named ``device`` (None means "cpu").

    Raises:
        ConfigError: ``device`` is not a torch device name, or names CUDA where CUDA is not available.
    """
    try:
        dev = torch.device(device or "cpu")
    except (RuntimeError, TypeError):
        raise ConfigError(f"device {device!r} is not a torch device; use 'cpu' or 'cuda[:k]'") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"device {device!r} requested but CUDA is not available; use device='cpu'")
    return dev

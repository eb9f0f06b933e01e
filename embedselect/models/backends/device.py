"""Device auto-detection, dtype choice and the progress-bar helper shared by the backends.

Nothing here imports torch at module import time; :func:`resolve_device` imports it on first call.
"""

from __future__ import annotations

import contextlib
import logging
import re
import sys
from typing import Any, Iterator

from embedselect._util.library_logs import library_logs_below
from embedselect.errors import ConfigError

_DEVICE_RE = re.compile(r"^(cpu|mps|cuda(:\d+)?)$")
_DTYPES = ("auto", "float32", "float16", "bfloat16")


def resolve_device(device: str | None = None) -> str:
    """The torch device string to run on.

    Args:
        device: ``None`` or ``"auto"`` picks ``"cuda"`` when ``torch.cuda.is_available()``, else ``"cpu"``.
            Otherwise one of ``"cpu"``, ``"cuda"``, ``"cuda:N"``, ``"mps"``.

    Raises:
        ConfigError: unknown device string, or CUDA/MPS requested but not available.
    """
    if device is None or str(device).strip().lower() == "auto":
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    d = str(device).strip().lower()
    if not _DEVICE_RE.match(d):
        raise ConfigError(f"unknown device {device!r}: use 'auto', 'cpu', 'cuda', 'cuda:N' or 'mps'")
    if d.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise ConfigError(f"device {device!r} requested but CUDA is not available: use device='cpu' or 'auto'")
        if ":" in d and int(d.split(":")[1]) >= torch.cuda.device_count():
            raise ConfigError(
                f"device {device!r} requested but only {torch.cuda.device_count()} CUDA device(s) exist"
            )
    if d == "mps":
        import torch

        if not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
            raise ConfigError("device 'mps' requested but MPS is not available: use device='cpu' or 'auto'")
    return d


def resolve_dtype(dtype: str | None, device: str) -> str:
    """The compute dtype name for the neural backends.

    Args:
        dtype: ``None``/``"auto"`` = ``"float16"`` on CUDA, ``"float32"`` elsewhere; or an explicit
            ``"float32"``, ``"float16"``, ``"bfloat16"``.
        device: resolved device string.

    Raises:
        ConfigError: unknown dtype name.
    """
    d = "auto" if dtype is None else str(dtype).lower()
    if d not in _DTYPES:
        raise ConfigError(f"unknown dtype {dtype!r}: use one of {', '.join(_DTYPES)}")
    if d == "auto":
        return "float16" if device.startswith("cuda") else "float32"
    return d


PRECISION_LABELS = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}
"""dtype name -> the precision label in an embedding run's cache key."""


def key_precision(dtype: str | None, device: str, *, baseline: bool = False) -> str:
    """The precision of an embedding run's cache key: the dtype the backend computes in on ``device`` (the rule of
    :func:`resolve_dtype`: the ``dtype`` option, else float16 on CUDA and float32 elsewhere), as "fp32", "fp16" or
    "bf16"; always "fp32" for a baseline (numpy float32 code that has no dtype option).

    Raises:
        ConfigError: unknown dtype name.
    """
    if baseline:
        return "fp32"
    return PRECISION_LABELS[resolve_dtype(dtype, device)]


def available_memory(device: str) -> int | None:
    """Bytes of memory free for new tensors on ``device``: the GPU's free memory (``torch.cuda.mem_get_info``) for
    ``cuda[:N]``, the system's ``MemAvailable`` (``/proc/meminfo``, else ``sysconf``) for ``cpu``; None when unknown
    (``mps``, another system)."""
    if device.startswith("cuda"):
        import torch

        free, _total = torch.cuda.mem_get_info(torch.device(device))
        return int(free)
    if device != "cpu":
        return None
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        import os

        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def torch_dtype(name: str):
    """The ``torch.dtype`` for a dtype name from :func:`resolve_dtype`."""
    import torch

    return {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[name]


@contextlib.contextmanager
def library_output() -> Iterator[None]:
    """While the block runs (a model resolved, loaded or run), transformers and huggingface_hub draw no progress bars
    of their own, and transformers' own warnings are not printed unless embedselect's log shows INFO (``-v``).

    - The bars: transformers' "Loading weights" / "Loading checkpoint shards" (its ``utils.logging.tqdm``, which reads
      the switch of ``disable_progress_bar`` at each bar) and the hub's bars. On a terminal the run's own line
      (:mod:`embedselect._util.progress`) is the only bar and already shows the stage; the libraries' bars were drawn
      beside it, and each "Loading weights" stayed on the screen after its model. With ``--quiet`` or no terminal
      there is no bar at all.
    - The warnings: above all the loading report, a table of the checkpoint's unexpected and missing tensors that
      loading a model saved with a task head (``BertForMaskedLM``) prints for every load. What matters in it, a
      weight the model reads that the checkpoint lacks, is a ``ModelLoadError`` of its own
      (:mod:`embedselect.models.backends.weights`).

    The caller's settings are put back afterwards (a program that imports embedselect keeps its own choice):
    transformers' verbosity, then its bar switch, since it sets the hub's too, then the hub's global switch. (A hub
    group's own setting, ``disable_progress_bars("name")``, is not kept: the hub's global switch clears them.)"""
    from embedselect._util.compat import ensure_torchvision_importable

    ensure_torchvision_importable()
    import huggingface_hub.utils as hub_utils
    from transformers.utils import logging as tf_logging

    tf_was_on = tf_logging.is_progress_bar_enabled()
    hub_was_off = hub_utils.are_progress_bars_disabled()
    tf_logging.disable_progress_bar()  # the hub's bars too
    try:
        with library_logs_below("transformers", logging.ERROR):  # transformers' verbosity is this logger's level
            yield
    finally:
        if tf_was_on:
            tf_logging.enable_progress_bar()  # turns the hub's on as well
        if hub_utils.are_progress_bars_disabled() != hub_was_off:
            if hub_was_off:
                hub_utils.disable_progress_bars()
            else:
                hub_utils.enable_progress_bars()


class _NullBar:
    def update(self, n: int = 1) -> None:  # noqa: D401 - tqdm-compatible no-op
        pass

    def close(self) -> None:
        pass


@contextlib.contextmanager
def progress_bar(total: int, *, desc: str = "embedding", enabled: bool = False, unit: str = "item") -> Iterator[Any]:
    """A tqdm bar over ``total`` units when ``enabled`` (see :func:`progress_enabled`), else a no-op
    object with the same ``update(n)`` method."""
    if not enabled:
        yield _NullBar()
        return
    from tqdm.auto import tqdm

    from embedselect._util.progress import bar_size

    bar = tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False, **bar_size(sys.stderr))
    try:
        yield bar
    finally:
        bar.close()

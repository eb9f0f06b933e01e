"""Import-time compatibility fixes, applied before torch-based libraries are imported.

torchvision wheels are built per torch release and per accelerator. On a machine with the CPU build of
torch, the only torchvision that accepts that torch may be a CUDA build whose C++ extension
(``torchvision/_C.so``) cannot load. torchvision then fails at import time with
``RuntimeError: operator torchvision::nms does not exist``, because its Python side registers fake
(meta) kernels for ``nms``/``qnms`` unconditionally. transformers imports torchvision whenever it is
installed, and timm always does, so nothing would work.

:func:`ensure_torchvision_importable` detects exactly that situation (torchvision installed, its
extension failing to load) and defines the two missing operator *schemas*, nothing else. The Python
parts of torchvision (transforms, which is all timm and transformers use here) then import and work;
calling a detection op such as ``torchvision.ops.nms`` still fails loudly, as it would have anyway.
On a healthy install (matching torch and torchvision) the function does nothing. It runs only when a
backend that imports torchvision (sentence-transformers, timm, transformers) is loaded, never at
``import embedselect``; set ``EMBEDSELECT_TORCHVISION_SHIM=0`` to switch it off.
"""

from __future__ import annotations

import glob
import importlib.util
import logging
import os
import sys

log = logging.getLogger(__name__)

_state: dict[str, object] = {}

_MISSING_SCHEMAS = (
    "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
)


def ensure_torchvision_importable() -> bool:
    """Make ``import torchvision`` work when its C++ ops cannot load. Idempotent.

    Returns:
        True if schemas were registered (the fallback is active), False otherwise.
    """
    if "applied" in _state:
        return bool(_state["applied"])
    _state["applied"] = False
    from embedselect._util import env

    if not env.torchvision_shim():
        return False
    if "torchvision" in sys.modules:
        return False
    spec = importlib.util.find_spec("torchvision")
    if spec is None or not spec.submodule_search_locations:
        return False
    import torch

    libs = glob.glob(os.path.join(list(spec.submodule_search_locations)[0], "_C*.so")) + glob.glob(
        os.path.join(list(spec.submodule_search_locations)[0], "_C*.pyd")
    )
    if libs:
        try:
            torch.ops.load_library(libs[0])
            return False  # healthy install: torchvision will find its ops
        except (OSError, RuntimeError) as exc:
            reason = f"{type(exc).__name__}: {exc}"
    else:
        reason = "no compiled extension found"
    lib = torch.library.Library("torchvision", "DEF")  # noqa: TOR901 - schemas only
    for schema in _MISSING_SCHEMAS:
        lib.define(schema)
    _state["lib"] = lib  # keep the registration alive
    _state["applied"] = True
    log.info(
        "torchvision's C++ ops do not match this torch build (%s); registered the nms/qnms schemas so "
        "its Python transforms import. torchvision.ops detection kernels are unavailable.",
        reason,
    )
    return True

"""Decoding one image file with PIL, the one rule for its size guard and for the pixels a model sees (the data
loader's check and every image backend read images through it).

PIL warns (``DecompressionBombWarning``, a Python warning with PIL's own file and line) when an image has more pixels
than ``Image.MAX_IMAGE_PIXELS`` (about 89 million) and refuses one with twice that. A large photo of the user's own
is decoded without the warning, which named neither the file nor what to do and was printed once for every reader
of it; one over the refusal limit is an error that names its size and the limit in words.

A 16-bit greyscale image (PIL's modes ``I;16*`` and ``I``, a 16-bit PNG or TIFF) is brought to 8 bits by its scale
(the top 8 of its 16 bits) before it is made RGB: PIL's own conversion clips every value over 255 to white, and
such an image came out (almost) white for every candidate.
"""

from __future__ import annotations

import re
import warnings
from typing import Any

_BOMB = re.compile(r"\((\d+) pixels\) exceeds limit of (\d+) pixels")


def open_image(source: Any) -> Any:
    """``PIL.Image.open(source)`` fully loaded (a path or a binary file object), PIL's warning about large images
    kept quiet; PIL's errors are raised as they are (:func:`too_large` words its size refusal)."""
    from PIL import Image

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        img = Image.open(source)
        img.load()
    return img


def as_mode(img: Any, mode: str) -> Any:
    """``img`` (a PIL image) in ``mode`` (``"RGB"`` or ``"L"``); a 16-bit greyscale image is scaled to 8 bits
    first (the module docstring)."""
    if img.mode.startswith("I;16") or (img.mode == "I" and img.getextrema()[1] > 255):
        import numpy as np
        from PIL import Image

        wide = np.asarray(img.convert("I") if img.mode != "I" else img, dtype=np.int64)
        img = Image.fromarray((np.clip(wide, 0, 65535) >> 8).astype(np.uint8), "L")
    return img.convert(mode)


def too_large(exc: BaseException) -> str | None:
    """What PIL's refusal of an image too large to decode says, in words ("400 million pixels, over the limit of
    179 million for one image ..."), or None when ``exc`` is another error."""
    from PIL import Image

    if not isinstance(exc, Image.DecompressionBombError):
        return None
    m = _BOMB.search(str(exc))
    size = f"{_pixels(int(m.group(1)))}, over the limit of {_pixels(int(m.group(2)))}" if m else \
        "more pixels than the limit"
    return f"too large to decode: {size} for one image (a guard against decompression bombs); shrink it"


def _pixels(n: int) -> str:
    return f"{n / 1e6:.0f} million pixels" if n >= 10**6 else f"{n} pixels"

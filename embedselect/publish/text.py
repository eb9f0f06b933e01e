"""Escaping and number formatting shared by every published format (HTML, Markdown, badges, model cards).

Everything that can come from outside (model ids and revisions from the hub, file names, error messages,
warnings) is untrusted: HTML gets :func:`esc`, a Markdown table cell gets :func:`md`, a file name gets
:func:`safe_filename`.
"""

from __future__ import annotations

import hashlib
import html
import math
import re
import unicodedata
from typing import Any

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+!|])")
_UNSAFE_FILE_CHARS = re.compile(r"[^A-Za-z0-9._-]+")


def num(v: Any, digits: int = 4) -> str:
    """A number for display: ``digits`` significant digits; ``–`` for None, NaN or infinity."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "–"
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    return str(v)


def esc(v: Any) -> str:
    """``v`` as HTML text (quotes escaped too, so it is safe inside attributes)."""
    return html.escape(str(v), quote=True)


def md(v: Any) -> str:
    """Escape text for a Markdown table cell (no HTML, no links, no cell breaks, one line)."""
    return _MD_SPECIAL.sub(r"\\\1", " ".join(str(v).split()))


def safe_filename(name: str, *, max_len: int = 80) -> str:
    """A file name for an untrusted candidate name or model id: ASCII letters, digits, ``.``, ``_`` and ``-``
    only, never starting with a dot, plus a short hash of the original so that two names that clean to the same
    text (``a/b`` and ``a_b``) never share a file. Never a path: no separator, no ``..``."""
    text = unicodedata.normalize("NFKD", str(name)).encode("ascii", "ignore").decode("ascii")
    stem = _UNSAFE_FILE_CHARS.sub("_", text).strip("._-")[:max_len] or "candidate"
    digest = hashlib.sha256(str(name).encode("utf-8")).hexdigest()[:8]
    return f"{stem}-{digest}"

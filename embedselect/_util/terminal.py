"""The width of the terminal a stream writes to: one rule for the progress line, the ranking table and ``ask``'s
wrapped questions."""

from __future__ import annotations

import os
import shutil
from typing import Any


def reported_size(stream: Any) -> os.terminal_size | None:
    """The size the terminal behind ``stream`` reports, or None: not a terminal, or one that reports 0×0 (``script``,
    an unsized pty, some CI runners)."""
    try:
        size = os.get_terminal_size(stream.fileno())
    except (OSError, ValueError, AttributeError):
        return None
    return size if size.columns > 0 and size.lines > 0 else None


def columns(stream: Any) -> int:
    """The columns of the terminal behind ``stream``: its reported size (:func:`reported_size`); where it reports
    none, ``$COLUMNS``; else 80."""
    size = reported_size(stream)
    return size.columns if size is not None else shutil.get_terminal_size((80, 24)).columns

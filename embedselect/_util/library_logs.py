"""The one rule for a library's own log lines during a run: shown only when embedselect's log shows INFO (``-v``)."""

from __future__ import annotations

import contextlib
import logging
from typing import Iterator


@contextlib.contextmanager
def library_logs_below(name: str, level: int) -> Iterator[None]:
    """While the block runs, the library logger ``name`` (``"transformers"``, ``"mlflow"``) emits nothing below
    ``level`` unless embedselect's log shows INFO (``-v``); the logger's own level is put back afterwards (a program
    that imports embedselect keeps its own choice)."""
    logger = logging.getLogger(name)
    before = logger.level
    if not logging.getLogger("embedselect").isEnabledFor(logging.INFO):
        logger.setLevel(max(logger.getEffectiveLevel(), level))
    try:
        yield
    finally:
        logger.setLevel(before)

"""Which cached model ids a ``cache rm --model`` value names: one model, exactly, unless the value is a pattern.

A cached model id is ``org/name`` (a hub model), ``local:<abs dir>``, ``baseline:<name>``, ``openai:<host>/<model>``,
``embedder:<name>`` (``cache ls`` shows them). A value names the id it equals, or the id as ``-m`` names the model:
less its ``local:`` / ``baseline:`` / ``embedder:`` prefix (``tfidf-svd``, a folder's absolute path), an API model
less its host (``openai:<model>``), case-insensitively; a folder path (``./model``) names its absolute path. A
value with a glob character (``*``, ``?``, ``[``) that names no model exactly is a pattern
(:func:`fnmatch.fnmatchcase`, case-insensitive) matched against the same forms, and may name several models.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable

_PREFIXES = ("local:", "baseline:", "embedder:")
_GLOB = frozenset("*?[")


def _forms(model_id: str) -> tuple[str, ...]:
    """The ways a value can name ``model_id`` (lower case): the id itself, and the id as ``-m`` names it."""
    low = model_id.lower()
    if low.startswith("openai:") and "/" in low:
        return low, "openai:" + low.split("/", 1)[1]
    bare = next((low[len(p):] for p in _PREFIXES if low.startswith(p)), None)
    return (low,) if bare is None else (low, bare)


def _names(value: str, model_ids: list[str]) -> list[str]:
    """The ids ``value`` names exactly: as written, or as the absolute path of a folder it names."""
    values = {value.lower(), os.path.abspath(os.path.expanduser(value)).lower()}
    return [m for m in model_ids if values & set(_forms(m))]


def is_pattern(value: str, model_ids: Iterable[str] = ()) -> bool:
    """Whether ``value`` is a glob pattern: it has a glob character and names none of ``model_ids`` exactly."""
    return bool(_GLOB & set(value)) and not _names(value, list(model_ids))


def matching_models(value: str, model_ids: Iterable[str]) -> list[str]:
    """The ids among ``model_ids`` (each once, in their order) that ``value`` names: exactly, or by its pattern."""
    ids = list(dict.fromkeys(model_ids))
    low = value.lower()
    if is_pattern(value, ids):
        return [m for m in ids if any(fnmatch.fnmatchcase(f, low) for f in _forms(m))]
    return _names(value, ids)


def containing(value: str, model_ids: Iterable[str]) -> list[str]:
    """The ids among ``model_ids`` that contain ``value`` (case-insensitive): what to suggest when it names none."""
    low = value.lower()
    return [m for m in dict.fromkeys(model_ids) if low in m.lower()]

"""The one place that reads ``EMBEDSELECT_*`` environment variables: each has a reader here that parses its value
once, with the same rule everywhere, and refuses a value it cannot use with an
:class:`~embedselect.errors.EnvironmentVariableError` naming the variable and the accepted form.

Variables (:data:`VARIABLES` lists them with their accepted forms):

- ``EMBEDSELECT_CACHE_DIR``: the cache root (:func:`cache_dir`).
- ``EMBEDSELECT_CACHE_READONLY``: open every cache read-only (:func:`cache_read_only`).
- ``EMBEDSELECT_LOCK_TIMEOUT``: seconds to wait for the cache database's lock (:func:`lock_timeout`).
- ``EMBEDSELECT_CATALOG_DIR``: a folder searched first for ``catalog:<name>`` (:func:`catalog_dir`).
- ``EMBEDSELECT_TORCHVISION_SHIM``: whether the torchvision fallback may be applied (:func:`torchvision_shim`).

An unset or empty variable means "not given" (the default applies).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from embedselect.errors import EnvironmentVariableError

__all__ = [
    "DEFAULT_LOCK_TIMEOUT",
    "VARIABLES",
    "cache_dir",
    "cache_read_only",
    "catalog_dir",
    "lock_timeout",
    "torchvision_shim",
]

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")
_BOOL = "1, true, yes, on or 0, false, no, off"

VARIABLES: dict[str, str] = {
    "EMBEDSELECT_CACHE_DIR": "a folder path (~ is expanded)",
    "EMBEDSELECT_CACHE_READONLY": _BOOL,
    "EMBEDSELECT_LOCK_TIMEOUT": "a finite number of seconds >= 0",
    "EMBEDSELECT_CATALOG_DIR": "a folder path (~ is expanded)",
    "EMBEDSELECT_TORCHVISION_SHIM": _BOOL,
}
"""Every variable embedselect reads -> the form of value it accepts (what the error says)."""

_EXAMPLES = {"EMBEDSELECT_CACHE_READONLY": "1 (read-only) or 0",
             "EMBEDSELECT_LOCK_TIMEOUT": "120 (two minutes, the default)",
             "EMBEDSELECT_TORCHVISION_SHIM": "0 (off) or 1"}

DEFAULT_LOCK_TIMEOUT = 120.0
"""Seconds to wait for the cache database's lock when ``EMBEDSELECT_LOCK_TIMEOUT`` is not set."""


def _raw(name: str) -> str | None:
    value = os.environ.get(name)
    return value.strip() if value is not None and value.strip() else None


def _bad(name: str, value: str) -> EnvironmentVariableError:
    return EnvironmentVariableError(f"{name}={value!r} is not {VARIABLES[name]}: give e.g. {name}={_EXAMPLES[name]}, "
                                    "or unset it for the default", variable=name, accepted=VARIABLES[name])


def _flag(name: str, default: bool) -> bool:
    value = _raw(name)
    if value is None:
        return default
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise _bad(name, value)


def _folder(name: str) -> Path | None:
    value = _raw(name)
    return Path(value).expanduser() if value is not None else None


def cache_dir() -> Path | None:
    """``EMBEDSELECT_CACHE_DIR`` as a path, or None when unset."""
    return _folder("EMBEDSELECT_CACHE_DIR")


def catalog_dir() -> Path | None:
    """``EMBEDSELECT_CATALOG_DIR`` as a path, or None when unset."""
    return _folder("EMBEDSELECT_CATALOG_DIR")


def cache_read_only() -> bool:
    """Whether ``EMBEDSELECT_CACHE_READONLY`` asks for read-only caches (unset: False).

    Raises:
        EnvironmentVariableError: a value that is neither true (1, true, yes, on) nor false (0, false, no, off).
    """
    return _flag("EMBEDSELECT_CACHE_READONLY", False)


def torchvision_shim() -> bool:
    """Whether ``EMBEDSELECT_TORCHVISION_SHIM`` allows the torchvision fallback (unset: True).

    Raises:
        EnvironmentVariableError: a value that is neither true nor false.
    """
    return _flag("EMBEDSELECT_TORCHVISION_SHIM", True)


def lock_timeout() -> float:
    """``EMBEDSELECT_LOCK_TIMEOUT`` in seconds (unset: :data:`DEFAULT_LOCK_TIMEOUT`).

    Raises:
        EnvironmentVariableError: not a finite number >= 0 (``2min``, ``nan``, ``-1``).
    """
    name = "EMBEDSELECT_LOCK_TIMEOUT"
    value = _raw(name)
    if value is None:
        return DEFAULT_LOCK_TIMEOUT
    try:
        seconds = float(value)
    except ValueError:
        raise _bad(name, value) from None
    if not math.isfinite(seconds) or seconds < 0:
        raise _bad(name, value)
    return seconds

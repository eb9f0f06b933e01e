"""The optional parts of embedselect (pyproject.toml's extras): importing one, or saying how to install it."""

from __future__ import annotations

import importlib
from types import ModuleType

from embedselect.errors import MissingExtraError


def install_command(extra: str) -> str:
    """The shell command that installs ``extra`` (quoted for every shell: ``pip install 'embedselect[image]'``)."""
    return f"pip install 'embedselect[{extra}]'"


def require(module: str, *, extra: str, purpose: str) -> ModuleType:
    """Import ``module``, which the extra ``extra`` installs.

    Raises:
        MissingExtraError: ``module`` is not installed; the message says what needs it (``purpose``) and the exact
            command that installs it.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        missing = getattr(exc, "name", None) or module
        raise MissingExtraError(
            f"{purpose} needs the {extra!r} extra ({missing} is not installed): {install_command(extra)}",
            extra=extra,
        ) from None

"""Where the nightly job's heavy units run: "embed one candidate" and "estimate a batch of sufficiency pairs".

:class:`~embedselect.nightly.executors.base.Executor` is the interface; :class:`~embedselect.nightly.executors.local.LocalExecutor`
(in-process, the default) and :class:`~embedselect.nightly.executors.ray.RayExecutor` (optional extra ``embedselect[ray]``)
implement it. Whatever the executor, only the driver process writes the store (DuckDB has a single writer).
"""

from typing import Any

from embedselect.nightly.executors.base import EmbedJob, Executor, UnitOutcome


def get_executor(kind: str = "local", **options: Any) -> Executor:
    """The executor called ``kind`` ("local" or "ray"), built with ``options`` (see each class).

    Raises:
        ConfigError: an unknown kind, or "ray" without Ray installed.
    """
    from embedselect.errors import ConfigError

    if kind == "local":
        from embedselect.nightly.executors.local import LocalExecutor

        return LocalExecutor(**options)
    if kind == "ray":
        from embedselect.nightly.executors.ray import RayExecutor

        return RayExecutor(**options)
    raise ConfigError(f"unknown executor {kind!r}; use 'local' or 'ray'")

__all__ = ["EmbedJob", "Executor", "UnitOutcome", "get_executor"]

"""Where the nightly job's heavy units run: "embed one candidate" and "estimate a batch of sufficiency pairs".

:class:`~embedselect.executors.base.Executor` is the interface; :class:`~embedselect.executors.local.LocalExecutor`
(in-process, the default) and :class:`~embedselect.executors.ray.RayExecutor` (optional extra ``embedselect[ray]``)
implement it. Whatever the executor, only the driver process writes the store (DuckDB has a single writer).
"""

from embedselect.executors.base import EmbedJob, Executor, UnitOutcome, get_executor

__all__ = ["EmbedJob", "Executor", "UnitOutcome", "get_executor"]

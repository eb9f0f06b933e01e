"""The executor interface of the nightly job.

An executor runs *units* and hands their results to the driver, which alone writes the store:

- **embed one candidate**: resolve, load and run one model on the reference data; the result is the
  (n, d) float32 matrix plus its provenance, or a failure with its reason;
- **estimate a batch of information-sufficiency pairs** (optional): see :meth:`Executor.precompute_pairs`.

The driver decides *what* to run (the plan, the budget); the executor decides *where*.
"""

from __future__ import annotations

import abc
import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from embedselect.config import RankConfig, Runtime

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EmbedJob:
    """Settings shared by every "embed one candidate" unit of a night.

    Attributes:
        config: the night's :class:`~embedselect.config.RankConfig`: its ``seed`` (baselines) and load ``policy``
            apply to embedding.
        runtime: the night's :class:`~embedselect.config.Runtime`: ``device`` ("cpu", "cuda", "cuda:1" or None:
            automatic, per worker), ``batch_size`` and ``token`` (never logged or stored).
        timeout_s: per-model wall-clock limit in seconds, or None.
    """

    config: RankConfig = field(default_factory=RankConfig)
    runtime: Runtime = field(default_factory=Runtime)
    timeout_s: float | None = None

    @property
    def token(self) -> str | None:
        """The hub token (``runtime.token``)."""
        return self.runtime.token


@dataclass
class UnitOutcome:
    """What one "embed one candidate" unit produced, as the driver sees it.

    ``outcome`` is the :class:`embedselect.pipeline.EmbedOutcome` (``result.cached`` False = a forward pass was
    done), with its vectors only when no cache holds them (:func:`hand_on`); ``where`` names the process or Ray node
    that ran it.
    """

    outcome: Any
    where: str = "driver"


def hand_on(outcome: Any) -> Any:
    """``outcome`` as an executor hands it to the driver: without its vectors when the cache holds them (the driver
    reads them back by run key), with them when no cache does (``result.cache_scope`` ``"input"``: precomputed
    vectors; ``"run"``: an API without a revision), the only way they reach the night's rank stage."""
    if outcome.result.cache_scope == "cache":
        outcome.vectors = None
    return outcome


class Executor(abc.ABC):
    """Runs units for the nightly driver. Use as a context manager (``close`` releases workers)."""

    name = "abstract"
    computes_pairs = False  # True when precompute_pairs does work (the driver then hands it the embeddings)

    @abc.abstractmethod
    def embed(
        self,
        ref: Any,
        candidates: Sequence[Any],
        *,
        store: Any,
        job: EmbedJob,
        should_stop: Callable[[], bool],
        on_done: Callable[[UnitOutcome], None] | None = None,
    ) -> tuple[list[UnitOutcome], list[Any]]:
        """Embed every candidate whose vectors the store lacks; store them (driver side) as they arrive.

        Args:
            ref: the :class:`~embedselect.data.ReferenceData` (read once per worker).
            candidates: :class:`~embedselect.models.candidates.Candidate` objects to embed.
            store: the driver's :class:`~embedselect.store.Store`, the only one written.
            job: shared settings.
            should_stop: called before starting each unit; True = the budget is spent, start no more.
            on_done: called on the driver after each unit's result is stored.

        Returns:
            (outcomes of the units that ran, in completion order; candidates left for the next night).
        """

    def precompute_pairs(self, embeddings: dict, run_keys: dict, *, seed: int, options: dict, pair_cache: Any,
                         device: str, references: frozenset[str] = frozenset(),
                         families: Mapping[str, str] | None = None) -> int:
        """Estimate the sufficiency pairs that :func:`embedselect.select` will read and ``pair_cache`` lacks, and put
        them into it, so that ``select()`` only reads them. Returns the number of pairs computed here.

        ``pair_cache`` is the one the metric reads: the store's, through the run's savings (a write the cache refuses
        does not end the night; the pairs are carried in memory to the metric and the ranking's one ``not-stored``
        warning says so: :mod:`embedselect.pipeline.savings`).

        ``options`` are the sufficiency metric's; ``references`` and ``families`` the pool's reference points and
        families as ``select()``'s metrics receive them: with the metric's ``pairs`` default, the pairs its scores
        read (:func:`~embedselect.metrics.sufficiency.score.missing_pairs`).

        The default does nothing: ``select()`` computes missing pairs itself, in one batched model, which is
        the fastest way on one machine.
        """
        return 0

    def close(self) -> None:
        """Release workers (no-op by default)."""

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

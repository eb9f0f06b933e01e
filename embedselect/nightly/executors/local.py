"""The default executor: every unit runs in this process, one after the other, writing the store as it goes
(so a run killed at any point keeps every model finished before the kill)."""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from typing import Any, Callable, Iterator, Sequence

from embedselect.nightly.executors.base import EmbedJob, Executor, UnitOutcome, hand_on

log = logging.getLogger(__name__)


@contextlib.contextmanager
def time_limit(seconds: float | None, what: str) -> Iterator[None]:
    """Raise :class:`~embedselect.errors.ModelTimeoutError` inside the block after ``seconds`` (wall clock).

    Uses ``SIGALRM``, so it only acts in the main thread of a POSIX process; elsewhere (or with None) the
    block runs without a limit.
    """
    if not seconds or threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return
    from embedselect.errors import ModelTimeoutError

    def _raise(signum, frame):  # noqa: ARG001
        raise ModelTimeoutError(f"{what} took longer than the per-model limit of {seconds:.0f} s")

    old = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


class LocalExecutor(Executor):
    """In-process executor: :func:`embedselect.pipeline.embed_reference` one candidate at a time on the driver's store."""

    name = "local"

    def __init__(self, **_: Any) -> None:
        pass

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
        from embedselect.pipeline.embedding import embed_reference
        from embedselect.errors import ModelTimeoutError

        done: list[UnitOutcome] = []
        left: list[Any] = []
        for i, cand in enumerate(candidates):
            if should_stop():
                left = list(candidates[i:])
                break
            try:
                with time_limit(job.timeout_s, cand.name):
                    (outcome,) = embed_reference(ref, [cand], store=store, config=job.config, runtime=job.runtime,
                                                 keep_vectors=True)
                hand_on(outcome)
            except ModelTimeoutError as exc:  # fired outside embed()'s own error handling
                outcome = timed_out(cand, exc, store=store, fingerprint=ref.fingerprint, token=job.token)
            unit = UnitOutcome(outcome, where="driver")
            done.append(unit)
            log.info("nightly: %s %s", cand.name, "embedded" if outcome.result.ok else "failed")
            if on_done is not None:
                on_done(unit)
        return done, left


def timed_out(cand: Any, exc: Exception, *, store: Any, fingerprint: str, token: str | None = None) -> Any:
    """A failed :class:`~embedselect.pipeline.EmbedOutcome` for a unit stopped outside ``embed()``'s own error handling
    (its time limit, a crashed Ray worker), recorded like any other failure through
    :func:`embedselect.store.failures.record_failure` (token-free message)."""
    from embedselect.pipeline.context import EmbedOutcome
    from embedselect.ranking.result import CandidateResult
    from embedselect.store.failures import record_failure

    message = record_failure(store, spec=cand.spec, stage="embed", error=exc, revision=cand.revision,
                             fingerprint=fingerprint, token=token,
                             repo_id=cand.ref if cand.kind == "hub" else None)
    res = CandidateResult(name=cand.name, spec=cand.spec, status="failed", error_type=type(exc).__name__,
                          error=message)
    return EmbedOutcome(res)

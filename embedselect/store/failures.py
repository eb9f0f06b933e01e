"""The one place that records why a candidate failed, and the rule that tells a refusal from a failure.

- A **refusal** is the safety policy's verdict on one revision (:class:`~embedselect.errors.UnsafeModelError`:
  remote code, pickle-only weights, too large, gated). It goes to the cache's ``failures`` table and to the
  hub models table's ``hub_refusals`` with the commit it was made at; that revision is not planned again, a new one is.
- A **failure** is everything else and goes to ``failures`` only. A *transient* one (:func:`is_transient`: a hub or
  network fault that outlived the retries — 5xx, timeout, connection reset, a file missing during a download) is
  retried the next night at the same revision; any other (a broken model, NaN vectors, the per-model time limit)
  is retried at the same revision only with ``retry_failed``, and always at a new revision.

Every message passes :func:`embedselect._util.redaction.redact` here, whoever calls: the API, the local executor's time
limit, the Ray driver copying a worker's rows.
"""

from __future__ import annotations

from typing import Any

from embedselect.errors import UnsafeModelError
from embedselect._util.redaction import redact

TRANSIENT_ERRORS = frozenset({"HubError"})
"""Error types of passing faults: :class:`~embedselect.errors.HubError` is what a hub or network failure becomes
after :mod:`embedselect.models.hub.http`'s retries."""


def is_transient(error_type: str | None) -> bool:
    """Whether a failure of this error type (the exception's class name) is passing: retried the next night."""
    return error_type in TRANSIENT_ERRORS


def record_failure(store: Any, *, spec: str, stage: str, error: BaseException | str, error_type: str | None = None,
                   model_id: str | None = None, revision: str | None = None, fingerprint: str | None = None,
                   repo_id: str | None = None, token: str | None = None) -> str:
    """Record one candidate's failure (and, for a policy refusal of a hub model, the refusal of its revision).

    Args:
        store: the :class:`~embedselect.store.Store` written (best effort: a store that cannot record warns).
        spec: the candidate's spec; ``stage``: where it failed ("resolve", "load", "embed", "store", ...).
        error: the exception, or a message already recorded elsewhere (a Ray worker's row).
        error_type: the error's class name (default: ``type(error).__name__``).
        model_id / revision: what was being embedded, when known.
        repo_id: the hub repo of a hub candidate (None otherwise): needed to record a refusal.
        token: the hub token, scrubbed from the message with every other ``hf_...`` token.

    Returns:
        the token-free message that was recorded.
    """
    message = redact(str(error), token)
    etype = error_type or type(error).__name__
    store._record_failure(spec=spec, stage=stage, error_type=etype, message=message, model_id=model_id,
                         revision=revision, fingerprint=fingerprint)
    if isinstance(error, UnsafeModelError) and repo_id:
        from embedselect.store import hub_models

        # the commit the policy saw (fetch_model attaches it), else what the caller pinned
        at = getattr(error, "revision", None) or revision
        hub_models.record_refusal(store, repo_id, at, error.reason, message)
    return message

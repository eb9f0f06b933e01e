"""The hub's HTTP layer, in one place: retries (:class:`RetryPolicy`), which failures are transient, and the
mapping of huggingface_hub / httpx errors to embedselect's typed, token-free errors."""

from __future__ import annotations

import json
import logging
import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable, Iterable, TypeVar

import httpx2  # huggingface_hub's HTTP client; imported here so a missing one fails at import, not in a handler

from embedselect.errors import CandidateError, HubError, UnsafeModelError
from embedselect._util.redaction import redact

log = logging.getLogger("embedselect.models.hub")

SHA_RE = re.compile(r"^[0-9a-f]{40}$")
"""A full commit sha, as the hub reports it."""


T = TypeVar("T")


_RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})


def now() -> datetime:
    return datetime.now(timezone.utc)


def offline() -> bool:
    from huggingface_hub import constants

    return bool(constants.is_offline_mode())


def endpoint() -> str:
    from huggingface_hub import constants

    return constants.ENDPOINT.rstrip("/")


@dataclass(frozen=True)
class RetryPolicy:
    """How hub requests are retried.

    Attributes:
        max_retries: retries after the first attempt (so at most ``max_retries + 1`` requests).
        base_wait: first backoff wait in seconds; doubled after each retry, up to ``max_wait``.
        max_wait: cap on one backoff wait, seconds.
        max_retry_after: cap on a server's ``Retry-After`` (seconds); longer asks are capped, not refused.
        timeout: per-request timeout in seconds (connect and read), for the requests embedselect makes itself.
        sleep: the sleep function (seconds → None); tests pass a recorder.
    """

    max_retries: int = 4
    base_wait: float = 1.0
    max_wait: float = 30.0
    max_retry_after: float = 120.0
    timeout: float = 30.0
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False, repr=False)

    def wait(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based)."""
        if retry_after is not None:
            return float(min(max(retry_after, 0.0), self.max_retry_after))
        return float(min(self.base_wait * 2 ** (attempt - 1), self.max_wait))


class Malformed(Exception):
    """A hub answer that does not have the expected shape (bad JSON, missing fields)."""


def _retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    value = headers.get("Retry-After")
    if value is None:
        return None
    try:
        return float(value.strip())
    except ValueError:
        return None


def status_of(exc: BaseException) -> int | None:
    response = getattr(exc, "response", None)
    return getattr(response, "status_code", None)


def causes(exc: BaseException) -> Iterable[BaseException]:
    seen = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        yield e
        e = e.__cause__ or e.__context__


def is_transient(exc: BaseException) -> bool:
    """Whether a failure is worth retrying: 408/429/5xx, timeouts, network errors, truncated/malformed bodies."""
    from huggingface_hub.errors import HfHubHTTPError

    for e in causes(exc):
        if isinstance(e, HfHubHTTPError):
            return status_of(e) in _RETRY_STATUS
        if isinstance(
            e, (httpx2.TimeoutException, httpx2.NetworkError, httpx2.RemoteProtocolError, Malformed, json.JSONDecodeError)
        ):
            return True
        if isinstance(e, OSError) and "Consistency check failed" in str(e):
            return True
    return False


def with_retries(fn: Callable[[], T], retry: RetryPolicy, what: str,
                 retryable: Callable[[BaseException], bool] = is_transient) -> T:
    """Call ``fn`` until it succeeds or an error that is not ``retryable`` (default :func:`is_transient`) / the
    retry budget ends it (then re-raise)."""
    attempt = 0
    while True:
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - classified below, re-raised when not transient
            if not retryable(exc) or attempt >= retry.max_retries:
                raise
            attempt += 1
            wait = retry.wait(attempt, next((r for e in causes(exc) if (r := _retry_after(e)) is not None), None))
            log.warning(
                "%s failed (%s); retry %d/%d in %.1fs", what, redact(short_error(exc)), attempt, retry.max_retries, wait
            )
            retry.sleep(wait)


def not_retried_by_hf(exc: BaseException) -> bool:
    """Whether a failure of ``huggingface_hub.snapshot_download`` is transient *and* one huggingface_hub did not
    already retry itself, so that embedselect retries only those (no retries of retries: every file would otherwise
    be asked for up to ~30 times in an outage).

    huggingface_hub (2.x) already retries, with backoff: the tree listing and a file's metadata (HEAD) on 408, 429,
    5xx, timeouts and network errors (``http_backoff``), and a file's download (GET) on connection errors, timeouts
    and broken bodies (resuming, 5 times) and on 408 / 429. It does not retry a file download answered with 5xx, nor
    a body that ends short of the announced size ("Consistency check failed"): those are retried here.
    """
    from huggingface_hub.errors import HfHubHTTPError

    for e in causes(exc):
        if isinstance(e, OSError) and "Consistency check failed" in str(e):
            return True
        if isinstance(e, HfHubHTTPError):
            try:
                request = e.response.request
            except (AttributeError, RuntimeError):  # httpx raises RuntimeError for a response built without one
                request = None
            method = getattr(request, "method", None)
            path = str(getattr(getattr(request, "url", None), "path", "") or "")
            is_file_get = method == "GET" and not path.startswith("/api/")
            return is_file_get and (status_of(e) or 0) >= 500 and status_of(e) in _RETRY_STATUS
    return False


def short_error(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    first = next((line for line in text if line.strip()), "")
    status = status_of(exc)
    name = type(exc).__name__
    return f"{name} (HTTP {status}): {first}" if status else f"{name}: {first}"


def error_kind(exc: BaseException) -> str:
    from huggingface_hub.errors import HfHubHTTPError

    for e in causes(exc):
        if isinstance(e, Malformed):
            return "malformed"
        if isinstance(e, HfHubHTTPError):
            return "http"
        if isinstance(e, httpx2.TimeoutException):
            return "timeout"
        if isinstance(e, (httpx2.TransportError, OSError)):
            return "network"
    return "error"


def silent_tqdm():
    from huggingface_hub.utils import tqdm as hf_tqdm

    class _Silent(hf_tqdm):
        def __init__(self, *args, **kwargs):
            kwargs["disable"] = True
            super().__init__(*args, **kwargs)

    return _Silent


def map_error(exc: BaseException, repo_id: str, revision: str | None, token: str | None) -> Exception:
    """Translate a huggingface_hub / httpx failure into embedselect's typed errors (token-free messages)."""
    from huggingface_hub.errors import (
        FileMetadataError,
        GatedRepoError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        OfflineModeIsEnabled,
        RemoteEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    rev = revision or "main"
    detail = redact(short_error(exc), token)
    for e in causes(exc):
        if isinstance(e, GatedRepoError):
            return UnsafeModelError(
                f"{repo_id} is gated and this token has no access to it. Request access on the hub page, then "
                f"set HF_TOKEN (or pass token=) to a token of the account that was granted access. ({detail})",
                reason="gated",
            )
        if isinstance(e, RevisionNotFoundError):
            return CandidateError(f"{repo_id} has no revision {rev!r} on the hub; check the branch, tag or sha.")
        if isinstance(e, RepositoryNotFoundError):
            return CandidateError(
                f"{repo_id} was not found on the hub ({endpoint()}). Check the id; if it is private, set HF_TOKEN."
            )
        if isinstance(e, RemoteEntryNotFoundError):
            return HubError(f"{repo_id}@{rev}: a listed file is missing on the hub ({detail}). Try again later.")
    for e in causes(exc):
        if isinstance(e, (OfflineModeIsEnabled,)) or (isinstance(e, LocalEntryNotFoundError) and offline()):
            return CandidateError(
                f"{repo_id}@{rev} is not in the local Hugging Face cache and HF_HUB_OFFLINE is set. Fetch it once "
                "online (unset HF_HUB_OFFLINE) or point HF_HOME / HF_HUB_CACHE at a cache that has it."
            )
        if isinstance(e, OSError) and "Consistency check failed" in str(e):
            return HubError(f"{repo_id}@{rev}: a download was truncated (size mismatch) after retries. Try again.")
        if isinstance(e, HfHubHTTPError):
            return HubError(f"{repo_id}@{rev}: the hub answered with an error after retries: {detail}")
        if isinstance(e, httpx2.TimeoutException):
            return HubError(f"{repo_id}@{rev}: the hub did not answer in time after retries ({detail}).")
        if isinstance(e, (httpx2.TransportError,)):
            return HubError(f"{repo_id}@{rev}: cannot reach the hub at {endpoint()} ({detail}). Check the network.")
        if isinstance(e, (Malformed, json.JSONDecodeError)):
            return HubError(f"{repo_id}@{rev}: the hub sent a malformed answer after retries: {e}")
        if isinstance(e, FileMetadataError):
            return HubError(f"{repo_id}@{rev}: the hub's file metadata is unusable ({detail}).")
        if isinstance(e, LocalEntryNotFoundError):
            return HubError(f"{repo_id}@{rev}: could not download the files and they are not cached ({detail}).")
    return HubError(f"{repo_id}@{rev}: fetching failed: {detail}")

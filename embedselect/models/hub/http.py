"""The hub's HTTP layer, in one place: retries (:class:`RetryPolicy`), which failures are transient, and the
mapping of huggingface_hub / httpx errors to embedselect's typed, token-free errors."""

from __future__ import annotations

import json
import logging
import re
import threading
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
        timeout: per-request timeout in seconds for the requests embedselect makes itself: a connect or read that
            waits longer fails, and so does a whole answer that takes longer (see :func:`install_deadlines`).
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


DEADLINE_FLOOR_BYTES_PER_S = 16 * 1024
"""Slowest average rate (bytes per second) at which a hub answer may arrive: an answer of ``b`` bytes must be
complete ``timeout + b / DEADLINE_FLOOR_BYTES_PER_S`` seconds after its request was sent, so a large download at
any usable speed goes through while a hub trickling bytes is cut off after about ``timeout`` seconds."""

DEFAULT_DEADLINE_S = 60.0
"""The total deadline's base, seconds, for a request sent without a timeout of its own (huggingface_hub sends
some, e.g. tree listings, with ``timeout=None``)."""


class _DeadlineStream:
    """One connection (an ``httpcore2`` network stream) whose answers must arrive by a total deadline.

    The clock of an answer starts when its request is written; every read waits at most until
    ``start + timeout + received / DEADLINE_FLOOR_BYTES_PER_S`` (``timeout`` = the read timeout the request carries,
    :data:`DEFAULT_DEADLINE_S` when it has none), then raises ``httpcore2.ReadTimeout`` (httpx's ``ReadTimeout``:
    retried, then reported as a hub that did not answer in time)."""

    def __init__(self, inner) -> None:
        self._inner = inner
        self._start = time.monotonic()
        self._received = 0

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, timeout)
        self._start, self._received = time.monotonic(), 0  # a request went out: its answer's clock starts

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        import httpcore2

        base = timeout if timeout is not None else DEFAULT_DEADLINE_S
        left = self._start + base + self._received / DEADLINE_FLOOR_BYTES_PER_S - time.monotonic()
        if left <= 0:
            raise httpcore2.ReadTimeout(
                f"the answer was not complete within its deadline ({base:g} s plus {self._received} bytes at "
                f"{DEADLINE_FLOOR_BYTES_PER_S} bytes/s)"
            )
        data = self._inner.read(max_bytes, left if timeout is None else min(timeout, left))
        self._received += len(data)
        return data

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context, server_hostname=None, timeout=None):
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str):
        return self._inner.get_extra_info(info)


class _DeadlineBackend:
    """An ``httpcore2`` network backend whose streams are :class:`_DeadlineStream` s."""

    def __init__(self, inner) -> None:
        self._inner = inner

    def connect_tcp(self, *args, **kwargs):
        return _DeadlineStream(self._inner.connect_tcp(*args, **kwargs))

    def connect_unix_socket(self, *args, **kwargs):
        return _DeadlineStream(self._inner.connect_unix_socket(*args, **kwargs))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def _deadline_client() -> httpx2.Client:
    """huggingface_hub's default client, its connection pools (direct and proxied) on :class:`_DeadlineBackend`."""
    from huggingface_hub.utils import _http

    client = _http.default_client_factory()
    transports = [getattr(client, "_transport", None), *getattr(client, "_mounts", {}).values()]
    for transport in transports:
        pool = getattr(transport, "_pool", None)
        if pool is not None and hasattr(pool, "_network_backend"):
            pool._network_backend = _DeadlineBackend(pool._network_backend)
        elif transport is not None:
            log.warning("hub requests through %s have no total deadline (unknown transport)", type(transport).__name__)
    return client


_deadlines_installed = False
_install_lock = threading.Lock()


def install_deadlines() -> None:
    """Give every request of huggingface_hub's shared client (the crawl's pages, model info, tree listings, file
    downloads) a total deadline, not only a per-read time-out (see :class:`_DeadlineStream`). Idempotent and
    thread-safe; the first call replaces the shared client (``huggingface_hub.set_client_factory``), before this
    process has made a hub request through embedselect."""
    global _deadlines_installed
    with _install_lock:
        if _deadlines_installed:
            return
        from huggingface_hub.utils import set_client_factory

        set_client_factory(_deadline_client)
        _deadlines_installed = True


def hub_session() -> httpx2.Client:
    """huggingface_hub's shared client with :func:`install_deadlines` applied: the one client for hub requests."""
    from huggingface_hub.utils import get_session

    install_deadlines()
    return get_session()


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


def _http_answer(exc: BaseException) -> tuple[int | None, str | None]:
    """(status code, request id) of the hub's HTTP answer among ``exc``'s causes (each None when unknown)."""
    from huggingface_hub.errors import HfHubHTTPError

    for e in causes(exc):
        if isinstance(e, HfHubHTTPError):
            status = getattr(getattr(e, "response", None), "status_code", None)
            request_id = getattr(e, "request_id", None)
            return (int(status) if isinstance(status, int) else None), (str(request_id) if request_id else None)
    return None, None


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
    status_code, request_id = _http_answer(exc)

    def hub_error(message: str) -> HubError:  # with what the hub said
        return HubError(message, status_code=status_code, request_id=request_id, repo_id=repo_id)


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
                f"{repo_id} was not found on the hub ({redact(endpoint())}). Check the id; if it is private, set HF_TOKEN."
            )
        if isinstance(e, RemoteEntryNotFoundError):
            return hub_error(f"{repo_id}@{rev}: a listed file is missing on the hub ({detail}). Try again later.")
    for e in causes(exc):
        if isinstance(e, (OfflineModeIsEnabled,)) or (isinstance(e, LocalEntryNotFoundError) and offline()):
            return CandidateError(
                f"{repo_id}@{rev} is not in the local Hugging Face cache and HF_HUB_OFFLINE is set. Fetch it once "
                "online (unset HF_HUB_OFFLINE) or point HF_HOME / HF_HUB_CACHE at a cache that has it."
            )
        if isinstance(e, OSError) and "Consistency check failed" in str(e):
            return hub_error(f"{repo_id}@{rev}: a download was truncated (size mismatch) after retries. Try again.")
        if isinstance(e, HfHubHTTPError):
            return hub_error(_answered(repo_id, rev, status_code, redact(short_error(e), token)))  # the answer's own text
        if isinstance(e, httpx2.TimeoutException):
            return hub_error(f"{repo_id}@{rev}: the hub did not answer in time after retries ({detail}).")
        if isinstance(e, (httpx2.TransportError,)):
            return hub_error(f"{repo_id}@{rev}: cannot reach the hub at {redact(endpoint())} ({detail}). Check the network.")
        if isinstance(e, (Malformed, json.JSONDecodeError)):
            return hub_error(f"{repo_id}@{rev}: the hub sent a malformed answer after retries: {e}")
        if isinstance(e, FileMetadataError):
            return hub_error(f"{repo_id}@{rev}: the hub's file metadata is unusable ({detail}).")
    if any(isinstance(e, LocalEntryNotFoundError) for e in causes(exc)):  # no answer of the hub's among its causes
        return hub_error(f"{repo_id}@{rev}: could not download the files and they are not cached ({detail}).")
    return hub_error(f"{repo_id}@{rev}: fetching failed: {detail}")


def _answered(repo_id: str, rev: str, status: int | None, detail: str) -> str:
    """What a HubError says of an HTTP answer that outlived the retries: a 5xx (or 408 / 429) is the hub's own passing
    fault, said as such (huggingface_hub's wrapper of a failed metadata request, LocalEntryNotFoundError, asks the
    user to check their Internet connection: wrong, the hub answered); another status with the library's text."""
    from http import HTTPStatus

    if status is not None and status in _RETRY_STATUS:
        try:
            phrase = f"{status} {HTTPStatus(status).phrase}"
        except ValueError:
            phrase = str(status)
        return (f"{repo_id}@{rev}: the hub answered {phrase}, to the last retry too: a passing fault on the hub's side, "
                "not of this machine's connection; try again later (a night tries the model again the next night).")
    return f"{repo_id}@{rev}: the hub answered with an error after retries: {detail}"

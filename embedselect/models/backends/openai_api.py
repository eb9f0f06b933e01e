"""Hosted embedding APIs through the OpenAI-compatible ``POST {base_url}/embeddings`` interface (OpenAI, and the many
providers and local servers that speak it): :class:`ApiEmbedder`, the
:class:`~embedselect.models.backends.base.Embedder` of a candidate ``NAME=openai:MODEL?base_url=...&dimensions=...``.

- The key is read from the environment variable named by ``?key_env=`` (default ``OPENAI_API_KEY``) when a request
  is made, and is never kept on an object, logged, stored or put in a message: the variable is registered with
  :func:`embedselect._util.redaction.protect_env`, so every message that goes through
  :func:`~embedselect._util.redaction.redact` (errors, failure records, log lines) has its value replaced by ``***``;
  a server's error body that echoes the key is redacted before it is quoted.
- Batching: at most ``?batch_size=`` inputs (default :data:`DEFAULT_BATCH_SIZE`) and about ``?max_batch_tokens=``
  tokens (default :data:`DEFAULT_MAX_BATCH_TOKENS`, estimated by :func:`estimate_tokens`) per request.
- ``?concurrency=`` requests in flight at once (default :data:`DEFAULT_CONCURRENCY`; a thread pool).
- Retries: a 429 or 5xx answer, or a connection that fails before an answer, is tried again up to
  ``?max_retries=`` times (default :data:`DEFAULT_MAX_RETRIES`), after ``Retry-After`` when the server sends it (at
  most :data:`MAX_RETRY_AFTER_S`), else an exponential back-off (0.5 s, 1 s, 2 s, ... at most 30 s); then
  :class:`~embedselect.errors.EmbeddingAPIError`. Other 4xx answers fail at once.
- A request that takes longer than ``?timeout=`` seconds in all (default :data:`DEFAULT_TIMEOUT_S`) is
  :class:`~embedselect.errors.EmbeddingAPITimeoutError`; it is not tried again (the server may have billed it).
- A hard budget ``?max_tokens_total=``: a request whose estimated tokens would take the run's tokens (the servers'
  ``usage.total_tokens``, summed; a request's estimate where its answer has no usage) over it is not sent:
  :class:`~embedselect.errors.EmbeddingAPIBudgetError`.
- Answers are untrusted: ``data[*].index`` must cover 0..n-1 exactly once (rows are put in that order), every
  vector must have one width (``?dimensions=`` when given) and finite values; anything else, and a body that is not
  JSON, is :class:`~embedselect.errors.EmbeddingAPIResponseError` naming the candidate.

The tokens used are in :attr:`ApiEmbedder.tokens_used` after :meth:`ApiEmbedder.embed` (the run records them).
"""

from __future__ import annotations

import email.utils
import json
import logging
import math
import os
import re
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from embedselect._util.arrays import check_embeddings
from embedselect._util.redaction import protect_env, protect_text, redact
from embedselect.errors import (
    CandidateSpecError,
    EmbeddingAPIBudgetError,
    EmbeddingAPIError,
    EmbeddingAPIResponseError,
    EmbeddingAPITimeoutError,
)

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
DEFAULT_BATCH_SIZE = 256
"""Inputs per request when ``?batch_size=`` is not given (OpenAI accepts 2048)."""
DEFAULT_MAX_BATCH_TOKENS = 100_000
"""Estimated tokens per request when ``?max_batch_tokens=`` is not given (OpenAI's limit is 300 000)."""
DEFAULT_CONCURRENCY = 4
DEFAULT_MAX_RETRIES = 5
DEFAULT_TIMEOUT_S = 60.0
MAX_RETRY_AFTER_S = 120.0
"""The longest ``Retry-After`` honoured; a longer one is waited this long."""
MAX_BACKOFF_S = 30.0
MAX_ANSWER_BYTES_PER_INPUT = 256 * 1024
"""An answer may hold at most this many bytes per input plus 1 MiB (a 3072-wide float vector is about 70 kB of
JSON); a longer one is refused as it arrives (an untrusted server cannot fill the memory)."""
MAX_ERROR_BODY = 300
"""Characters of a server's error body quoted in a message (cut after the whole body is redacted)."""

API_OPTIONS: dict[str, type] = {
    "base_url": str, "dimensions": int, "key_env": str, "batch_size": int, "max_batch_tokens": int,
    "concurrency": int, "max_retries": int, "timeout": float, "max_tokens_total": int,
}
"""The options of an API candidate and their types. Only ``dimensions`` changes the vectors; ``base_url``'s host is
part of the model id; the others are settings of the calls
(:data:`~embedselect.models.backends.base.API_CALL_OPTIONS` and ``batch_size``)."""

_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_KEY_ENV_RE = re.compile(r"(?<=[?&])(\s*key_env\s*=)[^&]*")


def looks_like_key(value: str) -> bool:
    """Whether a ``?key_env=`` value looks like a key rather than a variable name a person chose: over 64 characters,
    or 20 or more with a digit and either both cases or no ``_`` (``a1B2c3...``, 64 hex digits; not
    ``OPENAI_API_KEY`` or ``my_service_key_2024``)."""
    value = str(value)
    if len(value) > 64:
        return True
    mixed = any(c.islower() for c in value) and any(c.isupper() for c in value)
    return len(value) >= 20 and any(c.isdigit() for c in value) and (mixed or "_" not in value)


def shown_spec(spec: str, options: Mapping[str, Any]) -> str:
    """``spec`` as every message, the cache, the JSON and the reports show it: its ``?key_env=`` value as ``***``
    when no environment variable of that name is set (it may be the key itself, given where its variable's name
    belongs); such a value that :func:`looks_like_key` is also a secret of the process from now on
    (:func:`~embedselect._util.redaction.protect_text`: every redacted message drops it)."""
    value = options.get("key_env")
    if value is None or str(value) in os.environ:
        return spec
    if looks_like_key(str(value)):
        protect_text(str(value))
    return _KEY_ENV_RE.sub(lambda m: m.group(1) + "***", spec)

_sleep = time.sleep  # the back-off's wait (a test records the waits instead of sleeping)


def check_api_options(options: Mapping[str, Any], *, spec: str) -> None:
    """Refuse options an API candidate does not know or values of the wrong kind, before any call.

    Raises:
        CandidateSpecError: an unknown option, a value that is not a positive number where one is needed, a
            ``key_env`` that is not an environment variable name, a ``base_url`` that is not http(s)://host...
    """
    from embedselect.models.backends.base import SPEED_ONLY_OPTIONS

    known = set(API_OPTIONS) | {"truncate_dim", "precision"}
    unknown = sorted(set(options) - known - SPEED_ONLY_OPTIONS)
    if unknown:
        raise CandidateSpecError(f"unknown option(s) {', '.join(unknown)} for the API candidate {spec!r}: use "
                                 f"{', '.join(sorted(known))}")
    for key, kind in API_OPTIONS.items():
        value = options.get(key)
        if value is None:
            continue
        if kind is str:
            if not isinstance(value, str) or not value:
                raise CandidateSpecError(f"?{key}= of {spec!r} must be text")
        elif isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or (kind is int and value != int(value)) or not (value >= 0 if key == "max_retries" else value > 0):
            raise CandidateSpecError(f"?{key}={value!r} of {spec!r} must be a {'whole ' if kind is int else ''}"
                                     f"number {'of 0 or more' if key == 'max_retries' else 'above 0'}")
    if not _ENV_NAME_RE.match(str(options.get("key_env") or DEFAULT_KEY_ENV)):
        raise CandidateSpecError(f"?key_env= of {spec!r} must name an environment variable (letters, digits, _), "
                                 "not hold the key itself")
    url = urlsplit(str(options.get("base_url") or DEFAULT_BASE_URL))
    if url.scheme not in ("http", "https") or not url.hostname:
        raise CandidateSpecError(f"?base_url= of {spec!r} must be an http(s) URL such as https://api.openai.com/v1")
    if url.username or url.password or url.query:
        raise CandidateSpecError(f"?base_url= of {spec!r} may not carry a user, password or query: the key comes "
                                 "from ?key_env=")


def base_url_host(options: Mapping[str, Any]) -> str:
    """The host (and port, when given) of a candidate's ``base_url``: part of its model id and cache key."""
    url = urlsplit(str(options.get("base_url") or DEFAULT_BASE_URL))
    return url.netloc.lower()


def estimate_tokens(text: str) -> int:
    """An upper-leaning estimate of a text's tokens for batching and the budget: one per 3 UTF-8 bytes, plus one
    (BPE tokenisers of these models give about one token per 4 bytes of English)."""
    return len(text.encode("utf-8", "surrogatepass")) // 3 + 1


class ApiEmbedder:
    """The :class:`~embedselect.models.backends.base.Embedder` of a hosted embedding model.

    Attributes:
        name: the candidate's name (every error names it).
        model: the provider's model name (``MODEL`` of ``openai:MODEL``).
        backend: ``"openai"``; modality ``"text"``; device ``"api"``.
        tokens_used: the servers' ``usage.total_tokens`` summed over this object's requests (0 before any; a request
            whose answer has no usage counts its estimate, :func:`estimate_tokens`).
        requests: requests answered with vectors.
    """

    backend = "openai"
    modality = "text"
    device = "api"

    def __init__(self, model: str, *, name: str, options: Mapping[str, Any]) -> None:
        check_api_options(options, spec=name)
        self.model, self.name = model, name
        url = urlsplit(str(options.get("base_url") or DEFAULT_BASE_URL))
        self.base_url = urlunsplit((url.scheme, url.netloc, url.path.rstrip("/"), "", ""))
        self.key_env = str(options.get("key_env") or DEFAULT_KEY_ENV)
        protect_env(self.key_env)
        shown_spec("", options)  # a key given as ?key_env= is a secret from now on
        dims = options.get("dimensions")
        self.dimensions = int(dims) if dims is not None else None
        self.batch_size = int(options.get("batch_size") or DEFAULT_BATCH_SIZE)
        self.max_batch_tokens = int(options.get("max_batch_tokens") or DEFAULT_MAX_BATCH_TOKENS)
        self.concurrency = int(options.get("concurrency") or DEFAULT_CONCURRENCY)
        retries = options.get("max_retries")
        self.max_retries = int(retries) if retries is not None else DEFAULT_MAX_RETRIES
        self.timeout = float(options.get("timeout") or DEFAULT_TIMEOUT_S)
        budget = options.get("max_tokens_total")
        self.max_tokens_total = int(budget) if budget is not None else None
        self.tokens_used = 0
        self.requests = 0
        self._lock = threading.Lock()
        self._reserved = 0

    def __repr__(self) -> str:
        return f"ApiEmbedder(name={self.name!r}, model={self.model!r}, base_url={self.base_url!r})"

    def settings(self) -> dict[str, Any]:
        """What the store records of the run: model, base URL (no key, no user), dimensions, the key's variable
        name and the tokens used."""
        return {"model": self.model, "base_url": self.base_url, "dimensions": self.dimensions,
                "key_env": self.key_env if self.key_env in os.environ else "***", "tokens_used": self.tokens_used}

    # --- the run --------------------------------------------------------------------------------------------------
    def embed(self, items: Sequence[Any], *, batch_size: int | None = None, progress: bool = False) -> np.ndarray:
        """float32 (len(items), d): the server's vectors of ``items`` (texts), row i for item i.

        ``batch_size`` (the run's) is not used: the candidate's ``?batch_size=`` sets the provider's batches.

        Raises:
            EmbeddingAPIError: no key in the environment; an HTTP error (after the retries for 429/5xx).
            EmbeddingAPITimeoutError: a request took longer than ``?timeout=``.
            EmbeddingAPIBudgetError: the next request would take the tokens over ``?max_tokens_total=``.
            EmbeddingAPIResponseError: an answer that is not JSON, lacks rows, repeats or skips an index, or has
                vectors of another width or that are not finite.
        """
        from embedselect.models.backends.base import check_items

        texts = check_items(items, "text")
        if not texts:
            return np.zeros((0, self.dimensions or 0), dtype=np.float32)
        key = self._key()
        batches = self._batches(texts)
        out: list[np.ndarray | None] = [None] * len(batches)
        import httpx2

        futures: dict[Future[np.ndarray], int] = {}
        failure: BaseException | None = None
        with httpx2.Client(timeout=httpx2.Timeout(self.timeout)) as client, \
                ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="embed-api") as pool:
            pending = list(range(len(batches)))
            try:
                while pending or futures:
                    while pending and len(futures) < self.concurrency:  # submit in order, reserving the budget
                        b = pending.pop(0)
                        start, stop = batches[b]
                        reserved = self._reserve(texts[start:stop])
                        futures[pool.submit(self._request, client, key, texts[start:stop], reserved)] = b
                    done, _ = wait(list(futures), return_when=FIRST_COMPLETED)
                    for f in done:
                        out[futures.pop(f)] = f.result()
            except BaseException as exc:
                for f in futures:
                    f.cancel()
                failure = exc
        if failure is not None:  # the pool has ended: the requests in flight then are answered, or failed
            for f, b in futures.items():
                if f.done() and not f.cancelled() and f.exception() is None:
                    out[b] = f.result()
            self._keep_answered(failure, out, batches)
            raise failure
        widths = sorted({m.shape[1] for m in out if m is not None})
        if len(widths) > 1:
            raise EmbeddingAPIResponseError(f"candidate {self.name!r}: the API returned vectors of different widths "
                                            f"({', '.join(map(str, widths))}) for different requests")
        return np.ascontiguousarray(np.concatenate([m for m in out if m is not None], axis=0))

    @staticmethod
    def _keep_answered(failure: BaseException, out: list[np.ndarray | None], batches: list[tuple[int, int]]) -> None:
        """Put the batches answered before ``failure`` on it (:data:`~embedselect.models.backends.base.EMBEDDED_ROWS`:
        their items' positions and vectors, of the first answer's width), so that the run keeps what was paid for."""
        from embedselect.models.backends.base import EMBEDDED_ROWS

        answered = [(batches[b], m) for b, m in enumerate(out) if m is not None]
        if not answered:
            return
        width = answered[0][1].shape[1]
        answered = [(span, m) for span, m in answered if m.shape[1] == width]
        rows = np.concatenate([np.arange(start, stop) for (start, stop), _ in answered])
        setattr(failure, EMBEDDED_ROWS, (rows, np.concatenate([m for _, m in answered], axis=0)))

    def _key(self) -> str:
        key = os.environ.get(self.key_env, "")
        if not key.strip() and looks_like_key(self.key_env):  # perhaps the key itself: not repeated
            raise EmbeddingAPIError(f"candidate {self.name!r}: no API key: the environment variable ?key_env= names "
                                    "is not set (what ?key_env= holds looks like a key, not a variable's name: put "
                                    "the key in an environment variable and give that variable's name)")
        if not key.strip():
            raise EmbeddingAPIError(f"candidate {self.name!r}: no API key: set the environment variable "
                                    f"{self.key_env} (or name another with ?key_env=)")
        return key.strip()

    def _batches(self, texts: list[str]) -> list[tuple[int, int]]:
        """[start, stop) ranges of at most ``batch_size`` texts and about ``max_batch_tokens`` estimated tokens (a
        single longer text is a request of its own)."""
        out, start, tokens = [], 0, 0
        for i, t in enumerate(texts):
            est = estimate_tokens(t)
            if i > start and (i - start >= self.batch_size or tokens + est > self.max_batch_tokens):
                out.append((start, i))
                start, tokens = i, 0
            tokens += est
        out.append((start, len(texts)))
        return out

    def _reserve(self, texts: list[str]) -> int:
        """Reserve the estimated tokens of a request under the budget, or refuse it before it is sent."""
        est = sum(estimate_tokens(t) for t in texts)
        with self._lock:
            if self.max_tokens_total is not None and self.tokens_used + self._reserved + est > self.max_tokens_total:
                raise EmbeddingAPIBudgetError(
                    f"candidate {self.name!r}: the next request (about {est} tokens) would take the tokens used "
                    f"({self.tokens_used} so far) over ?max_tokens_total={self.max_tokens_total}; nothing more was "
                    "sent. Raise the budget or rank fewer items (--max-items)")
            self._reserved += est
        return est

    def _request(self, client: Any, key: str, texts: list[str], reserved: int) -> np.ndarray:
        """One batch: POST with retries; the checked float32 (len(texts), d) rows in input order."""
        body: dict[str, Any] = {"model": self.model, "input": texts, "encoding_format": "float"}
        if self.dimensions is not None:
            body["dimensions"] = self.dimensions
        try:
            payload = self._post(client, key, body)
            matrix, used = self._parse(payload, len(texts))
        finally:
            with self._lock:
                self._reserved -= reserved
        with self._lock:
            self.tokens_used += used if used is not None else reserved  # no usage in the answer: the estimate
            self.requests += 1
            over = self.max_tokens_total is not None and self.tokens_used > self.max_tokens_total
        if over:
            raise EmbeddingAPIBudgetError(
                f"candidate {self.name!r}: the server counted {self.tokens_used} tokens, over "
                f"?max_tokens_total={self.max_tokens_total} (the estimate was too low); no further request is sent")
        return matrix

    def _post(self, client: Any, key: str, body: dict[str, Any]) -> bytes:
        import httpx2

        url = f"{self.base_url}/embeddings"
        headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        data = json.dumps(body).encode("utf-8")
        for attempt in range(self.max_retries + 1):
            deadline = time.monotonic() + self.timeout
            try:
                with client.stream("POST", url, content=data, headers=headers) as resp:
                    chunks, size, limit = [], 0, len(body["input"]) * MAX_ANSWER_BYTES_PER_INPUT + 2**20
                    for chunk in resp.iter_bytes():
                        chunks.append(chunk)
                        size += len(chunk)
                        if time.monotonic() > deadline:
                            raise httpx2.ReadTimeout("total time-out")
                        if size > limit:
                            raise EmbeddingAPIResponseError(
                                f"candidate {self.name!r}: the API's answer is over {limit} bytes for "
                                f"{len(body['input'])} inputs; refused")
                    raw = b"".join(chunks)
                    status, retry_after = resp.status_code, resp.headers.get("retry-after")
            except httpx2.TimeoutException:
                raise EmbeddingAPITimeoutError(
                    f"candidate {self.name!r}: the API at {self.base_url} did not answer within {self.timeout:g} s "
                    "(?timeout=); not tried again, as the server may have counted it") from None
            except (httpx2.TransportError, OSError) as exc:
                if attempt >= self.max_retries:
                    raise EmbeddingAPIError(self._redacted(
                        f"candidate {self.name!r}: cannot reach the API at {self.base_url} after {attempt + 1} "
                        f"tries: {type(exc).__name__}: {exc}", key)) from None
                self._wait(attempt, None, f"{type(exc).__name__}")
                continue
            if status == 200:
                return raw
            retryable = status == 429 or status >= 500
            if not retryable or attempt >= self.max_retries:
                # redacted whole, then cut: a key the cut went through would leave a piece that no longer matches
                text = self._redacted(raw.decode("utf-8", "replace"), key)
                tries = f" after {attempt + 1} tries" if retryable else ""
                raise EmbeddingAPIError(self._redacted(
                    f"candidate {self.name!r}: the API at {self.base_url} answered HTTP {status}{tries}: "
                    f"{text[:MAX_ERROR_BODY]!r}", key), status=status)
            self._wait(attempt, retry_after, f"HTTP {status}")
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def _wait(self, attempt: int, retry_after: str | None, why: str) -> None:
        delay = _retry_after_seconds(retry_after)
        if delay is None:
            delay = min(MAX_BACKOFF_S, 0.5 * 2 ** attempt)
        log.info("%s: %s from the embedding API; trying again in %.1f s (try %d of %d)", self.name, why, delay,
                 attempt + 2, self.max_retries + 1)
        _sleep(delay)

    def _redacted(self, text: str, key: str) -> str:
        return redact(text, key)

    def _parse(self, raw: bytes, n: int) -> tuple[np.ndarray, int | None]:
        """The float32 (n, d) rows of an answer in ``index`` order, and its ``usage.total_tokens`` (None when
        absent or not a count)."""
        who = f"candidate {self.name!r}"
        try:
            payload = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise EmbeddingAPIResponseError(f"{who}: the API's answer is not valid JSON ({len(raw)} bytes, "
                                            f"{type(exc).__name__} at {getattr(exc, 'pos', '?')}): a cut-off or "
                                            "garbled answer") from None
        rows = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(rows, list):
            raise EmbeddingAPIResponseError(f"{who}: the API's answer has no 'data' list")
        if len(rows) != n:
            raise EmbeddingAPIResponseError(f"{who}: the API returned {len(rows)} vectors for {n} inputs")
        by_index: dict[int, Any] = {}
        for row in rows:
            idx = row.get("index") if isinstance(row, dict) else None
            if isinstance(idx, bool) or not isinstance(idx, int) or not 0 <= idx < n or idx in by_index:
                raise EmbeddingAPIResponseError(
                    f"{who}: the API's 'index' fields do not cover 0..{n - 1} exactly once (got {idx!r}); the rows "
                    "cannot be matched to the inputs")
            by_index[idx] = row.get("embedding")
        try:
            matrix = np.asarray([by_index[i] for i in range(n)], dtype=np.float64)
        except (TypeError, ValueError):
            widths = sorted({len(v) for v in by_index.values() if isinstance(v, list)})
            raise EmbeddingAPIResponseError(f"{who}: the API returned vectors that are not lists of numbers of one "
                                            f"width (widths {widths})") from None
        if matrix.ndim != 2 or matrix.shape[1] == 0:
            raise EmbeddingAPIResponseError(f"{who}: the API returned vectors of shape {matrix.shape[1:]}, not "
                                            "lists of numbers")
        if self.dimensions is not None and matrix.shape[1] != self.dimensions:
            raise EmbeddingAPIResponseError(f"{who}: the API returned vectors {matrix.shape[1]} wide, not the "
                                            f"?dimensions={self.dimensions} asked for")
        vectors = check_embeddings(matrix, what=f"{who}: the API's vectors", error=EmbeddingAPIResponseError, hint="")
        usage = payload.get("usage")
        used = usage.get("total_tokens") if isinstance(usage, dict) else None
        if isinstance(used, (int, float)) and not isinstance(used, bool) and math.isfinite(used) and used >= 0:
            return vectors, int(used)
        return vectors, None


def _retry_after_seconds(value: str | None) -> float | None:
    """A ``Retry-After`` header (seconds, or an HTTP date) as seconds to wait, at most :data:`MAX_RETRY_AFTER_S`;
    None when absent or unreadable."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - time.time()
    if not math.isfinite(seconds):
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S)

"""Model-hub integration: crawl the Hugging Face Hub for candidate embedders, resolve and fetch them safely.

Everything goes through the real ``huggingface_hub`` client (its HTTP session, auth headers, error types,
``model_info`` and ``snapshot_download``), so ``HF_ENDPOINT``, ``HF_HOME`` / ``HF_HUB_CACHE``, ``HF_HUB_OFFLINE``
and ``HF_TOKEN`` behave exactly as they do for transformers and sentence-transformers.

Two entry points:

- :func:`crawl` lists models (one listing request per page, with ``expand`` fields so that no per-model
  request is needed) and returns a :class:`CrawlResult`: typed :class:`HubModel` rows plus per-page errors.
  A failing page never crashes the crawl.
- :func:`fetch_model` pins a repo to a commit sha once, decides the files the backend needs, applies the
  :class:`~embedselect.policy.LoadPolicy` (remote code, pickle-only weights, size cap, gated repos) and
  downloads only those files into the shared HF cache. It returns a :class:`FetchedModel`.

Retries live in one place, :class:`RetryPolicy`: 408/429/5xx answers, timeouts, dropped connections and
malformed or truncated bodies are retried with exponential backoff, honouring ``Retry-After`` (seconds).

Tokens: a token (argument, or ``HF_TOKEN`` read by huggingface_hub) is handed to the client only. It is never
logged, never part of an error message and never written to the store (:func:`redact` scrubs messages).
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence, TypeVar

import httpx2  # huggingface_hub's HTTP client; imported here so a missing one fails at import, not in a handler

from embedselect.errors import CandidateError, ConfigError, HubError, UnsafeModelError
from embedselect.kinds import BACKENDS
from embedselect.policy import LoadPolicy
from embedselect.redaction import redact

log = logging.getLogger(__name__)

T = TypeVar("T")

__all__ = [
    "BACKENDS",
    "CrawlResult",
    "FetchedModel",
    "HubModel",
    "PageError",
    "RetryPolicy",
    "SORTS",
    "crawl",
    "fetch_model",
    "infer_backend",
    "infer_modality",
    "redact",
    "select_files",
]


SORTS: dict[str, str] = {
    "trending": "trendingScore",
    "trending_score": "trendingScore",
    "downloads": "downloads",
    "likes": "likes",
    "recency": "lastModified",
    "last_modified": "lastModified",
    "created": "createdAt",
    "created_at": "createdAt",
}
"""User-facing sort names → the hub's ``sort`` query value (always descending)."""

EXPAND_FIELDS = (
    "sha",
    "library_name",
    "pipeline_tag",
    "tags",
    "downloads",
    "likes",
    "trendingScore",
    "safetensors",
    "gated",
    "lastModified",
    "createdAt",
)
"""Listing ``expand`` fields: everything ranking and the catalogue need, in the listing itself."""

MAX_PAGE_SIZE = 1000  # the hub's cap on ``limit`` per listing page

_SHA_RE = re.compile(r"^[0-9a-f]{40}$")
_REV_CHARS_RE = re.compile(r"^[A-Za-z0-9_.\-/]{1,200}$")


def check_revision(revision: str) -> str:
    """Return ``revision`` if it is a safe branch, tag or commit name, else raise :class:`CandidateError`.

    The one rule for revision names (user specs, catalog files and crawl results all pass through it). A
    revision becomes a file name under the Hugging Face cache's ``refs/`` folder, so besides git's ref-name
    rules (no ``..``, no empty, ``.``-leading or ``.lock`` components, no leading or trailing ``/``) it may
    only contain letters, digits and ``_ . - /``.
    """
    parts = revision.split("/") if isinstance(revision, str) else []
    if (
        not isinstance(revision, str)
        or not _REV_CHARS_RE.match(revision)
        or ".." in revision
        or revision.startswith("-")
        or any(not p or p.startswith(".") or p.endswith(".lock") for p in parts)
    ):
        raise CandidateError(
            f"bad revision {revision!r}: use a branch, tag or 40-hex commit sha (letters, digits, '_', '.', '-', "
            "'/'; no '..', no empty or '.'-leading path parts)"
        )
    return revision


def _ref_file(storage: Path, revision: str) -> Path:
    """The cache's ``refs/<revision>`` file for a checked revision, guaranteed to lie inside ``storage/refs``."""
    refs = (storage / "refs").resolve()
    ref = (refs / check_revision(revision)).resolve()
    if not ref.is_relative_to(refs):
        raise CandidateError(f"bad revision {revision!r}: it points outside the cache's refs folder")
    return ref


def _read_ref(ref: Path) -> str | None:
    """The sha stored in a ref file, or None when the file is missing or does not hold a 40-hex sha (a damaged
    or foreign file is never trusted as a commit id)."""
    try:
        sha = ref.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return sha if _SHA_RE.match(sha) else None
_RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})

TEXT_PIPELINES = frozenset(
    {"sentence-similarity", "feature-extraction", "fill-mask", "text-classification", "text-embeddings-inference"}
)
IMAGE_PIPELINES = frozenset({"image-feature-extraction", "image-classification"})
IMAGE_LIBRARIES = frozenset({"timm", "open_clip"})
TEXT_LIBRARIES = frozenset({"sentence-transformers", "model2vec"})


# --------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------
def _now() -> datetime:
    return datetime.now(timezone.utc)


def _offline() -> bool:
    from huggingface_hub import constants

    return bool(constants.is_offline_mode())


def _endpoint() -> str:
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


class _Malformed(Exception):
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


def _status(exc: BaseException) -> int | None:
    response = getattr(exc, "response", None)
    return getattr(response, "status_code", None)


def _causes(exc: BaseException) -> Iterable[BaseException]:
    seen = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        yield e
        e = e.__cause__ or e.__context__


def _is_transient(exc: BaseException) -> bool:
    """Whether a failure is worth retrying: 408/429/5xx, timeouts, network errors, truncated/malformed bodies."""
    from huggingface_hub.errors import HfHubHTTPError

    for e in _causes(exc):
        if isinstance(e, HfHubHTTPError):
            return _status(e) in _RETRY_STATUS
        if isinstance(
            e, (httpx2.TimeoutException, httpx2.NetworkError, httpx2.RemoteProtocolError, _Malformed, json.JSONDecodeError)
        ):
            return True
        if isinstance(e, OSError) and "Consistency check failed" in str(e):
            return True
    return False


def _with_retries(fn: Callable[[], T], retry: RetryPolicy, what: str) -> T:
    """Call ``fn`` until it succeeds or a non-transient error / the retry budget ends it (then re-raise)."""
    attempt = 0
    while True:
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - classified below, re-raised when not transient
            if not _is_transient(exc) or attempt >= retry.max_retries:
                raise
            attempt += 1
            wait = retry.wait(attempt, next((r for e in _causes(exc) if (r := _retry_after(e)) is not None), None))
            log.warning(
                "%s failed (%s); retry %d/%d in %.1fs", what, redact(_short(exc)), attempt, retry.max_retries, wait
            )
            retry.sleep(wait)


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    first = next((line for line in text if line.strip()), "")
    status = _status(exc)
    name = type(exc).__name__
    return f"{name} (HTTP {status}): {first}" if status else f"{name}: {first}"


# --------------------------------------------------------------------------------------------------
# crawl
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class HubModel:
    """One model as listed by the hub.

    Attributes:
        repo_id: ``owner/name``.
        sha: commit sha of the default branch at crawl time (40 hex chars), or None if the hub did not say.
        library: ``library_name`` ("sentence-transformers", "timm", "transformers", ...).
        pipeline_tag: e.g. "sentence-similarity", "feature-extraction", "image-feature-extraction".
        tags: all hub tags, in the hub's order.
        modality: "text", "image" or None (see :func:`infer_modality`).
        downloads: downloads over the last 30 days (count).
        likes: like count.
        trending_score: the hub's trending score (unitless; higher is more trending).
        license: licence id from the ``license:...`` tag, e.g. "apache-2.0", or None.
        num_params: total parameter count from the safetensors metadata, or None if unknown.
        gated: True if the repo is gated (any mode).
        gated_mode: "auto", "manual" or None.
        created_at / last_modified: UTC timestamps from the hub, or None.
    """

    repo_id: str
    sha: str | None = None
    library: str | None = None
    pipeline_tag: str | None = None
    tags: tuple[str, ...] = ()
    modality: str | None = None
    downloads: int | None = None
    likes: int | None = None
    trending_score: float | None = None
    license: str | None = None
    num_params: int | None = None
    gated: bool = False
    gated_mode: str | None = None
    created_at: datetime | None = None
    last_modified: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly dict (timestamps as ISO strings, tags as a list)."""
        d = asdict(self)
        d["tags"] = list(self.tags)
        for k in ("created_at", "last_modified"):
            d[k] = d[k].isoformat() if d[k] is not None else None
        return d


@dataclass(frozen=True)
class PageError:
    """A listing page (or one item on it) that could not be read after retries.

    Attributes:
        page: 1-based page number.
        url: the page URL (no credentials: tokens travel in headers only).
        kind: "http", "timeout", "network", "malformed" or "item".
        message: what went wrong (token-free).
    """

    page: int
    url: str
    kind: str
    message: str


@dataclass(frozen=True)
class CrawlResult:
    """What one :func:`crawl` returned.

    Attributes:
        query: the crawl parameters (JSON-serialisable, no token).
        started_at / finished_at: UTC timestamps.
        models: the listed models, in the hub's order, filtered client-side by the size/licence/gated bounds.
        errors: per-page (or per-item) errors; the crawl went on past them where the listing allowed.
        pages: listing pages requested.
        complete: True when no page failed (the listing was exhausted or ``limit`` reached).
    """

    query: dict[str, Any]
    started_at: datetime
    finished_at: datetime
    models: tuple[HubModel, ...]
    errors: tuple[PageError, ...]
    pages: int
    complete: bool

    def to_dataframe(self):
        """The models as a pandas DataFrame, one row per model, columns = :class:`HubModel` fields."""
        import pandas as pd

        cols = list(HubModel.__dataclass_fields__)
        return pd.DataFrame([asdict(m) for m in self.models], columns=cols)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable summary (models, errors, timing)."""
        return {
            "query": self.query,
            "started_at": self.started_at.isoformat(),
            "finished_at": self.finished_at.isoformat(),
            "pages": self.pages,
            "complete": self.complete,
            "models": [m.to_dict() for m in self.models],
            "errors": [asdict(e) for e in self.errors],
        }


def infer_modality(library: str | None, pipeline_tag: str | None, tags: Sequence[str] = ()) -> str | None:
    """"text", "image" or None, from the listing's library, pipeline tag and tags."""
    if pipeline_tag in IMAGE_PIPELINES or library in IMAGE_LIBRARIES:
        return "image"
    if pipeline_tag in TEXT_PIPELINES or library in TEXT_LIBRARIES:
        return "text"
    tagset = set(tags)
    if tagset & IMAGE_PIPELINES or tagset & IMAGE_LIBRARIES:
        return "image"
    if tagset & TEXT_PIPELINES or tagset & TEXT_LIBRARIES:
        return "text"
    return None


def _license_from(tags: Sequence[str], card_data: Any) -> str | None:
    for t in tags:
        if t.startswith("license:"):
            return t.split(":", 1)[1] or None
    lic = getattr(card_data, "license", None) if card_data is not None else None
    return lic if isinstance(lic, str) else None


def _hub_model(info: Any) -> HubModel:
    """Convert a ``huggingface_hub.ModelInfo`` into a :class:`HubModel` (raises _Malformed on bad fields)."""
    tags = info.tags or []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise _Malformed(f"{info.id}: 'tags' is not a list of strings")
    sha = info.sha
    if sha is not None and (not isinstance(sha, str) or not _SHA_RE.match(sha)):
        raise _Malformed(f"{info.id}: 'sha' is not a 40-hex commit id")
    num = None
    if info.safetensors is not None:
        total = info.safetensors.total
        if total is not None and not isinstance(total, int):
            raise _Malformed(f"{info.id}: safetensors.total is not an integer")
        num = total
    for name in ("downloads", "likes"):
        v = getattr(info, name)
        if v is not None and not isinstance(v, int):
            raise _Malformed(f"{info.id}: {name!r} is not an integer")
    trending = info.trending_score
    if trending is not None and not isinstance(trending, (int, float)):
        raise _Malformed(f"{info.id}: 'trendingScore' is not a number")
    gated = info.gated
    gated_mode = gated if isinstance(gated, str) else None
    library = info.library_name if isinstance(info.library_name, str) else None
    pipeline = info.pipeline_tag if isinstance(info.pipeline_tag, str) else None
    return HubModel(
        repo_id=info.id,
        sha=sha,
        library=library,
        pipeline_tag=pipeline,
        tags=tuple(tags),
        modality=infer_modality(library, pipeline, tags),
        downloads=info.downloads,
        likes=info.likes,
        trending_score=float(trending) if trending is not None else None,
        license=_license_from(tags, getattr(info, "card_data", None)),
        num_params=num,
        gated=bool(gated),
        gated_mode=gated_mode,
        created_at=info.created_at,
        last_modified=info.last_modified,
    )


def _keep(m: HubModel, min_params, max_params, licenses, include_gated) -> bool:
    if not include_gated and m.gated:
        return False
    if (min_params is not None or max_params is not None) and m.num_params is None:
        return False  # unknown size cannot be shown to be inside the bounds
    if min_params is not None and m.num_params < min_params:
        return False
    if max_params is not None and m.num_params > max_params:
        return False
    if licenses is not None and m.license not in licenses:
        return False
    return True


def _fetch_page(url: str, params: dict | None, headers: dict, retry: RetryPolicy) -> tuple[list, str | None]:
    """GET one listing page with retries. Returns (items, next_url)."""
    from huggingface_hub.utils import get_session, hf_raise_for_status

    state: dict[str, Any] = {}

    def once():
        r = get_session().get(url, params=params, headers=headers, timeout=retry.timeout)
        state["next"] = r.links.get("next", {}).get("url") if r.status_code < 300 else None
        hf_raise_for_status(r)
        try:
            data = r.json()
        except ValueError as exc:
            raise _Malformed(f"listing page is not valid JSON ({exc})") from None
        if not isinstance(data, list):
            raise _Malformed(f"listing page is a {type(data).__name__}, expected a JSON list")
        return data, state["next"]

    try:
        return _with_retries(once, retry, f"listing page {url}")
    except Exception as exc:  # noqa: BLE001 - attach the next link so the crawl can go on past a bad page
        exc.next_url = state.get("next")  # type: ignore[attr-defined]
        raise


def _error_kind(exc: BaseException) -> str:
    from huggingface_hub.errors import HfHubHTTPError

    for e in _causes(exc):
        if isinstance(e, _Malformed):
            return "malformed"
        if isinstance(e, HfHubHTTPError):
            return "http"
        if isinstance(e, httpx2.TimeoutException):
            return "timeout"
        if isinstance(e, (httpx2.TransportError, OSError)):
            return "network"
    return "error"


def crawl(
    *,
    library: str | None = None,
    pipeline_tag: str | None = None,
    tags: Sequence[str] = (),
    author: str | None = None,
    search: str | None = None,
    sort: str = "trending",
    limit: int = 100,
    min_params: int | None = None,
    max_params: int | None = None,
    licenses: Sequence[str] | None = None,
    include_gated: bool = True,
    token: str | None = None,
    retry: RetryPolicy | None = None,
    max_pages: int | None = None,
) -> CrawlResult:
    """List models on the hub, newest information in as few requests as possible.

    One ``GET /api/models`` per page (``Link`` pagination), asking for :data:`EXPAND_FIELDS` so that no
    per-model request is made. Library, tags, pipeline tag, author, search and gated are filtered by the
    hub; size bounds and the licence allowlist are applied here (the hub's ``num_parameters`` syntax is not
    relied on), so pages are read until ``limit`` models pass or the listing ends.

    Args:
        library: ``library_name`` to filter on, e.g. "sentence-transformers" or "timm".
        pipeline_tag: e.g. "feature-extraction", "image-feature-extraction", "sentence-similarity".
        tags: extra tags that must all be present.
        author: user or organisation.
        search: substring of the repo id.
        sort: one of :data:`SORTS` ("trending", "downloads", "likes", "recency", "created"); descending.
        limit: maximum number of models returned (≥ 1).
        min_params / max_params: parameter-count bounds (from safetensors metadata; models whose size the
            hub does not report are dropped when a bound is given).
        licenses: licence allowlist (ids as in ``license:`` tags, e.g. "apache-2.0", "mit"); None = any.
        include_gated: False drops gated repos (also asked of the hub with ``gated=false``).
        token: hub token; default: huggingface_hub's (``HF_TOKEN`` or the saved login). Never logged.
        retry: retry/backoff settings (:class:`RetryPolicy`).
        max_pages: stop after this many pages (safety net when client-side filters drop most rows).

    Returns:
        :class:`CrawlResult`. Page failures (after retries) are in ``errors``; the crawl goes on to the next
        page when the hub gave its link, and stops otherwise.

    Raises:
        ConfigError: invalid sort, limit or bounds.
        HubError: ``HF_HUB_OFFLINE`` is set (a crawl needs the network).
    """
    if sort not in SORTS:
        raise ConfigError(f"unknown sort {sort!r}; use one of: {', '.join(sorted(SORTS))}")
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise ConfigError(f"limit must be a positive integer, got {limit!r}")
    for name, v in (("min_params", min_params), ("max_params", max_params)):
        if v is not None and (not isinstance(v, int) or v < 0):
            raise ConfigError(f"{name} must be a non-negative integer (a parameter count), got {v!r}")
    if min_params is not None and max_params is not None and min_params > max_params:
        raise ConfigError(f"min_params ({min_params}) is larger than max_params ({max_params})")
    if isinstance(tags, str):
        tags = (tags,)
    if isinstance(licenses, str):
        licenses = (licenses,)
    lic_set = frozenset(licenses) if licenses is not None else None
    if _offline():
        raise HubError(
            "HF_HUB_OFFLINE is set, and a crawl needs the hub. Unset HF_HUB_OFFLINE to crawl, or use the "
            "catalogue of the last crawl (embedselect.store.catalog.candidates / `embedselect catalog ls`)."
        )
    retry = retry or RetryPolicy()
    from huggingface_hub import ModelInfo
    from huggingface_hub.utils import build_hf_headers

    query = {
        "library": library,
        "pipeline_tag": pipeline_tag,
        "tags": list(tags),
        "author": author,
        "search": search,
        "sort": sort,
        "limit": limit,
        "min_params": min_params,
        "max_params": max_params,
        "licenses": sorted(lic_set) if lic_set is not None else None,
        "include_gated": include_gated,
    }
    filters = [f for f in ([library] if library else []) + list(tags) if f]
    params: list[tuple[str, Any]] = [("filter", f) for f in filters]
    if author:
        params.append(("author", author))
    if search:
        params.append(("search", search))
    if pipeline_tag:
        params.append(("pipeline_tag", pipeline_tag))
    if not include_gated:
        params.append(("gated", "false"))
    params.append(("sort", SORTS[sort]))
    params.append(("limit", str(min(limit, MAX_PAGE_SIZE))))
    params.extend(("expand", f) for f in EXPAND_FIELDS)
    headers = build_hf_headers(token=token, library_name="embedselect")

    started = _now()
    url: str | None = f"{_endpoint()}/api/models"
    page_params: list | None = params
    models: list[HubModel] = []
    seen: set[str] = set()
    errors: list[PageError] = []
    pages = 0
    failed = False
    while url is not None and len(models) < limit and (max_pages is None or pages < max_pages):
        pages += 1
        try:
            items, next_url = _fetch_page(url, page_params, headers, retry)
        except Exception as exc:  # noqa: BLE001 - recorded per page; the crawl never crashes on the hub
            failed = True
            errors.append(PageError(pages, _url_for_log(url, page_params), _error_kind(exc), redact(_short(exc), token)))
            log.warning("crawl: page %d failed: %s", pages, errors[-1].message)
            url, page_params = getattr(exc, "next_url", None), None
            continue
        for item in items:
            try:
                if not isinstance(item, dict) or not isinstance(item.get("id"), str):
                    raise _Malformed("a listing entry has no string 'id'")
                item = dict(item)
                item.setdefault("siblings", None)
                model = _hub_model(ModelInfo(**item))
            except Exception as exc:  # noqa: BLE001 - one bad entry must not lose the page
                failed = True
                errors.append(PageError(pages, _url_for_log(url, page_params), "item", redact(_short(exc), token)))
                continue
            if model.repo_id in seen or not _keep(model, min_params, max_params, lic_set, include_gated):
                continue
            seen.add(model.repo_id)
            models.append(model)
            if len(models) >= limit:
                break
        url, page_params = next_url, None
    return CrawlResult(
        query=query,
        started_at=started,
        finished_at=_now(),
        models=tuple(models),
        errors=tuple(errors),
        pages=pages,
        complete=not failed,
    )


def _url_for_log(url: str, params: list | None) -> str:
    if not params:
        return url
    from urllib.parse import urlencode

    return f"{url}?{urlencode(params)}"


# --------------------------------------------------------------------------------------------------
# resolve and fetch
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FetchedModel:
    """A model pinned to one commit and present in the local HF cache.

    Attributes:
        repo_id: ``owner/name``.
        revision: the commit sha (40 hex chars) the files come from; use it in every cache key.
        local_dir: the snapshot folder (``.../models--owner--name/snapshots/<sha>``) to load from.
        library: the hub's ``library_name`` (offline: inferred from the files), or None.
        pipeline_tag: the hub's pipeline tag (None offline).
        files: the repo-relative paths that were fetched, sorted.
        backend: the backend the files were selected for ("sentence-transformers", "timm", "transformers").
    """

    repo_id: str
    revision: str
    local_dir: Path
    library: str | None
    pipeline_tag: str | None
    files: tuple[str, ...]
    backend: str = "transformers"


_TOKENIZER_FILES = frozenset(
    {
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "added_tokens.json",
        "vocab.txt",
        "vocab.json",
        "merges.txt",
        "spiece.model",
        "sentencepiece.bpe.model",
        "tokenizer.model",
        "source.spm",
        "bpe.codes",
    }
)
_PROCESSOR_FILES = frozenset({"preprocessor_config.json", "processor_config.json", "image_processor_config.json"})
_ST_CONFIG_FILES = frozenset(
    {"modules.json", "sentence_bert_config.json", "config_sentence_transformers.json", "config.json"}
)
_PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".pkl", ".ckpt")
_ST_MODULE_DIR = re.compile(r"^\d+_[A-Za-z0-9_\-]+$")
_SHARD_RE = re.compile(r"^(model|pytorch_model)-\d+-of-\d+\.(safetensors|bin)$")


def infer_backend(library: str | None, tags: Sequence[str] = (), files: Iterable[str] = ()) -> str | None:
    """The backend for a repo: from ``library_name``, then tags, then the files present; None if unknown."""
    if library in BACKENDS:
        return library
    tagset = set(tags or ())
    for b in BACKENDS:
        if b in tagset:
            return b
    fileset = set(files)
    if "modules.json" in fileset:
        return "sentence-transformers"
    if "config.json" in fileset and ("pytorch_model.bin" in fileset or "model.safetensors" in fileset):
        return "transformers"
    return None


def _weights_in(files: Iterable[str], folder: str = "") -> tuple[list[str], list[str]]:
    """(safetensors files, pickle files) directly inside ``folder`` (repo-relative), incl. shard indexes."""
    safe, pickle = [], []
    for f in files:
        parent, _, name = f.rpartition("/")
        if parent != folder:
            continue
        if name == "model.safetensors" or name == "model.safetensors.index.json" or (
            _SHARD_RE.match(name) and name.endswith(".safetensors")
        ):
            safe.append(f)
        elif name in ("pytorch_model.bin", "pytorch_model.bin.index.json", "open_clip_pytorch_model.bin") or (
            _SHARD_RE.match(name) and name.endswith(".bin")
        ):
            pickle.append(f)
        elif folder and name.endswith(_PICKLE_SUFFIXES):
            pickle.append(f)
    return safe, pickle


def select_files(
    repo_id: str, backend: str, files: Iterable[str], *, allow_pickle: bool = False
) -> tuple[list[str], list[str]]:
    """The repo files ``backend`` needs, and which of them are weights.

    sentence-transformers: ``modules.json``, ST configs, ``config.json``, tokenizer files, root weights and the
    files of numbered module folders (``1_Pooling/config.json``, ``2_Dense/...``). timm: ``config.json`` +
    weights. transformers: ``config.json``, tokenizer / processor files, weights. Safetensors are preferred;
    pickle weights are taken only when there are no safetensors and ``allow_pickle``.

    Returns:
        (files to download, the weight files among them), both sorted.

    Raises:
        UnsafeModelError(reason="pickle_only"): only pickle weights and ``allow_pickle`` is False.
        CandidateError: the repo lacks what the backend needs (no config, no weights).
    """
    if backend not in BACKENDS:
        raise ConfigError(f"unknown backend {backend!r} for {repo_id}; use one of: {', '.join(BACKENDS)}")
    files = sorted(set(files))
    fileset = set(files)
    wanted: set[str] = set()
    weights: set[str] = set()

    def take_weights(folder: str, required: bool) -> None:
        safe, pickle = _weights_in(files, folder)
        where = f"{folder}/" if folder else "the repo root"
        if safe:
            chosen = safe
        elif pickle and allow_pickle:
            chosen = pickle
        elif pickle:
            raise UnsafeModelError(
                f"{repo_id} ships only pickle weights ({', '.join(pickle)}) in {where}; loading them can run "
                f"arbitrary code. Pass allow_pickle=True (--allow-pickle) or opt in for this model "
                f"(allow_models / --allow-model {repo_id}) if you trust it.",
                reason="pickle_only",
            )
        elif required:
            raise CandidateError(
                f"{repo_id} has no weight files (model.safetensors or shards) in {where}; it cannot be "
                f"loaded with the {backend} backend. Pick another model or backend."
            )
        else:
            chosen = []
        wanted.update(chosen)
        weights.update(c for c in chosen if not c.endswith(".json"))

    root = [f for f in files if "/" not in f]
    if backend == "timm":
        if "config.json" not in fileset:
            raise CandidateError(f"{repo_id} has no config.json, which timm needs. Is it a timm model?")
        wanted.add("config.json")
        take_weights("", True)
    elif backend == "transformers":
        if "config.json" not in fileset:
            raise CandidateError(f"{repo_id} has no config.json, which transformers needs.")
        wanted.update(f for f in root if f == "config.json" or f in _TOKENIZER_FILES or f in _PROCESSOR_FILES)
        take_weights("", True)
    else:  # sentence-transformers
        if "modules.json" not in fileset and "config.json" not in fileset:
            raise CandidateError(f"{repo_id} has neither modules.json nor config.json; is it a sentence-transformers model?")
        wanted.update(f for f in root if f in _ST_CONFIG_FILES or f in _TOKENIZER_FILES or f in _PROCESSOR_FILES)
        take_weights("", True)
        folders = sorted({f.split("/", 1)[0] for f in files if "/" in f and _ST_MODULE_DIR.match(f.split("/", 1)[0])})
        for folder in folders:
            inside = [f for f in files if f.startswith(folder + "/") and f.count("/") == 1]
            wanted.update(f for f in inside if f.endswith((".json", ".txt", ".model")) and not f.endswith(".index.json"))
            take_weights(folder, False)
    return sorted(wanted), sorted(weights)


def _remote_code_reason(tags: Sequence[str], config: dict | None, modules: list | None, files: Iterable[str]) -> str | None:
    """Why the model would need remote code, or None."""
    if "custom_code" in set(tags or ()):
        return "the hub tags it 'custom_code'"
    if isinstance(config, dict) and config.get("auto_map"):
        return "its config.json has an 'auto_map' pointing at Python files in the repo"
    if isinstance(modules, list):
        for m in modules:
            t = m.get("type", "") if isinstance(m, dict) else ""
            if t and not t.startswith("sentence_transformers."):
                return f"its modules.json uses the custom module type {t!r}"
    return None


def _silent_tqdm():
    from huggingface_hub.utils import tqdm as hf_tqdm

    class _Silent(hf_tqdm):
        def __init__(self, *args, **kwargs):
            kwargs["disable"] = True
            super().__init__(*args, **kwargs)

    return _Silent


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (ValueError, UnicodeDecodeError) as exc:
        raise _Malformed(f"{path.name} is not valid JSON ({exc})") from None


def _map_error(exc: BaseException, repo_id: str, revision: str | None, token: str | None) -> Exception:
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
    detail = redact(_short(exc), token)
    for e in _causes(exc):
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
                f"{repo_id} was not found on the hub ({_endpoint()}). Check the id; if it is private, set HF_TOKEN."
            )
        if isinstance(e, RemoteEntryNotFoundError):
            return HubError(f"{repo_id}@{rev}: a listed file is missing on the hub ({detail}). Try again later.")
    for e in _causes(exc):
        if isinstance(e, (OfflineModeIsEnabled,)) or (isinstance(e, LocalEntryNotFoundError) and _offline()):
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
            return HubError(f"{repo_id}@{rev}: cannot reach the hub at {_endpoint()} ({detail}). Check the network.")
        if isinstance(e, (_Malformed, json.JSONDecodeError)):
            return HubError(f"{repo_id}@{rev}: the hub sent a malformed answer after retries: {e}")
        if isinstance(e, FileMetadataError):
            return HubError(f"{repo_id}@{rev}: the hub's file metadata is unusable ({detail}).")
        if isinstance(e, LocalEntryNotFoundError):
            return HubError(f"{repo_id}@{rev}: could not download the files and they are not cached ({detail}).")
    return HubError(f"{repo_id}@{rev}: fetching failed: {detail}")


def _check_policy(
    repo_id: str,
    policy: LoadPolicy,
    *,
    gated: Any,
    remote_reason: str | None,
    weights: Sequence[str],
    sizes: dict[str, int | None],
) -> None:
    if gated and not policy.allow_gated:
        raise UnsafeModelError(
            f"{repo_id} is gated ({gated}); embedselect skips gated repos by default. Pass allow_gated=True "
            f"(--allow-gated) with a token that has access, or opt in for this model (--allow-model {repo_id}).",
            reason="gated",
        )
    if remote_reason and not policy.trust_remote_code:
        raise UnsafeModelError(
            f"{repo_id} needs remote code: {remote_reason}. Running it executes code from the repo. Pass "
            f"trust_remote_code=True (--trust-remote-code) or opt in for this model (--allow-model {repo_id}).",
            reason="remote_code",
        )
    if policy.max_bytes is not None:
        total = sum(int(sizes.get(w) or 0) for w in weights)
        if total > policy.max_bytes:
            raise UnsafeModelError(
                f"{repo_id}: its weight files are {total / 1e6:.1f} MB, over the cap of "
                f"{policy.max_bytes / 1e6:.1f} MB. Raise max_bytes (--max-model-bytes) or opt in for this "
                f"model (--allow-model {repo_id}).",
                reason="too_large",
            )


def _verify_sizes(repo_id: str, sha: str, local_dir: Path, files: Sequence[str], sizes: dict[str, int | None]) -> None:
    for f in files:
        p = local_dir / f
        if not p.is_file():
            raise HubError(f"{repo_id}@{sha}: {f} is missing from the downloaded snapshot. Try again.")
        want = sizes.get(f)
        if want is not None and p.stat().st_size != want:
            raise HubError(
                f"{repo_id}@{sha}: {f} has {p.stat().st_size} bytes, the hub lists {want}: truncated download. "
                "Delete it from the HF cache and try again."
            )


def fetch_model(
    repo_id: str,
    *,
    revision: str | None = None,
    backend: str | None = None,
    policy: LoadPolicy = LoadPolicy(),
    token: str | None = None,
    retry: RetryPolicy | None = None,
    progress: bool = False,
) -> FetchedModel:
    """Resolve ``repo_id`` to a commit, check it against ``policy`` and download the files ``backend`` needs.

    Steps: one ``model_info`` request (with file sizes) pins the revision to a commit sha; the files are
    chosen with :func:`select_files`; the policy is applied (gated, remote code, pickle-only, size cap —
    ``policy.for_model(repo_id)`` so a per-model opt-in lifts all of them); the small config files are
    downloaded and checked for remote code (``auto_map``, custom module types); then the rest is downloaded
    with ``huggingface_hub.snapshot_download(revision=sha, allow_patterns=files)``, reusing the HF cache, and
    every file's size is checked against the hub's listing.

    With ``HF_HUB_OFFLINE=1`` nothing is requested: the sha comes from the cache's refs (or ``revision`` if it
    is a sha), the files and backend from the cached snapshot.

    Args:
        repo_id: ``owner/name`` on the hub.
        revision: branch, tag or commit sha; default the repo's default branch.
        backend: "sentence-transformers", "timm" or "transformers"; None = infer from library_name / tags.
        policy: the safety policy (:class:`~embedselect.policy.LoadPolicy`).
        token: hub token; default huggingface_hub's (``HF_TOKEN`` / saved login). Never logged or stored.
        retry: retry/backoff settings for transient failures (:class:`RetryPolicy`).
        progress: show huggingface_hub's download progress bars (default: silent, logging only).

    Returns:
        :class:`FetchedModel` with ``revision`` = the 40-hex commit sha and ``local_dir`` = snapshot folder.

    Raises:
        UnsafeModelError: ``reason`` in {"remote_code", "pickle_only", "too_large", "gated"}.
        CandidateError: repo or revision not found, backend unknown, not cached while offline.
        HubError: network failures, 429/5xx after retries, malformed answers, truncated downloads.
        ConfigError: an unknown ``backend``.
    """
    if not isinstance(repo_id, str) or repo_id.count("/") != 1 or not all(repo_id.split("/")):
        raise CandidateError(f"{repo_id!r} is not a hub model id; expected 'owner/name'.")
    if backend is not None and backend not in BACKENDS:
        raise ConfigError(f"unknown backend {backend!r}; use one of: {', '.join(BACKENDS)}")
    if revision is not None:
        check_revision(revision)
    policy = policy.for_model(repo_id)
    retry = retry or RetryPolicy()
    if _offline():
        return _fetch_offline(repo_id, revision, backend, policy)

    from huggingface_hub import HfApi, snapshot_download

    api = HfApi(library_name="embedselect")
    try:
        info = _with_retries(
            lambda: api.model_info(repo_id, revision=revision, files_metadata=True, timeout=retry.timeout, token=token),
            retry,
            f"model info for {repo_id}",
        )
    except Exception as exc:  # noqa: BLE001 - mapped to typed errors
        raise _map_error(exc, repo_id, revision, token) from None
    sha = info.sha
    if not isinstance(sha, str) or not _SHA_RE.match(sha):
        raise HubError(f"{repo_id}: the hub's model info has no valid commit sha ({sha!r}); cannot pin a revision.")
    if info.siblings is None:
        raise HubError(f"{repo_id}@{sha}: the hub's model info lists no files.")
    sizes: dict[str, int | None] = {
        s.rfilename: (s.lfs.size if s.lfs is not None else s.size) for s in info.siblings
    }
    tags = list(info.tags or [])
    chosen = backend or infer_backend(info.library_name, tags, sizes)
    if chosen is None:
        raise CandidateError(
            f"cannot tell which backend loads {repo_id} (library_name={info.library_name!r}); pass "
            f"backend='sentence-transformers', 'timm' or 'transformers'."
        )
    files, weights = select_files(repo_id, chosen, sizes, allow_pickle=policy.allow_pickle)
    _check_policy(
        repo_id,
        policy,
        gated=info.gated,
        remote_reason=_remote_code_reason(tags, info.config if isinstance(info.config, dict) else None, None, ()),
        weights=weights,
        sizes=sizes,
    )

    def download(patterns: list[str]) -> Path:
        return Path(
            snapshot_download(
                repo_id,
                revision=sha,
                allow_patterns=patterns,
                token=token,
                library_name="embedselect",
                tqdm_class=None if progress else _silent_tqdm(),
            )
        )

    small = [f for f in files if f in ("config.json", "modules.json")]
    try:
        local = _with_retries(lambda: download(small), retry, f"config of {repo_id}") if small else None
        if local is not None:
            remote = _remote_code_reason(
                tags, _read_json(local / "config.json"), _read_json(local / "modules.json"), sizes
            )
            _check_policy(repo_id, policy, gated=None, remote_reason=remote, weights=(), sizes={})
        local = _with_retries(lambda: download(files), retry, f"files of {repo_id}")
        _verify_sizes(repo_id, sha, local, files, sizes)
        _remember_ref(local, revision, sha)
    except (UnsafeModelError, HubError, CandidateError):
        raise
    except Exception as exc:  # noqa: BLE001 - mapped to typed errors
        raise _map_error(exc, repo_id, revision, token) from None
    log.info("fetched %s@%s (%s, %d files)", repo_id, sha[:12], chosen, len(files))
    return FetchedModel(
        repo_id=repo_id,
        revision=sha,
        local_dir=local,
        library=info.library_name,
        pipeline_tag=info.pipeline_tag,
        files=tuple(files),
        backend=chosen,
    )


def _remember_ref(snapshot: Path, revision: str | None, sha: str) -> None:
    """Write ``refs/<revision>`` = sha in the HF cache (the layout huggingface_hub uses), so that an offline
    fetch of the branch or tag finds the pinned commit. Downloads by sha do not write it themselves."""
    from huggingface_hub import constants

    rev = revision or constants.DEFAULT_REVISION
    if _SHA_RE.match(rev) or not _SHA_RE.match(sha):
        return
    ref = _ref_file(snapshot.parent.parent, rev)
    try:
        if _read_ref(ref) == sha:
            return
        ref.parent.mkdir(parents=True, exist_ok=True)
        tmp = ref.with_name(f".{ref.name}.{os.getpid()}.tmp")
        tmp.write_text(sha, encoding="utf-8")
        os.replace(tmp, ref)
    except OSError as exc:  # the download itself succeeded; only offline look-ups by branch lose
        log.warning("could not record %s -> %s in the HF cache: %s", rev, sha[:12], exc)


def _fetch_offline(repo_id: str, revision: str | None, backend: str | None, policy: LoadPolicy) -> FetchedModel:
    """:func:`fetch_model` from the local HF cache alone (``HF_HUB_OFFLINE=1``)."""
    from huggingface_hub import constants, snapshot_download
    from huggingface_hub.file_download import repo_folder_name

    storage = Path(constants.HF_HUB_CACHE) / repo_folder_name(repo_id=repo_id, repo_type="model")
    not_cached = CandidateError(
        f"{repo_id}@{revision or 'main'} is not in the local Hugging Face cache ({constants.HF_HUB_CACHE}) and "
        "HF_HUB_OFFLINE is set. Fetch it once online (unset HF_HUB_OFFLINE) or point HF_HOME / HF_HUB_CACHE at a "
        "cache that has it."
    )
    if revision is not None and _SHA_RE.match(revision):
        sha = revision
    else:
        found = _read_ref(_ref_file(storage, revision or "main"))
        if found is None:
            raise not_cached
        sha = found
    snap = storage / "snapshots" / sha
    if not snap.is_dir():
        raise not_cached
    present = sorted(str(p.relative_to(snap)).replace(os.sep, "/") for p in snap.rglob("*") if p.is_file())
    chosen = backend or infer_backend(None, (), present)
    if chosen is None:
        raise CandidateError(
            f"cannot tell which backend loads the cached {repo_id}@{sha[:12]}; pass backend= explicitly."
        )
    try:
        files, weights = select_files(repo_id, chosen, present, allow_pickle=policy.allow_pickle)
    except (UnsafeModelError, ConfigError):
        raise
    except CandidateError:
        raise not_cached from None
    sizes = {f: (snap / f).stat().st_size for f in files}
    remote = _remote_code_reason((), _read_json(snap / "config.json"), _read_json(snap / "modules.json"), present)
    _check_policy(repo_id, policy, gated=None, remote_reason=remote, weights=weights, sizes=sizes)
    try:
        local = Path(snapshot_download(repo_id, revision=sha, allow_patterns=files, local_files_only=True))
    except Exception as exc:  # noqa: BLE001
        raise not_cached from exc
    library = chosen if chosen != "transformers" else ("transformers" if "config.json" in present else None)
    return FetchedModel(
        repo_id=repo_id, revision=sha, local_dir=local, library=library, pipeline_tag=None, files=tuple(files),
        backend=chosen,
    )

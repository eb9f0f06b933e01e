"""Crawl the hub for candidate embedders: one listing request per page (``expand`` fields, no per-model request),
typed :class:`HubModel` rows and per-page errors; a failing page never crashes the crawl."""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, Callable, Sequence

from embedselect.errors import ConfigError, HubError
from embedselect.models.hub.http import (
    SHA_RE,
    Malformed,
    RetryPolicy,
    endpoint,
    install_deadlines,
    now,
    offline,
    short_error,
)
from embedselect.models.hub.pages import PageError, read_pages
from embedselect._util.redaction import redact

log = logging.getLogger("embedselect.models.hub")


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


"""Listing ``expand`` fields: everything ranking and the hub models table need, in the listing itself."""


MAX_PAGE_SIZE = 1000  # the hub's cap on ``limit`` per listing page

DEFAULT_MAX_PAGES = 50
"""Listing pages one crawl reads at most unless told otherwise (``max_pages``): a listing whose ``Link`` never
ends stops here."""


TEXT_PIPELINES = frozenset(
    {"sentence-similarity", "feature-extraction", "fill-mask", "text-classification", "text-embeddings-inference"}
)


IMAGE_PIPELINES = frozenset({"image-feature-extraction", "image-classification"})


IMAGE_LIBRARIES = frozenset({"timm", "open_clip"})


TEXT_LIBRARIES = frozenset({"sentence-transformers", "model2vec"})


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
    """Convert a ``huggingface_hub.ModelInfo`` into a :class:`HubModel` (raises Malformed on bad fields)."""
    tags = info.tags or []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise Malformed(f"{info.id}: 'tags' is not a list of strings")
    sha = info.sha
    if sha is not None and (not isinstance(sha, str) or not SHA_RE.match(sha)):
        raise Malformed(f"{info.id}: 'sha' is not a 40-hex commit id")
    num = None
    if info.safetensors is not None:
        total = info.safetensors.total
        if total is not None and not isinstance(total, int):
            raise Malformed(f"{info.id}: safetensors.total is not an integer")
        num = total
    for name in ("downloads", "likes"):
        v = getattr(info, name)
        if v is not None and not isinstance(v, int):
            raise Malformed(f"{info.id}: {name!r} is not an integer")
    trending = info.trending_score
    if trending is not None and not isinstance(trending, (int, float)):
        raise Malformed(f"{info.id}: 'trendingScore' is not a number")
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
    max_pages: int | None = DEFAULT_MAX_PAGES,
    should_stop: Callable[[], bool] | None = None,
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
        max_pages: stop after this many pages (default :data:`DEFAULT_MAX_PAGES`; None = no cap): the safety net
            when client-side filters drop most rows or the hub's ``Link`` never ends.
        should_stop: called before each page; True stops the crawl there (a caller's time budget).

    Returns:
        :class:`CrawlResult`. Page failures (after retries) are in ``errors``; the crawl goes on to the next
        page when the hub gave its link, and stops otherwise. It follows a next link only to the endpoint's own
        origin (scheme, host and port), never to a page it already read, never after an empty page, and never past
        ``max_pages`` or ``should_stop``; each such stop is an error of its own kind (see :class:`PageError`).

    Raises:
        ConfigError: invalid sort, limit, bounds or max_pages.
        HubError: ``HF_HUB_OFFLINE`` is set (a crawl needs the network); the request headers cannot be built
            (huggingface_hub's user-agent lookup failed on the hub's answer).
    """
    tags, lic_set = _check_crawl_args(sort, limit, min_params, max_params, tags, licenses)
    if max_pages is not None and (not isinstance(max_pages, int) or isinstance(max_pages, bool) or max_pages < 1):
        raise ConfigError(f"max_pages must be a positive integer (listing pages), got {max_pages!r}")
    if offline():
        raise HubError(
            "HF_HUB_OFFLINE is set, and a crawl needs the hub. Unset HF_HUB_OFFLINE to crawl, or use the "
            "hub models of the last crawl (embedselect.store.hub_models.candidates / `embedselect hub ls`)."
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
    params = _listing_params(library, pipeline_tag, tags, author, search, sort, limit, include_gated)
    install_deadlines()
    try:
        headers = build_hf_headers(token=token, library_name="embedselect")
    except Exception as exc:  # noqa: BLE001 - huggingface_hub reads the hub's agent registry here; any shape may come
        raise HubError(
            f"could not build the hub request headers: {redact(short_error(exc), token)}. huggingface_hub reads "
            f"{redact(endpoint())}/api/agent-harnesses for its user agent, and that answer is unusable: check HF_ENDPOINT, "
            "or set HF_HUB_DISABLE_TELEMETRY=1 to skip that lookup."
        ) from None
    started = now()
    models, errors, pages = read_pages(params, headers, retry, token, limit, max_pages,
                                       lambda item: _hub_model(ModelInfo(**item)),
                                       lambda model: _keep(model, min_params, max_params, lic_set, include_gated),
                                       should_stop)
    return CrawlResult(
        query=query,
        started_at=started,
        finished_at=now(),
        models=tuple(models),
        errors=tuple(errors),
        pages=pages,
        complete=not errors,
    )


def _check_crawl_args(sort: str, limit: int, min_params: int | None, max_params: int | None,
                      tags: Sequence[str] | str, licenses: Sequence[str] | str | None
                      ) -> tuple[tuple[str, ...], frozenset[str] | None]:
    """Validate the crawl's arguments; returns the tags as a tuple and the licence allowlist as a set (None = any).

    Raises:
        ConfigError: an unknown sort, a limit that is not a positive integer, bad or crossed size bounds.
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
    tag_tuple = (tags,) if isinstance(tags, str) else tuple(tags)
    if isinstance(licenses, str):
        licenses = (licenses,)
    return tag_tuple, (frozenset(licenses) if licenses is not None else None)


def _listing_params(library: str | None, pipeline_tag: str | None, tags: Sequence[str], author: str | None,
                    search: str | None, sort: str, limit: int, include_gated: bool) -> list[tuple[str, Any]]:
    """The query parameters of the first ``GET /api/models`` page (the hub filters; sizes and licences are ours)."""
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
    return params

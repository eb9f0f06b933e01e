"""The hub's model listing, page by page: one ``GET`` per page with retries, the ``Link`` header's next page
followed while it stays on the hub's origin, and every failing page or entry (or early stop) recorded as a
:class:`PageError`; a failing page never ends the listing where the hub named a next one."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable, TypeVar
from urllib.parse import urlsplit

from embedselect.models.hub.http import Malformed, RetryPolicy, endpoint, error_kind, hub_session, short_error, with_retries
from embedselect._util.redaction import redact

log = logging.getLogger("embedselect.models.hub")

T = TypeVar("T")


@dataclass(frozen=True)
class PageError:
    """A listing page (or one item on it) that could not be read after retries.

    Attributes:
        page: 1-based page number.
        url: the page URL (no credentials: tokens travel in headers only).
        kind: "http", "timeout", "network", "malformed" or "item" (a page or entry that failed); or why the crawl
            stopped early: "loop" (the next link repeats a page, or names one after an empty page), "origin" (the
            next link names another host: not followed, so the token never goes there), "max_pages" (the page
            cap) or "budget" (the caller's ``should_stop`` said so).
        message: what went wrong (token-free).
    """

    page: int
    url: str
    kind: str
    message: str


def fetch_page(url: str, params: list | None, headers: dict, retry: RetryPolicy) -> tuple[list, str | None]:
    """GET one listing page with retries. Returns (items, next_url)."""
    from huggingface_hub.utils import hf_raise_for_status

    state: dict[str, Any] = {}

    def once():
        r = hub_session().get(url, params=params, headers=headers, timeout=retry.timeout)
        state["next"] = r.links.get("next", {}).get("url") if r.status_code < 300 else None
        hf_raise_for_status(r)
        try:
            data = r.json()
        except ValueError as exc:
            raise Malformed(f"listing page is not valid JSON ({exc})") from None
        if not isinstance(data, list):
            raise Malformed(f"listing page is a {type(data).__name__}, expected a JSON list")
        return data, state["next"]

    try:
        return with_retries(once, retry, f"listing page {url}")
    except Exception as exc:  # noqa: BLE001 - attach the next link so the crawl can go on past a bad page
        exc.next_url = state.get("next")  # type: ignore[attr-defined]
        raise


def _origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of ``url``, the default port filled in; ("", "", None) when it does not parse."""
    try:
        parts = urlsplit(url)
        port = parts.port or {"http": 80, "https": 443}.get(parts.scheme.lower())
    except ValueError:
        return "", "", None
    return parts.scheme.lower(), (parts.hostname or "").lower(), port


def _stop_reason(next_url: str, pages: int, visited: set[str], empty: bool, max_pages: int | None,
                 should_stop: Callable[[], bool] | None) -> tuple[str, str] | None:
    """Why the crawl must not request ``next_url`` after ``pages`` pages: (kind, message), or None to go on."""
    if _origin(next_url) != _origin(endpoint()):
        return "origin", (f"the next link names another origin ({redact(next_url)}), not the hub {redact(endpoint())}; "
                          "not followed, so the token never goes there")
    if next_url in visited:
        return "loop", f"the next link repeats a page already read ({redact(next_url)}); the listing loops"
    if empty:
        return "loop", "an empty page named a next page; a listing that never ends, stopped here"
    if max_pages is not None and pages >= max_pages:
        return "max_pages", f"stopped after {pages} pages (max_pages); raise it to read further"
    if should_stop is not None and should_stop():
        return "budget", f"stopped after {pages} pages: the time budget is spent"
    return None


def read_pages(params: list[tuple[str, Any]], headers: dict[str, str], retry: RetryPolicy, token: str | None,
               limit: int, max_pages: int | None, parse: Callable[[dict[str, Any]], T], keep: Callable[[T], bool],
               should_stop: Callable[[], bool] | None = None) -> tuple[list[T], list[PageError], int]:
    """Follow the ``GET /api/models`` listing's ``Link`` pages until ``limit`` kept models, the end, or a stop
    (:func:`_stop_reason`).

    Each entry (a JSON object with a string ``id``; ``siblings`` defaulted to None) is turned into a model by
    ``parse`` and kept when ``keep`` says so, once per ``id``. A page that fails after retries, or an entry that
    does not parse, is recorded in the errors (token redacted) and the crawl goes on where the hub gave a next
    link; a stop is recorded as an error of its kind. Returns (models, errors, pages read).
    """
    url: str | None = f"{endpoint()}/api/models"
    page_params: list | None = params
    models: list[T] = []
    seen: set[str] = set()
    errors: list[PageError] = []
    visited: set[str] = set()
    pages = 0
    empty = False
    while url is not None and len(models) < limit:
        full = url_for_log(url, page_params)
        if pages:
            stop = _stop_reason(full, pages, visited, empty, max_pages, should_stop)
            if stop is not None:
                errors.append(PageError(pages + 1, redact(full, token), stop[0], stop[1]))
                log.warning("crawl: %s", stop[1])
                break
        elif should_stop is not None and should_stop():
            errors.append(PageError(1, redact(full, token), "budget", "no page read: the time budget is spent"))
            break
        visited.add(full)
        pages += 1
        try:
            items, next_url = fetch_page(url, page_params, headers, retry)
        except Exception as exc:  # noqa: BLE001 - recorded per page; the crawl never crashes on the hub
            errors.append(PageError(pages, redact(full, token), error_kind(exc), redact(short_error(exc), token)))
            log.warning("crawl: page %d failed: %s", pages, errors[-1].message)
            url, page_params, empty = getattr(exc, "next_url", None), None, False
            continue
        empty = not items
        for item in items:
            try:
                if not isinstance(item, dict) or not isinstance(item.get("id"), str):
                    raise Malformed("a listing entry has no string 'id'")
                item = dict(item)
                item.setdefault("siblings", None)
                model = parse(item)
            except Exception as exc:  # noqa: BLE001 - one bad entry must not lose the page
                errors.append(PageError(pages, redact(url_for_log(url, page_params), token), "item",
                                        redact(short_error(exc), token)))
                continue
            if item["id"] in seen or not keep(model):
                continue
            seen.add(item["id"])
            models.append(model)
            if len(models) >= limit:
                break
        url, page_params = next_url, None
    return models, errors, pages


def url_for_log(url: str, params: list | None) -> str:
    """``url`` with ``params`` as its query string: the page's address in errors and logs."""
    if not params:
        return url
    from urllib.parse import urlencode

    return f"{url}?{urlencode(params)}"


__all__ = ["PageError", "fetch_page", "read_pages", "url_for_log"]

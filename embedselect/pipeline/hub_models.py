"""The hub crawl recorded into the cache's hub models table (:func:`refresh_hub_models`): the crawl command's and the
nightly job's."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def refresh_hub_models(*, store: Any = None, cache_dir: str | Path | None = None, record: bool = True,
                       token: str | None = None, **query: Any):
    """Crawl the hub (:func:`embedselect.models.hub.crawl` with ``query``: library, pipeline_tag, tags, author, search,
    sort, limit, min_params, max_params, licenses, include_gated) and record the result in the cache's hub models table
    (all of it or nothing). The one path the ``crawl`` command and the nightly job share.

    Returns:
        ``(CrawlResult, crawl_id)``; ``crawl_id`` is None when nothing was recorded (``record=False`` or no model).
    """
    from embedselect.models.hub import crawl
    from embedselect.store import Store
    from embedselect.store.hub_models import record_crawl

    result = crawl(token=token, **query)
    crawl_id = None
    if record and result.models:
        crawl_id = record_crawl(store if store is not None else Store.open(cache_dir), result)
    return result, crawl_id

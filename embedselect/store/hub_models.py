"""The hub models table in the cache database: what ``crawl`` recorded (crawls, models with history), the safety
policy's refusals, and the ``hub_candidates`` view. ("Catalog" names the curated YAML lists only:
:mod:`embedselect.models.candidates.catalogs`.)

Tables (created by :func:`ensure_schema`, ``CREATE ... IF NOT EXISTS``):

- ``hub_crawls``: one row per crawl — ``crawl_id``, ``started_at``/``finished_at`` (UTC), ``query`` (JSON),
  ``n_models``, ``n_errors``, ``complete``, ``errors`` (JSON list of page errors).
- ``hub_models``: latest state per repo — listing fields (sha, library, pipeline_tag, modality, tags,
  license, num_params, gated, downloads, likes, trending_score, created_at, last_modified) plus
  ``first_seen_at``/``first_seen_crawl`` (when embedselect first saw it) and ``last_seen_at``/``last_seen_crawl``.
- ``hub_snapshots``: one row per model per crawl — ``crawl_id, repo_id, crawled_at, sha, downloads, likes,
  trending_score``: the popularity history.
- ``hub_refusals``: revisions the safety policy of :func:`embedselect.models.hub.fetch_model` refused — ``repo_id,
  revision, reason, message, refused_at``. Messages are token-scrubbed. Hub faults are failures, not refusals.
- view ``hub_candidates``: ``hub_models`` + ``is_new`` (first seen in the latest crawl) + ``refusal_reason`` (the
  latest policy refusal of the model's current sha, if any).

Every write is one transaction of the store: a crawl is recorded entirely or not at all. No SQL is built
from hub text: all values are bound parameters.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Sequence

from embedselect.errors import ConfigError
from embedselect._util.kinds import MODALITIES

if TYPE_CHECKING:  # pragma: no cover
    from embedselect.models.hub import CrawlResult

__all__ = ["ensure_schema", "record_crawl", "record_refusal", "candidates", "history", "refusals", "REFUSAL_REASONS"]

REFUSAL_REASONS = frozenset({"remote_code", "pickle_only", "too_large", "gated"})
"""Reasons accepted by :func:`record_refusal`: the four refusals of the safety policy
(:class:`~embedselect.errors.UnsafeModelError`). A hub or network fault is a *failure*, never a refusal: it is
recorded in the cache's ``failures`` table (:mod:`embedselect.store.failures`) and retried. Rows of older stores
with the former reasons "not_found" / "fetch_error" are ignored by :func:`refusals` and the ``hub_candidates`` view."""


_DDL = [
    """CREATE TABLE IF NOT EXISTS hub_crawls (
        crawl_id BIGINT PRIMARY KEY,
        started_at TIMESTAMPTZ NOT NULL,
        finished_at TIMESTAMPTZ NOT NULL,
        query JSON NOT NULL,
        n_models INTEGER NOT NULL,
        n_errors INTEGER NOT NULL,
        complete BOOLEAN NOT NULL,
        errors JSON NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS hub_models (
        repo_id VARCHAR PRIMARY KEY,
        sha VARCHAR,
        library VARCHAR,
        pipeline_tag VARCHAR,
        modality VARCHAR,
        tags VARCHAR[],
        license VARCHAR,
        num_params BIGINT,
        gated BOOLEAN NOT NULL,
        gated_mode VARCHAR,
        downloads BIGINT,
        likes BIGINT,
        trending_score DOUBLE,
        created_at TIMESTAMPTZ,
        last_modified TIMESTAMPTZ,
        first_seen_at TIMESTAMPTZ NOT NULL,
        first_seen_crawl BIGINT NOT NULL,
        last_seen_at TIMESTAMPTZ NOT NULL,
        last_seen_crawl BIGINT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS hub_snapshots (
        crawl_id BIGINT NOT NULL,
        repo_id VARCHAR NOT NULL,
        crawled_at TIMESTAMPTZ NOT NULL,
        sha VARCHAR,
        downloads BIGINT,
        likes BIGINT,
        trending_score DOUBLE,
        PRIMARY KEY (crawl_id, repo_id))""",
    """CREATE TABLE IF NOT EXISTS hub_refusals (
        repo_id VARCHAR NOT NULL,
        revision VARCHAR,
        reason VARCHAR NOT NULL,
        message VARCHAR NOT NULL,
        refused_at TIMESTAMPTZ NOT NULL)""",
    # OR REPLACE: caches made before refusals became per revision and policy-only get the new view (the view's
    # former name, ``candidates``, is dropped by the schema's version 4 migration: store/schema.py)
    """CREATE OR REPLACE VIEW hub_candidates AS
        SELECT m.*,
               m.first_seen_crawl = (SELECT max(crawl_id) FROM hub_crawls) AS is_new,
               (SELECT r.reason FROM hub_refusals r
                 WHERE r.repo_id = m.repo_id AND r.revision = m.sha
                   AND r.reason IN ('remote_code', 'pickle_only', 'too_large', 'gated')
                 ORDER BY r.refused_at DESC LIMIT 1) AS refusal_reason
        FROM hub_models m""",
]

_MODEL_COLS = (
    "repo_id", "sha", "library", "pipeline_tag", "modality", "tags", "license", "num_params", "gated", "gated_mode",
    "downloads", "likes", "trending_score", "created_at", "last_modified",
)


def ensure_schema(con: Any) -> None:
    """Create the hub tables and the ``hub_candidates`` view on DuckDB connection ``con`` (idempotent)."""
    for ddl in _DDL:
        con.execute(ddl)


def _utc(ts: datetime | None) -> datetime | None:
    if ts is None:
        return None
    return ts if ts.tzinfo is not None else ts.replace(tzinfo=timezone.utc)


def record_crawl(store: Any, result: "CrawlResult") -> int:
    """Upsert a crawl into the hub models table, in one transaction (all of it or nothing).

    Adds a ``hub_crawls`` row, one ``hub_snapshots`` row per model, and inserts or updates ``hub_models``
    (``first_seen_*`` kept from the first crawl that saw the model, everything else updated).

    Args:
        store: an :class:`embedselect.store.Store`.
        result: what :func:`embedselect.models.hub.crawl` returned.

    Returns:
        The new ``crawl_id`` (1, 2, ...).
    """
    crawled_at = _utc(result.finished_at)
    errors = json.dumps([asdict(e) for e in result.errors])
    with store._write() as con:
        ensure_schema(con)
        crawl_id = int(con.execute("SELECT coalesce(max(crawl_id), 0) + 1 FROM hub_crawls").fetchone()[0])
        con.execute(
            "INSERT INTO hub_crawls VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                crawl_id, _utc(result.started_at), crawled_at, json.dumps(result.query, default=str),
                len(result.models), len(result.errors), bool(result.complete), errors,
            ],
        )
        for m in result.models:
            row = [
                m.repo_id, m.sha, m.library, m.pipeline_tag, m.modality, list(m.tags), m.license, m.num_params,
                bool(m.gated), m.gated_mode, m.downloads, m.likes, m.trending_score, _utc(m.created_at),
                _utc(m.last_modified),
            ]
            con.execute(
                f"""INSERT INTO hub_models ({", ".join(_MODEL_COLS)}, first_seen_at, first_seen_crawl,
                                             last_seen_at, last_seen_crawl)
                    VALUES ({", ".join("?" * len(_MODEL_COLS))}, ?, ?, ?, ?)
                    ON CONFLICT (repo_id) DO UPDATE SET
                    {", ".join(f"{c} = excluded.{c}" for c in _MODEL_COLS[1:])},
                    last_seen_at = excluded.last_seen_at, last_seen_crawl = excluded.last_seen_crawl""",
                row + [crawled_at, crawl_id, crawled_at, crawl_id],
            )
            con.execute(
                "INSERT INTO hub_snapshots VALUES (?, ?, ?, ?, ?, ?, ?)",
                [crawl_id, m.repo_id, crawled_at, m.sha, m.downloads, m.likes, m.trending_score],
            )
    return crawl_id


def record_refusal(store: Any, repo_id: str, revision: str | None, reason: str, message: str) -> None:
    """Record that ``repo_id@revision`` was refused (or could not be fetched), with a token-free message.

    Args:
        reason: one of :data:`REFUSAL_REASONS` (``UnsafeModelError.reason`` for policy refusals).
        message: the error message; hub tokens are scrubbed before it is stored.
    """
    from embedselect._util.redaction import redact

    if reason not in REFUSAL_REASONS:
        raise ConfigError(f"unknown refusal reason {reason!r}; use one of: {', '.join(sorted(REFUSAL_REASONS))}")
    if not isinstance(repo_id, str) or not repo_id:
        raise ConfigError("record_refusal needs a repo id")
    if not store.can_record("the refusal"):
        return
    with store._write() as con:
        ensure_schema(con)
        con.execute(
            "INSERT INTO hub_refusals VALUES (?, ?, ?, ?, ?)",
            [repo_id, revision, reason, redact(message), datetime.now(timezone.utc)],
        )


def candidates(
    store: Any,
    *,
    modality: str | None = None,
    max_params: int | None = None,
    licenses: Sequence[str] | None = None,
    exclude_gated: bool = False,
    new_since_last_crawl: bool = False,
    include_refused: bool = False,
    libraries: Sequence[str] | None = None,
    limit: int | None = None,
):
    """Hub models recorded by ``crawl`` to consider, most trending first, as a pandas DataFrame.

    Args:
        modality: "text" or "image"; None = any.
        max_params: keep models with a known parameter count ≤ this (unknown sizes are dropped).
        licenses: licence allowlist (e.g. ``["apache-2.0", "mit"]``); None = any.
        exclude_gated: drop gated repos.
        new_since_last_crawl: only models first seen in the latest crawl.
        include_refused: keep models whose current sha was refused by the safety policy (default: drop).
        libraries: keep only these ``library_name`` values.
        limit: at most this many rows.

    Returns:
        DataFrame with the ``hub_candidates`` view's columns (``repo_id, sha, library, pipeline_tag, modality, tags,
        license, num_params, gated, ..., first_seen_at, is_new, refusal_reason``), ordered by trending score,
        then downloads (descending), then repo id.
    """
    if modality is not None and modality not in MODALITIES:
        raise ConfigError(f"modality must be one of {MODALITIES}, got {modality!r}")
    if max_params is not None and (not isinstance(max_params, int) or max_params < 0):
        raise ConfigError(f"max_params must be a non-negative integer, got {max_params!r}")
    if limit is not None and (not isinstance(limit, int) or limit < 1):
        raise ConfigError(f"limit must be a positive integer, got {limit!r}")
    sql = "SELECT * FROM hub_candidates WHERE 1=1"
    params: list[Any] = []
    if modality is not None:
        sql += " AND modality = ?"
        params.append(modality)
    if max_params is not None:
        sql += " AND num_params IS NOT NULL AND num_params <= ?"
        params.append(max_params)
    if licenses is not None:
        sql += " AND list_contains(?::VARCHAR[], license)"
        params.append([str(x) for x in ([licenses] if isinstance(licenses, str) else licenses)])
    if libraries is not None:
        sql += " AND list_contains(?::VARCHAR[], library)"
        params.append([str(x) for x in ([libraries] if isinstance(libraries, str) else libraries)])
    if exclude_gated:
        sql += " AND NOT gated"
    if new_since_last_crawl:
        sql += " AND is_new"
    if not include_refused:
        sql += " AND refusal_reason IS NULL"
    sql += " ORDER BY trending_score DESC NULLS LAST, downloads DESC NULLS LAST, repo_id"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit)
    with store._write() as con:  # write: creates the schema on a fresh store
        ensure_schema(con)
        return con.execute(sql, params).df()


def history(store: Any, repo_id: str):
    """A model's popularity over time: DataFrame ``crawl_id, crawled_at, sha, downloads, likes,
    trending_score``, oldest first."""
    with store._write() as con:
        ensure_schema(con)
        return con.execute(
            "SELECT crawl_id, crawled_at, sha, downloads, likes, trending_score FROM hub_snapshots "
            "WHERE repo_id = ? ORDER BY crawl_id",
            [repo_id],
        ).df()


def refusals(store: Any):
    """All recorded refusals of the safety policy, newest first: DataFrame ``repo_id, revision, reason, message,
    refused_at`` (rows of older stores with a reason outside :data:`REFUSAL_REASONS` are left out)."""
    with store._write() as con:
        ensure_schema(con)
        return con.execute(
            "SELECT * FROM hub_refusals WHERE list_contains(?::VARCHAR[], reason) ORDER BY refused_at DESC",
            [sorted(REFUSAL_REASONS)],
        ).df()

"""The nightly history in the store: one row per night and one per candidate per night.

Tables (``CREATE ... IF NOT EXISTS``):

- ``nightly_runs``: ``run_id, ranking_key, started_at, finished_at, status, summary`` (the run.json, as JSON).
- ``nightly_results``: ``run_id, ranking_key, night_at, name, model_id, revision, why, status, rank, prev_rank,
  delta, combined_score, scores (JSON), error``. ``delta = prev_rank - rank`` (positive = moved up). ``status`` is
  ``ok`` (ranked), ``failed`` (not retried at that revision unless ``retry_failed``) or ``transient`` (a passing
  hub or network fault: planned again the next night; :mod:`embedselect.store.failures`).

A night is recorded in one transaction at its very end: a night killed before that left no history, so the next
one plans the same candidates again (and finds their embeddings in the cache). All values are bound
parameters; no SQL is built from hub text.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

_DDL = [
    """CREATE TABLE IF NOT EXISTS nightly_runs (
        run_id VARCHAR PRIMARY KEY,
        ranking_key VARCHAR NOT NULL,
        started_at TIMESTAMPTZ NOT NULL,
        finished_at TIMESTAMPTZ NOT NULL,
        status VARCHAR NOT NULL,
        summary JSON NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS nightly_results (
        run_id VARCHAR NOT NULL,
        ranking_key VARCHAR NOT NULL,
        night_at TIMESTAMPTZ NOT NULL,
        name VARCHAR NOT NULL,
        model_id VARCHAR,
        revision VARCHAR,
        why VARCHAR,
        status VARCHAR NOT NULL,
        rank INTEGER,
        prev_rank INTEGER,
        delta INTEGER,
        combined_score DOUBLE,
        scores JSON,
        error VARCHAR,
        PRIMARY KEY (run_id, name))""",
]


def ensure_schema(con: Any) -> None:
    for stmt in _DDL:
        con.execute(stmt)


def previous_night(store: Any, ranking_key: str) -> tuple[str | None, list[dict[str, Any]]]:
    """The latest recorded night of ``ranking_key`` that ranked something: (run_id, its result rows)."""
    with store._write() as con:  # write: creates the schema on a fresh store
        ensure_schema(con)
        row = con.execute(
            "SELECT run_id FROM nightly_runs WHERE ranking_key = ? AND status IN ('ok', 'partial', 'degraded') "
            "ORDER BY finished_at DESC LIMIT 1",
            [ranking_key],
        ).fetchone()
        if row is None:
            return None, []
        cur = con.execute(
            "SELECT name, model_id, revision, status, rank, combined_score FROM nightly_results WHERE run_id = ? "
            "ORDER BY rank NULLS LAST, name",
            [row[0]],
        )
        cols = [d[0] for d in cur.description]
        return row[0], [dict(zip(cols, r)) for r in cur.fetchall()]


def seen_revisions(store: Any, ranking_key: str, *, include_failed: bool = True,
                   include_transient: bool = False) -> set[tuple[str, str]]:
    """(model_id, revision) pairs ranked in earlier nights; with ``include_failed`` also those that failed there
    (not transiently), with ``include_transient`` also those a passing fault stopped.

    Rows of older stores that recorded a hub fault (``HubError``) as ``failed`` count as transient."""
    statuses = ["ok"] + (["failed"] if include_failed else []) + (["transient"] if include_transient else [])
    with store._write() as con:
        ensure_schema(con)
        rows = con.execute(
            "SELECT DISTINCT model_id, revision FROM nightly_results WHERE ranking_key = ? "
            "AND list_contains(?::VARCHAR[], CASE WHEN status = 'failed' AND starts_with(error, 'HubError:') "
            "THEN 'transient' ELSE status END) AND model_id IS NOT NULL AND revision IS NOT NULL",
            [ranking_key, statuses],
        ).fetchall()
    return {(a, b) for a, b in rows}


def record_night(store: Any, summary: dict[str, Any], leaderboard: list[dict[str, Any]],
                 failed: list[dict[str, Any]]) -> None:
    """Write the night and its rows in one transaction (the night's commit point)."""
    now = datetime.now(timezone.utc)
    key = summary["ranking_key"]
    with store._write() as con:  # one transaction
        ensure_schema(con)
        con.execute(
            "INSERT OR REPLACE INTO nightly_runs VALUES (?, ?, ?, ?, ?, ?)",
            [summary["run_id"], key, summary["started_at"], now, summary["status"],
             json.dumps(summary, default=str)],
        )
        for r in leaderboard:
            con.execute(
                "INSERT OR REPLACE INTO nightly_results VALUES (?, ?, ?, ?, ?, ?, ?, 'ok', ?, ?, ?, ?, ?, NULL)",
                [summary["run_id"], key, now, r["name"], r["model_id"], r["revision"], r["why"], r["rank"],
                 r["prev_rank"], r["delta"], r["combined_score"], json.dumps(r["scores"], default=str)],
            )
        for f in failed:
            con.execute(
                "INSERT OR REPLACE INTO nightly_results VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, NULL, NULL, NULL, ?)",
                [summary["run_id"], key, now, f["name"], f.get("model_id"), f.get("revision"), f.get("why"),
                 "transient" if f.get("transient") else "failed", f"{f.get('error_type')}: {f.get('reason')}"],
            )

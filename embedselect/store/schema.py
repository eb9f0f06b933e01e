"""The cache database's core tables, its schema version and the ordered migrations that bring an older store up to it.

The version lives in one row, ``meta.schema_version``. :data:`MIGRATIONS` is an ordered list: entry ``i`` turns a
version ``i + 1`` database into a version ``i + 2`` one, so :data:`SCHEMA_VERSION` is ``len(MIGRATIONS) + 1``.
:func:`ensure_schema` creates a fresh database at the current version, or runs the missing migrations of an older
one in a single transaction (a kill leaves the old version, never half of a migration), and refuses a database
written by a newer embedselect. Every applied step is recorded in ``schema_history``.

The hub models tables (store/hub_models.py) and the nightly history (store/nightly.py) add their own tables with
``CREATE ... IF NOT EXISTS``; they are not versioned here, except where a name changed (version 4).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Callable

from embedselect.errors import CacheError

CORE_TABLES = [
    """CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR)""",
    """CREATE TABLE IF NOT EXISTS datasets (
        fingerprint VARCHAR PRIMARY KEY,
        modality VARCHAR NOT NULL,
        n_items INTEGER NOT NULL,
        source VARCHAR,
        summary JSON,
        first_seen TIMESTAMPTZ NOT NULL,
        last_used TIMESTAMPTZ NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS models (
        model_id VARCHAR NOT NULL,
        revision VARCHAR NOT NULL,
        backend VARCHAR NOT NULL,
        modality VARCHAR,
        spec VARCHAR,
        local_dir VARCHAR,
        first_seen TIMESTAMPTZ NOT NULL,
        last_used TIMESTAMPTZ NOT NULL,
        PRIMARY KEY (model_id, revision, backend))""",
    """CREATE TABLE IF NOT EXISTS embedding_runs (
        run_key VARCHAR PRIMARY KEY,
        model_id VARCHAR NOT NULL,
        revision VARCHAR NOT NULL,
        backend VARCHAR NOT NULL,
        settings JSON NOT NULL,
        fingerprint VARCHAR NOT NULL,
        n INTEGER NOT NULL,
        dim INTEGER NOT NULL,
        dtype VARCHAR NOT NULL,
        device VARCHAR,
        seconds DOUBLE,
        vector_file VARCHAR NOT NULL,
        sha256 VARCHAR NOT NULL,
        bytes BIGINT NOT NULL,
        embedselect_version VARCHAR,
        created_at TIMESTAMPTZ NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS failures (
        failed_at TIMESTAMPTZ NOT NULL,
        spec VARCHAR NOT NULL,
        model_id VARCHAR,
        revision VARCHAR,
        stage VARCHAR NOT NULL,
        error_type VARCHAR NOT NULL,
        message VARCHAR NOT NULL,
        fingerprint VARCHAR)""",
    """CREATE TABLE IF NOT EXISTS rankings (
        ranking_id VARCHAR PRIMARY KEY,
        created_at TIMESTAMPTZ NOT NULL,
        fingerprint VARCHAR NOT NULL,
        metrics VARCHAR NOT NULL,
        n_candidates INTEGER NOT NULL,
        result JSON NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS metric_results (
        ranking_id VARCHAR NOT NULL,
        metric VARCHAR NOT NULL,
        candidate VARCHAR NOT NULL,
        model_id VARCHAR,
        revision VARCHAR,
        run_key VARCHAR,
        score DOUBLE,
        rank INTEGER,
        columns JSON,
        created_at TIMESTAMPTZ NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS metric_cache (
        key VARCHAR PRIMARY KEY,
        metric VARCHAR NOT NULL,
        value JSON NOT NULL,
        created_at TIMESTAMPTZ NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS pair_cache (
        key VARCHAR PRIMARY KEY,
        value JSON NOT NULL,
        created_at TIMESTAMPTZ NOT NULL)""",
]
"""The version-1 tables (every store ever written has them; later versions change them only by migrations)."""

_HISTORY_DDL = """CREATE TABLE IF NOT EXISTS schema_history (
    version INTEGER PRIMARY KEY,
    applied_at TIMESTAMPTZ,
    embedselect_version VARCHAR)"""


def _v1_to_v2(con: Any) -> None:
    """Version 2: ``schema_history``, one row per schema version this database reached (version 1's row has no
    date: it was created before the history existed)."""
    con.execute(_HISTORY_DDL)
    con.execute("INSERT INTO schema_history VALUES (1, NULL, NULL) ON CONFLICT (version) DO NOTHING")


ITEM_VECTORS_DDL = """CREATE TABLE IF NOT EXISTS item_vectors (
    space_key VARCHAR NOT NULL,
    item_hash VARCHAR NOT NULL,
    run_key VARCHAR NOT NULL,
    row_index INTEGER NOT NULL,
    PRIMARY KEY (space_key, item_hash, run_key))"""
"""The item index (version 3): which row of which run's vector file holds the vector of an item (``item_hash``, see
:func:`~embedselect.store.keys.item_key`) in a vector space (``space_key``: model, revision, backend, options and
precision, without the data; :func:`~embedselect.store.keys.space_key`). Written in the transaction that commits the
run's ``embedding_runs`` row and removed with it."""


def _v2_to_v3(con: Any) -> None:
    """Version 3: the item index ``item_vectors`` (empty: the runs of an older cache are indexed when a run reads
    them by their run key)."""
    con.execute(ITEM_VECTORS_DDL)


def _v3_to_v4(con: Any) -> None:
    """Version 4: the hub models view ``candidates`` is called ``hub_candidates`` ("candidates" named the crawled hub
    table beside the ranked candidates); the old view is dropped, the new one is created with the hub tables
    (:func:`embedselect.store.hub_models.ensure_schema`). Its tables keep their names and rows."""
    con.execute("DROP VIEW IF EXISTS candidates")


MIGRATIONS: list[Callable[[Any], None]] = [_v1_to_v2, _v2_to_v3, _v3_to_v4]
"""Ordered: ``MIGRATIONS[i]`` takes a version ``i + 1`` database (a DuckDB connection inside a transaction) to
version ``i + 2``. Append only; never edit a released step."""

SCHEMA_VERSION = len(MIGRATIONS) + 1


def stored_version(con: Any) -> int | None:
    """The ``meta.schema_version`` of the database on ``con``, or None for an empty database (no ``meta`` table
    or no row)."""
    has_meta = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'meta' AND table_schema = 'main'"
    ).fetchone()[0]
    if not has_meta:
        return None
    row = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return None if row is None else int(row[0])


def ensure_schema(con: Any, *, where: str = "the cache database") -> int:
    """Bring the database on ``con`` (a read-write DuckDB connection, autocommit) to :data:`SCHEMA_VERSION`:
    create it when empty, else apply the missing migrations, all in one transaction. Returns the version it was
    at (the current one for a new database).

    Raises:
        CacheError: the database was written by a newer embedselect (a higher schema version).
    """
    from embedselect.version import __version__

    now = datetime.now(timezone.utc)
    con.execute("BEGIN TRANSACTION")
    try:
        found = stored_version(con)
        if found is not None and found > SCHEMA_VERSION:
            raise CacheError(
                f"{where} has schema version {found}, newer than this embedselect's {SCHEMA_VERSION} ({__version__}); "
                "upgrade embedselect, or use another --cache-dir"
            )
        for ddl in CORE_TABLES:
            con.execute(ddl)
        if found is None:  # a new database: the current schema at once
            con.execute(_HISTORY_DDL)
            con.execute(ITEM_VECTORS_DDL)
            con.execute("INSERT INTO schema_history VALUES (?, ?, ?)", [SCHEMA_VERSION, now, __version__])
        else:
            for step in range(found, SCHEMA_VERSION):
                MIGRATIONS[step - 1](con)
                con.execute("INSERT INTO schema_history VALUES (?, ?, ?) ON CONFLICT (version) DO NOTHING",
                            [step + 1, now, __version__])
        con.execute(
            "INSERT INTO meta VALUES ('schema_version', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [str(SCHEMA_VERSION)],
        )
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")
    return SCHEMA_VERSION if found is None else found

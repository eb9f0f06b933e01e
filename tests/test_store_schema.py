"""The cache database: schema versions and migrations, batched pair-cache reads and writes, shared reads."""

from __future__ import annotations

import threading

import duckdb
import numpy as np
import pytest

import embedselect.store as st
from embedselect.errors import CacheError, CacheLockedError
from embedselect.store import Store, run_key
from embedselect.store import schema


def _v1_database(root) -> None:
    """A cache database as every embedselect of schema version 1 wrote it, with one pair-cache row."""
    root.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(root / st.DB_NAME))
    for ddl in schema.CORE_TABLES:
        con.execute(ddl)
    con.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    con.execute("INSERT INTO pair_cache VALUES ('is:old', '{\"is\": 0.5}', now())")
    con.close()


def _version(root) -> int:
    con = duckdb.connect(str(root / st.DB_NAME), read_only=True)
    try:
        return int(con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0])
    finally:
        con.close()


def test_the_schema_version_is_the_number_of_migrations_plus_one():
    assert schema.SCHEMA_VERSION == len(schema.MIGRATIONS) + 1 >= 2
    assert st.SCHEMA_VERSION == schema.SCHEMA_VERSION


def test_a_new_store_is_created_at_the_current_version(tmp_path):
    Store.open(tmp_path).get_many(["x"])
    assert _version(tmp_path) == schema.SCHEMA_VERSION
    hist = Store.open(tmp_path).query_df("SELECT version FROM schema_history ORDER BY version")
    assert hist.version.tolist() == [schema.SCHEMA_VERSION]


def test_an_old_version_store_is_migrated_on_open_and_keeps_its_rows(tmp_path):
    _v1_database(tmp_path)
    store = Store.open(tmp_path)
    assert store.get_many(["is:old", "is:missing"]) == {"is:old": {"is": 0.5}}
    assert _version(tmp_path) == schema.SCHEMA_VERSION
    hist = store.query_df("SELECT version, applied_at FROM schema_history ORDER BY version")
    assert hist.version.tolist() == list(range(1, schema.SCHEMA_VERSION + 1))
    assert hist.applied_at.isna().tolist()[0]  # version 1 predates the history
    # opening it again migrates nothing
    Store.open(tmp_path).put_many({"is:new": {"is": 1.0}})
    assert len(Store.open(tmp_path).query_df("SELECT * FROM schema_history")) == schema.SCHEMA_VERSION



def test_a_version_3_cache_with_the_old_hub_view_opens_and_keeps_its_hub_models(tmp_path):
    """Schema version 4 renamed the hub models view ``candidates`` to ``hub_candidates``: a version 3 cache (its view
    under the old name, one crawled model) opens, is migrated, and lists that model; the old view is gone."""
    from embedselect.store import hub_models

    tmp_path.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(tmp_path / st.DB_NAME))
    for ddl in schema.CORE_TABLES:
        con.execute(ddl)
    con.execute(schema._HISTORY_DDL)
    con.execute(schema.ITEM_VECTORS_DDL)
    con.execute("INSERT INTO schema_history VALUES (3, NULL, NULL)")
    con.execute("INSERT INTO meta VALUES ('schema_version', '3')")
    for ddl in hub_models._DDL[:-1]:  # the tables, as version 3 had them
        con.execute(ddl)
    con.execute("CREATE VIEW candidates AS SELECT m.*, false AS is_new, NULL::VARCHAR AS refusal_reason "
                "FROM hub_models m")  # the view under its version 3 name
    con.execute("INSERT INTO hub_models (repo_id, gated, first_seen_at, first_seen_crawl, last_seen_at, "
                "last_seen_crawl, trending_score) VALUES ('acme/old', false, now(), 1, now(), 1, 3.0)")
    con.close()
    store = Store.open(tmp_path)
    assert hub_models.candidates(store).repo_id.tolist() == ["acme/old"]
    assert _version(tmp_path) == schema.SCHEMA_VERSION >= 4
    views = set(store.query_df("SELECT view_name FROM duckdb_views() WHERE NOT internal").view_name)
    assert "hub_candidates" in views and "candidates" not in views

def test_a_failing_migration_leaves_the_old_version(tmp_path, monkeypatch):
    _v1_database(tmp_path)

    def broken(con):
        con.execute("CREATE TABLE half_done (x INTEGER)")
        raise RuntimeError("migration bug")

    monkeypatch.setattr(schema, "MIGRATIONS", [broken])
    with pytest.raises(RuntimeError, match="migration bug"):
        Store.open(tmp_path).get_many(["is:old"])
    assert _version(tmp_path) == 1
    con = duckdb.connect(str(tmp_path / st.DB_NAME), read_only=True)
    tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    con.close()
    assert "half_done" not in tables and "schema_history" not in tables


@pytest.mark.fault
def test_a_store_from_a_newer_embedselect_is_refused_with_what_to_do(tmp_path):
    _v1_database(tmp_path)
    con = duckdb.connect(str(tmp_path / st.DB_NAME))
    con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [str(schema.SCHEMA_VERSION + 1)])
    con.close()
    with pytest.raises(CacheError, match="newer than this embedselect.*upgrade embedselect"):
        Store.open(tmp_path).get_many(["is:old"])
    assert _version(tmp_path) == schema.SCHEMA_VERSION + 1  # untouched


def test_run_keys_do_not_change_with_the_schema_version():
    # the value main computed before the schema was versioned: cached embeddings survive a migration
    key = run_key(model_id="acme/m", revision="abc", backend="sentence-transformers", options={"pooling": "mean"},
                  fingerprint="f" * 64, precision="fp32")
    assert key == "ea540ea9b3c56ba3494af32449b36f13786d32b94a2d236fe1be0033ec3c0c6b"


def test_pair_cache_reads_and_writes_in_batches_and_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr(st.records, "_IN_CHUNK", 7)
    store = Store.open(tmp_path)
    items = {f"is:{i}": {"is": float(i)} for i in range(50)}
    store.put_many(items)
    asked = [f"is:{i}" for i in range(0, 60, 3)] + ["is:3"]  # a repeat and keys that are not there
    got = store.get_many(asked)
    assert got == {k: items[k] for k in asked if k in items}
    assert len(got) == 17


def test_put_many_is_one_statement_not_one_per_row(tmp_path, monkeypatch):
    store = Store.open(tmp_path)
    store.get_many(["warm"])  # the schema is made
    calls = {"execute": 0, "executemany": 0}
    real_write = Store._write

    class Spy:
        def __init__(self, con):
            self.con = con

        def execute(self, *a, **kw):
            calls["execute"] += 1
            return self.con.execute(*a, **kw)

        def executemany(self, *a, **kw):
            calls["executemany"] += 1
            return self.con.executemany(*a, **kw)

    import contextlib

    @contextlib.contextmanager
    def spy_write(self):
        with real_write(self) as con:
            yield Spy(con)

    monkeypatch.setattr(Store, "_write", spy_write)
    store.put_many({f"is:{i}": {"is": 1.0} for i in range(200)})
    assert calls == {"execute": 0, "executemany": 1}
    monkeypatch.setattr(Store, "_write", real_write)
    assert len(store.get_many([f"is:{i}" for i in range(200)])) == 200


def test_readers_in_two_processes_read_at_once_and_a_writer_waits_for_them(tmp_path):
    # two Store objects stand for two processes: each holds its own descriptor of the lock file
    Store.open(tmp_path).put_many({"is:a": {"is": 1.0}})
    first, second = Store.open(tmp_path, lock_timeout=5), Store.open(tmp_path, lock_timeout=0.3)
    first.get_many(["warm"])
    second.get_many(["warm"])
    inside, release, seen = threading.Event(), threading.Event(), {}

    def hold_a_read():
        with first._read() as con:
            seen["first"] = con.execute("SELECT count(*) FROM pair_cache").fetchone()[0]
            inside.set()
            assert release.wait(30)

    t = threading.Thread(target=hold_a_read)
    t.start()
    try:
        assert inside.wait(30)
        assert second.get_many(["is:a"]) == {"is:a": {"is": 1.0}}  # a second reader is not blocked
        with pytest.raises(CacheLockedError):
            second.put_many({"is:b": {"is": 2.0}})  # a writer waits for the reader (here: past its timeout)
    finally:
        release.set()
        t.join(30)
    assert seen["first"] == 1
    second.put_many({"is:b": {"is": 2.0}})  # the reader is gone: the write goes through
    assert set(first.get_many(["is:a", "is:b"])) == {"is:a", "is:b"}


def test_a_write_inside_a_read_of_the_same_store_is_a_programming_error(tmp_path):
    store = Store.open(tmp_path)
    store.get_many(["warm"])
    with store._read():
        with pytest.raises(RuntimeError, match="inside a read"):
            store.put_many({"is:x": {"is": 1.0}})
    with store._write():  # reads inside a write share its connection
        assert store.get_many(["is:x"]) == {}


def test_load_vectors_still_reads_under_a_shared_lock(tmp_path):
    store = Store.open(tmp_path)
    key = run_key(model_id="m", revision="r", backend="b", options={}, fingerprint="f", precision="fp32")
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    store.save_run(key=key, vectors=x, model_id="m", revision="r", backend="b", settings={}, fingerprint="f",
                   device="cpu", seconds=0.0)
    assert np.array_equal(Store.open(tmp_path).load_vectors(key), x)

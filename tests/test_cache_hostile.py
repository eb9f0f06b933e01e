"""Issue 47, the cache's database and settings: a SQLite file in the database's place (no extension fetched, "not a
DuckDB database", exit 6), another program's DuckDB file named ``embedselect.duckdb`` among a user's files (refused,
nothing created), and an ``EMBEDSELECT_LOCK_TIMEOUT`` that is not a number of seconds (a typed error naming it)."""

from __future__ import annotations

import sqlite3

import pytest

from embedselect.cli import main
from embedselect.data import sample_path
from embedselect.errors import ConfigError
from embedselect.store import DB_NAME, Store
from tests.test_nothing_lost import snapshot


def _sqlite(path) -> bytes:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE notes (id INTEGER, text TEXT)")
    con.execute("INSERT INTO notes VALUES (1, 'mine')")
    con.commit()
    con.close()
    return path.read_bytes()


# --- 7: a SQLite file as the cache database ------------------------------------------------------------------
@pytest.mark.fault
@pytest.mark.parametrize("readonly", [False, True])
def test_a_sqlite_file_as_the_cache_database_is_not_a_duckdb_database(tmp_path, capsys, monkeypatch, readonly):
    cache = tmp_path / "cache"
    with Store.open(cache)._write():
        pass
    (cache / DB_NAME).unlink()
    before = _sqlite(cache / DB_NAME)
    if readonly:
        monkeypatch.setenv("EMBEDSELECT_CACHE_READONLY", "1")
    assert main(["cache", "ls", "--cache-dir", str(cache)]) == 6
    err = capsys.readouterr().err
    assert "not a DuckDB database" in err and "SQLite" in err, err
    assert "Close other programs" not in err and "INSTALL" not in err
    assert (cache / DB_NAME).read_bytes() == before


@pytest.mark.fault
def test_every_cache_connection_turns_extension_autoloading_off(tmp_path):
    store = Store.open(tmp_path / "cache")
    with store._write() as con:
        settings = dict(con.execute(
            "SELECT name, value FROM duckdb_settings() WHERE name IN "
            "('autoinstall_known_extensions', 'autoload_known_extensions')").fetchall())
    assert settings == {"autoinstall_known_extensions": "false", "autoload_known_extensions": "false"}
    with store._read() as con:
        assert con.execute("SELECT value FROM duckdb_settings() WHERE name = 'autoload_known_extensions'"
                           ).fetchone()[0] == "false"


# --- 8: another program's DuckDB file named embedselect.duckdb ----------------------------------------------------
def _foreign_duckdb(path) -> None:
    import duckdb

    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE sales (day DATE, amount DOUBLE)")
    con.execute("INSERT INTO sales VALUES ('2026-01-01', 12.5)")
    con.close()


@pytest.mark.fault
@pytest.mark.parametrize("with_user_files", [True, False])
def test_another_programs_duckdb_named_as_the_cache_is_refused_and_nothing_is_created(tmp_path, capsys,
                                                                                       with_user_files):
    folder = tmp_path / "analysis"
    folder.mkdir()
    _foreign_duckdb(folder / DB_NAME)
    if with_user_files:
        (folder / "report.txt").write_text("my notes")
        (folder / "data.csv").write_text("a,b\n1,2\n")
    before = snapshot(folder)
    code = main(["embed", str(sample_path("texts")), "-m", "random-projection", "--column", "text",
                 "--max-items", "10", "--cache-dir", str(folder)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "embedselect.duckdb (a database without embedselect's schema)" in err
    assert snapshot(folder) == before  # no tables added, no CACHEDIR.TAG, .lock, locks/ or vectors/
    with pytest.raises(ConfigError, match="not embedselect's"):
        Store.open(folder)
    assert snapshot(folder) == before


def test_a_cache_made_before_the_tag_is_still_claimed(tmp_path):
    cache = tmp_path / "old"
    with Store.open(cache)._write():
        pass
    (cache / "CACHEDIR.TAG").unlink()  # a cache from before the tag: its database carries the schema's marker
    Store.open(cache)
    assert (cache / "CACHEDIR.TAG").is_file()


# --- 11: EMBEDSELECT_LOCK_TIMEOUT that is not a number of seconds -------------------------------------------------
@pytest.mark.fault
@pytest.mark.parametrize("value", ["2min", "nan", "inf", "-1"])
def test_a_lock_timeout_that_is_not_seconds_names_the_variable(tmp_path, capsys, monkeypatch, value):
    monkeypatch.setenv("EMBEDSELECT_LOCK_TIMEOUT", value)
    with pytest.raises(ConfigError, match=r"EMBEDSELECT_LOCK_TIMEOUT=.*e\.g\. EMBEDSELECT_LOCK_TIMEOUT=120"):
        Store.open(tmp_path / "c")
    assert not (tmp_path / "c").exists()
    assert main(["cache", "ls", "--cache-dir", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert "EMBEDSELECT_LOCK_TIMEOUT" in err and "Traceback" not in err and "ValueError" not in err
    monkeypatch.setenv("EMBEDSELECT_LOCK_TIMEOUT", " 0.5 ")
    assert Store.open(tmp_path / "c").lock_timeout == 0.5


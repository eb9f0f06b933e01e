"""A damaged cache database (truncated, header overwritten, a damaged block) is a typed error, exit 6, that names the
file and how to recover; moving it aside as the message says gives a working cache again (issue 20)."""

from __future__ import annotations

import os
import shutil

import pytest

from embedselect.cli import main
from embedselect.data import sample_path
from embedselect.errors import CacheDatabaseCorruptError
from embedselect.store import Store

SAMPLE = str(sample_path("texts"))


def _embed(cache) -> int:
    return main(["embed", SAMPLE, "-m", "random-projection", "--column", "text", "--max-items", "20",
                 "--cache-dir", str(cache)])


def _truncate(db):
    os.truncate(db, os.path.getsize(db) // 3)


def _zero_header(db):
    with open(db, "r+b") as f:
        f.write(b"\0" * 4096)


def _zero_block(db):
    with open(db, "r+b") as f:
        f.seek(8192)
        f.write(b"\0" * 4096)


@pytest.fixture(scope="module")
def good_cache(tmp_path_factory):
    cache = tmp_path_factory.mktemp("good") / "cache"
    assert _embed(cache) == 0
    return cache


@pytest.mark.fault
@pytest.mark.parametrize("damage", [_truncate, _zero_header, _zero_block], ids=["truncated", "zeroed-header",
                                                                               "zeroed-block"])
def test_a_damaged_cache_database_is_a_typed_error_naming_the_file_and_the_recovery(tmp_path, capsys, good_cache,
                                                                                    damage):
    cache = tmp_path / "cache"
    shutil.copytree(good_cache, cache)
    db = cache / "embedselect.duckdb"
    damage(db)
    for argv in (["cache", "ls", "--cache-dir", str(cache)], None):
        code = main(argv) if argv else _embed(cache)
        err = capsys.readouterr().err
        assert code == 6, err
        assert str(db) in err and "damaged" in err and "Move it aside" in err, err
        assert "unexpected" not in err and "Close other programs" not in err, err
    with pytest.raises(CacheDatabaseCorruptError):
        Store.open(cache, read_only=True).list_runs()  # a read-only (shared) cache says the same
    os.replace(db, db.with_name(db.name + ".broken"))  # the advice works
    assert _embed(cache) == 0
    assert main(["cache", "ls", "--cache-dir", str(cache)]) == 0

"""The file system refuses a cache write: a file-size limit (``ulimit -f``, EFBIG, as a nearly full disk does with
ENOSPC) while the database is created or its write-ahead log grows, a read-only ``vectors/`` or ``locks/`` folder.
Each is a :class:`CacheError` (exit 6) that names the path and says what to do, and the cache stays readable: the
next normal run succeeds and reuses what was stored."""

from __future__ import annotations

import errno
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from embedselect.data import sample_path
from embedselect.errors import CacheError
from embedselect.store import DB_NAME, Store

SAMPLE = str(sample_path("texts"))


def _cli(args: list[str], *, max_file_bytes: int | None = None) -> subprocess.CompletedProcess:
    """``embedselect ARGS`` in a child process, with files it writes limited to ``max_file_bytes`` (RLIMIT_FSIZE:
    a write past it fails with EFBIG, Python ignores SIGXFSZ)."""
    def limit() -> None:
        if max_file_bytes is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (max_file_bytes, max_file_bytes))

    return subprocess.run([sys.executable, "-m", "embedselect.cli", *args], capture_output=True, text=True,
                          timeout=300, preexec_fn=limit, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})


def _rank(cache: Path, models: str) -> list[str]:
    return ["rank", SAMPLE, "-c", "text", "-m", models, "--metrics", "nn_agreement", "--cache-dir", str(cache), "-q",
            "--json"]


@pytest.mark.fault
def test_a_file_size_limit_while_the_database_is_created_leaves_no_file_that_reads_as_damaged(tmp_path):
    """The database could not be written whole (5 KB allowed): exit 6 naming the file and the limit, not "move it
    aside"; no partial database is left, so the next run (no limit) creates it and succeeds. The partial file was
    left, and every later run said the database was damaged."""
    cache = tmp_path / "cache"
    pair = "tfidf-svd,random-projection"
    first = _cli(_rank(cache, pair), max_file_bytes=5 * 1024)
    assert first.returncode == 6, first.stderr
    err = first.stderr.strip()
    assert len(err.splitlines()) == 1 and str(cache / DB_NAME) in err and "File too large" in err, err
    assert "ulimit -f" in err and "Move it aside" not in err, err
    assert not (cache / DB_NAME).exists()
    again = _cli(_rank(cache, pair))
    assert again.returncode == 0, again.stderr


@pytest.mark.fault
def test_a_file_size_limit_on_vectors_keeps_the_ranking_and_what_was_stored(tmp_path):
    """A cache that holds tfidf-svd and random-projection; a run that must also store rpbig (7.9 MB of vectors) with
    files limited to the database file's size (the largest limit the database is opened for writing under, see
    ``test_a_file_size_limit_below_the_database_files_size_refuses_the_write_and_keeps_what_was_stored``): rpbig
    fails with a CacheError naming its folder and the limit (it said only "... requested and ... written; free disk
    space"), the two cached ones are ranked and printed, exit 0, and the ranking is stored (in the write-ahead log:
    the checkpoint that would grow the file is refused, harmlessly); the next run reads the two from the cache and
    stores rpbig. (The test ran under a 4 KB limit, below the database file's size, which is refused at once
    now.)"""
    cache = tmp_path / "cache"
    assert _cli(_rank(cache, "tfidf-svd,random-projection")).returncode == 0
    three = "tfidf-svd,random-projection,rpbig=random-projection?dim=8192"
    limited = _cli(_rank(cache, three), max_file_bytes=(cache / DB_NAME).stat().st_size)
    assert limited.returncode == 0, limited.stderr
    r = json.loads(limited.stdout)
    status = {c["name"]: (c["status"], c["error_type"]) for c in r["candidates"]}
    assert status == {"tfidf-svd": ("ok", None), "random-projection": ("ok", None),
                      "rpbig": ("failed", "CacheError")}
    error = next(c["error"] for c in r["candidates"] if c["name"] == "rpbig")
    assert "took only part of it" in error and str(cache / "vectors") in error and "ulimit -f" in error, error
    assert not [w for w in r["warnings"] if w["code"] == "not-stored"] and "unexpected" not in limited.stderr
    after = _cli(_rank(cache, three))
    assert after.returncode == 0, after.stderr
    cached = {c["name"]: c["cached"] for c in json.loads(after.stdout)["candidates"]}
    assert cached == {"tfidf-svd": True, "random-projection": True, "rpbig": False}
    assert Store.open(cache).query_df("SELECT count(*) AS n FROM rankings")["n"].tolist() == [3]


def _refuse_under(monkeypatch, folder: Path) -> None:
    """Make creating folders and files under ``folder`` fail as on a read-only mount (EROFS), as root sees it too."""
    import builtins

    real_mkdir, real_unlink, real_os_open, real_open = Path.mkdir, Path.unlink, os.open, builtins.open

    def under(path) -> bool:
        return str(path).startswith(str(folder) + os.sep)

    def refuse(path):
        raise OSError(errno.EROFS, "Read-only file system", str(path))

    def mkdir(self, *a, exist_ok=False, **k):
        if under(self) and not (exist_ok and self.is_dir()):
            refuse(self)
        return real_mkdir(self, *a, exist_ok=exist_ok, **k)

    def unlink(self, *a, **k):  # even of a file that is not there, as on a read-only mount
        return refuse(self) if under(self) else real_unlink(self, *a, **k)

    def os_open(path, flags, *a, **k):
        if under(path) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            refuse(path)
        return real_os_open(path, flags, *a, **k)

    def open_(path, mode="r", *a, **k):
        if under(path) and any(c in mode for c in "wax+"):
            refuse(path)
        return real_open(path, mode, *a, **k)

    monkeypatch.setattr(Path, "mkdir", mkdir)
    monkeypatch.setattr(Path, "unlink", unlink)
    monkeypatch.setattr(os, "open", os_open)
    monkeypatch.setattr(builtins, "open", open_)


@pytest.mark.fault
@pytest.mark.parametrize("shard_folder", ["absent", "present"])
def test_a_read_only_vectors_folder_fails_the_new_candidate_with_a_cache_error_naming_it(tmp_path, monkeypatch,
                                                                                         shard_folder):
    """``vectors/`` on a read-only mount: the candidate that must be stored fails with a CacheError naming the
    folder and the read-only setting, whether its shard folder (``vectors/ab/``) must be made or is there already
    (both were a bare OSError "[Errno 30] Read-only file system", the second from removing a temporary file that was
    never made); the cached ones are ranked."""
    import embedselect

    cache = tmp_path / "cache"
    embedselect.select(SAMPLE, ["tfidf-svd", "random-projection"], column="text", metrics=["nn_agreement"],
                       cache_dir=cache)
    if shard_folder == "present":
        for shard in range(256):
            (cache / "vectors" / f"{shard:02x}").mkdir(exist_ok=True)
    _refuse_under(monkeypatch, cache / "vectors")
    r = embedselect.select(SAMPLE, ["tfidf-svd", "random-projection", "rp8=random-projection?dim=8"], column="text",
                           metrics=["nn_agreement"], cache_dir=cache)
    failed = {c.name: c for c in r.candidates if not c.ok}
    assert list(failed) == ["rp8"] and failed["rp8"].error_type == "CacheError", failed
    message = failed["rp8"].error
    assert str(cache / "vectors") in message and "Read-only file system" in message, message
    assert "EMBEDSELECT_CACHE_READONLY=1" in message and "--cache-dir" in message, message
    assert sorted(c.name for c in r.ok) == ["random-projection", "tfidf-svd"] and all(c.cached for c in r.ok)


@pytest.mark.fault
def test_lock_files_that_cannot_be_created_are_one_cache_error_naming_the_folder(tmp_path, monkeypatch):
    """``locks/`` on a read-only mount: every candidate fails the same way, so the run raises that CacheError once
    (exit 6), naming the folder (it was AllCandidatesFailedError, exit 4, with a bare OSError per candidate)."""
    import embedselect

    cache = tmp_path / "cache"
    Store.open(cache).list_runs()
    _refuse_under(monkeypatch, cache / "locks")
    with pytest.raises(CacheError) as info:
        embedselect.select(SAMPLE, ["tfidf-svd", "random-projection"], column="text", metrics=["nn_agreement"],
                           cache_dir=cache)
    message = str(info.value)
    assert type(info.value) is CacheError and info.value.exit_code == 6
    assert "no candidate could be embedded" in message and "random-projection failed the same way" in message
    assert f"make {cache / 'locks'} writable" in message, message


@pytest.mark.fault
def test_embed_exits_6_as_rank_does_when_the_cache_failed_every_candidate(tmp_path, monkeypatch, capsys):
    """``locks/`` on a read-only mount: ``embed`` exited 4 (candidates) where ``rank`` exits 6 (cache); now both
    follow one rule (pipeline.scoring.no_candidate_embedded). The rows still say each candidate's reason; a failure
    that is not the cache's keeps exit 4."""
    from embedselect.cli import main

    cache = tmp_path / "cache"
    Store.open(cache).list_runs()
    argv = ["embed", SAMPLE, "-c", "text", "--cache-dir", str(cache), "-q"]
    with monkeypatch.context() as m:
        _refuse_under(m, cache / "locks")
        assert main([*argv, "-m", "tfidf-svd,random-projection"]) == 6
    out = capsys.readouterr().out
    failed = [ln for ln in out.splitlines() if ": failed - " in ln and str(cache / "locks") in ln]
    assert [ln.split(":")[0] for ln in failed] == ["tfidf-svd", "random-projection"], out
    missing = tmp_path / "missing"
    missing.mkdir()  # a model folder without weights: a candidate's own failure
    assert main([*argv, "-m", f"{missing}"]) == 4


@pytest.mark.fault
def test_a_ranking_the_cache_cannot_store_is_returned_with_the_reason(tmp_path, monkeypatch):
    """The disk fills up just before the ranking is stored: the ranking computed is returned (the CLI prints it),
    with a ``not-stored`` warning giving the reason; it was lost, the run ending with the cache's error."""
    import embedselect

    def full(*a, **k):
        raise CacheError("could not write its database in the cache at X: writing X/embedselect.duckdb.wal failed "
                         "(No space left on device)")

    monkeypatch.setattr(Store, "save_ranking", full)
    r = embedselect.select(SAMPLE, ["tfidf-svd", "random-projection"], column="text", metrics=["nn_agreement"],
                           cache_dir=tmp_path / "cache")
    assert len(r.ok) == 2
    [w] = r.warnings_with("not-stored")
    assert "No space left on device" in w.message and "not stored" in w.message
    assert r.ranking_id is None  # it named a ranking the store does not have


@pytest.mark.fault
def test_a_full_disk_while_scoring_keeps_the_ranking_and_says_what_was_not_stored(tmp_path, monkeypatch, capsys):
    """Every vector is embedded and stored, then the disk fills up while the metrics' pairs and results are written
    (as `ulimit -f` showed with sufficiency's pairs): the ranking is printed, exit 0, with one ``not-stored`` note
    naming what was not kept and why. The run ended with the cache's error, exit 6, and printed no ranking."""
    from embedselect.cli import main
    from embedselect.store.write_failure import cache_write_error

    cache = tmp_path / "cache"
    argv = ["rank", SAMPLE, "-c", "text", "-m", "tfidf-svd,random-projection", "--metrics", "nn_agreement",
            "--cache-dir", str(cache), "-q"]
    assert main(["embed", *argv[1:6], "--cache-dir", str(cache), "-q"]) == 0
    capsys.readouterr()

    def full(self, *a, **k):
        raise cache_write_error(OSError(errno.ENOSPC, "No space left on device"), what="write its database",
                                path=cache / DB_NAME, root=cache)

    for write in ("put_many", "put_metric_result", "save_ranking"):
        monkeypatch.setattr(Store, write, full)
    assert main([*argv, "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert [c["status"] for c in r["candidates"]] == ["ok", "ok"] and all(c["cached"] for c in r["candidates"])
    [note] = [w["message"] for w in r["warnings"] if w["code"] == "not-stored"]
    assert note.startswith("not stored in the cache: the pair results of metric nn_agreement, the result of metric "
                           "nn_agreement (a later run computes them again), and this ranking"), note
    assert "No space left on device" in note, note
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "tfidf-svd" in out and "note: not stored in the cache: " in out, out


@pytest.mark.fault
def test_a_failure_the_full_cache_cannot_record_is_not_said_again_beside_the_cache_error(tmp_path, monkeypatch,
                                                                                           capfd, caplog):
    """The file system refuses both rp8's vectors and the record of its failure (a file-size limit: EFBIG). stderr is
    the one CacheError line (it had a 'WARNING ... could not record the failure of ...' line per candidate beside it,
    the same refusal again); it is an INFO line, which -v shows. A failure of the candidate's own whose record the cache
    refuses is news, and stays a warning (test_store.py::test_a_full_disk_while_writing_vectors_or_recording_a_failure).
    (This ran under a real 1 KB limit, below the database file's size, which is now refused before any candidate:
    ``test_a_file_size_limit_below_the_database_files_size_refuses_the_write_and_keeps_what_was_stored``.)"""
    import numpy as np

    import embedselect.store.records as records
    from embedselect.cli import main
    from embedselect.store.write_failure import cache_write_error

    cache = tmp_path / "cache"
    argv = ["embed", SAMPLE, "-c", "text", "-m", "tfidf-svd", "--cache-dir", str(cache), "-q"]
    assert main(argv) == 0  # the database and the data set's row, written without a refusal
    capfd.readouterr()

    real_now, full = records.utc_now, []

    def too_large(*a, **k):
        full.append(True)
        raise OSError(errno.EFBIG, "File too large")

    def now_or_refused():  # a write of the records after the vectors were refused: the failure's record
        if not full:
            return real_now()
        raise cache_write_error(OSError(errno.EFBIG, "File too large"), what="write its database",
                                path=cache / DB_NAME, root=cache)

    monkeypatch.setattr(np, "save", too_large)
    monkeypatch.setattr(records, "utc_now", now_or_refused)
    two = _rank(cache, "rp8=random-projection?dim=8,rp16=random-projection?dim=16")
    assert main(two) == 6
    [line] = capfd.readouterr().err.strip().splitlines()
    assert line.startswith("embedselect: error: no candidate could be embedded: rp8: ") and "ulimit -f" in line, line
    full.clear()
    with caplog.at_level("INFO", logger="embedselect.store"):  # the line -v shows
        assert main(two) == 6
    assert [r.levelname for r in caplog.records if "could not record the failure of random-projection?dim=8"
            in r.getMessage()] == ["INFO"], caplog.text


@pytest.mark.fault
def test_a_refused_write_into_the_database_file_does_not_claim_the_cache_unchanged(tmp_path):
    """A file-size limit below the database file's size left it damaged (a block written in part): the message
    said "What the cache held is unchanged" all the same. It says so only of the other files now."""
    import errno

    from embedselect.store.keys import DB_NAME
    from embedselect.store.write_failure import cache_write_error

    refused = OSError(errno.EFBIG, "File too large")
    on_db = str(cache_write_error(refused, what="store a metric result", path=tmp_path / DB_NAME, root=tmp_path))
    assert "unchanged" not in on_db and "checks the database file" in on_db
    on_vectors = str(cache_write_error(refused, what="store the embeddings of x", path=tmp_path / "vectors" / "ab.npy",
                                       root=tmp_path))
    assert "What the cache held is unchanged" in on_vectors


@pytest.mark.fault
def test_an_output_a_file_size_limit_refuses_says_what_to_do(tmp_path, monkeypatch):
    """``rank --html`` under a file-size limit said "could not write --html to PATH: File too large; nothing was
    written", not what to do: it says the remedy the cache's write failures say (``no_room.room_remedy``)."""
    cache, html = tmp_path / "cache", tmp_path / "r.html"
    assert _cli(_rank(cache, "tfidf-svd,random-projection")).returncode == 0
    monkeypatch.setenv("EMBEDSELECT_CACHE_READONLY", "1")  # nothing written into the cache: only --html meets it
    run = _cli([*_rank(cache, "tfidf-svd,random-projection"), "--html", str(html)], max_file_bytes=20 * 1024)
    assert run.returncode == 2, run.stderr
    assert run.stderr.splitlines()[-1] == (
        f"embedselect: error: could not write --html to {html}: file too large; free disk space or raise the "
        "file-size limit (ulimit -f) or choose another place; nothing was written")
    assert not html.exists()


@pytest.mark.fault
def test_a_file_size_limit_below_the_database_files_size_refuses_the_write_and_keeps_what_was_stored(tmp_path):
    """Files limited to 16 KB, below the size of the cache's database file (MBs): DuckDB's checkpoint rewrites a
    block of that file in place, the limit cut the write short (4096 of 262144 bytes at offset 12288, then EFBIG),
    and the next run said the database was damaged ("computed checksum ... does not match ... in block at location
    12288"), the runs stored before lost. Now the run is refused before DuckDB opens the file to write: one line,
    exit 6, naming the file, its size, the limit and what to do; the next run (no limit) reads both runs and the
    ranking stored before."""
    cache = tmp_path / "cache"
    pair = "tfidf-svd,random-projection"
    assert _cli(_rank(cache, pair)).returncode == 0
    size = (cache / DB_NAME).stat().st_size
    assert size > 16 * 1024
    limited = _cli(_rank(cache, f"{pair},rp16=random-projection?dim=16"), max_file_bytes=16 * 1024)
    assert limited.returncode == 6, limited.stderr
    [line] = limited.stderr.strip().splitlines()
    assert f"{cache / DB_NAME} ({size} bytes)" in line and "file-size limit (16384 bytes)" in line, line
    assert "raise the file-size limit (ulimit -f)" in line and "nothing was written to it" in line, line
    store = Store.open(cache)
    assert len(store.list_runs()) == 2
    assert store.query_df("SELECT count(*) AS n FROM rankings")["n"].tolist() == [1]
    after = _cli(_rank(cache, pair))
    assert after.returncode == 0, after.stderr
    assert [c["cached"] for c in json.loads(after.stdout)["candidates"]] == [True, True]

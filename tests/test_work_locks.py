"""The cache's per-work lock files (``locks/``, store/worklock.py): ``cache gc`` removes those no process holds, never
a held one nor a file the tool did not make."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

import embedselect
from embedselect.data import sample_path
from embedselect.store import worklock
from embedselect.store.worklock import work_lock

SAMPLE = str(sample_path("texts"))
PAIR = ["tfidf-svd", "random-projection"]


def _rank(cache: Path):
    return embedselect.select(SAMPLE, PAIR, column="text", metrics=["nn_agreement"], cache_dir=cache)


@pytest.mark.fault
def test_cache_gc_removes_the_lock_files_no_process_holds_and_keeps_a_held_one(tmp_path, capsys):
    """A ranking leaves one lock file per run and per metric result in ``locks/`` (they stayed for ever). ``cache
    gc`` removes those no process holds and says how many; a held one is kept (and removed by a later gc once let
    go), and so is every file the tool did not make there: another name, a non-empty file, a link."""
    from embedselect.cli import main

    cache = tmp_path / "cache"
    _rank(cache)
    locks = cache / "locks"
    made = sorted(p.name for p in locks.iterdir())
    [metric] = [n for n in made if n.startswith("metric-")]
    assert len(made) == 3, made  # two runs' and the metric result's
    outside = tmp_path / "mine.txt"
    outside.write_text("a user's file")
    foreign = {"notes.txt": "x", f"{'a' * 64}.lock": "not empty", "metric-short.lock": ""}
    for name, text in foreign.items():
        (locks / name).write_text(text)
    (locks / f"{'b' * 64}.lock").symlink_to(outside)
    with work_lock(cache, metric[:-len(".lock")], work="a test", waiting="waiting"):
        assert main(["cache", "gc", "--cache-dir", str(cache)]) == 0
        assert capsys.readouterr().out.strip() == "removed 0 orphan file(s) and 2 unused lock file(s)"
        assert (locks / metric).exists()
    left = sorted(p.name for p in locks.iterdir())
    assert left == sorted([metric, *foreign, f"{'b' * 64}.lock"]), left
    assert main(["cache", "gc", "--cache-dir", str(cache)]) == 0
    assert capsys.readouterr().out.strip() == "removed 0 orphan file(s) and 1 unused lock file(s)"
    assert not (locks / metric).exists() and outside.read_text() == "a user's file"
    assert all(r.cached for r in _rank(cache).ok)  # the next run takes new lock files


@pytest.mark.fault
def test_a_lock_file_removed_between_its_open_and_its_lock_is_opened_again(tmp_path, monkeypatch):
    """gc removes an unheld lock file just after a run opened it and before the run locks it: the run locks the
    name again (a new file), so a third process that opens the name finds it held; the run held the removed file
    and the third would have taken the lock too."""
    key = "c" * 64
    (tmp_path / "locks").mkdir()
    (tmp_path / "locks" / f"{key}.lock").touch()
    real_flock, swept = fcntl.flock, []

    def flock(fd, op):
        if not swept:
            swept.append(-1)
            swept[0] = worklock.sweep_locks(tmp_path)  # gc, between the run's open and its lock
        return real_flock(fd, op)

    monkeypatch.setattr(fcntl, "flock", flock)
    with work_lock(tmp_path, key, work="a test", waiting="waiting"):
        monkeypatch.setattr(fcntl, "flock", real_flock)
        assert swept == [1]
        other = os.open(tmp_path / "locks" / f"{key}.lock", os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(other)


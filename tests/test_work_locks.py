"""The cache's per-work lock files (``locks/``, store/worklock.py): ``cache gc`` removes those no process holds, never
a held one nor a file the tool did not make; a run killed while it holds a metric's lock leaves neither a lock that
the next run waits on nor a result half written."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import embedselect
from embedselect.data import sample_path
from embedselect.store import Store
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


# The real CLI in a child process: metric nn_agreement writes the marker and hangs while it is computed
# ("computing"), or once its result row is inserted and before the transaction commits ("storing").
_CHILD = textwrap.dedent(
    """
    import pathlib, sys, time
    marker, stage = pathlib.Path(sys.argv[1]), sys.argv[2]

    def hang(what):
        marker.write_text(what)
        time.sleep(300)

    if stage == "computing":
        import embedselect.pipeline.scoring as scoring
        real = scoring.get_metric

        def get_metric(name):
            fn = real(name)
            return lambda mctx: hang("computing") or fn(mctx)

        scoring.get_metric = get_metric
    else:
        from embedselect.store import Store
        real_put = Store.put_metric_result

        def put(self, key, metric, value):
            with self._write():
                real_put(self, key, metric, value)
                hang("row inserted, not committed")

        Store.put_metric_result = put
    from embedselect.cli import main
    sys.exit(main(sys.argv[3:]))
    """
)


@pytest.mark.fault
@pytest.mark.parametrize("stage", ["computing", "storing"])
def test_a_rank_killed_while_it_holds_a_metric_lock_neither_blocks_nor_feeds_the_next_run(tmp_path, stage):
    """``kill -9`` of a ``rank`` while it holds the lock of metric nn_agreement's result, computing it or storing it
    (its row inserted, the transaction open): the system releases the lock with the process, so the next run does
    not wait (it finishes well within its timeout, without the "another embedselect process is computing" line),
    finds no result of the killed run (nothing half written is read) and computes it: the same scores as a run on
    a cache that never saw the killed one."""
    cache, marker = tmp_path / "cache", tmp_path / "marker"
    argv = ["rank", SAMPLE, "-c", "text", "-m", ",".join(PAIR), "--metrics", "nn_agreement", "--cache-dir",
            str(cache), "-q", "--json"]
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(marker), stage, *argv], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        while not marker.exists():
            assert child.poll() is None, "the run ended before it reached the metric"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        locks = list((cache / "locks").glob("metric-*.lock"))
        assert len(locks) == 1
        probe = os.open(locks[0], os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):  # held by the run while it computes or stores
                fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(probe)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL
    assert Store.open(cache).query_df("SELECT count(*) AS n FROM metric_cache")["n"].tolist() == [0]
    again = subprocess.run([sys.executable, "-m", "embedselect.cli", *argv], env=env, capture_output=True, text=True,
                           timeout=240)
    assert again.returncode == 0, again.stderr
    assert "another embedselect process is computing" not in again.stderr
    scores = {c["name"]: c["scores"] for c in json.loads(again.stdout)["candidates"]}
    fresh = {c.name: c.scores for c in _rank(tmp_path / "fresh").ok}
    assert scores == fresh

"""A run killed with SIGKILL at any point leaves a consistent cache, and the next run resumes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from embedselect.data import sample_path
from embedselect.store import Store
from testkit.kills import sigkill_when_marked
from testkit.tinymodels import make_tiny_sentence_transformer

pytestmark = pytest.mark.slow

# Runs the real CLI in a child process; the second vector file to land is followed by a long sleep *after* it
# was renamed into place and *before* its database row is committed: the narrowest crash window.
_CHILD = textwrap.dedent(
    """
    import pathlib, sys, time
    import embedselect.store.vectors as st
    marker = pathlib.Path(sys.argv[1])
    original = st.fsync_dir
    calls = {"n": 0}
    def fsync_then_hang(path):
        original(path)
        calls["n"] += 1
        if calls["n"] == 2:
            marker.write_text("file written, row not committed")
            time.sleep(120)
    st.fsync_dir = fsync_then_hang
    from embedselect.cli import main
    sys.exit(main(sys.argv[2:]))
    """
)


def _check_consistent(store: Store) -> int:
    """Every committed run has its file and checksum; returns the number of runs."""
    runs = store.list_runs()
    for key in runs.run_key:
        assert store.load_vectors(key) is not None, key
    return len(runs)


def _embed_args(cache, models):
    return ["embed", str(sample_path("texts")), "--column", "text", "--models", models, "--cache-dir", str(cache), "-q"]


@pytest.mark.fault
def test_kill_between_vector_file_and_commit_then_resume(tmp_path, monkeypatch):
    st_dir = make_tiny_sentence_transformer(tmp_path / "tiny-st")
    models = f"{st_dir},tfidf-svd,random-projection"
    cache = tmp_path / "cache"
    marker = tmp_path / "marker"
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(marker), *_embed_args(cache, models)], env=env)
    try:
        deadline = time.monotonic() + 240
        while not marker.exists():
            assert child.poll() is None, "child ended before reaching the crash window"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL

    store = Store.open(cache)
    assert _check_consistent(store) == 1  # the second run's file landed, but its row never committed
    orphans = [p for p in store.vectors_dir.glob("*/*.npy") if p.name[:-4] not in set(store.list_runs().run_key)]
    assert len(orphans) == 1

    # resume: only the two missing runs are computed
    from embedselect import pipeline as api

    loads: list[str] = []
    import embedselect.models.backends.loader as loader

    real = loader.load_embedder
    monkeypatch.setattr(loader, "load_embedder", lambda rc, **kw: loads.append(rc.backend) or real(rc, **kw))
    outcomes = api.embed(sample_path("texts"), models, column="text", cache_dir=cache)
    assert [o.result.status for o in outcomes] == ["ok", "ok", "ok"]
    assert [o.result.cached for o in outcomes] == [True, False, False]
    assert len(loads) == 2
    assert _check_consistent(store) == 3

    # and a further run does no model loading and no forward pass at all
    loads.clear()
    outcomes = api.embed(sample_path("texts"), models, column="text", cache_dir=cache)
    assert all(o.result.cached for o in outcomes) and loads == []


# Runs the real CLI in a child process that stops at a named stage: once `hold_after` candidates' embeddings are
# committed (0: when the first is about to be stored), it writes the model ids stored so far to the marker file and
# hangs there until the parent kills it.
_CHILD_AT_STAGE = textwrap.dedent(
    """
    import json, pathlib, sys, time
    import embedselect.store as st
    marker, hold_after = pathlib.Path(sys.argv[1]), int(sys.argv[2])
    real_save = st.Store.save_run
    stored = []
    def hold(at):
        marker.write_text(json.dumps({"stage": at, "stored": stored}))
        time.sleep(600)
    def save_then_maybe_hold(self, **kw):
        if hold_after == 0:
            hold("before the first candidate is stored")
        rec = real_save(self, **kw)
        stored.append(kw["model_id"])
        if len(stored) == hold_after:
            hold(f"after {hold_after} candidates stored")
        return rec
    st.Store.save_run = save_then_maybe_hold
    from embedselect.cli import main
    sys.exit(main(sys.argv[3:]))
    """
)


@pytest.mark.fault
@pytest.mark.parametrize("hold_after", [0, 1, 2, 3])
def test_a_kill_after_each_stored_candidate_keeps_exactly_what_was_stored(tmp_path, monkeypatch, hold_after):
    """SIGKILL at a named stage (after 0..3 of 4 candidates are stored): the cache holds exactly the runs committed
    before the kill, each valid, and the next run computes only the others."""
    st_dir = make_tiny_sentence_transformer(tmp_path / "tiny-st")
    models = f"{st_dir},tfidf-svd,random-projection,tfidf-svd?dim=32"
    cache = tmp_path / "cache"
    marker = tmp_path / "marker"
    sigkill_when_marked([sys.executable, "-c", _CHILD_AT_STAGE, str(marker), str(hold_after),
                         *_embed_args(cache, models)], marker, env={**os.environ, "PYTHONPATH": os.getcwd()})
    said = json.loads(marker.read_text())
    assert len(said["stored"]) == hold_after, said

    store = Store.open(cache)
    assert _check_consistent(store) == hold_after
    assert sorted(store.list_runs().model_id) == sorted(said["stored"])

    from embedselect import pipeline as api

    loads: list[str] = []
    import embedselect.models.backends.loader as loader

    real = loader.load_embedder
    monkeypatch.setattr(loader, "load_embedder", lambda rc, **kw: loads.append(rc.backend) or real(rc, **kw))
    outcomes = api.embed(sample_path("texts"), models, column="text", cache_dir=cache)
    assert [o.result.status for o in outcomes] == ["ok"] * 4
    assert sum(o.result.cached for o in outcomes) == hold_after
    assert len(loads) == 4 - hold_after
    assert _check_consistent(store) == 4


@pytest.mark.fault
def test_concurrent_runs_of_the_same_models_and_a_gc_leave_one_valid_cache(tmp_path):
    """Issue 14: two processes embedding the same models into one cache at the same time, with `cache gc` running
    beside them, all succeed; the cache ends with one valid entry per model, and a third run embeds nothing."""
    st_dir = make_tiny_sentence_transformer(tmp_path / "tiny-st")
    models = f"{st_dir},tfidf-svd,random-projection"
    cache = tmp_path / "cache"
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    cli = [sys.executable, "-m", "embedselect.cli"]
    procs = [subprocess.Popen([*cli, *_embed_args(cache, models)], env=env, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    gcs = []
    while any(p.poll() is None for p in procs):
        gcs.append(subprocess.run([*cli, "cache", "gc", "--cache-dir", str(cache)], env=env,
                                  capture_output=True, text=True, timeout=300))
        time.sleep(0.2)
    for p in procs:
        assert p.wait(timeout=600) == 0, p.stderr.read()
    assert gcs and all(g.returncode == 0 for g in gcs), [g.stderr for g in gcs if g.returncode]
    assert _check_consistent(Store.open(cache)) == 3
    third = subprocess.run([*cli, *_embed_args(cache, models), "--json"], env=env, capture_output=True, text=True,
                           timeout=600)
    assert third.returncode == 0, third.stderr
    rows = json.loads(third.stdout)
    assert len(rows) == 3 and all(r["status"] == "ok" and r["cached"] for r in rows)

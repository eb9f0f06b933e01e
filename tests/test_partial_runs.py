"""A cached candidate's embedding is kept in chunks as it goes (embedselect/pipeline/chunked.py): a run killed or
failed part-way through one candidate keeps what it embedded, and the next run embeds only the rest."""

from __future__ import annotations

import os
import signal
import sys
import textwrap

import numpy as np
import pytest

from embedselect import pipeline as api
from embedselect.cli import main
from embedselect.data import sample_path
from embedselect.store import Store
from testkit.kills import signal_when_marked, sigkill_when_marked
from testkit.tinymodels import make_tiny_sentence_transformer
from tests.test_openai_api import key, server  # noqa: F401 - the loopback fake API and its key, as fixtures

N = 240  # items of the sample texts, all distinct

# The real CLI in a child process that embeds in slices of 40 items and stores a chunk after each; it holds (until the
# parent kills it) once `hold_after` chunks are committed, or, with hold_after 0, inside the first chunk's write:
# its file renamed into place, its row not committed.
_CHILD = textwrap.dedent(
    """
    import pathlib, sys, time
    import embedselect.pipeline.chunked as chunked
    import embedselect.store as st
    import embedselect.store.vectors as sv
    marker, hold_after = pathlib.Path(sys.argv[1]), int(sys.argv[2])
    chunked.SLICE_ITEMS, chunked.CHUNK_SECONDS = 40, 0.0
    real_save, real_fsync, chunks = st.Store.save_run, sv.fsync_dir, []
    def save(self, **kw):
        rec = real_save(self, **kw)
        if rec.partial:
            chunks.append(rec.run_key)
            if len(chunks) == hold_after:
                marker.write_text(str(len(chunks)))
                time.sleep(600)
        return rec
    def fsync_then_hang(path):
        real_fsync(path)
        if hold_after == 0:
            marker.write_text("chunk file renamed, row not committed")
            time.sleep(600)
    st.Store.save_run, sv.fsync_dir = save, fsync_then_hang
    from embedselect.cli import main
    sys.exit(main(sys.argv[3:]))
    """
)


def _kill_at(tmp_path, model, hold_after: int) -> Store:
    """Run `embed` of ``model`` on the sample texts in a child (:data:`_CHILD`), SIGKILL it where it holds; the cache."""
    cache, marker = tmp_path / "cache", tmp_path / "marker"
    argv = ["embed", str(sample_path("texts")), "--column", "text", "--models", str(model), "--cache-dir", str(cache),
            "-q"]
    sigkill_when_marked([sys.executable, "-c", _CHILD, str(marker), str(hold_after), *argv], marker,
                        env={**os.environ, "PYTHONPATH": os.getcwd()})
    return Store.open(cache)


def _counting_loads(monkeypatch) -> list[int]:
    """The sizes of the embedder calls of the runs that follow (every backend's loaded embedder, wrapped)."""
    import embedselect.models.backends.loader as loader

    calls: list[int] = []
    real = loader.load_embedder

    def load(rc, **kw):
        emb = real(rc, **kw)
        embed = emb.embed
        emb.embed = lambda items, **k: calls.append(len(items)) or embed(items, **k)
        return emb

    monkeypatch.setattr(loader, "load_embedder", load)
    return calls


@pytest.mark.slow
@pytest.mark.fault
def test_a_kill_after_two_chunks_resumes_with_only_the_rest_and_gives_a_cold_runs_vectors(tmp_path, monkeypatch,
                                                                                          capsys):
    """SIGKILL in the middle of one candidate's embedding, after two chunks of 40 items were stored: they are valid
    runs marked partial, `cache ls` lists them apart, `cache gc` keeps them; the next run embeds only the other 160
    items, and its vectors are a cold run's; `cache gc` then removes the chunks the whole run holds."""
    model = make_tiny_sentence_transformer(tmp_path / "tiny-st")
    store = _kill_at(tmp_path, model, hold_after=2)
    runs = store.list_runs()
    assert len(runs) == 2 and runs.partial.all() and runs.n.sum() == 80
    assert all(store.load_vectors(k) is not None for k in runs.run_key)  # checksummed, whole

    assert main(["cache", "ls", "--cache-dir", str(store.root)]) == 0
    out = capsys.readouterr().out
    assert "no embedding run" in out and "80 item(s) of 1 model(s) kept from interrupted embeddings" in out, out
    assert main(["cache", "gc", "--cache-dir", str(store.root)]) == 0
    assert len(store.list_runs()) == 2  # gc keeps chunks no whole run holds

    calls = _counting_loads(monkeypatch)
    monkeypatch.setattr(Store, "drop_covered_chunks", lambda self, space=None: 0)  # as if killed before removal
    (out1,) = api.embed(sample_path("texts"), str(model), column="text", cache_dir=store.root, keep_vectors=True)
    assert out1.result.status == "ok" and (out1.result.embedded_items, out1.result.stored_items) == (160, 80)
    assert sum(calls) == 160
    (cold,) = api.embed(sample_path("texts"), str(model), column="text", cache_dir=tmp_path / "cold",
                        keep_vectors=True)
    assert cold.result.embedded_items == N
    np.testing.assert_allclose(out1.vectors, cold.vectors, rtol=0, atol=1e-6)
    monkeypatch.undo()

    runs = store.list_runs()
    assert sorted(runs.partial) == [False, True, True]
    assert main(["cache", "gc", "--cache-dir", str(store.root)]) == 0
    assert "and 2 partial run(s) that whole runs hold" in capsys.readouterr().out
    runs = store.list_runs()
    assert len(runs) == 1 and not runs.partial.any() and runs.n[0] == N
    assert len(list(store.vectors_dir.glob("*/*.npy"))) == 1  # the chunks' files went with their rows


@pytest.mark.slow
@pytest.mark.fault
def test_a_kill_while_a_chunk_is_written_leaves_nothing_read_back(tmp_path, monkeypatch):
    """SIGKILL between a chunk's file landing and its row's commit: no run and no index row is left, only an orphan
    file; the next run embeds every item, and `cache gc` removes the orphan."""
    store = _kill_at(tmp_path, "random-projection", hold_after=0)
    assert store.list_runs().empty
    assert store.query_df("SELECT count(*) AS n FROM item_vectors").n[0] == 0
    assert len(list(store.vectors_dir.glob("*/*.npy"))) == 1

    calls = _counting_loads(monkeypatch)
    (out,) = api.embed(sample_path("texts"), "random-projection", column="text", cache_dir=store.root)
    assert out.result.status == "ok" and (out.result.embedded_items, out.result.stored_items) == (N, 0)
    assert sum(calls) == N
    assert store.gc() == 1
    assert len(list(store.vectors_dir.glob("*/*.npy"))) == 1 and len(store.list_runs()) == 1


# The real CLI in a child that embeds in slices of 40 items and stores no chunk on time; it holds (until the parent
# interrupts it) inside the embedder's third call, two slices (80 items) embedded since the embedding began.
_CHILD_IN_SLICE = textwrap.dedent(
    """
    import pathlib, signal, sys, time
    # a person's Ctrl-C at a terminal: Python ignores SIGINT when it starts with it ignored (a job started in the
    # background by a shell without job control, as a CI runner may start the tests), so put its handler back
    signal.signal(signal.SIGINT, signal.default_int_handler)
    import embedselect.pipeline.chunked as chunked
    import embedselect.models.backends.loader as loader
    marker = pathlib.Path(sys.argv[1])
    chunked.SLICE_ITEMS, chunked.CHUNK_SECONDS = 40, 1e9
    real_load, calls = loader.load_embedder, []
    def load(rc, **kw):
        emb = real_load(rc, **kw)
        embed = emb.embed
        def held(items, **k):
            calls.append(len(items))
            if len(calls) == 3:
                marker.write_text("in the third slice")
                time.sleep(600)
            return embed(items, **k)
        emb.embed = held
        return emb
    loader.load_embedder = load
    from embedselect.cli import main
    sys.exit(main(sys.argv[2:]))
    """
)


@pytest.mark.slow
@pytest.mark.fault
@pytest.mark.parametrize("sig, code, last", [(signal.SIGINT, 130, "interrupted"),
                                             (signal.SIGTERM, 143, "terminated (SIGTERM)")])
def test_ctrl_c_in_the_middle_of_an_embedding_keeps_what_was_embedded(tmp_path, monkeypatch, sig, code, last):
    """Ctrl-C (SIGINT) to a real `embedselect embed` inside its third slice of 40 items, no chunk stored before: the
    80 items embedded are stored as one chunk, one line says so, the exit status (130) and the last line are the
    interrupt's as before (no whole run was finished); the next run embeds only the other 160, a cold run's
    vectors. SIGTERM (a scheduler stopping the job) does the same, exit 143: it ended the process at once, as
    SIGKILL does, and kept nothing since the last timed chunk."""
    model = make_tiny_sentence_transformer(tmp_path / "tiny-st")
    cache, marker = tmp_path / "cache", tmp_path / "marker"
    argv = ["embed", str(sample_path("texts")), "--column", "text", "--models", str(model), "--cache-dir", str(cache),
            "-q"]
    done = signal_when_marked([sys.executable, "-c", _CHILD_IN_SLICE, str(marker), *argv], marker, sig,
                              env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert done.returncode == code, (done.returncode, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert lines[-1] == last, done.stderr
    kept = [line for line in lines if "kept in the cache" in line]
    assert len(kept) == 1 and "interrupted; the 80 of its 240 items embedded before this are kept in the cache: " \
        "the next run resumes from them and embeds only the other 160" in kept[0], done.stderr
    store = Store.open(cache)
    runs = store.list_runs()
    assert len(runs) == 1 and runs.partial[0] and runs.n[0] == 80

    calls = _counting_loads(monkeypatch)
    (out,) = api.embed(sample_path("texts"), str(model), column="text", cache_dir=cache, keep_vectors=True)
    assert out.result.status == "ok" and (out.result.embedded_items, out.result.stored_items) == (160, 80)
    assert sum(calls) == 160
    (cold,) = api.embed(sample_path("texts"), str(model), column="text", cache_dir=tmp_path / "cold",
                        keep_vectors=True)
    np.testing.assert_allclose(out.vectors, cold.vectors, rtol=0, atol=1e-6)
    runs = store.list_runs()
    assert len(runs) == 1 and not runs.partial[0] and runs.n[0] == N  # the chunk went once the whole run was stored


@pytest.mark.fault
def test_the_cli_puts_back_the_sigterm_handler_it_found(tmp_path):
    """main() turns SIGTERM into an interrupt while it runs a command (in-process too), and puts back the handler it
    found when it returns: a program or test runner calling it keeps its own SIGTERM rule."""
    def mine(signum, frame):
        raise AssertionError("not called")

    before = signal.signal(signal.SIGTERM, mine)
    try:
        assert main(["cache", "ls", "--cache-dir", str(tmp_path / "c"), "-q"]) == 0
        assert signal.getsignal(signal.SIGTERM) is mine
    finally:
        signal.signal(signal.SIGTERM, before)


@pytest.mark.fault
def test_an_api_batch_that_fails_late_keeps_the_batches_before_it(server, key, tmp_path, monkeypatch):  # noqa: F811
    """A hosted API whose 16th batch of 10 fails after its retries: the candidate fails with a message saying 150
    items are kept and the next run resumes; that run sends only the other 90 items, its vectors are a cold run's,
    and the chunk is removed once the whole run is stored."""
    import embedselect.pipeline.chunked as chunked

    monkeypatch.setattr(chunked, "CHUNK_SECONDS", 1e9)  # no chunk on time: what is kept comes from the failure
    spec = f"api=openai:fake-embed?base_url={server.url}&revision=v1&batch_size=10&concurrency=1&max_retries=0"
    cache = tmp_path / "cache"
    server.faults = [{}] * 15 + [{"status": 500, "forever": True}]
    (failed,) = api.embed(sample_path("texts"), spec, column="text", cache_dir=cache)
    assert failed.result.status == "failed"
    assert "the 150 of its 240 items embedded before this are kept in the cache: the next run resumes from them " \
           "and embeds only the other 90" in failed.result.error, failed.result.error
    store = Store.open(cache)
    runs = store.list_runs()
    assert len(runs) == 1 and runs.partial[0] and runs.n[0] == 150

    server.faults, server.requests = [], []
    (done,) = api.embed(sample_path("texts"), spec, column="text", cache_dir=cache, keep_vectors=True)
    assert done.result.status == "ok" and (done.result.embedded_items, done.result.stored_items) == (90, 150)
    assert sum(len(q["body"]["input"]) for q in server.requests) == 90  # the billed batches are not sent again
    runs = store.list_runs()
    assert len(runs) == 1 and not runs.partial[0] and runs.n[0] == N  # the chunk is gone with its file
    assert len(list(store.vectors_dir.glob("*/*.npy"))) == 1

    (cold,) = api.embed(sample_path("texts"), spec, column="text", cache_dir=tmp_path / "cold", keep_vectors=True)
    assert cold.result.embedded_items == N
    np.testing.assert_array_equal(done.vectors, cold.vectors)

"""The cache: durable vectors, checksums, transactions, inter-process locking."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time

import filelock
import numpy as np
import pytest

from embedselect.errors import CacheError, CacheLockedError
from embedselect.store import Store, run_key


def _key(i: int = 0) -> str:
    return run_key(model_id=f"m{i}", revision="r", backend="b", options={}, fingerprint="f", precision="fp32")


def _save(store: Store, key: str, x: np.ndarray) -> None:
    store.save_run(
        key=key, vectors=x, model_id="m", revision="r", backend="b", settings={"a": 1}, fingerprint="f",
        device="cpu", seconds=0.1,
    )


def test_roundtrip_and_query(tmp_path):
    store = Store.open(tmp_path)
    x = np.random.default_rng(0).standard_normal((37, 5)).astype(np.float32)
    _save(store, _key(), x)
    y = store.load_vectors(_key())
    assert y.dtype == np.float32 and np.array_equal(x, y)
    df = store.query_df("SELECT model_id, n, dim, sha256 FROM embedding_runs")
    assert df.to_dict("records")[0]["n"] == 37 and df.iloc[0]["dim"] == 5
    assert store.load_vectors(_key(1)) is None


def test_run_key_depends_on_every_input():
    base = dict(model_id="m", revision="r", backend="b", options={"pooling": "mean"}, fingerprint="f", precision="fp32")
    k = run_key(**base)
    for field, other in [
        ("model_id", "m2"), ("revision", "r2"), ("backend", "b2"), ("options", {"pooling": "cls"}),
        ("fingerprint", "f2"), ("precision", "fp16"),
    ]:
        assert run_key(**{**base, field: other}) != k, field
    assert run_key(**{**base, "options": {"pooling": "mean"}}) == k


@pytest.mark.parametrize("damage", ["flip", "truncate", "delete"])
@pytest.mark.fault
def test_damaged_vector_file_is_discarded_not_returned(tmp_path, damage, caplog):
    store = Store.open(tmp_path)
    x = np.ones((10, 4), np.float32)
    _save(store, _key(), x)
    path = tmp_path / store.get_run(_key()).vector_file
    if damage == "flip":
        data = bytearray(path.read_bytes())
        data[-1] ^= 0xFF
        path.write_bytes(bytes(data))
    elif damage == "truncate":
        path.write_bytes(path.read_bytes()[:-8])
    else:
        path.unlink()
    assert store.load_vectors(_key()) is None
    assert store.get_run(_key()) is None  # row removed, so the run is recomputed
    assert "discarding cached run" in caplog.text


@pytest.mark.fault
def test_refuses_to_cache_bad_arrays(tmp_path):
    store = Store.open(tmp_path)
    with pytest.raises(CacheError, match="non-finite"):
        _save(store, _key(), np.array([[np.nan, 1.0]], np.float32))
    with pytest.raises(CacheError, match="shape"):
        _save(store, _key(), np.zeros((0, 3), np.float32))
    assert store.list_runs().empty


def test_write_transaction_rolls_back(tmp_path):
    store = Store.open(tmp_path)
    with pytest.raises(RuntimeError):
        with store._write() as con:
            con.execute("INSERT INTO pair_cache VALUES ('k', '{}', now())")
            raise RuntimeError("boom")
    assert store.get_many(["k"]) == {}


@pytest.mark.fault
def test_gc_removes_orphans_only(tmp_path):
    store = Store.open(tmp_path)
    _save(store, _key(), np.ones((3, 2), np.float32))
    orphan = store.vectors_dir / "ab" / ("ab" + "0" * 62 + ".npy")
    orphan.parent.mkdir(exist_ok=True)
    np.save(orphan, np.zeros((2, 2), np.float32))
    # an unreferenced .npy seen under the lock belongs to no running writer (rename and commit are one critical
    # section), so it goes at once, however young
    assert store.gc() == 1
    assert not orphan.exists()
    assert store.load_vectors(_key()) is not None


@pytest.mark.fault
def test_gc_removes_temporary_files_of_writers_that_are_gone(tmp_path):
    """Issue 14 (a full disk): a killed writer's young temporary file is removed at once when its process is known to
    be gone; a running writer's, another host's or an unknown name's only once it is an hour old."""
    store = Store.open(tmp_path)
    folder = store.vectors_dir / "ab"
    folder.mkdir()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    gone = store._tmp_name(folder / ("ab" + "1" * 62 + ".npy"))
    gone = gone.with_name(gone.name.replace(f".{os.getpid()}.", f".{int(dead.stdout)}."))
    running = store._tmp_name(folder / ("ab" + "2" * 62 + ".npy"))  # this process: still running
    elsewhere = folder / f".ab{'3' * 62}.npy.otherhost.1.1.tmp"
    unknown = folder / f".ab{'4' * 62}.npy.123.456.tmp"  # the old form without a host
    for p in (gone, running, elsewhere, unknown):
        p.write_bytes(b"partial")
    assert store.gc() == 1
    assert not gone.exists() and running.exists() and elsewhere.exists() and unknown.exists()
    old = time.time() - Store.GC_GRACE_SECONDS - 10
    for p in (elsewhere, unknown):
        os.utime(p, (old, old))
    assert store.gc() == 2 and running.exists()


def _race(tmp_path, monkeypatch, key: str, clean) -> tuple[threading.Thread, bool]:
    """Re-write run ``key`` in a writer thread that stops right after renaming its vector file into place (before its
    row is committed, the old code's window), start ``clean(Store)`` in another thread with its own Store (its own
    lock, as another process has), and let the writer go on once the cleaner has finished or is seen waiting for
    the inter-process lock. Returns the cleaner thread (joined) and whether it had to wait."""
    import embedselect.store.vectors as st  # where save_run looks the hook up

    renamed, go, blocked = threading.Event(), threading.Event(), threading.Event()
    real_fsync = st.fsync_dir

    def hook(path):
        real_fsync(path)
        if threading.current_thread().name == "writer":
            renamed.set()
            assert go.wait(60)

    monkeypatch.setattr(st, "fsync_dir", hook)
    writer = threading.Thread(target=_save, args=(Store.open(tmp_path), key, np.full((4, 3), 2.0, np.float32)),
                              name="writer")
    writer.start()
    assert renamed.wait(60)
    other = Store.open(tmp_path)
    real_acquire = other._file_lock.acquire

    def acquire(*a, **kw):
        try:
            return real_acquire(timeout=0)
        except filelock.Timeout:
            blocked.set()
            return real_acquire(*a, **kw)

    other._file_lock.acquire = acquire
    cleaner = threading.Thread(target=clean, args=(other,), name="cleaner")
    cleaner.start()
    deadline = time.monotonic() + 60
    while cleaner.is_alive() and not blocked.is_set():
        assert time.monotonic() < deadline
        time.sleep(0.01)
    go.set()
    writer.join(60)
    cleaner.join(60)
    assert not writer.is_alive() and not cleaner.is_alive()
    return cleaner, blocked.is_set()


@pytest.mark.fault
def test_cache_rm_racing_a_writer_never_leaves_a_row_without_its_file(tmp_path, monkeypatch):
    """Issue 14: `cache rm` of a run that another process is re-writing, between the writer's rename and its row
    commit, deleted the fresh file while the writer's row then pointed at nothing. Now the rm waits for the writer's
    critical section, then removes the new row and its file: nothing is left half."""
    key = _key()
    _save(Store.open(tmp_path), key, np.ones((4, 3), np.float32))
    _, waited = _race(tmp_path, monkeypatch, key, lambda s: s.delete_runs([key]))
    store = Store.open(tmp_path)
    assert store.get_run(key) is None, "a row was left whose file the rm deleted"
    assert not list(store.vectors_dir.rglob("*.npy")) and not list(store.vectors_dir.rglob("*.tmp"))
    assert waited


@pytest.mark.fault
def test_cache_gc_racing_a_writer_keeps_the_writers_file(tmp_path, monkeypatch):
    """Issue 14: a `cache gc` between a writer's rename and its row commit saw an unreferenced file; now it waits for
    the writer's critical section and keeps the file, which gc also removes at once when truly orphaned."""
    key = _key(5)
    Store.open(tmp_path)
    _, waited = _race(tmp_path, monkeypatch, key, lambda s: s.gc())
    store = Store.open(tmp_path)
    assert store.get_run(key) is not None
    x = store.load_vectors(key)
    assert x is not None and float(x[0, 0]) == 2.0
    assert waited


@pytest.mark.fault
def test_a_reader_discarding_a_damaged_file_does_not_delete_a_fresh_rewrite(tmp_path, caplog):
    """A reader that found run ``key``'s file damaged deletes the row only while it is the row it checked: a run
    another process re-wrote in between (a new checksum) stays."""
    store = Store.open(tmp_path)
    key = _key()
    _save(store, key, np.ones((4, 3), np.float32))
    stale = store.get_run(key)
    _save(Store.open(tmp_path), key, np.full((4, 3), 3.0, np.float32))  # another process re-writes it
    assert store.delete_runs([key], only_if_sha256={key: stale.sha256}) == 0
    assert float(store.load_vectors(key)[0, 0]) == 3.0
    assert store.delete_runs([key], only_if_sha256={key: store.get_run(key).sha256}) == 1


@pytest.mark.fault
def test_invalid_run_key_is_rejected(tmp_path):
    store = Store.open(tmp_path)
    with pytest.raises(CacheError):
        _save(store, "../../etc/passwd", np.ones((2, 2), np.float32))


_HOLD_LOCK = textwrap.dedent(
    """
    import sys, time
    from embedselect.store import Store
    store = Store.open(sys.argv[1])
    with store._write() as con:
        con.execute("INSERT INTO pair_cache VALUES ('held', '{}', now())")
        print("locked", flush=True)
        time.sleep(float(sys.argv[2]))
    print("released", flush=True)
    """
)


@pytest.mark.fault
def test_second_writer_waits_or_gets_a_clear_error(tmp_path):
    Store.open(tmp_path)  # create the schema first
    child = subprocess.Popen(
        [sys.executable, "-c", _HOLD_LOCK, str(tmp_path), "3"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout.readline().strip() == "locked"
        impatient = Store(tmp_path, lock_timeout=0.3)
        with pytest.raises(CacheLockedError, match="locked by another embedselect process"):
            impatient.put_many({"x": {"v": 1}})
        patient = Store(tmp_path, lock_timeout=30)
        t0 = time.monotonic()
        patient.put_many({"y": {"v": 2}})  # waits for the child's transaction, then writes
        assert time.monotonic() - t0 > 0.5
        assert patient.get_many(["held", "y"]) == {"held": {}, "y": {"v": 2}}
    finally:
        child.wait(timeout=30)
    assert child.returncode == 0


_WRITER = textwrap.dedent(
    """
    import sys
    import numpy as np
    from embedselect.store import Store, run_key
    store = Store.open(sys.argv[1])
    w = int(sys.argv[2])
    for i in range(15):
        k = run_key(model_id=f"w{w}-{i}", revision="r", backend="b", options={}, fingerprint="f", precision="fp32")
        x = np.full((50, 8), w * 100 + i, np.float32)
        store.save_run(key=k, vectors=x, model_id=f"w{w}-{i}", revision="r", backend="b", settings={},
                       fingerprint="f", device="cpu", seconds=0.0)
    """
)


@pytest.mark.fault
def test_concurrent_writers_never_corrupt(tmp_path):
    Store.open(tmp_path)
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path), str(w)]) for w in range(3)]
    for p in procs:
        assert p.wait(timeout=300) == 0
    store = Store.open(tmp_path)
    runs = store.list_runs()
    assert len(runs) == 45
    for w in range(3):
        for i in range(15):
            k = run_key(model_id=f"w{w}-{i}", revision="r", backend="b", options={}, fingerprint="f", precision="fp32")
            x = store.load_vectors(k)
            assert x is not None and float(x[0, 0]) == w * 100 + i


def test_env_var_sets_default_location(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBEDSELECT_CACHE_DIR", str(tmp_path / "here"))
    store = Store.open()
    assert store.root == tmp_path / "here"
    store.list_runs()
    assert (tmp_path / "here" / "embedselect.duckdb").exists()


@pytest.mark.fault
def test_unwritable_location_is_a_store_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(CacheError, match="cannot create the cache directory"):
        Store.open(blocker / "sub")
    assert os.path.exists(blocker)


@pytest.mark.fault
def test_a_full_disk_while_writing_vectors_or_recording_a_failure(tmp_path, monkeypatch, caplog):
    """Issue 14: a full disk while a candidate's vectors are written fails that candidate with a CacheError that
    says what to do, leaves no partial file, and the other candidates are ranked; a failure that cannot be recorded
    is a warning, not a crash."""
    import errno

    import embedselect
    import embedselect.store.vectors as st
    from embedselect.data import sample_path

    real_save = np.save
    calls = {"n": 0}

    def save_until_full(f, arr, **kw):
        calls["n"] += 1
        if calls["n"] == 1:
            f.write(b"\x93NUMPY partial")
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_save(f, arr, **kw)

    monkeypatch.setattr(st.np, "save", save_until_full)
    r = embedselect.select(str(sample_path("texts")), ["tfidf-svd", "random-projection", "tfidf-svd?dim=16"],
                           column="text", metrics=["rankme"], cache_dir=tmp_path / "c")
    failed = [c for c in r.candidates if not c.ok]
    assert len(failed) == 1 and failed[0].error_type == "CacheError"
    assert "No space left on device" in failed[0].error and "free disk space" in failed[0].error
    assert len(r.ok) == 2
    assert not list((tmp_path / "c").rglob("*.tmp"))  # no partial file left
    store = Store.open(tmp_path / "c")
    assert len(store.list_runs()) == 2 and all(store.load_vectors(k) is not None for k in store.list_runs().run_key)

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Store, "_write", full)
    with caplog.at_level("WARNING", logger="embedselect.store"):
        from embedselect.store.failures import record_failure

        record_failure(store, spec="x", stage="embed", error="m", error_type="E")
    assert "could not record the failure of x" in caplog.text


def test_every_public_store_method_is_listed_by_concern_and_the_connections_are_private():
    """Store's public methods are the ones other parts use, each named under its concern in the class docstring; the
    DuckDB connections (``_write``, ``_read``) and the failure row writer (``_record_failure``, behind
    :func:`embedselect.store.failures.record_failure`) are the store's own."""
    public = {n for n in dir(Store) if not n.startswith("_") and callable(getattr(Store, n))}
    doc = Store.__doc__ or ""
    assert public and not [n for n in sorted(public) if f":meth:`{n}`" not in doc]
    assert {"write", "read", "record_failure"}.isdisjoint(public)


def test_two_runs_needing_the_same_metric_result_compute_it_once(tmp_path, monkeypatch, caplog):
    """Two runs at once on the same data and pool: the second waits for the first's metric result (saying so) and
    reads it, rather than computing the metric (sufficiency, the slowest, was computed by both: 45 pairs each, each
    run three times as long as alone on two shared cores)."""
    import embedselect
    import embedselect.pipeline.scoring as scoring
    from embedselect.data import sample_path

    real = scoring.get_metric
    calls: list[str] = []
    first_computing, go = threading.Event(), threading.Event()

    def slow_first(name):
        fn = real(name)

        def metric(mctx):
            calls.append(threading.current_thread().name)
            if len(calls) == 1:
                first_computing.set()
                assert go.wait(60)
            return fn(mctx)

        return metric

    monkeypatch.setattr(scoring, "get_metric", slow_first)
    rankings: dict[str, object] = {}

    def run(name):
        rankings[name] = embedselect.select(str(sample_path("texts")), ["tfidf-svd", "random-projection"],
                                            column="text", metrics=["nn_agreement"], cache_dir=tmp_path / "c")

    first = threading.Thread(target=run, args=("first",), name="first")
    first.start()
    assert first_computing.wait(120)
    second = threading.Thread(target=run, args=("second",), name="second")
    with caplog.at_level("WARNING", logger="embedselect.store"):
        second.start()
        deadline = time.monotonic() + 60
        while len(calls) < 2 and "another embedselect process is computing" not in caplog.text:
            assert time.monotonic() < deadline and second.is_alive()
            time.sleep(0.01)
        go.set()
        first.join(120)
        second.join(120)
    assert calls == ["first"], calls  # the second run read the first's result
    a, b = rankings["first"], rankings["second"]
    assert {r.name: r.scores for r in a.ok} == {r.name: r.scores for r in b.ok}  # type: ignore[attr-defined]
    assert "metric nn_agreement: another embedselect process is computing this result" in caplog.text

"""The cache: durable vectors, checksums, transactions, inter-process locking."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from embedselect.errors import StoreError, StoreLockedError
from embedselect.store import Store, run_key


def _key(i: int = 0) -> str:
    return run_key(model_id=f"m{i}", revision="r", backend="b", options={}, fingerprint="f", precision="fp32")


def _save(store: Store, key: str, x: np.ndarray) -> None:
    store.save_run(
        key=key, vectors=x, model_id="m", revision="r", backend="b", settings={"a": 1}, fingerprint="f",
        device="cpu", seconds=0.1,
    )  # fmt: skip


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
    ]:  # fmt: skip
        assert run_key(**{**base, field: other}) != k, field
    assert run_key(**{**base, "options": {"pooling": "mean"}}) == k


@pytest.mark.parametrize("damage", ["flip", "truncate", "delete"])
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


def test_refuses_to_cache_bad_arrays(tmp_path):
    store = Store.open(tmp_path)
    with pytest.raises(StoreError, match="non-finite"):
        _save(store, _key(), np.array([[np.nan, 1.0]], np.float32))
    with pytest.raises(StoreError, match="shape"):
        _save(store, _key(), np.zeros((0, 3), np.float32))
    assert store.list_runs().empty


def test_write_transaction_rolls_back(tmp_path):
    store = Store.open(tmp_path)
    with pytest.raises(RuntimeError):
        with store.write() as con:
            con.execute("INSERT INTO pair_cache VALUES ('k', '{}', now())")
            raise RuntimeError("boom")
    assert store.get_many(["k"]) == {}


def test_gc_removes_orphans_only(tmp_path):
    store = Store.open(tmp_path)
    _save(store, _key(), np.ones((3, 2), np.float32))
    orphan = store.vectors_dir / "ab" / ("ab" + "0" * 62 + ".npy")
    orphan.parent.mkdir(exist_ok=True)
    np.save(orphan, np.zeros((2, 2), np.float32))
    # a young orphan may be a writer's file renamed into place before its row is committed: kept (issue 14,
    # gc racing a writer)
    assert store.gc() == 0 and orphan.exists()
    old = time.time() - Store.GC_GRACE_SECONDS - 10
    os.utime(orphan, (old, old))
    assert store.gc() == 1
    assert not orphan.exists()
    assert store.load_vectors(_key()) is not None


def test_invalid_run_key_is_rejected(tmp_path):
    store = Store.open(tmp_path)
    with pytest.raises(StoreError):
        _save(store, "../../etc/passwd", np.ones((2, 2), np.float32))


_HOLD_LOCK = textwrap.dedent(
    """
    import sys, time
    from embedselect.store import Store
    store = Store.open(sys.argv[1])
    with store.write() as con:
        con.execute("INSERT INTO pair_cache VALUES ('held', '{}', now())")
        print("locked", flush=True)
        time.sleep(float(sys.argv[2]))
    print("released", flush=True)
    """
)


def test_second_writer_waits_or_gets_a_clear_error(tmp_path):
    Store.open(tmp_path)  # create the schema first
    child = subprocess.Popen(
        [sys.executable, "-c", _HOLD_LOCK, str(tmp_path), "3"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout.readline().strip() == "locked"
        impatient = Store(tmp_path, lock_timeout=0.3)
        with pytest.raises(StoreLockedError, match="locked by another embedselect process"):
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


def test_unwritable_location_is_a_store_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreError, match="cannot create the cache directory"):
        Store.open(blocker / "sub")
    assert os.path.exists(blocker)


def test_a_full_disk_while_writing_vectors_or_recording_a_failure(tmp_path, monkeypatch, caplog):
    """Issue 14: a full disk while a candidate's vectors are written fails that candidate with a StoreError that
    says what to do, leaves no partial file, and the other candidates are ranked; a failure that cannot be recorded
    is a warning, not a crash."""
    import errno

    import embedselect
    import embedselect.store as st
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
                           column="text", metrics=["rankme"], cache_dir=tmp_path / "c")  # fmt: skip
    failed = [c for c in r.candidates if not c.ok]
    assert len(failed) == 1 and failed[0].error_type == "StoreError"
    assert "No space left on device" in failed[0].error and "free disk space" in failed[0].error
    assert len(r.ok) == 2
    assert not list((tmp_path / "c").rglob("*.tmp"))  # no partial file left
    store = Store.open(tmp_path / "c")
    assert len(store.list_runs()) == 2 and all(store.load_vectors(k) is not None for k in store.list_runs().run_key)

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Store, "write", full)
    with caplog.at_level("WARNING", logger="embedselect.store"):
        store.record_failure(spec="x", stage="embed", error_type="E", message="m")
    assert "could not record the failure of x" in caplog.text

"""The pool-folder writing and reading of benchmarks/validity_data.py (build_pool, load_pool), on tiny synthetic
inputs (no real model, no package data)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchmarks.candidates import Candidate
from benchmarks.sets.registry import Dataset, prepare_dataset
from benchmarks.validity_data import build_pool, load_pool
from benchmarks.vectors import quantize_binary, truncate
from embedselect.errors import EmbedselectError


def _rng(seed=0):
    return np.random.default_rng(seed)


POOL = [
    Candidate("base", "transformer", "m", None, None, "mean", "pass:x"),
    Candidate("base-cls", "transformer", "m", "base", "pooling", "cls", "pass:x"),
    Candidate("base-first2", "transformer", "m", "base", "truncated", "first 2", "derive"),
    Candidate("base-binary", "transformer", "m", "base", "quantized-binary", "bits", "derive"),
    Candidate("rp", "baseline", None, None, None, "random", "baseline"),
]


def _producers(n, calls):
    def pass_x():
        calls.append("pass:x")
        r = _rng(5)
        return {"base": r.normal(size=(n, 4)).astype(np.float32), "base-cls": r.normal(size=(n, 4)).astype(np.float32)}

    def rp():
        calls.append("rp")
        return {"rp": np.ones((n, 3), dtype=np.float32)}

    return {"pass:x": pass_x, "rp": rp}


def test_build_pool_writes_every_file_and_candidates_json(tmp_path):
    calls: list[str] = []
    items = [f"t{i}" for i in range(7)]
    entries = build_pool(tmp_path, items, POOL, _producers(7, calls))
    assert [e["name"] for e in entries] == [c.name for c in POOL]
    assert calls == ["pass:x", "rp"]  # one call per producer, the derived ones come from the stored vectors
    for c in POOL:
        arr = np.load(tmp_path / f"{c.name}.npy")
        assert arr.dtype == np.float32 and arr.shape[0] == 7
    base = np.load(tmp_path / "base.npy")
    np.testing.assert_allclose(np.load(tmp_path / "base-first2.npy"), truncate(base, 2))
    np.testing.assert_array_equal(np.load(tmp_path / "base-binary.npy"), quantize_binary(base))
    cj = json.loads((tmp_path / "candidates.json").read_text())
    by = {e["name"]: e for e in cj}
    assert by["base-first2"]["parent"] == "base" and by["base-first2"]["relation"] == "truncated"
    assert by["base-first2"]["dims"] == 2 and by["base"]["dims"] == 4
    assert by["base-cls"]["shared_pass"] == "pass:x" and by["base"]["parent"] is None
    assert set(by["rp"]) >= {"name", "kind", "base_model", "parent", "relation", "dims", "seconds"}
    assert not list(tmp_path.glob(".*tmp*"))  # no temporary file left behind


def test_build_pool_resumes_without_recomputing(tmp_path):
    calls: list[str] = []
    items = list(range(5))
    build_pool(tmp_path, items, POOL, _producers(5, calls), only={"base", "base-cls", "base-first2"})
    assert calls == ["pass:x"] and not (tmp_path / "rp.npy").exists()
    before = (tmp_path / "base.npy").read_bytes()
    (tmp_path / "base-first2.npy").unlink()  # an interrupted run lost one file
    build_pool(tmp_path, items, POOL, _producers(5, calls))
    assert calls == ["pass:x", "rp"]  # the pass is not run again; the missing derived file is rebuilt
    assert (tmp_path / "base.npy").read_bytes() == before
    assert (tmp_path / "base-first2.npy").is_file()
    assert len(json.loads((tmp_path / "candidates.json").read_text())) == len(POOL)


def test_load_pool_reads_back_what_was_written_and_names_what_is_missing(tmp_path):
    texts = [f"w{i}" for i in range(6)]
    ds = Dataset("toy", "text", "numpy", "none", "MIT", "toy", lambda: (texts, ["a", "b"] * 3))
    with pytest.raises(EmbedselectError, match="python -m benchmarks.validity_data"):
        load_pool("toy", root=tmp_path)
    prepare_dataset(ds, tmp_path / "toy")
    build_pool(tmp_path / "toy", texts, POOL, _producers(6, []))
    meta, labels, items, entries, vectors = load_pool("toy", root=tmp_path)
    assert meta["name"] == "toy" and items == texts and labels.tolist() == [0, 1] * 3
    assert [e["name"] for e in entries] == list(vectors) == [c.name for c in POOL]
    np.testing.assert_array_equal(vectors["base"], np.load(tmp_path / "toy" / "base.npy"))


def test_build_pool_rejects_wrong_shapes_and_non_finite(tmp_path):
    bad = {"pass:x": lambda: {"base": np.full((3, 2), np.nan, dtype=np.float32)}}
    with pytest.raises(RuntimeError, match="base"):
        build_pool(tmp_path, [1, 2, 3], POOL[:1], bad)
    assert not (tmp_path / "base.npy").exists()

"""The datasets' registry (benchmarks/sets/registry.py): the stratified sample and the writing of a set's sample into
its pool folder, on tiny synthetic sets."""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchmarks.sets.registry import Dataset, prepare_dataset, stratified_indices
from embedselect.errors import EmbedselectError


def test_stratified_indices_are_seeded_sorted_and_proportional():
    labels = ["a"] * 600 + ["b"] * 300 + ["c"] * 100
    idx = stratified_indices(labels, 100, seed=3)
    assert len(idx) == 100 and np.all(np.diff(idx) > 0) and idx.dtype == np.int64
    counts = {c: sum(labels[i] == c for i in idx) for c in "abc"}
    assert counts == {"a": 60, "b": 30, "c": 10}
    np.testing.assert_array_equal(idx, stratified_indices(labels, 100, seed=3))
    assert not np.array_equal(idx, stratified_indices(labels, 100, seed=4))
    np.testing.assert_array_equal(stratified_indices(labels[:50], 100, seed=3), np.arange(50))


def test_prepare_dataset_writes_labels_items_meta_and_refuses_another_seed(tmp_path):
    texts = [f"w{i}" for i in range(40)]
    labels = ["x"] * 30 + ["y"] * 10
    ds = Dataset("toy", "text", "numpy", "none", "MIT", "toy", lambda: (texts, labels))
    meta = prepare_dataset(ds, tmp_path, max_items=20, seed=0)
    lab = np.load(tmp_path / "labels.npy")
    items = json.loads((tmp_path / "items.json").read_text())
    assert lab.dtype == np.int64 and lab.shape == (20,) and len(items) == 20
    assert meta["n"] == 20 and meta["n_classes"] == 2 and meta["classes"] == ["x", "y"]
    assert meta["class_counts"] == [15, 5] and meta["n_total"] == 40 and meta["seed"] == 0
    assert all(labels[texts.index(t)] == meta["classes"][c] for t, c in zip(items, lab))
    assert prepare_dataset(ds, tmp_path, max_items=20, seed=0) == meta  # reused
    with pytest.raises(EmbedselectError, match="seed"):
        prepare_dataset(ds, tmp_path, max_items=20, seed=1)

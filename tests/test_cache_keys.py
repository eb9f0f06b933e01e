"""Cache keys of embedding runs: every option that changes a baseline's vectors is in its key (issue 20 case 6), and
a local model folder is keyed by its content, not its path, without following links out of it (issue 20 security,
issue 23 item 7)."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import embedselect
from embedselect.models.backends.baselines import BASELINE_OPTIONS
from embedselect.models.candidates.resolve import local_dir_revision
from embedselect.data import sample_path
from embedselect._util.kinds import BASELINES
from testkit.tinymodels import make_tiny_images, make_tiny_sentence_transformer

SAMPLE = sample_path("texts")
_TWO_VALUES = {int: (3, 4), bool: (False, True)}


def _one_run(data, spec: str, cache: os.PathLike, **kw):
    [out] = embedselect.embed(data, [spec], cache_dir=cache, keep_vectors=True, **kw)
    assert out.result.status == "ok", (spec, out.result.error)
    return out.result.run_key, np.array(out.vectors)


@pytest.mark.fault
def test_every_baseline_option_that_changes_the_vectors_changes_the_run_key(tmp_path):
    """Each option of each baseline (from the baselines' own declarations, so a new option is covered at once), at
    two values, each embedded into its own fresh cache: the two runs have two keys (every option may change the
    vectors: ``seed`` changes tfidf-svd's only above its exact-SVD size), and where the vectors differ the keys
    surely do. Before, ``?seed=7`` and ``?seed=8`` had one key, so the second was served the first's vectors."""
    images = make_tiny_images(tmp_path / "imgs", n=6)
    data = {"text": dict(data=SAMPLE, column="text", max_items=40), "image": dict(data=images)}
    tried, n = [], 0
    for name, options in BASELINE_OPTIONS.items():
        for modality in BASELINES[name]:
            for option, kind in options.items():
                runs = []
                for value in _TWO_VALUES[kind]:
                    n += 1
                    kw = dict(data[modality])
                    runs.append(_one_run(kw.pop("data"), f"{name}?{option}={str(value).lower()}", tmp_path / f"c{n}",
                                         **kw))
                (key_a, vec_a), (key_b, vec_b) = runs
                if (name, modality, option) == ("random-projection", "text", "size"):
                    assert key_a == key_b and np.array_equal(vec_a, vec_b)  # texts have no pixels: size is unused
                    continue
                tried.append((name, modality, option))
                assert key_a != key_b, (name, modality, option)
    assert len(tried) == sum(len(o) * len(BASELINES[b]) for b, o in BASELINE_OPTIONS.items()) - 1
    assert ("random-projection", "image", "seed") in tried and ("pixel-pca", "image", "grayscale") in tried


@pytest.mark.fault
def test_seed_as_an_option_of_a_baseline_is_not_served_another_seeds_vectors(cache_dir):
    """In one cache: ``random-projection?seed=7`` then ``?seed=8`` -> the second is computed, not read from the first."""
    key7, v7 = _one_run(SAMPLE, "random-projection?seed=7", cache_dir, column="text", max_items=30)
    key8, v8 = _one_run(SAMPLE, "random-projection?seed=8", cache_dir, column="text", max_items=30)
    assert key7 != key8 and not np.allclose(v7, v8)
    from embedselect.models.backends.baselines import baseline_key_options

    opt7 = baseline_key_options("random-projection", modality="text", options={"seed": 7}, seed=0)
    assert opt7 == baseline_key_options("random-projection", modality="text", options={}, seed=7)  # the same vectors
    assert opt7 == baseline_key_options("random-projection", modality="text", options={"seed": 7, "dim": 256})


def _count_loads(monkeypatch) -> list[str]:
    import embedselect.models.backends.loader as loader

    loaded: list[str] = []
    real = loader.load_embedder

    def counting(rc, *a, **k):
        loaded.append(rc.model_id)
        return real(rc, *a, **k)

    monkeypatch.setattr(loader, "load_embedder", counting)
    return loaded


@pytest.mark.fault
def test_a_copied_model_folder_is_not_embedded_again(tmp_path, cache_dir, monkeypatch):
    """Issue 23 item 7: a model folder copied elsewhere has the same content, so the same run key: the second run
    loads no model (no forward pass) and reads the first run's vectors."""
    first_dir = make_tiny_sentence_transformer(tmp_path / "models" / "tiny-st")
    loaded = _count_loads(monkeypatch)
    key1, v1 = _one_run(SAMPLE, str(first_dir), cache_dir, column="text", max_items=30)
    assert len(loaded) == 1
    copy = tmp_path / "elsewhere" / "renamed-copy"
    shutil.copytree(first_dir, copy)
    time.sleep(0.01)
    for p in copy.rglob("*"):  # a copy has other modification times too
        os.utime(p)
    [out] = embedselect.embed(SAMPLE, [str(copy)], column="text", max_items=30, cache_dir=cache_dir, keep_vectors=True)
    assert out.result.status == "ok" and out.result.cached
    assert len(loaded) == 1, "the copied folder was loaded and embedded again"
    assert out.result.run_key == key1 and np.array_equal(np.array(out.vectors), v1)
    assert local_dir_revision(copy) == local_dir_revision(first_dir)
    (copy / "extra.txt").write_text("changed")
    assert local_dir_revision(copy) != local_dir_revision(first_dir)  # the content, not the name, is the key


@pytest.mark.fault
def test_a_link_to_the_root_folder_in_a_model_folder_is_not_followed(tmp_path, cache_dir, monkeypatch):
    """A model folder with a symbolic link to ``/`` (and one to a file outside it): resolving it reads nothing
    outside the folder and returns at once (it used to walk the whole file system)."""
    d = make_tiny_sentence_transformer(tmp_path / "tiny-st")
    before = local_dir_revision(d)
    outside = tmp_path / "secret.txt"
    outside.write_text("not the model's")
    os.symlink("/", d / "rootlink")
    os.symlink(outside, d / "outside-file")
    os.symlink("model.safetensors", d / "inside-link")  # a link inside the folder is hashed as the file it names
    done: list[str] = []
    walker = threading.Thread(target=lambda: done.append(local_dir_revision(d)), daemon=True)
    walker.start()
    walker.join(timeout=20)
    assert done, "resolving the model folder walked out of it through the link to /"
    with_links = done[0]
    assert local_dir_revision(d) == with_links and with_links != before
    outside.write_text("changed, but never read")  # its size and mtime are in the key, its bytes never read
    from embedselect.models.candidates import digests

    monkeypatch.setattr(digests, "_MEMORY", {})
    real = digests._hash_file
    monkeypatch.setattr(digests, "_hash_file", lambda p: real(p) if Path(p) != outside else pytest.fail("read"))
    assert local_dir_revision(d) != with_links
    [out] = embedselect.embed(SAMPLE, [str(d)], column="text", max_items=20, cache_dir=cache_dir)
    assert out.result.status == "ok", out.result.error


def test_big_files_of_a_model_folder_are_hashed_once_across_processes(tmp_path, monkeypatch):
    """A weight file of a model folder is hashed once: a new process (here: the in-memory digests forgotten) reads its
    digest from the cache's ``digests/`` while the file's inode, size and mtime are unchanged; a changed file is hashed
    again."""
    from embedselect.models.candidates import digests

    d = make_tiny_sentence_transformer(tmp_path / "tiny-st")
    big = d / "extra_weights.safetensors"
    big.write_bytes(os.urandom(digests.ON_DISK_MIN_BYTES + 5))
    store = tmp_path / "cache" / "digests"
    first = local_dir_revision(d, digest_dir=store)
    hashed: list[str] = []
    real = digests._hash_file
    monkeypatch.setattr(digests, "_hash_file", lambda p: hashed.append(p.name) or real(p))
    monkeypatch.setattr(digests, "_MEMORY", {})
    assert local_dir_revision(d, digest_dir=store) == first
    assert "extra_weights.safetensors" not in hashed and "config.json" in hashed  # small files: hashed, not recorded
    first_byte = big.read_bytes()[0]
    with open(big, "r+b") as f:  # the same size, another byte: the mtime changes
        f.write(bytes([(first_byte + 1) % 256]))
    os.utime(big, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
    assert local_dir_revision(d, digest_dir=store) != first and "extra_weights.safetensors" in hashed

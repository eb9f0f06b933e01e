#!/usr/bin/env python3
"""Write 60 generated images in three sub-folders (circles/, stripes/, checks/; 96×96 PNG, seeded) for the README's
image example: ``python scripts/demo_photos.py photos/`` then ``embedselect rank photos/ --models ...``."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from PIL import Image


def write(root: Path, per_class: int = 20, size: int = 96, seed: int = 0) -> None:
    """``per_class`` noisy two-colour pictures of each pattern under ``root/<pattern>/<i>.png``."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[:size, :size]
    for cls in ("circles", "stripes", "checks"):
        (root / cls).mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            fg, bg = rng.uniform(0, 255, 3), rng.uniform(0, 255, 3)
            if cls == "circles":
                cx, cy, r = rng.uniform(25, 70), rng.uniform(25, 70), rng.uniform(10, 30)
                mask = (x - cx) ** 2 + (y - cy) ** 2 < r * r
            elif cls == "stripes":
                f, a, b = rng.uniform(0.1, 0.4), rng.uniform(0, 3), rng.uniform(0, 3)
                mask = np.sin(f * (x * np.cos(a) + y * np.sin(b))) > 0
            else:
                k = int(rng.integers(6, 20))
                mask = (x // k + y // k) % 2 == 0
            img = np.where(mask[..., None], fg, bg) + rng.normal(0, 12, (size, size, 3))
            Image.fromarray(np.clip(img, 0, 255).astype(np.uint8)).save(root / cls / f"{i}.png")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path)
    write(ap.parse_args().out)

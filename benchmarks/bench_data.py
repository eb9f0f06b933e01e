"""Speed of ReferenceData loading (single process): reading and sampling CSV / JSONL / Parquet / text, and validating
and hashing JPEGs.

Usage: ``python -m benchmarks.bench_data [n_rows] [n_images]`` (default 100 000 rows, 500 images). Importing the
module runs nothing.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path


def run(n: int = 100_000, n_img: int = 500) -> dict[str, float]:
    """Write ``n`` rows in each format and ``n_img`` random 224x224 JPEGs into a temporary folder, load each with
    :class:`~embedselect.data.ReferenceData` (10 000 items sampled, seed 0) and print the wall time of each.

    Returns:
        file name (``d.csv``, ``d.jsonl``, ``d.parquet``, ``d.txt``, ``images``) -> seconds.
    """
    import numpy as np
    import pandas as pd
    from PIL import Image

    from embedselect.data import ReferenceData

    rng = np.random.default_rng(0)
    words = np.array("the a of model data rank embed text image label sample fast slow new old".split())
    texts = [" ".join(rng.choice(words, size=12)) + f" {i}" for i in range(n)]
    seconds: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        frame = pd.DataFrame({"text": texts, "label": rng.integers(0, 6, n)})
        frame.to_csv(tmp / "d.csv", index=False)
        (tmp / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in frame.to_dict("records")))
        frame.to_parquet(tmp / "d.parquet")
        (tmp / "d.txt").write_text("\n".join(texts) + "\n")
        for name in ("d.csv", "d.jsonl", "d.parquet", "d.txt"):
            kw = {} if name.endswith("txt") else {"column": "text", "label_column": "label"}
            t = time.perf_counter()
            d = ReferenceData.from_file(tmp / name, max_items=10_000, seed=0, **kw)
            seconds[name] = time.perf_counter() - t
            print(f"{name:10s} {n} rows -> {len(d)} items: {seconds[name]:.2f} s")
        (tmp / "imgs").mkdir()
        for i in range(n_img):
            Image.fromarray(rng.integers(0, 255, (224, 224, 3), dtype=np.uint8)).save(tmp / "imgs" / f"{i:05d}.jpg")
        t = time.perf_counter()
        ReferenceData.from_images(tmp / "imgs")
        dt = seconds["images"] = time.perf_counter() - t
        print(f"images     {n_img} JPEG 224x224 (validate + hash): {dt:.2f} s ({1000 * dt / max(n_img, 1):.1f} ms/image)")
    return seconds


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("n_rows", nargs="?", type=int, default=100_000, help="rows per text file (default 100000)")
    ap.add_argument("n_images", nargs="?", type=int, default=500, help="JPEGs to validate (default 500)")
    args = ap.parse_args(argv)
    run(args.n_rows, args.n_images)


if __name__ == "__main__":
    main()

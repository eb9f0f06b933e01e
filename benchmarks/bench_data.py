"""Speed of ReferenceData loading (single process). Usage: python bench_data.py [n_rows] [n_images]"""
import json
import sys
import tempfile
import time
from pathlib import Path
import numpy as np
import pandas as pd
from PIL import Image
from embedselect.data import ReferenceData

n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
n_img = int(sys.argv[2]) if len(sys.argv) > 2 else 500
rng = np.random.default_rng(0)
words = np.array("the a of model data rank embed text image label sample fast slow new old".split())
texts = [" ".join(rng.choice(words, size=12)) + f" {i}" for i in range(n)]
with tempfile.TemporaryDirectory() as tmp:
    tmp = Path(tmp)
    frame = pd.DataFrame({"text": texts, "label": rng.integers(0, 6, n)})
    frame.to_csv(tmp / "d.csv", index=False)
    (tmp / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in frame.to_dict("records")))
    frame.to_parquet(tmp / "d.parquet")
    (tmp / "d.txt").write_text("\n".join(texts) + "\n")
    for name in ("d.csv", "d.jsonl", "d.parquet", "d.txt"):
        kw = {} if name.endswith("txt") else {"column": "text", "label_column": "label"}
        t = time.perf_counter()
        d = ReferenceData.from_file(tmp / name, max_items=10_000, seed=0, **kw)
        print(f"{name:10s} {n} rows -> {len(d)} items: {time.perf_counter() - t:.2f} s")
    (tmp / "imgs").mkdir()
    for i in range(n_img):
        Image.fromarray(rng.integers(0, 255, (224, 224, 3), dtype=np.uint8)).save(tmp / "imgs" / f"{i:05d}.jpg")
    t = time.perf_counter()
    d = ReferenceData.from_images(tmp / "imgs")
    dt = time.perf_counter() - t
    print(f"images     {n_img} JPEG 224x224 (validate + hash): {dt:.2f} s ({1000 * dt / n_img:.1f} ms/image)")

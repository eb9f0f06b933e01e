"""The incremental cache (issue 44, item 4): a run over data already embedded plus new items embeds only the new ones.

Data: ``--n`` distinct synthetic English sentences (:func:`benchmarks.bench_scale.synthetic_texts`, duplicates
dropped) in ``base.csv`` and the same sentences plus ``--new`` more in ``grown.csv``. Candidates: three tiny local
sentence-transformers models (:func:`testkit.tinymodels.make_tiny_sentence_transformer`, seeds 0-2, BERT with hidden
size 32 and 2 layers, mean pooling): per-item models, cheap enough for 2 CPU cores. (tfidf-svd and the other fitted
baselines are refitted on each data set, so their vectors are stored whole per data and never assembled per item.)

Four runs of the real CLI (``python -m embedselect embed grown.csv --column text --models A,B,C --json``: the
embedding stage of a ranking, no metrics), each in its own process, timed from start to exit:

1. ``base.csv`` into a fresh cache: every item embedded;
2. ``grown.csv`` into the same cache: exactly ``--new`` items embedded per candidate (the rest read from the cache);
3. ``grown.csv --max-items N --seed 1`` (another seed's sub-sample of the same file): no item embedded;
4. ``grown.csv`` into a second, fresh cache: what run 2 costs when nothing is stored (every item embedded).

Each run's ``embedded_items`` / ``stored_items`` per candidate are read from its JSON and checked (a ranking's JSON
holds the same two numbers per candidate; tests/test_incremental_cache.py checks them there).

    nice .venv/bin/python -m benchmarks.bench_incremental                      # 10 000 + 1 000 texts
    .venv/bin/python -m benchmarks.bench_incremental --n 2000 --new 200        # quick
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def distinct_texts(n: int, seed: int = 0) -> list[str]:
    """``n`` distinct seeded sentences (:func:`benchmarks.bench_scale.synthetic_texts`, duplicates dropped)."""
    from benchmarks.bench_scale import synthetic_texts

    texts, _ = synthetic_texts(int(n * 1.2) + 100, seed=seed)
    out = list(dict.fromkeys(texts))[:n]
    if len(out) < n:
        raise SystemExit(f"only {len(out)} distinct texts generated, wanted {n}")
    return out


def _write_csv(path: Path, texts: list[str]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["text"])
        w.writerows([t] for t in texts)
    return path


def run_cli(data: Path, models: list[Path], cache: Path, *extra: str) -> tuple[float, dict]:
    """One ``embedselect embed --json`` process; returns (wall seconds, {candidate name: its JSON record})."""
    cmd = [sys.executable, "-m", "embedselect", "embed", str(data), "--column", "text", "--models",
           ",".join(str(m) for m in models), "--cache-dir", str(cache), "--json", "-q", *extra]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - t0
    return seconds, {c["name"]: c for c in json.loads(done.stdout)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000, help="texts already embedded")
    ap.add_argument("--new", type=int, default=1_000, help="texts added")
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args()

    from testkit.tinymodels import make_tiny_sentence_transformer

    with tempfile.TemporaryDirectory(prefix="bench-incremental-") as tmp:
        root = Path(tmp)
        texts = distinct_texts(args.n + args.new)
        base, grown = _write_csv(root / "base.csv", texts[:args.n]), _write_csv(root / "grown.csv", texts)
        models = [make_tiny_sentence_transformer(root / f"tiny-st-{s}", seed=s) for s in range(3)]
        cache, fresh = root / "cache", root / "fresh-cache"
        runs = {
            "1 base, fresh cache": run_cli(base, models, cache),
            "2 base + new": run_cli(grown, models, cache),
            "3 another --seed": run_cli(grown, models, cache, "--max-items", str(args.n), "--seed", "1"),
            "4 base + new, fresh cache": run_cli(grown, models, fresh),
        }
    expected = {"1 base, fresh cache": (args.n, 0), "2 base + new": (args.new, args.n),
                "3 another --seed": (0, args.n), "4 base + new, fresh cache": (args.n + args.new, 0)}
    results: dict[str, dict] = {}
    ok = True
    print(f"{args.n} texts + {args.new} new, 3 tiny local sentence-transformers, embedselect embed; "
          f"{platform.machine()}, {os.cpu_count()} CPUs")
    for name, (seconds, cands) in runs.items():
        counts = {c: (r["embedded_items"], r["stored_items"]) for c, r in cands.items()}
        right = all(v == expected[name] for v in counts.values())
        ok &= right
        results[name] = {"seconds": round(seconds, 2), "embedded_stored": counts, "as_expected": right}
        print(f"  run {name:<27} {seconds:7.1f} s   embedded/stored per candidate: "
              f"{sorted(set(counts.values()))}{'' if right else f'  (expected {expected[name]})'}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    if not ok:
        raise SystemExit("some counts are not the expected ones")


if __name__ == "__main__":
    main()

"""End-to-end `select` at scale: wall time and peak memory per stage (docs/archive/benchmarks-diary.md section 8).

n synthetic English sentences (a seeded grammar over 12 topics, ~12 words each, no duplicates by construction
beyond chance) are loaded with `ReferenceData.from_texts`, then ranked by `embedselect.select` into a fresh
cache with two cheap candidates (default: the tfidf-svd and random-projection baselines) and the default
metrics. A second `select` on the same data shows the cached path (no embedding, metric results from the store).

Per stage (data generation, load + fingerprint, each candidate's embedding, each metric, the whole first
`select`, the cached re-run): wall time, and the peak resident memory (RSS) of the process during the stage,
sampled every 20 ms from /proc/self/status (the growth over the RSS at the stage's start, and the peak of the
anonymous part alone, RssAnon: memory the process allocated, as opposed to pages of mapped files that the kernel
can drop, are reported too). Stage boundaries come from
select()'s own progress stages (`RunProgress.stage`, wrapped here), so nothing inside embedselect is changed
for the measurement. `resource.getrusage` gives the process's overall peak as a check.

    nice .venv/bin/python -m benchmarks.bench_scale --n 100000 --json /tmp/scale.json     # ~5 min, 2 cores
    nice .venv/bin/python -m benchmarks.bench_scale --n 300000 --candidates tfidf-svd,random-projection,rp768=random-projection?dim=768
    .venv/bin/python -m benchmarks.bench_scale --n 5000                                   # quick
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import resource
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

TOPICS = {
    "cooking": "recipe flour oven bake butter garlic onion sauce simmer dough pepper kitchen soup roast",
    "finance": "market stock bond rates bank inflation investor dividend loan equity budget credit fund price",
    "sports": "team goal match striker coach season league score referee tournament player stadium win",
    "travel": "flight hotel passport beach museum train luggage tour island ticket journey map border",
    "health": "doctor vaccine sleep diet exercise clinic symptom patient nurse therapy heart blood fever",
    "technology": "software chip cloud server code network laptop robot data battery phone update app",
    "music": "guitar concert album singer drum melody chorus band piano lyrics tour festival rhythm",
    "weather": "rain storm wind forecast snow cloud thunder heat frost sunny humid breeze flood",
    "science": "experiment lab theory atom cell telescope physics gene molecule sample study orbit",
    "politics": "election vote senate policy law minister campaign debate party reform tax council",
    "garden": "seeds soil tomato roses compost prune shovel hedge lawn bloom weeds greenhouse",
    "film": "director actor scene camera script premiere drama sequel studio cinema trailer role",
}
FILLER = "the a this that my our their some every new old big small quiet busy".split()
VERBS = "likes needs sees finds moves changes starts brings makes takes shows keeps".split()


def synthetic_texts(n: int, seed: int = 0) -> tuple[list[str], np.ndarray]:
    """n seeded sentences of 9-15 words from one of 12 topics each; returns (texts, topic ids int64 (n,)).

    Every random choice is drawn for all n sentences at once (10^6 sentences in a few seconds)."""
    rng = np.random.default_rng(seed)
    vocab = [np.array(v.split()) for v in TOPICS.values()]
    sizes = np.array([len(v) for v in vocab])
    flat = np.concatenate(vocab)
    start = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    topic = rng.integers(0, len(vocab), n)
    lengths = rng.integers(4, 8, n)
    own = start[topic, None] + (rng.random((n, 7)) * sizes[topic, None]).astype(np.int64)  # words of the topic
    o = rng.integers(0, len(vocab), n)
    other = start[o, None] + (rng.random((n, 2)) * sizes[o, None]).astype(np.int64)  # off-topic noise
    filler, verbs = np.array(FILLER), np.array(VERBS)
    f1, f2 = filler[rng.integers(0, len(filler), n)].tolist(), filler[rng.integers(0, len(filler), n)].tolist()
    verb, number = verbs[rng.integers(0, len(verbs), n)].tolist(), rng.integers(0, 1000, n).tolist()
    words, noise = flat[own].tolist(), flat[other].tolist()
    texts = [f"{a} {w[0]} {v} {b} {' '.join(w[1:m])} and {c} {d} {k}"
             for a, w, v, b, m, (c, d), k in zip(f1, words, verb, f2, lengths.tolist(), noise, number)]
    return texts, topic.astype(np.int64)


def _rss_parts() -> tuple[float, float]:
    """(anonymous, file-backed) resident memory of this process in MiB, from /proc/self/status (RssAnon, RssFile).

    Anonymous memory is what the process allocated (arrays, tensors); file-backed memory is pages of mapped files
    (shared libraries, memory-mapped vector files) that the kernel can drop and re-read under pressure."""
    parts = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("RssAnon:", "RssFile:")):
                key, kib, _unit = line.split()
                parts[key] = int(kib) / 1024
    return parts.get("RssAnon:", 0.0), parts.get("RssFile:", 0.0)


class RssSampler:
    """RSS of this process (MiB), sampled every ``interval`` seconds in a thread; :meth:`peak` between times.

    Each sample is (time, total RSS, anonymous RSS); see :func:`_rss_parts`."""

    def __init__(self, interval: float = 0.02) -> None:
        self.interval = interval
        self.samples: list[tuple[float, float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def now(self) -> float:
        """Total RSS now, MiB."""
        return sum(_rss_parts())

    def _run(self) -> None:
        while not self._stop.is_set():
            anon, file = _rss_parts()
            self.samples.append((time.perf_counter(), anon + file, anon))
            time.sleep(self.interval)

    def __enter__(self) -> "RssSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def peak(self, t0: float, t1: float, *ends: float) -> float:
        """Largest total RSS sample taken in [t0, t1], or of ``ends`` (the RSS read at the stage's start and end)."""
        return max([r for t, r, _a in self.samples if t0 <= t <= t1] + list(ends))

    def peak_anon(self, t0: float, t1: float) -> float:
        """Largest anonymous RSS sample taken in [t0, t1] (0 when none was taken)."""
        return max([a for t, _r, a in self.samples if t0 <= t <= t1], default=0.0)


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--candidates", default="tfidf-svd,random-projection")
    ap.add_argument("--metrics", default=None, help="comma-separated metrics (default: embedselect's default metrics)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args(argv)

    import torch

    import embedselect
    from embedselect._util import progress as progress_mod
    from embedselect.data import ReferenceData
    from embedselect.metrics.base import DEFAULT_METRICS

    stages: list[dict] = []
    original_stage = progress_mod.RunProgress.stage

    with RssSampler() as sampler, tempfile.TemporaryDirectory() as tmp:

        def record(label: str, t0: float, r0: float) -> None:
            stages.append({"stage": label, "t0": t0, "t1": time.perf_counter(), "rss_start": r0,
                           "rss_end": sampler.now()})

        @contextlib.contextmanager
        def timed_stage(self, label, *, steps=1):
            t0, r0 = time.perf_counter(), sampler.now()
            with original_stage(self, label, steps=steps):
                yield
            record(label, t0, r0)

        progress_mod.RunProgress.stage = timed_stage
        try:
            t0, r0 = time.perf_counter(), sampler.now()
            texts, _topics = synthetic_texts(args.n, args.seed)
            record(f"generate {args.n} texts", t0, r0)
            t0, r0 = time.perf_counter(), sampler.now()
            ref = ReferenceData.from_texts(texts, source=f"<{args.n} synthetic sentences>")
            record("load + fingerprint", t0, r0)
            del texts
            cands = [c.strip() for c in args.candidates.split(",") if c.strip()]
            metrics = [m.strip() for m in (args.metrics or ",".join(DEFAULT_METRICS)).split(",") if m.strip()]
            t0, r0 = time.perf_counter(), sampler.now()
            ranking = embedselect.select(ref, cands, metrics=metrics, seed=args.seed, cache_dir=Path(tmp) / "cache")
            t_select = time.perf_counter() - t0
            record("select (whole first run)", t0, r0)
            t0, r0 = time.perf_counter(), sampler.now()
            again = embedselect.select(ref, cands, metrics=metrics, seed=args.seed, cache_dir=Path(tmp) / "cache")
            record("select again (all cached)", t0, r0)
            assert all(c.cached for c in again)
        finally:
            progress_mod.RunProgress.stage = original_stage

    rows = []
    for s in stages:
        peak = sampler.peak(s["t0"], s["t1"], s["rss_start"], s["rss_end"])
        rows.append({"stage": s["stage"], "seconds": round(s["t1"] - s["t0"], 2), "peak_rss_mib": round(peak),
                     "growth_mib": round(peak - s["rss_start"]),
                     "peak_anon_mib": round(sampler.peak_anon(s["t0"], s["t1"]))})
    details = {m: {k: v for k, v in ranking.details.get(m, {}).items()
                   if k in ("n_items", "n_moment_items", "n_probe_items", "subsampled")}
               for m in ranking.metrics}
    if "sufficiency" in ranking.details:
        st = ranking.details["sufficiency"].get("settings", {})
        details["sufficiency"].update({k: st[k] for k in ("n_train", "n_val", "n_test", "max_steps") if k in st})
    dims = {c.name: c.dim for c in ranking}
    result = {
        "n": args.n,
        "n_candidates": len(cands),
        "candidates": cands,
        "vectors_mib": {"largest": round(args.n * max(d or 0 for d in dims.values()) * 4 / 2**20),
                        "all": round(args.n * sum(d or 0 for d in dims.values()) * 4 / 2**20)},
        "metrics": metrics,
        "select_seconds": round(t_select, 1),
        "timings": ranking.timings,
        "stages": rows,
        "peak_rss_mib_getrusage": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "ranking": [(c.name, c.rank, {m: c.scores.get(m) for m in ranking.metrics}) for c in ranking],
        "dims": dims,
        "metric_details": details,
        "warnings": ranking.warnings,
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "torch_threads": torch.get_num_threads(),
                    "load_avg": os.getloadavg()},
    }
    print(f"n = {args.n}, {len(cands)} candidates: select {t_select:.1f} s, process peak RSS "
          f"{result['peak_rss_mib_getrusage']} MiB; float32 vectors {result['vectors_mib']['largest']} MiB for the "
          f"widest candidate, {result['vectors_mib']['all']} MiB for all")
    print(f"{'stage':<44} {'seconds':>8} {'peak RSS MiB':>13} {'growth MiB':>11} {'peak anon MiB':>14}")
    for r in rows:
        print(f"{r['stage']:<44} {r['seconds']:>8} {r['peak_rss_mib']:>13} {r['growth_mib']:>11} "
              f"{r['peak_anon_mib']:>14}")
    print(json.dumps({k: result[k] for k in ("ranking", "dims", "metric_details")}, default=str))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, default=str) + "\n")
    return result


if __name__ == "__main__":
    main()

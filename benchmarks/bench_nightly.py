"""A simulated night at scale: incremental vs full recompute, local vs Ray.

The loopback fake hub (testkit/hubserver.py) serves ``--models`` tiny real sentence-transformers models of varied
sizes (hidden 16/32/48/64, 1–2 layers; testkit/tinymodels.py). Night 1 sees all but ``--new`` of them and builds
the store; then ``--new`` more start trending, and night 2 is run four ways on copies of the same store:

- incremental, local executor (the normal night: new models + top ``keep_top`` + pinned);
- incremental, Ray with ``--ray-workers`` CPUs (``ray.init(num_cpus=...)``);
- full recompute, local: a fresh store, every crawled model embedded and ranked;
- full recompute, Ray.

Metrics: ``task_prior`` only at this scale (information sufficiency is O(pool²) pairs: a 200-model pool is ~40 000
pairs). The pair part is measured separately on a smaller pool (``--pair-models`` / ``--pair-new``) with both
metrics: the incremental night computes only the pairs that involve a new model.

    .venv/bin/python -m benchmarks.bench_nightly [--models 200 --new 20 --ray-workers 2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _start_hub(tmp: Path):
    os.environ["HF_HOME"] = str(tmp / "hf-home")
    os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
    os.environ["NO_PROXY"] = os.environ["no_proxy"] = "127.0.0.1,localhost"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from testkit.hubserver import FakeHub

    hub = FakeHub().start()
    os.environ["HF_ENDPOINT"] = hub.url  # before huggingface_hub is imported
    return hub


def _publish(hub, tmp: Path, i: int, trending: float) -> None:
    from testkit import tinymodels as tm

    d = tm.make_tiny_sentence_transformer(tmp / "models" / f"m{i:04d}", seed=i, hidden=(16, 32, 48, 64)[i % 4],
                                          layers=1 + (i // 4) % 2)
    hub.publish(f"bench/m{i:04d}", d, library_name="sentence-transformers", pipeline_tag="sentence-similarity",
                trending_score=trending)


def _config(tmp: Path, name: str, *, limit: int, metrics, keep_top: int = 5, executor=None):
    import yaml

    from embedselect.data import sample_path
    from embedselect.nightly import load_config

    d = tmp / name
    d.mkdir(parents=True, exist_ok=True)
    cfg = {
        "data": {"path": str(sample_path("texts")), "column": "text"},
        "crawl": {"library": "sentence-transformers", "sort": "trending", "limit": limit},
        "keep_top": keep_top, "pinned": ["tfidf-svd"], "output": "./site", "budget_minutes": 600,
        "cache": "./cache", "metrics": list(metrics), "executor": executor or {"kind": "local"},
    }
    (d / "nightly.yaml").write_text(yaml.safe_dump(cfg))
    return load_config(d / "nightly.yaml")


def _row(label: str, s: dict, wall: float) -> dict:
    return {"night": label, "wall_s": round(wall, 1), "forward_passes": s["embedded"]["count"],
            "reused": s["reused"]["count"], "ranked": s["ranked"], "pairs_computed": s["pairs"]["computed"],
            "pairs_reused": s["pairs"]["reused"], "embed_s": s["stages"].get("embed"),
            "pairs_s": s["stages"].get("pairs"), "rank_s": s["stages"].get("rank")}


def _night(label: str, cfg, executor=None) -> dict:
    from embedselect.nightly import run_night

    t0 = time.perf_counter()
    s = run_night(cfg, executor=executor)
    r = _row(label, s, time.perf_counter() - t0)
    print(json.dumps(r), flush=True)
    return r


def _copy_store(src, dst) -> None:
    shutil.copytree(src.cache_path, dst.cache_path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--models", type=int, default=200)
    ap.add_argument("--new", type=int, default=20)
    ap.add_argument("--ray-workers", type=int, default=2, help="0 = skip Ray")
    ap.add_argument("--pair-models", type=int, default=12, help="pool size (models) for the sufficiency-pair part")
    ap.add_argument("--pair-new", type=int, default=2)
    ap.add_argument("--keep-top", type=int, default=5)
    ap.add_argument("--out", help="write the rows as JSON here")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="bench-nightly-"))
    hub = _start_hub(tmp)
    import torch

    from embedselect._util.compat import ensure_torchvision_importable

    ensure_torchvision_importable()
    print(f"# bench_nightly: {args.models} models ({args.new} new), torch threads {torch.get_num_threads()}, "
          f"cpus {os.cpu_count()}, tmp {tmp}", flush=True)
    rows = []
    t0 = time.perf_counter()
    old = args.models - args.new
    for i in range(old):
        _publish(hub, tmp, i, trending=1.0 + i)
    print(f"# published {old} models in {time.perf_counter() - t0:.1f}s", flush=True)

    tp = ("task_prior",)
    n1 = _config(tmp, "inc-local", limit=args.models, metrics=tp, keep_top=args.keep_top)
    rows.append(_night("night 1 (builds the store)", n1))
    for i in range(old, args.models):  # the newcomers trend highest
        _publish(hub, tmp, i, trending=1000.0 + i)

    ray_ex = None
    if args.ray_workers:
        import ray

        from embedselect.nightly.executors.ray import RayExecutor

        ray.init(num_cpus=args.ray_workers, include_dashboard=False, log_to_driver=False)
        ray_ex = RayExecutor()
        inc_ray = _config(tmp, "inc-ray", limit=args.models, metrics=tp, keep_top=args.keep_top,
                          executor={"kind": "ray"})
        _copy_store(n1, inc_ray)
        rows.append(_night(f"night 2 incremental, Ray {args.ray_workers} workers", inc_ray, ray_ex))
    rows.append(_night("night 2 incremental, local", n1))
    full = _config(tmp, "full-local", limit=args.models, metrics=tp, keep_top=args.models + 1)
    rows.append(_night("night 2 full recompute, local", full))
    if ray_ex is not None:
        full_ray = _config(tmp, "full-ray", limit=args.models, metrics=tp, keep_top=args.models + 1,
                           executor={"kind": "ray"})
        rows.append(_night(f"night 2 full recompute, Ray {args.ray_workers} workers", full_ray, ray_ex))

    # --- sufficiency pairs on a small pool -------------------------------------------------------------------
    hub.reset()
    base = 100_000
    for i in range(args.pair_models - args.pair_new):
        _publish(hub, tmp, base + i, trending=1.0 + i)
    both = ("task_prior", "sufficiency")
    p1 = _config(tmp, "pairs-inc", limit=args.pair_models, metrics=both, keep_top=args.keep_top)
    rows.append(_night(f"pairs night 1 ({args.pair_models - args.pair_new} models)", p1))
    for i in range(args.pair_models - args.pair_new, args.pair_models):
        _publish(hub, tmp, base + i, trending=1000.0 + i)
    if ray_ex is not None:
        p_ray = _config(tmp, "pairs-inc-ray", limit=args.pair_models, metrics=both, keep_top=args.keep_top,
                        executor={"kind": "ray"})
        _copy_store(p1, p_ray)
        rows.append(_night(f"pairs night 2 incremental, Ray {args.ray_workers} workers", p_ray, ray_ex))
    rows.append(_night("pairs night 2 incremental, local", p1))
    p_full = _config(tmp, "pairs-full", limit=args.pair_models, metrics=both, keep_top=args.keep_top)
    rows.append(_night("pairs night 2 full recompute, local", p_full))
    if ray_ex is not None:
        p_full_ray = _config(tmp, "pairs-full-ray", limit=args.pair_models, metrics=both, keep_top=args.keep_top,
                             executor={"kind": "ray"})
        rows.append(_night(f"pairs night 2 full recompute, Ray {args.ray_workers} workers", p_full_ray, ray_ex))
    if ray_ex is not None:
        ray_ex.close()
        import ray

        ray.shutdown()
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=2))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

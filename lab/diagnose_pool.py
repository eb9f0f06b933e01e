"""Why a label-free signal ranks a pool the way it does (issue 23): per-candidate kernel statistics and the
Spearman ρ of task_prior / sufficiency variants against the tuned-probe truth, on one benchmark pool.

    python -m lab.diagnose_pool photo-patches --variants tp-default tp-tau10 ...

Reads the pool written by ``validity_data.py`` and the ground truth cached by ``validity_pools.py``
(run that first, ``--max-items 1000``). Prints markdown; every variant is named by the options it passes.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from benchmarks.validity_data import bench_cache, load_pool, stratified_indices

VARIANTS: dict[str, tuple[str, dict]] = {
    "tp-default": ("task_prior", {}),
    "tp-tau0.1x": ("task_prior", {"tau": 0.008192}),
    "tp-tau10x": ("task_prior", {"tau": 0.8192}),
    "tp-consensus": ("task_prior", {"prior": "consensus"}),
    "tp-loo": ("task_prior", {"prior": "loo"}),
    "tp-alignment": ("task_prior", {"headline": "alignment", "probes": False}),
    "suff-default": ("sufficiency", {}),
    "suff-normal-scores": ("sufficiency", {"normal_scores": True}),
}


def kernel_stats(x: np.ndarray) -> dict[str, float]:
    """Effective rank (exp of the spectral entropy) and top-eigenvalue share (λ1 / ‖λ‖₂) of the normalised,
    double-centred cosine kernel, and the fraction of exact zeros in ``x``. x: (n, d) float."""
    from embedselect.metrics.kernels import kernel_factor

    z = kernel_factor(x)
    lam = np.clip(np.linalg.svd(z, compute_uv=False) ** 2, 0, None)
    p = lam / lam.sum()
    p = p[p > 0]
    return {"erank": float(np.exp(-(p * np.log(p)).sum())), "top_share": float(lam[0] / np.sqrt((lam**2).sum())),
            "zeros": float(np.mean(x == 0))}


def print_pairs(vectors: dict[str, np.ndarray], seed: int) -> int:
    """Median sufficiency, the number of pairs that kept their step-0 snapshot (IS exactly 0), and every IS."""
    from embedselect.metrics import information_sufficiency

    r = information_sufficiency(vectors, seed=seed)
    names = list(r.matrix.index)
    best = {(p["source"], p["target"]): p["best_step"] for p in r.pairs}
    print("n_train", r.settings.get("n_train"), "targets in order:", names)
    for s in names:
        others = [t for t in names if t != s]
        print(f"{s}: median {r.scores[s]:+.4f}, step-0 pairs {sum(best[(s, t)] == 0 for t in others)}/{len(others)}: "
              + " ".join(f"{r.matrix.loc[s, t]:+.3f}" for t in others))
    return 0


def print_weights(vectors: dict[str, np.ndarray]) -> int:
    """The balanced prior's redundancy weights, mean CKA and kernel statistics per candidate."""
    from embedselect.metrics.kernels import kernel_factor
    from embedselect.metrics.task_prior.priors import balanced_weights, cross_gram

    names = list(vectors)
    g = cross_gram([kernel_factor(vectors[k]) for k in names])
    w = balanced_weights(g)
    cka = g / np.sqrt(np.outer(np.diag(g), np.diag(g)))
    for k, wk, row in zip(names, w, cka):
        s = kernel_stats(vectors[k])
        print(f"{k}: weight {wk:.2f} (share {wk / w.sum():.2f}), mean CKA {row.mean():.2f}, erank {s['erank']:.1f}, "
              f"top share {s['top_share']:.2f}, zeros {s['zeros']:.2f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    from scipy.stats import spearmanr

    from embedselect.metrics.base import MetricContext, get_metric

    ap = argparse.ArgumentParser()
    ap.add_argument("dataset")
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS))
    ap.add_argument("--max-items", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--drop", nargs="*", default=[], help="candidates left out of the pool")
    ap.add_argument("--pairs", action="store_true", help="print sufficiency per pair (IS and best_step) and stop")
    ap.add_argument("--weights", action="store_true", help="print the balanced prior's weights and kernel stats, stop")
    a = ap.parse_args(argv)
    meta, labels, _items, _entries, vectors = load_pool(a.dataset)
    idx = stratified_indices([str(v) for v in labels], a.max_items, a.seed)
    vectors = {k: v[idx] for k, v in vectors.items() if k not in a.drop}
    if a.pairs:
        return print_pairs(vectors, a.seed)
    if a.weights:
        return print_weights(vectors)
    n = len(idx)
    truth_path = bench_cache() / "validity_pools" / a.dataset / f"n{n}_seed{a.seed}" / "truth_logistic_f5.json"
    truth = {k: v["acc"] for k, v in json.loads(truth_path.read_text()).items() if k in vectors}
    names = sorted(vectors, key=lambda k: -truth.get(k, -1.0))  # truth may still be computing: rho over those known
    cols: dict[str, dict[str, float]] = {}
    for var in a.variants:
        metric, opts = VARIANTS[var]
        t0 = time.perf_counter()
        res = get_metric(metric)(MetricContext(embeddings=dict(vectors), run_keys={k: f"diag:{k}" for k in vectors},
                                                 seed=a.seed, options=dict(opts)))
        cols[var] = {k: float(res.scores[k]) for k in names}
        known = [k for k in names if k in truth]
        rho = spearmanr([truth[k] for k in known], [cols[var][k] for k in known]).statistic
        print(f"{var}: rho {rho:+.2f} ({time.perf_counter() - t0:.0f} s) options {opts}", flush=True)
        if metric == "sufficiency":
            pairs = res.details.get("pairs", [])
            steps = [p.get("best_step") for p in pairs]
            print(f"  best_step of {len(steps)} pairs: zero for {sum(s == 0 for s in steps)}", flush=True)
    stats = {k: kernel_stats(vectors[k]) for k in names}
    head = "| candidate | d | truth | erank | top share | zeros | " + " | ".join(a.variants) + " |"
    print(head + "\n|" + "---|" * (6 + len(a.variants)))
    for k in names:
        s = stats[k]
        print(f"| {k} | {vectors[k].shape[1]} | {truth.get(k, float('nan')):.3f} | {s['erank']:.1f} | {s['top_share']:.2f} | "
              f"{s['zeros']:.2f} | " + " | ".join(f"{cols[v][k]:.4f}" for v in a.variants) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

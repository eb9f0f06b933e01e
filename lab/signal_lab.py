"""Signal lab (issue 23): label-free signals computed on the cached validity pools, each against the tuned probe.

Research harness, not the product: it prototypes signals on the vectors of ``validity_data.py`` pools (cached per
dataset, pool and signal under ``<bench cache>/signal_lab/``) and prints Spearman / regret per view, so that a
signal earns a place in ``embedselect.metrics`` before it is written there.

    python -m lab.signal_lab --views trec:width photo-patches:photo8 --signals nn lin_is knn_is
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from typing import Any, Callable, Mapping

import numpy as np

from benchmarks.bench_io import bench_cache, save_json
from benchmarks.named_pools import POOLS
from benchmarks.scoring import correlations, regret
from benchmarks.sets.registry import stratified_indices
from benchmarks.signal_cache import ground_truth
from benchmarks.validity_data import load_pool

BASELINE_KINDS = {"baseline"}


def load_view(name: str, pool: str, max_items: int = 300, seed: int = 0) -> dict[str, Any]:
    meta, labels, _items, entries, vectors = load_pool(name)
    names = POOLS.get(pool) or tuple(vectors)
    names = [c for c in names if c in vectors]
    n_cls = len(np.unique(labels))
    keep_all = len(labels) - max_items < n_cls
    idx = np.arange(len(labels)) if keep_all else stratified_indices([str(v) for v in labels], max_items, seed)
    vec = {c: np.ascontiguousarray(vectors[c][idx], dtype=np.float32) for c in names}
    y = labels[idx]
    truth = ground_truth(name, y, vec, n=len(idx), seed=seed, folds=5, jobs=1)
    ents = {e["name"]: e for e in entries if e["name"] in vec}
    return {"name": name, "pool": pool, "modality": meta["modality"], "y": y, "vectors": vec,
            "truth": {c: r["acc"] for c, r in truth.items()}, "entries": ents}


# --------------------------------------------------------------------------------------------------
# signals: vectors (name -> (n, d) float32), entries (name -> candidates.json entry) -> {name: score}
# --------------------------------------------------------------------------------------------------
def _std(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    x = x - x.mean(0)
    n = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(n > 1e-12, n, 1.0)


def _split(n: int, seed: int, frac: float = 0.3) -> tuple[np.ndarray, np.ndarray]:
    perm = np.random.default_rng([seed, 77]).permutation(n)
    t = int(round(n * frac))
    return np.sort(perm[t:]), np.sort(perm[:t])


def _pca_targets(z: np.ndarray, tr: np.ndarray, k: int, whiten: bool) -> np.ndarray:
    zc = z - z[tr].mean(0)
    u, s, vt = np.linalg.svd(zc[tr], full_matrices=False)
    k = min(k, int((s > s[0] * 1e-6).sum()))
    p = zc @ vt[:k].T
    if whiten:
        p = p / (s[:k] / math.sqrt(len(tr)))
    return p


def _ridge_pred(x: np.ndarray, y: np.ndarray, tr: np.ndarray, te: np.ndarray) -> np.ndarray:
    """Ridge from x to y (GCV over a relative grid), fitted on tr, predictions on te."""
    import torch

    from embedselect.metrics.probes import DEFAULT_ALPHAS, _ridge_scores

    xt = torch.as_tensor(x, dtype=torch.float64)
    yt = torch.as_tensor(y, dtype=torch.float64)
    s, _ = _ridge_scores(xt[tr], yt[tr], xt[te], DEFAULT_ALPHAS)
    return s.numpy()


def pair_matrix(vectors: Mapping[str, np.ndarray], fn: Callable[[np.ndarray, np.ndarray], float]) -> dict:
    names = list(vectors)
    return {a: {b: fn(vectors[a], vectors[b]) for b in names if b != a} for a in names}


def lin_is_pair(u: np.ndarray, z: np.ndarray, seed: int = 0, k: int = 32, whiten: bool = True) -> float:
    """Gaussian sufficiency U -> Z: -1/2 mean log residual variance of Z's top-k whitened PCs on held-out rows."""
    n = u.shape[0]
    tr, te = _split(n, seed)
    zt = _pca_targets(_std(z), tr, k, whiten)
    pred = _ridge_pred(_std(u), zt, tr, te)
    res = zt[te] - pred
    tot = zt[te] - zt[tr].mean(0)
    if whiten:
        r = np.clip((res ** 2).mean(0) / np.maximum((tot ** 2).mean(0), 1e-12), 1e-6, None)
        return float(-0.5 * np.mean(np.log(np.minimum(r, 1.0))))
    return float(1.0 - (res ** 2).sum() / max((tot ** 2).sum(), 1e-12))


def knn_is_pair(u: np.ndarray, z: np.ndarray, seed: int = 0, k: int = 10) -> float:
    """kNN predictability U -> Z: R² of Z on held-out rows predicted by the mean of Z over U's k nearest train rows."""
    n = u.shape[0]
    tr, te = _split(n, seed)
    us, zs = _std(u), _std(z)
    sim = us[te] @ us[tr].T
    nb = np.argsort(-sim, axis=1)[:, :k]
    pred = zs[tr][nb].mean(1)
    tot = zs[te] - zs[tr].mean(0)
    return float(1.0 - ((zs[te] - pred) ** 2).sum() / max((tot ** 2).sum(), 1e-12))


def median_over_targets(mat: Mapping[str, Mapping[str, float]], targets: set[str] | None = None) -> dict[str, float]:
    out = {}
    for a, row in mat.items():
        vals = [v for b, v in row.items() if targets is None or b in targets]
        out[a] = float(np.median(vals)) if vals else math.nan
    return out


def real(entries: Mapping[str, Any]) -> set[str]:
    return {c for c, e in entries.items() if e.get("kind") not in BASELINE_KINDS}


def pca(x: np.ndarray, k: int) -> np.ndarray:
    xc = np.asarray(x, dtype=np.float64) - np.asarray(x, dtype=np.float64).mean(0)
    u, s, _ = np.linalg.svd(xc, full_matrices=False)
    return (u[:, :k] * s[:k]).astype(np.float32)


def taskprior_custom(vectors: Mapping[str, np.ndarray], members: set[str], prior: str = "balanced",
                     seed: int = 0, n_tasks: int = 64, k: int | None = None) -> dict[str, float]:
    """task_prior probes with the prior built from ``members`` only (every candidate scored)."""
    from embedselect.metrics.kernels import kernel_factor, sum_kernel_factor
    from embedselect.metrics.probes import probe_tasks
    from embedselect.metrics.task_prior.priors import balanced_weights, cross_gram
    from embedselect.metrics.task_prior.moments import resolve_temperature
    from embedselect.metrics.task_prior.sampling import sample_tasks_from_factor

    names = list(vectors)
    zs = [kernel_factor(vectors[c]) for c in names if c in members]
    if prior == "balanced":
        w = balanced_weights(cross_gram(zs))
        zp = sum_kernel_factor([z * math.sqrt(wk) for z, wk in zip(zs, w)], normalize=True)
    else:
        zp = sum_kernel_factor(zs, normalize=True)
    t = resolve_temperature(zp.shape[0])
    seed_t = int(np.random.default_rng([seed, 4, 0]).integers(2**31))
    tasks = sample_tasks_from_factor(zp, n_tasks, 2, temperature=t, seed=seed_t)
    feats = {c: (pca(vectors[c], k) if k else vectors[c]) for c in names}
    return {c: float(probe_tasks(feats[c], tasks, n_classes=2, agreement=False, seed=seed).accuracy.mean())
            for c in names}


def pkg_metric(metric: str, vectors: Mapping[str, np.ndarray], options: Mapping[str, Any] | None = None,
               seed: int = 0, references: frozenset[str] = frozenset()) -> dict[str, float]:
    from embedselect.metrics.base import MetricContext, get_metric

    res = get_metric(metric)(MetricContext(embeddings=dict(vectors), run_keys={c: c for c in vectors}, seed=seed,
                                           options=dict(options or {}), references=references))
    return {k: float(v) if v is not None else math.nan for k, v in res.scores.items()}


def _signal(name: str, view: dict[str, Any]) -> dict[str, float]:
    v, e = view["vectors"], view["entries"]
    r = real(e)
    refs = frozenset(v) - r
    if name == "tp":
        return pkg_metric("task_prior", v, {"prior_from": "all"})
    if name == "tp_pkg":
        return pkg_metric("task_prior", v, references=refs)
    if name == "nn_pkg":
        return pkg_metric("nn_agreement", v, references=refs)
    if name == "tp_cons":
        return pkg_metric("task_prior", v, {"prior": "consensus"})
    if name == "tp_real":
        return taskprior_custom(v, r or set(v), "balanced")
    if name.startswith("tp_real_pca"):
        return taskprior_custom(v, r or set(v), "balanced", k=int(name[len("tp_real_pca"):]))
    if name == "tp_real_cons":
        return taskprior_custom(v, r or set(v), "consensus")
    if name == "nn":
        return pkg_metric("nn_agreement", v, {"compare_with": "all"})
    if name == "nn_real":
        from embedselect.metrics.comparators.agreement import agreement_matrix, knn_indices

        names = list(v)
        g = agreement_matrix([knn_indices(v[c], 10) for c in names])
        rs = [i for i, c in enumerate(names) if c in r] or list(range(len(names)))
        return {c: float(np.mean([g[i, j] for j in rs if j != i])) for i, c in enumerate(names)}
    if name == "rankme":
        return pkg_metric("rankme", v)
    if name == "suff":
        return pkg_metric("sufficiency", v)
    if name == "suff_ns":
        return pkg_metric("sufficiency", v, {"normal_scores": True})
    raise KeyError(name)


MATRICES: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
    "lin": lambda u, z: lin_is_pair(u, z),
    "linr2": lambda u, z: lin_is_pair(u, z, whiten=False, k=64),
    "knn": lambda u, z: knn_is_pair(u, z),
}


PKG_MATRICES = {"suff": ("sufficiency", {}), "suffns": ("sufficiency", {"normal_scores": True})}


def matrix(view: dict[str, Any], kind: str) -> dict[str, dict[str, float]]:
    d = bench_cache() / "signal_lab" / view["name"]
    d.mkdir(parents=True, exist_ok=True)
    v = view["vectors"]
    if kind in PKG_MATRICES:  # the package's whole pairwise matrix, per pool
        p = d / f"matrix_{kind}_{view['pool']}.json"
        if not p.is_file():
            from embedselect.metrics.base import MetricContext, get_metric

            metric, opts = PKG_MATRICES[kind]
            t0 = time.time()
            res = get_metric(metric)(MetricContext(embeddings=dict(v), run_keys={c: c for c in v}, seed=0,
                                                   options=dict(opts)))
            print(f"  {view['name']}:{view['pool']} {kind} {time.time() - t0:.0f}s", file=sys.stderr, flush=True)
            save_json(p, res.details["matrix"])
        return json.loads(p.read_text())
    p = d / f"matrix_{kind}.json"
    got = json.loads(p.read_text()) if p.is_file() else {}
    changed = False
    for a in v:
        for b in v:
            if a != b and b not in got.get(a, {}):
                got.setdefault(a, {})[b] = MATRICES[kind](v[a], v[b])
                changed = True
    if changed:
        save_json(p, got)
    return {a: {b: got[a][b] for b in v if b != a} for a in v}


def signal(name: str, view: dict[str, Any]) -> dict[str, float]:
    d = bench_cache() / "signal_lab" / view["name"]
    d.mkdir(parents=True, exist_ok=True)
    if "/" in name:  # matrix-derived: KIND/how, how in med (median over all others) | medreal | out-in
        kind, how = name.split("/")
        mat = matrix(view, kind)
        if how == "med":
            return median_over_targets(mat)
        if how == "medreal":
            return median_over_targets(mat, real(view["entries"]) or None)
        if how == "meanreal":
            r = real(view["entries"]) or set(mat)
            return {a: float(np.mean([v for b, v in row.items() if b in r])) for a, row in mat.items()}
        if how == "net":  # predicts others minus is predicted by others
            return {a: float(np.median([mat[a][b] - mat[b][a] for b in mat[a]])) for a in mat}
        raise KeyError(how)
    p = d / f"signal_{view['pool']}_{name}.json"
    if p.is_file():
        got = json.loads(p.read_text())
        if set(got) == set(view["vectors"]):
            return got
    t0 = time.time()
    got = _signal(name, view)
    print(f"  {view['name']}:{view['pool']} {name} {time.time() - t0:.0f}s", file=sys.stderr, flush=True)
    save_json(p, got)
    return got


def zcombine(sigs: list[dict[str, float]], weights: list[float]) -> dict[str, float]:
    out: dict[str, float] = {}
    den: dict[str, float] = {}
    for s, w in zip(sigs, weights):
        vals = np.array([x for x in s.values() if math.isfinite(x)])
        if len(vals) < 2 or w == 0:
            continue
        mu, sd = vals.mean(), vals.std()
        for k, x in s.items():
            if math.isfinite(x) and sd > 0:
                out[k] = out.get(k, 0.0) + w * (x - mu) / sd
                den[k] = den.get(k, 0.0) + w
    return {k: out[k] / den[k] for k in out}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--views", nargs="+", required=True, help="DATASET:POOL")
    ap.add_argument("--signals", nargs="+", required=True)
    a = ap.parse_args(argv)
    rows = []
    for spec in a.views:
        name, pool = spec.split(":")
        view = load_view(name, pool)
        row = {"view": spec}
        for s in a.signals:
            if "+" in s:  # combination: a+b+c (equal-weight z) or a*2+b
                parts = []
                for p in s.split("+"):
                    nm, _, w = p.partition("*")
                    parts.append((signal(nm, view), float(w or 1)))
                sc = zcombine([x for x, _ in parts], [w for _, w in parts])
            else:
                sc = signal(s, view)
            rho, _ = correlations(sc, view["truth"])
            row[s] = (rho, regret(sc, view["truth"]))
        rows.append(row)
        print(spec, " ".join(f"{s}={row[s][0]:+.2f}/{row[s][1]:.3f}" for s in a.signals), flush=True)
    print("mean", " ".join(f"{s}={np.nanmean([r[s][0] for r in rows]):+.3f}/{np.nanmean([r[s][1] for r in rows]):.3f}"
                           for s in a.signals))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

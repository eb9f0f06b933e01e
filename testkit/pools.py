"""Synthetic candidate pools with families (teacher, distilled static copy, truncation, quantisation).

Each pool mimics the choices of docs/archive/benchmarks-diary.md §4 with a known ground truth: items belong to
``n_fine`` fine classes nested in ``n_coarse`` coarse groups; a candidate embeds the latent
``coarse·a + fine·b + noise`` through its own random linear map (+ a non-linearity). The *static copy*
of a teacher keeps only the teacher's top principal directions (a smooth, low-rank version: coarse
structure intact, fine structure largely lost), like a model2vec distillation keeps topical but not
compositional information. ``parent``/``relation`` follow the bench-data ``candidates.json`` schema.

All draws come from ``seed``; arrays are float32 (n, d).
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _embed(rng, latent: np.ndarray, d: int, nonlin: bool) -> np.ndarray:
    w = rng.normal(size=(latent.shape[1], d)) / np.sqrt(latent.shape[1])
    x = latent @ w
    if nonlin:
        x = np.tanh(x) + 0.3 * x
    return x


def _pca_copy(x: np.ndarray, k: int, rng, noise: float) -> np.ndarray:
    xc = x - x.mean(axis=0)
    u, s, vt = np.linalg.svd(xc, full_matrices=False)
    low = (u[:, :k] * s[:k]) @ vt[:k]
    return low + noise * s[0] / np.sqrt(len(x)) * rng.normal(size=x.shape)


def _latents(rng, n: int, n_coarse: int, n_fine: int, dim: int):
    """(fine labels int (n,), latent(a, b, e)): each call of ``latent`` is one model's view of the items,
    ``coarse·a + fine·b + shared noise·e`` plus its own nuisance (float64 (n, dim))."""
    fine = rng.integers(0, n_fine, size=n)
    coarse_of = np.arange(n_fine) % n_coarse
    cc = rng.normal(size=(n_coarse, dim)) * 2.0
    fc = rng.normal(size=(n_fine, dim))
    noise = rng.normal(size=(n, dim))

    def latent(a, b, e):
        own = rng.normal(size=(n, dim))  # model-specific nuisance
        return cc[coarse_of[fine]] * a + fc[fine] * b + noise * e + own * 0.6

    return fine, latent


def family_pool(seed: int, *, n: int = 1200, n_coarse: int = 3, n_fine: int = 12, dim: int = 48,
                static_rank: int = 4) -> dict[str, Any]:
    """One synthetic pool: returns ``{"embeddings": {name: (n, d) float32}, "labels": int64 (n,),
    "candidates": {name: {"parent": str | None, "relation": str}}}``.

    Candidates: two teachers (``teacher-A`` weaker fine signal, ``teacher-B`` stronger), the static
    copy of each (rank ``static_rank``), the first quarter of teacher-B's dimensions (``trunc``),
    the sign-binarised teacher-B (``binary``), a noisy bag-of-words-like baseline and a random one.
    """
    rng = np.random.default_rng(seed)
    fine, latent = _latents(rng, n, n_coarse, n_fine, dim)
    emb: dict[str, np.ndarray] = {}
    cands: dict[str, dict[str, Any]] = {}
    ta = _embed(rng, latent(1.0, 0.8, 1.0), 96, True)
    tb = _embed(rng, latent(1.0, 1.3, 1.0), 128, True)
    emb["teacher-A"], cands["teacher-A"] = ta, {"parent": None, "relation": "model"}
    emb["teacher-B"], cands["teacher-B"] = tb, {"parent": None, "relation": "model"}
    emb["static-A"], cands["static-A"] = _pca_copy(ta, static_rank, rng, 0.02), {"parent": "teacher-A", "relation": "distilled"}
    emb["static-B"], cands["static-B"] = _pca_copy(tb, static_rank, rng, 0.02), {"parent": "teacher-B", "relation": "distilled"}
    rot = np.linalg.qr(rng.normal(size=(128, 128)))[0]
    emb["trunc-B"], cands["trunc-B"] = (tb @ rot)[:, :16], {"parent": "teacher-B", "relation": "truncated"}
    emb["binary-B"], cands["binary-B"] = np.sign(tb - tb.mean(0)), {"parent": "teacher-B", "relation": "quantised"}
    emb["bow"], cands["bow"] = _embed(rng, latent(0.6, 0.4, 2.5), 64, False), {"parent": None, "relation": "baseline"}
    emb["random"], cands["random"] = rng.normal(size=(n, 64)), {"parent": None, "relation": "baseline"}
    return {"embeddings": {k: v.astype(np.float32) for k, v in emb.items()}, "labels": fine.astype(np.int64),
            "candidates": cands}


def family_center_pool(seed: int, *, n: int = 600, n_coarse: int = 3, n_fine: int = 12, dim: int = 48) -> dict[str, Any]:
    """The pool of issue 9's held-out trials, synthetically: the best model alone (``teacher-B``, 128-d, strongest
    fine signal) against a weaker model (``teacher-A``, 64-d) that comes with two relatives, a rank-4 static copy
    (``static-A``) and a noisier variant (``pooled-A``, like another pooling), plus a bag-of-words-like baseline and
    a random one. Three of six candidates are A's family, so A is the centre of the pool: the consensus signals
    favour it although B is better. Returns ``{"embeddings": {name: float32 (n, d)}, "labels": int64 (n,)}``."""
    rng = np.random.default_rng(seed)
    fine, latent = _latents(rng, n, n_coarse, n_fine, dim)
    ta = _embed(rng, latent(1.0, 0.8, 1.0), 64, True)
    tb = _embed(rng, latent(1.0, 1.4, 1.0), 128, True)
    emb = {"teacher-B": tb, "teacher-A": ta, "static-A": _pca_copy(ta, 4, rng, 0.02),
           "pooled-A": ta + 0.5 * rng.normal(size=ta.shape) * ta.std(),
           "bow": _embed(rng, latent(0.6, 0.4, 2.5), 64, False), "random": rng.normal(size=(n, 64))}
    return {"embeddings": {k: v.astype(np.float32) for k, v in emb.items()}, "labels": fine.astype(np.int64)}

"""Scoring harness of the wider validity benchmark (issue 9) on the real pools of ``validity_data.py``.

For each dataset (a pool folder written by ``benchmarks/validity_data.py``):

1. ground truth: the tuned logistic probe of :func:`embedselect.validation.heldout.probe_accuracies` (per-dimension
   standardisation or not and C chosen by inner CV; mean held-out accuracy over ``--folds`` outer folds),
   once per candidate, cached as JSON under ``<bench cache>/validity_pools/``;
2. every label-free signal of the metric registry (task_prior, sufficiency and the comparators rankme,
   alpha_req, uniformity, nn_agreement), cached per dataset x metric;
3. Spearman and Kendall (scipy) of each signal and of combined scores against the ground truth, the top
   pick's regret (best accuracy minus the accuracy of the combined score's first candidate under the
   package's tie rule, :func:`embedselect.ranking.ties.order_by_score`) and family violations (a distilled /
   truncated / quantized copy scored strictly above its parent while the parent's accuracy is higher);
4. leave-one-dataset-out (LODO) choice of the combination: for each held-out dataset, the setting
   (weight of sufficiency vs task_prior, optional comparator) with the best mean Spearman on the *other*
   datasets is chosen and its held-out Spearman / regret reported next to the pre-2026-11-23 default (equal weights of
   task_prior and sufficiency).

Run (the pools must exist; see ``validity_data.py``)::

    nice -n 5 python -m benchmarks.validity_pools --datasets polarity analogy empath --out /tmp/vp.md

Every number is a benchmark result, never a test threshold.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from benchmarks.bench_io import bench_cache, save_json
from benchmarks.sets.registry import DATASETS as ALL_DATASETS
from benchmarks.sets.registry import stratified_indices
from benchmarks.validity_data import load_pool

log = logging.getLogger("validity_pools")

DATASETS = ("polarity", "analogy", "empath", "vader", "emoji", "digits", "mnist-5k",
            "trec", "sms-spam", "amazon-reviews")
MISSION = ("task_prior", "sufficiency")
COMPARATORS = ("rankme", "alpha_req", "uniformity", "nn_agreement", "modularity")
SIGNALS = MISSION + COMPARATORS
VARIANTS = {"task_prior-consensus": ("task_prior", {"prior": "consensus"}),
            "sufficiency-normal_scores": ("sufficiency", {"normal_scores": True}),
            "task_prior-all": ("task_prior", {"prior_from": "all"}),
            "nn_agreement-all": ("nn_agreement", {"compare_with": "all"}),
            "sufficiency-all": ("sufficiency", {"targets": "all"}),
            "sufficiency-gaussian": ("sufficiency", {"estimator": "gaussian"}),
            "sufficiency-knife": ("sufficiency", {"estimator": "knife"}),
            "sufficiency-knife-once": ("sufficiency", {"estimator": "knife", "max_repeats": 1}),
            "task_prior-q4": ("task_prior", {"n_classes": 4}),
            "task_prior-q8": ("task_prior", {"n_classes": 8}),
            "task_prior-t1024": ("task_prior", {"n_tasks": 1024}),
            "task_prior-central": ("task_prior", {"prior": "central"}),
            "task_prior-balanced": ("task_prior", {"prior": "balanced"}),
            "task_prior-clusters": ("task_prior", {"tasks": "clusters", "leave_self_out": True}),
            "task_prior-clusters-self": ("task_prior", {"tasks": "clusters"}),
            "task_prior-clusters32": ("task_prior", {"tasks": "clusters", "leave_self_out": True,
                                                     "cluster_restarts": 32})}
"""Signals computed with non-default options (``--metrics task_prior-consensus ...``): name -> (metric, options);
``validity_default.py`` puts them in its LODO grid as alternatives to the default options (issue 23)."""
COPY_RELATIONS = ("distilled", "truncated", "quantized-int8", "quantized-binary", "max_length")
"""Pool relations that make a copy: never above its parent (issue 23; ``max_length``: the input cut shorter)."""
SUFF_WEIGHTS = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0)
DEFAULT_SETTING = (1.0, None)
"""The default combination before 2026-11-23 (task_prior and sufficiency with equal weights, mean rank, no comparator),
the reference of this harness's tables; the current default is chosen by ``validity_default.py``."""
TARGETS = {"spearman_each": 0.8, "spearman_mean": 0.9, "regret": 0.02}
POOLS = {
    "all": None,
    # the pool of issue 9's held-out trials, as a new user would build it: the two real models, MiniLM with CLS
    # pooling, the static copy distilled from MiniLM, and the two baselines (text datasets only)
    "issue": ("all-mpnet-base-v2", "all-MiniLM-L6-v2", "all-MiniLM-L6-v2-cls", "m2v-MiniLM-256", "tfidf-svd",
              "random-projection"),
    # issue 23's width-bias and truncation question: the issue pool plus wide-but-weak candidates (mpnet's layer 1 at
    # 768 dims, a 1024-dim random projection, the 384-dim static copy without PCA) and MiniLM fed 8 tokens
    "width": ("all-mpnet-base-v2", "all-MiniLM-L6-v2", "all-MiniLM-L6-v2-cls", "m2v-MiniLM-256", "tfidf-svd",
              "random-projection", "all-mpnet-base-v2-layer1", "random-projection-1024", "m2v-MiniLM-raw",
              "all-MiniLM-L6-v2-len8"),
    # an image pool of 8: three EfficientNet-Lite sizes, Lite0 at 128 px, with max pooling and untrained, two baselines
    "photo8": ("efficientnet-lite0", "efficientnet-lite1", "efficientnet-lite2", "efficientnet-lite0-128px",
               "efficientnet-lite0-maxpool", "efficientnet-lite0-untrained", "pixel-pca", "random-projection"),
    # pools as users build them (issue 41): unbalanced families, two-model pools, larger-but-worse models
    # the pool of 8: both models, MiniLM with CLS pooling and cut to 8 tokens, a static copy of each
    "issue8": ("all-mpnet-base-v2", "all-MiniLM-L6-v2", "all-MiniLM-L6-v2-cls", "all-MiniLM-L6-v2-len8",
               "m2v-MiniLM-256", "m2v-mpnet-256", "tfidf-svd", "random-projection"),
    # MiniLM with four options or copies beside mpnet with none
    "minilm-heavy": ("all-mpnet-base-v2", "all-MiniLM-L6-v2", "all-MiniLM-L6-v2-cls", "all-MiniLM-L6-v2-len8",
                     "all-MiniLM-L6-v2-layer3", "m2v-MiniLM-256", "tfidf-svd", "random-projection"),
    # mpnet with four options or copies beside MiniLM with none
    "mpnet-heavy": ("all-mpnet-base-v2", "all-mpnet-base-v2-first128", "all-mpnet-base-v2-int8",
                    "all-mpnet-base-v2-len8", "m2v-mpnet-256", "all-MiniLM-L6-v2", "tfidf-svd", "random-projection"),
    # two models and the baselines
    "two-models": ("all-mpnet-base-v2", "all-MiniLM-L6-v2", "tfidf-svd", "random-projection"),
    # two small static models and the baselines
    "two-static": ("m2v-MiniLM-256", "m2v-mpnet-256", "tfidf-svd", "random-projection"),
    # the larger model run in a worse way (its first layer; fed 8 tokens), beside the smaller model as shipped
    "larger-worse": ("all-mpnet-base-v2-layer1", "all-MiniLM-L6-v2", "m2v-MiniLM-256", "tfidf-svd",
                     "random-projection"),
    "larger-short": ("all-mpnet-base-v2-len8", "all-MiniLM-L6-v2", "all-MiniLM-L6-v2-cls", "tfidf-svd",
                     "random-projection"),
    # pools of three to five text model families (each family: a model with its options and copies), as users build
    # them once they try more than two models: MiniLM and mpnet beside multilingual-e5-small, the Universal Sentence
    # Encoder (multilingual 3) and GloVe 6B 50d (candidates.E5, USE, GLOVE)
    "three-families": ("all-mpnet-base-v2", "all-MiniLM-L6-v2", "multilingual-e5-small", "tfidf-svd",
                       "random-projection"),
    "four-families": ("all-mpnet-base-v2", "all-MiniLM-L6-v2", "multilingual-e5-small", "use-multilingual-3",
                      "tfidf-svd", "random-projection"),
    # e5 with two copies (its first 128 dimensions, int8) beside MiniLM and USE with one member each
    "families-unbalanced": ("multilingual-e5-small", "multilingual-e5-small-first128", "multilingual-e5-small-int8",
                            "all-MiniLM-L6-v2", "use-multilingual-3", "tfidf-svd", "random-projection"),
    # the largest model run in a worse way (mpnet's first layer) beside three smaller models as shipped
    "families-larger-worse": ("all-mpnet-base-v2-layer1", "all-MiniLM-L6-v2", "use-multilingual-3", "glove-6B-50d",
                              "tfidf-svd", "random-projection"),
    # image: two sizes and the baselines; Lite0 with four options beside Lite1 and Lite2; an early stage of the
    # largest network beside the smallest as shipped
    "photo-two": ("efficientnet-lite0", "efficientnet-lite2", "pixel-pca", "random-projection"),
    "photo-heavy": ("efficientnet-lite0", "efficientnet-lite0-stage5", "efficientnet-lite0-maxpool",
                    "efficientnet-lite0-128px", "efficientnet-lite0-int8", "efficientnet-lite1", "efficientnet-lite2",
                    "pixel-pca", "random-projection"),
    "photo-larger-worse": ("efficientnet-lite0-stage3", "efficientnet-lite1", "efficientnet-lite0-untrained",
                           "pixel-pca", "random-projection"),
}
"""Named candidate subsets (``--pool``); ``all`` is every candidate of the dataset's pool."""
POOL_MODALITY = {"issue": "text", "width": "text", "photo8": "image", "issue8": "text", "minilm-heavy": "text",
                 "mpnet-heavy": "text", "two-models": "text", "two-static": "text", "larger-worse": "text",
                 "larger-short": "text", "three-families": "text", "four-families": "text",
                 "families-unbalanced": "text", "families-larger-worse": "text", "photo-two": "image", "photo-heavy": "image", "photo-larger-worse": "image"}
"""The modality of each named pool's candidates: ``--pool`` runs such a pool on datasets of that modality only
(others are skipped, said on stderr); without ``--datasets`` it runs on every dataset of ``sets.registry.DATASETS``
of that modality."""


# ------------------------------------------------------------------------------------------------
# pure scoring functions (tested in benchmarks/tests/test_validity_pools.py)
# ------------------------------------------------------------------------------------------------
def _finite(scores: Mapping[str, float | None]) -> dict[str, float]:
    return {k: float(v) for k, v in scores.items() if v is not None and math.isfinite(float(v))}


def correlations(scores: Mapping[str, float | None], truth: Mapping[str, float]) -> tuple[float, float]:
    """(Spearman rho, Kendall tau-b) between a signal (higher = better) and the ground-truth accuracy over the
    candidates both have finite values for; NaN with fewer than 3 such candidates or a constant side."""
    from scipy.stats import kendalltau, spearmanr

    sc = _finite(scores)
    keys = sorted(k for k in sc if k in truth and math.isfinite(truth[k]))
    if len(keys) < 3:
        return math.nan, math.nan
    a = np.array([sc[k] for k in keys], dtype=np.float64)
    b = np.array([truth[k] for k in keys], dtype=np.float64)
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return math.nan, math.nan
    return float(spearmanr(a, b).statistic), float(kendalltau(a, b).statistic)


def top_pick(scores: Mapping[str, float | None]) -> tuple[str | None, list[str]]:
    """(first candidate under the package's tie rule, the candidates tied with it)."""
    from embedselect.ranking.ties import tie_groups

    groups = tie_groups(scores)
    if not groups:
        return None, []
    return groups[0][0], list(groups[0])


def regret(scores: Mapping[str, float | None], truth: Mapping[str, float]) -> float:
    """Best ground-truth accuracy minus the accuracy of the signal's top pick (accuracy points as a fraction);
    NaN when the signal scored nothing."""
    pick, _ = top_pick({k: v for k, v in scores.items() if k in truth})
    if pick is None:
        return math.nan
    return float(max(truth.values()) - truth[pick])


def family_violations(
    scores: Mapping[str, float | None], truth: Mapping[str, float], entries: Sequence[Mapping[str, Any]],
    relations: Sequence[str] = COPY_RELATIONS,
) -> list[tuple[str, str]]:
    """(copy, parent) pairs where a copy (``relation`` in ``relations``) is scored strictly above its parent
    while the parent's ground-truth accuracy is strictly higher. Candidates without a finite score are skipped."""
    sc = _finite(scores)
    out = []
    for e in entries:
        c, p = e.get("name"), e.get("parent")
        if e.get("relation") not in relations or p is None:
            continue
        if c in sc and p in sc and c in truth and p in truth and sc[c] > sc[p] and truth[p] > truth[c]:
            out.append((c, p))
    return out


def settings_grid(comparators: Sequence[str] = COMPARATORS) -> list[tuple[float, str | None]]:
    """Every (sufficiency weight vs task_prior weight 1, comparator added with weight 1 or None); today's
    default first so it wins ties in :func:`lodo_select`."""
    grid = [DEFAULT_SETTING]
    for comp in (None, *comparators):
        for w in SUFF_WEIGHTS:
            if (w, comp) != DEFAULT_SETTING:
                grid.append((w, comp))
    return grid


def setting_weights(setting: tuple[float, str | None]) -> dict[str, float]:
    w_suff, comp = setting
    w = {"task_prior": 1.0, "sufficiency": float(w_suff)}
    if comp:
        w[comp] = 1.0
    return w


def setting_label(setting: tuple[float, str | None]) -> str:
    w_suff, comp = setting
    return f"tp 1 + suff {w_suff:g}" + (f" + {comp} 1" if comp else "")


def combined_scores(signals: Mapping[str, Mapping[str, float]], setting: tuple[float, str | None]) -> dict[str, float]:
    """The package's combination (:func:`embedselect.ranking.combine.combine_ranks`, mean-rank) under one setting."""
    from embedselect.ranking.combine import combine_ranks

    w = setting_weights(setting)
    return combine_ranks({m: signals[m] for m in w if m in signals}, weights={m: v for m, v in w.items() if m in signals})


def lodo_select(table: Mapping[str, Mapping[Any, float]], settings: Sequence[Any]) -> dict[str, Any]:
    """Leave-one-dataset-out choice: ``table[dataset][setting]`` = that setting's Spearman on that dataset.

    For each held-out dataset, the setting with the highest mean Spearman over the other datasets (NaN counts
    as -1: an undefined ranking is a failed one); ties go to the earlier setting in ``settings``.
    Returns held-out dataset -> chosen setting. Needs at least 2 datasets.
    """
    names = list(table)
    if len(names) < 2:
        raise ValueError("leave-one-dataset-out needs at least 2 datasets")
    out = {}
    for held in names:
        others = [d for d in names if d != held]
        best, best_v = None, -math.inf
        for s in settings:
            vals = [table[d].get(s, math.nan) for d in others]
            v = float(np.mean([x if math.isfinite(x) else -1.0 for x in vals]))
            if v > best_v + 1e-12:
                best, best_v = s, v
        out[held] = best
    return out


# ------------------------------------------------------------------------------------------------
# cached computations
# ------------------------------------------------------------------------------------------------
def _cache_dir(name: str, n: int, seed: int, pool: str = "all") -> Path:
    d = bench_cache() / "validity_pools" / name / (f"n{n}_seed{seed}" + ("" if pool == "all" else f"_{pool}"))
    d.mkdir(parents=True, exist_ok=True)
    return d


def _probe_one(x: np.ndarray, y: np.ndarray, folds: int, seed: int) -> dict[str, Any]:
    from embedselect.validation.heldout import probe_accuracies

    t0 = time.perf_counter()
    df = probe_accuracies({"x": x}, y, cv=folds, seed=seed, probes=("logistic",))
    r = df.loc["x"]
    return {
        "acc": float(r["logistic_acc"]), "acc_std": float(r["logistic_acc_std"]), "C": float(r["logistic_C"]),
        "standardised": float(r["logistic_standardised"]), "n_folds": int(df.attrs["n_folds"]),
        "seconds": round(time.perf_counter() - t0, 2),
    }


def ground_truth(name: str, y: np.ndarray, vectors: Mapping[str, np.ndarray], *, n: int, seed: int, folds: int,
                 jobs: int, split_seed: int | None = None) -> dict[str, dict[str, Any]]:
    """candidate -> tuned-probe result (``acc`` fraction in [0, 1]), cached per candidate. ``seed`` picks the items
    (the cache folder); ``split_seed`` (default ``seed``) the probe's outer and inner folds: another value measures
    the same items' truth again on other splits (``truth_noise.py``)."""
    split = seed if split_seed is None else split_seed
    suffix = "" if split == seed else f"_split{split}"
    path = _cache_dir(name, n, seed) / f"truth_logistic_f{folds}{suffix}.json"
    cache = json.loads(path.read_text()) if path.is_file() else {}
    todo = [c for c in vectors if c not in cache]
    if todo:
        with ProcessPoolExecutor(max_workers=max(1, jobs)) as ex:
            futs = {c: ex.submit(_probe_one, vectors[c], y, folds, split) for c in todo}
            for c, f in futs.items():
                cache[c] = f.result()
                log.info("%s: truth %s acc=%.4f (%.0f s)", name, c, cache[c]["acc"], cache[c]["seconds"])
                save_json(path, cache)
    return {c: cache[c] for c in vectors}


def pool_roles(entries: Sequence[Mapping[str, Any]], names: Sequence[str]) -> tuple[frozenset[str], dict[str, str]]:
    """What ``select()`` tells the metrics about a pool (``MetricContext.references`` and ``.families``), from the
    pool's ``candidates.json`` entries: the built-in baselines, and each candidate's family, the root of its ``parent``
    chain (a variant by pooling, layer, resolution or max_length, and a truncated, quantised or distilled copy belong
    to the model they come from, as :func:`embedselect.pipeline.families.pool_relations` groups them)."""
    parent = {e["name"]: e.get("parent") for e in entries}
    refs = frozenset(e["name"] for e in entries if e.get("kind") == "baseline" and e["name"] in names)

    def root(c: str) -> str:
        while parent.get(c) and parent[c] in names:
            c = parent[c]
        return c

    return refs, {c: root(c) for c in names}


class FilePairCache:
    """Sufficiency's pair cache for the benchmark: one JSON file per pair or marginal under
    ``$EMBEDSELECT_BENCH_CACHE/sufficiency_pairs/``, so that a named pool's pairs (a subset of the dataset's full pool,
    the same run keys and seed) are read, not estimated again. Written with a temporary name and renamed, so two
    processes never read half a file."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root or bench_cache() / "sufficiency_pairs"
        self.root.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        return self.root / (key.replace(":", "_") + ".json")

    def get_many(self, keys: list[str]) -> dict[str, Any]:
        return {k: json.loads(p.read_text()) for k in keys if (p := self._path(k)).is_file()}

    def put_many(self, items: Mapping[str, Any]) -> None:
        for k, v in items.items():
            tmp = self._path(k).with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(v))
            os.replace(tmp, self._path(k))


def _metric_one(metric: str, vectors: Mapping[str, np.ndarray], keys: Mapping[str, str], seed: int,
                references: frozenset[str] = frozenset(), families: Mapping[str, str] | None = None,
                pair_cache: Any = None):
    """One signal on one view: {"scores", "seconds"} (and sufficiency's "matrix"). Sufficiency's pairs are read from
    and stored in ``pair_cache`` (default :class:`FilePairCache`); under the metric's ``pairs`` default the KNIFE
    estimate trains only the pairs its scores read
    (:func:`~embedselect.metrics.sufficiency.score.scored_targets`)."""
    from threadpoolctl import threadpool_limits

    from embedselect.metrics.base import MetricContext, get_metric

    base, options = VARIANTS.get(metric, (metric, {}))
    cache = pair_cache if pair_cache is not None else FilePairCache()
    t0 = time.perf_counter()
    with threadpool_limits(limits=1):
        res = get_metric(base)(MetricContext(embeddings=dict(vectors), run_keys=dict(keys), seed=seed,
                                             options=dict(options), references=references,
                                             families=dict(families or {}), pair_cache=cache))
    out = {"scores": {k: (float(v) if v is not None else None) for k, v in res.scores.items()},
           "seconds": round(time.perf_counter() - t0, 2)}
    if "matrix" in res.details:  # sufficiency's pairwise matrix (source -> target -> nats/dim), for variants of it
        out["matrix"] = res.details["matrix"]
    return out


def metric_cache_name(metric: str, central: frozenset[str] | set[str] = frozenset(), version: str | None = None) -> str:
    """The cache file of a signal: named by the metric's code version too (``version``, default the current code's,
    10 hex digits), so a change of the metric's code (or of its options' defaults) computes it again instead of
    reading a stale result; and by the built-in baselines counted as evidence in the view (``central``,
    :func:`central_of_view`), when there are any."""
    from embedselect.metrics.base import get_spec

    suffix = f"_ev-{'+'.join(sorted(central))}" if central else ""
    version = version or get_spec(VARIANTS.get(metric, (metric, {}))[0]).code_version()[:10]
    return f"metric_{metric}_{version}{suffix}.json"


SAME_RESULTS: dict[str, tuple[str, ...]] = {"sufficiency": ("4418c76f9f", "f688edec50", "fb52e19e3f"),
                                             "sufficiency-gaussian": ("f688edec50", "fb52e19e3f")}
"""Earlier code versions of a signal that compute what the current code computes, measured: their cached results are
read where the current version's file is absent, the first version listed first. sufficiency's 4418c76f9f is the code
before the pair choice moved into one helper shared with the Ray precompute (the third round of text sets was scored
with it): recomputed with the current code (fresh pair cache) on quote-sources/issue8, fortune-topics/three-families
and food-kinds/two-models, the largest differences from the cached files are 0, 3.0e-6 and 4.7e-9, the same order on
all three; again 0 and 3.0e-6 on the first two after the pair choice moved into ``metrics/sufficiency/pairs.py``. f688edec50 is the code
before the metric's ``pairs`` option (it trained every pair; the benchmark then skipped the unread ones with a pair
cache of its own that answered them NaN): recomputed with the current code on whissell-imagery/issue8, convention-2012/three-families
and debates-2016/issue8 (fresh pair cache), the same order on all three and the same scores as the earlier code
recomputed the same way (to 1e-9); against the cached files the largest differences are 3.4e-8, 3.5e-6 and 8.8e-4
(whissell-imagery's tfidf-svd: the earlier code recomputed differs from its own cached file by the same amount).
fb52e19e3f is the code before the
module split of dfbb8f1 (``metrics/sufficiency/rows.py`` out of ``score.py``): on the 83 cached views that hold both
files the candidates' order is the same on 81 and Spearman 0.976 on the other 2 (empath/issue8, empath/minilm-heavy),
largest score difference 0.0009 (vader). The Gaussian estimate (``sufficiency-gaussian``, the image default's) is
untouched by either change: recomputed with the current code on the 20 image views of the pools ``photo8``,
``photo-two``, ``photo-heavy`` and ``photo-larger-worse``, it differs from the f688edec50 files by at most 3e-16, and
on the 8 views that also hold fb52e19e3f files
the two files agree exactly."""


SAME_CODE: dict[str, tuple[str, ...]] = {"task_prior": ("ad4fe381eb",), "sufficiency": ("45a1eaeef2",)}
"""Earlier code versions of a metric (every signal of it, its variants too) that *are* the current code: only the
version's key changed, because a module that was always part of the computation was added to the metric's code list
(``MetricSpec.code``: ``metrics/content_seed.py`` for both, ``metrics/sufficiency/rows.py`` and
``metrics/normal_scores.py`` for sufficiency; ``tests/test_layers.py::
test_a_metrics_code_version_covers_every_module_of_its_package``). Read like :data:`SAME_RESULTS`, before it."""


def cached_signal(folder: Path, metric: str, central: frozenset[str] | set[str] = frozenset()) -> Path:
    """The file of ``metric``'s cached result in a view's cache folder: the current code version's, else that of an
    earlier version in :data:`SAME_CODE` (by the signal's metric) or :data:`SAME_RESULTS` (by the signal) when one is
    there, else the current version's path (absent)."""
    current = folder / metric_cache_name(metric, central)
    if current.is_file():
        return current
    base = VARIANTS.get(metric, (metric, {}))[0]
    for version in (*SAME_CODE.get(base, ()), *SAME_RESULTS.get(metric, ())):
        earlier = folder / metric_cache_name(metric, central, version)
        if earlier.is_file():
            return earlier
    return current


def central_of_view(name: str, vectors: Mapping[str, np.ndarray], references: frozenset[str],
                    families: Mapping[str, str] | None, *, n: int, seed: int, pool: str = "all") -> frozenset[str]:
    """The built-in baselines ``select()`` counts as evidence in this view, being as central as its models
    (:func:`embedselect.metrics.comparators.agreement.central_in_pool` with the metric ``seed``), cached per view and seed; none
    when the view has no baselines."""
    from embedselect.metrics.comparators.agreement import central_in_pool
    from embedselect.metrics.base import MetricContext, get_spec

    if not references:
        return frozenset()

    path = _cache_dir(name, n, seed, pool) / f"central_{get_spec('nn_agreement').code_version()[:10]}.json"
    got = json.loads(path.read_text()) if path.is_file() else None
    if got and set(got["candidates"]) == set(vectors) and set(got["references"]) == set(references):
        return frozenset(got["central"])
    keys = {c: f"{name}:{c}:n{n}:seed{seed}" for c in vectors}
    central = central_in_pool(MetricContext(embeddings=dict(vectors), run_keys=keys, seed=seed, options={},
                                            references=references, families=dict(families or {})))
    save_json(path, {"candidates": sorted(vectors), "references": sorted(references), "central": central})
    return frozenset(central)


class _Now:
    """A call made when its result is asked for, shaped like a future (``result()``), so that an error is reported
    where a pool's would be."""

    def __init__(self, fn: Any, *args: Any) -> None:
        self.fn, self.args = fn, args

    def result(self) -> Any:
        return self.fn(*self.args)


def signals(name: str, vectors: Mapping[str, np.ndarray], *, n: int, seed: int, metrics: Sequence[str],
            jobs: int, pool: str = "all", references: frozenset[str] = frozenset(),
            families: Mapping[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """metric -> {"scores": {candidate: score}, "seconds": s}, cached per metric (and its code version) and named pool
    (recomputed when the pool's candidates changed). ``references``: the pool's built-in baselines, as ``select()``
    marks them (:attr:`embedselect.metrics.base.MetricContext.references`), less those it counts as evidence
    (:func:`central_of_view`); ``families``: :func:`pool_roles`."""
    d = _cache_dir(name, n, seed, pool)
    central = central_of_view(name, vectors, references, families, n=n, seed=seed, pool=pool)
    references = references - central
    out, todo = {}, []
    for m in metrics:
        p = cached_signal(d, m, central)
        got = json.loads(p.read_text()) if p.is_file() else None
        if got and set(got["scores"]) == set(vectors):
            out[m] = got
        else:
            todo.append(m)
    if todo:
        keys = {c: f"{name}:{c}:n{n}:seed{seed}" for c in vectors}
        # one signal to compute (the usual case once a view is cached) or one job: in this process, since starting
        # a process pool (and torch in it) costs more than most signals at 300 items
        inline = len(todo) == 1 or jobs <= 1
        with contextlib.nullcontext() if inline else ProcessPoolExecutor(max_workers=jobs) as ex:
            futs = {m: _Now(_metric_one, m, vectors, keys, seed, references, families) if ex is None
                    else ex.submit(_metric_one, m, vectors, keys, seed, references, families) for m in todo}
            for m, f in futs.items():
                try:
                    out[m] = f.result()
                except Exception as err:  # a signal that fails is reported as failed, not hidden
                    log.warning("%s: %s failed: %s", name, m, err)
                    out[m] = {"scores": {}, "seconds": None, "error": f"{type(err).__name__}: {err}"}
                    continue
                log.info("%s: %s done (%.0f s)", name, m, out[m]["seconds"])
                save_json(d / metric_cache_name(m, central), out[m])
    return {m: out[m] for m in metrics}


# ------------------------------------------------------------------------------------------------
# one dataset, all datasets, markdown
# ------------------------------------------------------------------------------------------------
def datasets_for_pool(pool: str, names: Sequence[str] | None) -> list[str]:
    """The datasets a ``--pool`` run covers: ``names`` (default :data:`DATASETS`, or for a pool of one modality every
    dataset of that modality in ``sets.registry.DATASETS``) less those of another modality than the pool's (logged).
    Unknown names are kept (``load_pool`` then says how to build them)."""
    modality = POOL_MODALITY.get(pool)
    if names is None:
        return [d for d, ds in ALL_DATASETS.items() if ds.modality == modality] if modality else list(DATASETS)
    keep = []
    for d in names:
        ds = ALL_DATASETS.get(d)
        if modality and ds is not None and ds.modality != modality:
            log.warning("%s (%s) skipped: pool %r has %s candidates", d, ds.modality, pool, modality)
            continue
        keep.append(d)
    return keep


def run_dataset(name: str, *, max_items: int, seed: int, folds: int, metrics: Sequence[str], jobs: int,
                pool: str = "all") -> dict[str, Any]:
    meta, labels, _items, entries, vectors = load_pool(name)
    if POOLS[pool] is not None:
        missing = [c for c in POOLS[pool] if c not in vectors]
        if missing:
            raise SystemExit(f"{name}: pool {pool!r} needs candidates {missing}, which this dataset has not")
        vectors = {c: vectors[c] for c in POOLS[pool]}
        entries = [e for e in entries if e["name"] in vectors]
    # a stratified sample needs at least one left-out item per class; with fewer to leave out, keep all items
    n_cls = len(np.unique(labels))
    keep_all = len(labels) - max_items < n_cls
    idx = np.arange(len(labels)) if keep_all else stratified_indices([str(v) for v in labels], max_items, seed)
    y = labels[idx]
    vectors = {c: np.ascontiguousarray(v[idx], dtype=np.float32) for c, v in vectors.items()}
    n = len(idx)
    t0 = time.perf_counter()
    truth_full = ground_truth(name, y, vectors, n=n, seed=seed, folds=folds, jobs=jobs)
    truth = {c: r["acc"] for c, r in truth_full.items()}
    references, families = pool_roles(entries, list(vectors))
    sig = signals(name, vectors, n=n, seed=seed, metrics=metrics, jobs=jobs, pool=pool, references=references,
                  families=families)
    per_signal = {}
    for m, r in sig.items():
        rho, tau = correlations(r["scores"], truth)
        pick, tied = top_pick(r["scores"])
        per_signal[m] = {"spearman": rho, "kendall": tau, "regret": regret(r["scores"], truth) if r["scores"] else math.nan,
                         "top": pick, "tied": tied, "violations": family_violations(r["scores"], truth, entries),
                         "seconds": r.get("seconds"), "error": r.get("error")}
    scores = {m: r["scores"] for m, r in sig.items() if r["scores"]}
    per_setting = {}
    for s in settings_grid([c for c in COMPARATORS if c in scores]):
        if not all(m in scores for m in setting_weights(s)):
            continue
        comb = combined_scores(scores, s)
        rho, tau = correlations(comb, truth)
        pick, tied = top_pick(comb)
        per_setting[s] = {"spearman": rho, "kendall": tau, "regret": regret(comb, truth), "top": pick, "tied": tied,
                          "violations": family_violations(comb, truth, entries)}
    return {"name": name, "modality": meta["modality"], "n": n, "n_pool": meta["n"], "n_total": meta.get("n_total", meta["n"]),
            "n_classes": meta["n_classes"], "entries": entries, "truth": truth_full, "signals": per_signal,
            "settings": per_setting, "seconds": round(time.perf_counter() - t0, 1)}


def _f(x: Any, nd: int = 3) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    return f"{x:.{nd}f}"


def _miss(v: float, target: float, higher: bool = True) -> str:
    if not math.isfinite(v):
        return "MISS"
    return "ok" if (v >= target if higher else v <= target) else "MISS"


def to_markdown(results: list[dict[str, Any]], *, command: str, folds: int, max_items: int, seed: int) -> str:
    L = [f"Command: `{command}`", "",
         f"Ground truth: tuned logistic probe (`embedselect.validation.heldout`, inner CV over per-dimension standardisation "
         f"and C ∈ {{0.01, 0.1, 1, 10, 100}}), mean held-out accuracy over {folds} stratified outer folds, seed {seed}; "
         f"at most {max_items} items per dataset (stratified, seeded). Label-free signals at their defaults, seed {seed}.",
         ""]
    # ground truth
    L += ["**Ground truth (tuned probe accuracy)**", ""]
    for r in results:
        best = max(r["truth"].items(), key=lambda kv: kv[1]["acc"])
        accs = ", ".join(f"{c} {v['acc']:.3f}" for c, v in sorted(r["truth"].items(), key=lambda kv: -kv[1]["acc"]))
        L.append(f"- {r['name']} ({r['modality']}, n={r['n']} of the pool's {r['n_pool']} (dataset {r['n_total']}), {r['n_classes']} classes, "
                 f"{len(r['truth'])} candidates): best {best[0]}; {accs}")
    L.append("")
    # per-signal table
    sigs = list(results[0]["signals"]) if results else []
    L += ["**Each signal alone: Spearman ρ / Kendall τ vs the tuned probe, top-pick regret, copy-above-teacher violations**", "",
          "| dataset | " + " | ".join(sigs) + " |", "|---|" + "---|" * len(sigs)]
    for r in results:
        cells = []
        for m in sigs:
            s = r["signals"][m]
            if s.get("error"):
                cells.append("failed")
                continue
            cells.append(f"{_f(s['spearman'], 2)} / {_f(s['kendall'], 2)}, regret {_f(s['regret'])}, viol {len(s['violations'])}")
        L.append(f"| {r['name']} | " + " | ".join(cells) + " |")
    if len(results) > 0:
        L.append("| mean ρ | " + " | ".join(_f(float(np.nanmean([r["signals"][m]["spearman"] for r in results])), 2)
                                          for m in sigs) + " |")
    L.append("")
    # default combination
    L += ["**The pre-2026-11-23 default (task_prior + sufficiency, equal weights, mean rank) vs the targets**", "",
          "| dataset | Spearman | Kendall | top pick (tied) | regret | copies above a better parent | ρ ≥ 0.8 | regret ≤ 0.02 |",
          "|---|---|---|---|---|---|---|---|"]
    for r in results:
        s = r["settings"].get(DEFAULT_SETTING)
        if s is None:
            L.append(f"| {r['name']} | – | – | – | – | – | MISS | MISS |")
            continue
        tied = f" (tied: {', '.join(t for t in s['tied'] if t != s['top'])})" if len(s["tied"]) > 1 else ""
        viol = "; ".join(f"{c} > {p}" for c, p in s["violations"]) or "none"
        L.append(f"| {r['name']} | {_f(s['spearman'], 2)} | {_f(s['kendall'], 2)} | {s['top']}{tied} | {_f(s['regret'])} | "
                 f"{viol} | {_miss(s['spearman'], TARGETS['spearman_each'])} | {_miss(s['regret'], TARGETS['regret'], False)} |")
    if results:
        rhos = [r["settings"].get(DEFAULT_SETTING, {}).get("spearman", math.nan) for r in results]
        m = float(np.nanmean(rhos)) if any(math.isfinite(x) for x in rhos) else math.nan  # none: no mean, no warning
        L += ["", f"Mean Spearman of the default: {_f(m, 3)} (target ≥ 0.9: {_miss(m, TARGETS['spearman_mean'])})."]
    L.append("")
    # LODO
    table = {r["name"]: {s: v["spearman"] for s, v in r["settings"].items()} for r in results}
    common = [s for s in settings_grid() if all(s in table[d] for d in table)]
    if len(results) >= 2 and common:  # no setting is common when the signals a setting needs were not computed
        chosen = lodo_select(table, common)
        L += [f"**Leave-one-dataset-out choice of the combination** ({len(common)} settings: sufficiency weight ∈ "
              f"{{{', '.join(f'{w:g}' for w in SUFF_WEIGHTS)}}} against task_prior weight 1, × comparator ∈ {{none, "
              f"{', '.join(COMPARATORS)}}} at weight 1; for each held-out dataset the setting is chosen by the best mean "
              f"Spearman over the *other* {len(results) - 1} datasets only, ties to the default)", "",
              "| held-out dataset | setting chosen on the others | held-out ρ (chosen) | held-out regret (chosen) | "
              "held-out ρ (default) | held-out regret (default) | copy violations (chosen) |", "|---|---|---|---|---|---|---|"]
        rc, rd, gc, gd = [], [], [], []
        for r in results:
            s = chosen[r["name"]]
            c, d = r["settings"][s], r["settings"][DEFAULT_SETTING]
            rc.append(c["spearman"])
            rd.append(d["spearman"])
            gc.append(c["regret"])
            gd.append(d["regret"])
            L.append(f"| {r['name']} | {setting_label(s)} | {_f(c['spearman'], 2)} | {_f(c['regret'])} | "
                     f"{_f(d['spearman'], 2)} | {_f(d['regret'])} | {len(c['violations'])} |")
        L.append(f"| **mean** | | {_f(float(np.nanmean(rc)), 3)} | {_f(float(np.nanmean(gc)))} | "
                 f"{_f(float(np.nanmean(rd)), 3)} | {_f(float(np.nanmean(gd)))} | |")
        L.append("")
        # in-sample view of the best few settings (for information; NOT a held-out number)
        mean_all = {s: float(np.mean([table[d][s] if math.isfinite(table[d][s]) else -1.0 for d in table])) for s in common}
        top = sorted(common, key=lambda s: -mean_all[s])[:5]
        L += ["In-sample (all datasets, for information only, not a held-out result): best settings by mean ρ: "
              + "; ".join(f"{setting_label(s)} {mean_all[s]:.3f}" for s in top)
              + f"; default {mean_all.get(DEFAULT_SETTING, math.nan):.3f}.", ""]
    times = ", ".join(f"{r['name']} " + "/".join(f"{m} {_f(r['signals'][m]['seconds'], 0)}s" for m in sigs) for r in results)
    L += [f"Signal run times (seconds, cached after the first run): {times}.", ""]
    return "\n".join(L)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", nargs="+", default=None,
                    help=f"default: {' '.join(DATASETS)}; with a pool of one modality, every dataset of that modality")
    ap.add_argument("--metrics", nargs="+", default=list(SIGNALS), choices=list(SIGNALS) + list(VARIANTS))
    ap.add_argument("--max-items", type=int, default=2000, help="stratified, seeded sub-sample per dataset")
    ap.add_argument("--folds", type=int, default=5, help="outer folds of the ground-truth probe")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--pool", choices=sorted(POOLS), default="all", help="candidate subset of each dataset's pool")
    ap.add_argument("--jobs", type=int, default=2, help="processes for probes and metrics")
    ap.add_argument("--out", type=Path, default=None, help="also write the markdown here")
    ap.add_argument("--json", type=Path, default=None, help="also write the raw results here")
    a = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    command = "python -m benchmarks.validity_pools " + " ".join(sys.argv[1:] if argv is None else argv)
    datasets = datasets_for_pool(a.pool, a.datasets)
    if not datasets:
        ap.error(f"none of {a.datasets} is a {POOL_MODALITY.get(a.pool)} dataset, which pool {a.pool!r} needs")
    results = [run_dataset(d, max_items=a.max_items, seed=a.seed, folds=a.folds, metrics=a.metrics, jobs=a.jobs,
                           pool=a.pool) for d in datasets]
    md = to_markdown(results, command=command, folds=a.folds, max_items=a.max_items, seed=a.seed)
    print(md)
    if a.out:
        a.out.write_text(md)
    if a.json:
        from embedselect.ranking.io import to_jsonable

        raw = [{**r, "settings": {setting_label(s): v for s, v in r["settings"].items()}} for r in results]
        a.json.write_text(json.dumps(to_jsonable(raw), indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

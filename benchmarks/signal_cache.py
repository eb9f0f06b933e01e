"""The cached computations of a validity view (a dataset's items under one named pool), under
``<bench cache>/validity_pools/``: the ground truth (the tuned probe's accuracy per candidate), the label-free signals
(each metric of the registry, and the option variants of :data:`VARIANTS`) and the built-in baselines counted as
evidence. The other benchmarks find the files through :func:`view_cache_dir` and :func:`cached_signal`."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from benchmarks.bench_io import bench_cache, save_json

log = logging.getLogger("validity_pools")  # the truth and the signals log as part of a validity_pools run

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
"""Signals computed with non-default options (``validity_pools.py --metrics task_prior-consensus ...``): name -> (metric, options);
``validity_default.py`` puts them in its LODO grid as alternatives to the default options (issue 23)."""


def view_cache_dir(name: str, n: int, seed: int, pool: str = "all") -> Path:
    """A view's cache folder, created when absent: ``<bench cache>/validity_pools/<dataset>/n<n>_seed<seed>``, with
    ``_<pool>`` after it for a named pool other than ``all``."""
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
    path = view_cache_dir(name, n, seed) / f"truth_logistic_f{folds}{suffix}.json"
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


SAME_CODE: dict[str, tuple[str, ...]] = {"task_prior": ("ad4fe381eb",), "sufficiency": ("45a1eaeef2", "9e42c4db49")}
"""Earlier code versions of a metric (every signal of it, its variants too) that *are* the current code: only the
version's key changed, because a module that was always part of the computation was added to the metric's code list
(``MetricSpec.code``: ``metrics/content_seed.py`` for both, ``metrics/sufficiency/rows.py`` and
``metrics/normal_scores.py`` for sufficiency; ``tests/test_layers.py::
test_a_metrics_code_version_covers_every_module_of_its_package``). sufficiency's 9e42c4db49 is the code while the
names of its options (for the registry's check before a run) lived in ``metrics/sufficiency/pairs.py``, a module of its
code version, before they moved to ``metrics/option_names.py``, which is in none: the same computation. Read like
:data:`SAME_RESULTS`, before it."""


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

    path = view_cache_dir(name, n, seed, pool) / f"central_{get_spec('nn_agreement').code_version()[:10]}.json"
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
    (:func:`central_of_view`); ``families``: :func:`benchmarks.named_pools.pool_roles`."""
    d = view_cache_dir(name, n, seed, pool)
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

"""Median information sufficiency (Darrin et al., section 3 and appendix E), estimated better.

IS(U -> Z) = [H(Z) - H(Z|U)] / dim(Z), in nats per target dimension, where H(Z) comes from a diagonal
Gaussian mixture fitted to the target and H(Z|U) from a mixture whose parameters are a small MLP of U
(KNIFE; see :mod:`embedselect.metrics.sufficiency.knife`). Settings and cache keys live in
:mod:`embedselect.metrics.sufficiency.settings`, the result type in :mod:`embedselect.metrics.sufficiency.result`;
this module validates the pool and drives the estimate. A candidate's score is the median of IS(candidate -> other)
over the other candidates (higher = its embedding predicts the others better).

Differences from the published estimator (see docs/sufficiency.md):

* both entropies are evaluated on a held-out *test* split; early stopping uses a separate validation
  split, so an independent source scores about 0 instead of several nats;
* the conditional starts as the target's marginal (IS = 0 at step 0) and training is scheduled in
  optimiser steps with early stopping, so small and large reference sets are both trained enough;
* component scales are only bounded by loose numerical limits (sigma in [9e-4, 1.1e3] standardised units);
* each target's marginal is fitted once (EM) and reused by every source;
* all pairs train together as one batched model; pairs already in ``pair_cache`` are not recomputed;
* the metric trains only the pairs its scores read (option ``pairs``, :func:`scored_targets`).
"""

from __future__ import annotations

import dataclasses
import logging
import math
from typing import Any, Mapping

import numpy as np
import pandas as pd

from embedselect.errors import ConfigError, MetricError
from embedselect.metrics.base import MetricContext, MetricResult, PairCache, evidence
from embedselect.metrics.content_seed import fingerprint
from embedselect.metrics.normal_scores import normal_scores
from embedselect.metrics.sufficiency.result import SufficiencyResult, average, caveats, median_scores
from embedselect.metrics.sufficiency.result import communities as _communities
from embedselect.metrics.sufficiency.result import subsampled as _subsampled
from embedselect.metrics.sufficiency.pairs import (
    DEFAULT_ESTIMATOR,
    ESTIMATORS,
    PAIRS,
    PairSelector,
    estimator_options,
    pairs_of,
    scored_targets,
    selector,
)
from embedselect.metrics.sufficiency.rows import Rows, plan_rows, repeat_count
from embedselect.metrics.sufficiency.inputs import MIN_ITEMS, SMALL_POOL, too_few_usable, torch_device, validate
from embedselect.metrics.sufficiency.settings import (
    RUN_OPTIONS,
    SufficiencySettings,
    code_version,
    derive_seed,
    marginal_key,
    pair_key,
    repeat_seeds,
)

__all__ = ["DEFAULT_ESTIMATOR", "ESTIMATORS", "MIN_ITEMS", "PAIRS", "SMALL_POOL", "SufficiencyResult",
           "SufficiencySettings", "code_version", "compute", "estimator_options", "information_sufficiency",
           "missing_pairs", "scored_targets"]

log = logging.getLogger(__name__)


def information_sufficiency(
    embeddings: Mapping[str, Any],
    *,
    estimator: str = DEFAULT_ESTIMATOR,
    seed: int = 0,
    settings: Any = None,
    run_keys: Mapping[str, str] | None = None,
    pair_cache: PairCache | None = None,
    device: str = "cpu",
    batched: bool = True,
    max_batch_bytes: int | None = None,
    only: PairSelector | None = None,
    **options: Any,
) -> SufficiencyResult:
    """Pairwise information sufficiency and median scores of a pool of embedders.

    Args:
        embeddings: candidate name -> array (n, d_candidate) (any float dtype; used as float32). All
            candidates embed the same n items in the same order; n >= 50.
        estimator: one of :data:`ESTIMATORS`. ``"gaussian"`` hands everything to
            :func:`~embedselect.metrics.sufficiency.gaussian.gaussian_sufficiency` (``settings`` and the keywords are
            then its :class:`~embedselect.metrics.sufficiency.gaussian.GaussianSettings`; no pair cache: its whole
            matrix costs less than reading one); the rest of this docstring is the KNIFE estimator's.
        seed: root seed; the splits, minibatch order, EM init and each pair's initial weights derive from it.
        settings: estimator settings; or give any :class:`SufficiencySettings` field as a keyword
            (e.g. ``max_steps=500``), which overrides ``settings``.
        run_keys: candidate -> content key of its embedding run. Needed for ``pair_cache``; also used
            to key cached pairs. Seeds (EM init, each pair's initial weights) derive from the vectors' content
            (:func:`~embedselect.metrics.content_seed.fingerprint` of the prepared coordinates), never from a name,
            path or run key.
        pair_cache: optional :class:`PairCache`; pairs and target marginals found there are reused and
            new ones are stored.
        device: torch device ("cpu", "cuda", "cuda:1").
        batched: train all missing pairs as one batched model (default) or one pair at a time (the same
            result up to float rounding; for benchmarks and checks).
        max_batch_bytes: approximate activation-memory budget of one batched group (default 1 GB on
            CPU, 8 GB on CUDA); larger pools are trained in several groups.
        only: which directed pairs to estimate, as a function of the usable candidates' names (called after the
            degenerate ones are left out, again whenever one more is); None: every pair. The matrix cells of the
            other pairs are NaN (not estimated), only the pairs estimated are looked up in ``pair_cache`` and listed
            in ``pairs``, and ``communities`` is None unless that is every pair (Louvain needs every pair). Each
            pair trains on its own, so its estimate does not depend on which others are estimated (up to float
            rounding).

    Returns:
        :class:`SufficiencyResult` (matrix in nats per target dimension, median scores, communities).

    Raises:
        MetricError: fewer than 2 candidates (or fewer than 2 left after leaving out degenerate ones:
            NaN/inf values, constant rows, no non-null dimension), mismatched rows.
        TooFewItemsError: n < 50.
        ConfigError: an unknown option or an invalid setting; ``pair_cache`` without ``run_keys``.
    """
    from embedselect.metrics.sufficiency import knife

    if estimator not in ESTIMATORS:
        raise ConfigError(f"unknown sufficiency estimator {estimator!r}; choose from {', '.join(ESTIMATORS)}")
    if estimator == "gaussian":
        from embedselect.metrics.sufficiency.gaussian import gaussian_sufficiency

        return gaussian_sufficiency(embeddings, seed=seed, settings=settings, device=device, **options)
    st = _settings(settings, options)
    n_rows = len(next(iter(embeddings.values()))) if embeddings else 0
    repeats = repeat_count(n_rows, st)
    if repeats > 1:  # each estimate validates (and normal-scores) the vectors itself, under its own seed
        one = dataclasses.replace(st, max_repeats=1)
        return average([information_sufficiency(embeddings, seed=s, settings=one, run_keys=run_keys,
                                                 pair_cache=pair_cache, device=device, batched=batched,
                                                 max_batch_bytes=max_batch_bytes, only=only)
                         for s in repeat_seeds(seed, repeats)], seed, n_rows)
    embs, excluded, names, ids, dev = _resolve(embeddings, seed, st, run_keys, pair_cache, device)
    n = next(iter(embs.values())).shape[0]
    skey = st.key(seed)
    rows = plan_rows(n, st, seed)
    val, eff, held = rows.val, rows.eff, rows.held

    mkeys = {t: marginal_key(ids[t], skey) for t in names}
    cached: dict[str, dict[str, Any]] = {}
    cached_m: dict[str, dict[str, Any]] = pair_cache.get_many(list(mkeys.values())) if pair_cache is not None else {}
    prep: dict[str, knife.Prepared] = {}
    while True:  # the pairs to estimate depend on who is usable: again when preparing leaves one more out
        all_pairs = pairs_of([k for k in names if k not in excluded], only)
        pkeys = {p: pair_key(ids[p[0]], ids[p[1]], skey) for p in all_pairs}
        if pair_cache is not None:
            cached.update(pair_cache.get_many([v for v in pkeys.values() if v not in cached]))
        todo = [p for p in all_pairs if pkeys[p] not in cached]
        need_prep = {x for p in todo for x in p} | {t for t in names if mkeys[t] not in cached_m}
        left_out = len(excluded)
        for k in [k for k in names if k in need_prep and k not in prep and k not in excluded]:
            try:
                prep[k] = knife.Prepared.fit(embs[k], rows.prep, eff["source_pcs"], dev, rows=held)
            except MetricError as e:  # degenerate on the training rows: this candidate only
                excluded[k] = str(e)
        if len(excluded) == left_out:
            break
    # seeds from what the estimator reads (the prepared coordinates, rounded so that float noise does not reseed):
    # a renamed or moved model, or one with an extra constant column, scores the same. Only the validation rows are
    # hashed: they are held whether or not the other rows are (so holding fewer rows never reseeds)
    fp_rows = val if held is None else np.searchsorted(held, val)
    fp = {k: fingerprint(np.round(p.z.cpu().numpy()[fp_rows], 3)) for k, p in prep.items()}
    if excluded:
        names = [k for k in names if k not in excluded]
        if len(names) < 2:
            raise too_few_usable(excluded, names)
    new_cache: dict[str, dict[str, Any]] = {}
    tables, marg, h_z, dims = _fit_marginals(names, todo, cached_m, mkeys, prep, rows, seed, fp, dev, new_cache)

    results: dict[tuple[str, str], dict[str, Any]] = {}
    for p in all_pairs:
        if pkeys[p] in cached:
            results[p] = {**cached[pkeys[p]], "cached": True}
    if todo:
        _train_missing(todo, prep, tables, marg, h_z, dims, rows, st, seed, fp, dev, batched, max_batch_bytes,
                       pkeys, new_cache, results)
    if pair_cache is not None and new_cache:
        pair_cache.put_many(new_cache)
    return _assemble(embeddings, names, all_pairs, results, excluded, h_z, dims, st, seed, n, rows, skey,
                     complete=len(all_pairs) == len(names) * (len(names) - 1))


def _settings(settings: SufficiencySettings | None, options: Mapping[str, Any]) -> SufficiencySettings:
    """``settings`` (default :class:`SufficiencySettings`) with ``options`` (estimator settings by name) applied.

    Raises:
        ConfigError: an option that is no setting, or an invalid value.
    """
    unknown = set(options) - {f.name for f in dataclasses.fields(SufficiencySettings)}
    if unknown:
        raise ConfigError(
            f"unknown sufficiency option(s) {sorted(unknown)}; known: "
            f"{sorted([f.name for f in dataclasses.fields(SufficiencySettings)] + list(RUN_OPTIONS))}"
        )
    return dataclasses.replace(settings or SufficiencySettings(), **options)


def _resolve(embeddings: Mapping[str, Any], seed: int, st: SufficiencySettings, run_keys: Mapping[str, str] | None,
             pair_cache: PairCache | None, device: str) -> tuple[dict[str, np.ndarray], dict[str, str], list[str],
                                                                 dict[str, str], Any]:
    """Usable candidates (normal-scored if ``st`` asks), the ones left out, their names, cache ids and the torch
    device."""
    embs, excluded = validate(embeddings)
    if st.normal_scores:
        embs = {k: normal_scores(v, derive_seed(seed, "normal-scores")) for k, v in embs.items()}
    names = list(embs)
    if pair_cache is not None and run_keys is None:
        raise ConfigError("pair_cache needs run_keys (a content key per candidate) to key cached pairs")
    if run_keys is not None:
        missing = [k for k in names if k not in run_keys]
        if missing:
            raise ConfigError(f"run_keys has no entry for {missing}")
    ids = {k: (str(run_keys[k]) if run_keys is not None else f"name:{k}") for k in names}
    return embs, excluded, names, ids, torch_device(device)


def _fit_marginals(names: list[str], todo: list[tuple[str, str]], cached_m: Mapping[str, dict[str, Any]],
                   mkeys: Mapping[str, str], prep: Mapping[str, Any], rows: Rows, seed: int, fp: Mapping[str, Any],
                   dev: Any, new_cache: dict[str, dict[str, Any]]) -> tuple[dict, dict, dict[str, float], dict[str, int]]:
    """Each target's marginal (cached, or fitted by EM and added to ``new_cache``): its tables (for targets that
    pairs still to train predict), marginal, H(Z) on the test split (nats per item) and dim(Z)."""
    import torch

    from embedselect.metrics.sufficiency import knife

    eff, em_rows, held, test, test_h = rows.eff, rows.em_rows, rows.held, rows.test, rows.test_h
    tables: dict[str, knife.TargetTables] = {}
    marg: dict[str, knife.Marginal] = {}
    h_z: dict[str, float] = {}
    dims: dict[str, int] = {}
    for t in names:
        if mkeys[t] in cached_m:
            rec = cached_m[mkeys[t]]
            h_z[t], dims[t] = float(rec["h"]), int(rec["dim"])
            if t in {p[1] for p in todo}:
                marg[t] = knife.Marginal.from_json(rec["params"], dev)
                tables[t] = knife.TargetTables.build(prep[t], marg[t], eff["target_pcs"])
            continue
        m = knife.fit_marginal(prep[t].z[torch.from_numpy(em_rows).to(dev)], eff["n_components"],
                               seed=derive_seed(seed, "em", fp[t]))
        marg[t] = m
        dims[t] = prep[t].dim
        tables[t] = knife.TargetTables.build(prep[t], m, eff["target_pcs"])
        h_z[t] = knife.marginal_nll(tables[t], m, test if held is None else test_h, dev)
        new_cache[mkeys[t]] = {"h": h_z[t], "dim": dims[t], "params": m.to_json()}
    return tables, marg, h_z, dims


def _train_missing(todo: list[tuple[str, str]], prep: dict[str, Any], tables: dict[str, Any],
                   marg: dict[str, Any], h_z: Mapping[str, float], dims: Mapping[str, int], rows: Rows,
                   st: SufficiencySettings, seed: int, fp: Mapping[str, Any], dev: Any, batched: bool,
                   max_batch_bytes: int | None, pkeys: Mapping[tuple[str, str], str],
                   new_cache: dict[str, dict[str, Any]], results: dict[tuple[str, str], dict[str, Any]]) -> None:
    """Train the pairs ``todo`` (in activation-memory-bounded groups, or one at a time unless ``batched``) and add
    their records to ``new_cache`` and ``results``."""
    from embedselect.metrics.sufficiency import knife

    eff, schedule, held = rows.eff, rows.schedule, rows.held
    val, test, val_h, test_h = rows.val, rows.test, rows.val_h, rows.test_h
    specs = {p: knife.PairSpec(p[0], p[1], derive_seed(seed, "init", fp[p[0]], fp[p[1]])) for p in todo}
    budget = max_batch_bytes or (8 * 1024**3 if dev.type == "cuda" else 1024**3)
    b = schedule.shape[1]
    groups: list[list[tuple[str, str]]] = []
    if batched:
        # one stacked model per group; a group is bounded by the activation-memory budget
        cur: list[tuple[str, str]] = []
        used = 0
        for p in sorted(todo, key=lambda q: (q[1], q[0])):
            cost = knife.pair_bytes(b, prep[p[0]].u.shape[1], min(eff["target_pcs"], dims[p[1]]),
                                    eff["n_components"], st.hidden)
            if cur and used + cost > budget:
                groups.append(cur)
                cur, used = [], 0
            cur.append(p)
            used += cost
        groups.append(cur)
    else:
        groups = [[p] for p in todo]
    for grp in groups:
        fits = knife.train_pairs(
            [specs[p] for p in grp], prep, tables, marg, schedule, val if held is None else val_h,
            test if held is None else test_h,
            hidden=st.hidden, lr=st.learning_rate, eval_every=eff["eval_every"],
            patience=st.patience, min_steps=st.min_steps, device=dev,
        )
        for p, f in zip(grp, fits):
            rec = {
                "is": (h_z[p[1]] - f.test_nll) / dims[p[1]],
                "h_z": h_z[p[1]],
                "h_z_given_u": f.test_nll,
                "dim": dims[p[1]],
                "best_step": f.best_step,
                "steps": f.steps,
            }
            new_cache[pkeys[p]] = rec
            results[p] = {**rec, "cached": False}


def _assemble(embeddings: Mapping[str, Any], names: list[str], all_pairs: list[tuple[str, str]],
              results: Mapping[tuple[str, str], dict[str, Any]], excluded: Mapping[str, str],
              h_z: Mapping[str, float], dims: Mapping[str, int], st: SufficiencySettings, seed: int, n: int,
              rows: Rows, skey: str, complete: bool = True) -> SufficiencyResult:
    """The IS matrix, median scores, warnings and settings of one estimate; ``complete``: every pair of ``names`` was
    estimated (else no communities)."""
    train, val, test, held, eff = rows.train, rows.val, rows.test, rows.held, rows.eff
    every = list(embeddings)
    mat = pd.DataFrame(np.nan, index=pd.Index(every, name="source"), columns=pd.Index(every, name="target"))
    for (s, t), r in results.items():
        mat.loc[s, t] = float(r["is"])
    scores = median_scores(mat, names)
    warnings, pool_warning = caveats(names, excluded, n, len(test), 1)
    settings_out = {
        **dataclasses.asdict(st), "seed": int(seed), "repeats": 1, "n_train": len(train), "n_val": len(val),
        "n_test": len(test), "n_rows_held": n if held is None else len(held), "effective": eff, "settings_key": skey, "units": "nats per target dimension",
    }
    return SufficiencyResult(
        matrix=mat,
        scores=scores,
        communities=_communities(mat, seed) if complete else None,
        marginal_entropy={t: h_z[t] / dims[t] for t in names},
        pairs=[{"source": s, "target": t, **results[(s, t)]} for (s, t) in all_pairs],
        settings=settings_out,
        warnings=warnings,
        excluded=dict(excluded),
        pool_warning=pool_warning,
    )


def compute(ctx: MetricContext) -> MetricResult:
    """Metric entry point: median information sufficiency of every candidate (higher = better).

    ``ctx.options`` may hold ``estimator`` (one of :data:`ESTIMATORS`, default :data:`DEFAULT_ESTIMATOR`), that
    estimator's settings (any :class:`SufficiencySettings` field plus ``batched`` and ``max_batch_bytes`` for KNIFE,
    any :class:`~embedselect.metrics.sufficiency.gaussian.GaussianSettings` field for the Gaussian one),
    ``targets``: "models" (default: a candidate's score is the median of IS(candidate ->
    other) over the other families' heads that are not reference points, ``ctx.references`` — the built-in baselines —
    when at least two are left, :func:`~embedselect.metrics.base.evidence`; the baselines are scored as sources) or
    "all" (reference points included), and ``pairs`` (:data:`PAIRS`). Either way the targets are one head per family
    (``ctx.families``: variants and copies of one model count once) and not the candidate's own family
    (:func:`scored_targets`). With ``pairs="scored"`` (default) and ``targets="models"`` the KNIFE estimate trains
    only those pairs: the other cells of the matrix are NaN ("not estimated"), the columns
    ``sufficiency_mean_out`` / ``sufficiency_median_in`` read the estimated cells only, and the Louvain communities
    (which need every pair) are not computed (``details["communities"]`` None, ``details["communities_note"]`` says
    how to get them). The scores are those of ``pairs="all"`` up to float rounding: each pair trains on its own.
    Pairs are cached in ``ctx.pair_cache`` keyed by the two run keys, the settings and the seed (whatever
    ``targets`` and ``pairs`` are), so a later ``pairs="all"`` run trains only the pairs missing.
    """
    options = ctx.options or {}
    targets = options.get("targets", "models")
    estimator, opts = estimator_options(options)
    run_opts = {k: opts.pop(k) for k in RUN_OPTIONS if k in opts}
    cache = ctx.pair_cache
    run_keys = ctx.run_keys if ctx.run_keys else None
    if run_keys is not None and any(k not in run_keys for k in ctx.embeddings):
        log.warning("sufficiency: some candidates have no run key; pair caching disabled for this call")
        run_keys, cache = None, None
    if cache is not None and run_keys is None:
        cache = None
    references = ctx.references if targets == "models" else frozenset()

    def estimate(only: PairSelector | None) -> SufficiencyResult:
        if estimator == "gaussian":
            return information_sufficiency(ctx.embeddings, estimator=estimator, seed=ctx.seed, device=ctx.device,
                                           **opts)
        return information_sufficiency(ctx.embeddings, seed=ctx.seed, run_keys=run_keys, pair_cache=cache,
                                       device=ctx.device, only=only, **run_opts, **opts)

    only = selector(options, references, ctx.families)
    res = estimate(only)
    names = list(res.matrix.index)
    usable = [k for k in names if k not in res.excluded]
    reads = scored_targets(usable, references, ctx.families)
    if only is not None and any(not np.isfinite(res.matrix.loc[s, t]) for s, ts in reads.items() for t in ts):
        # averaged estimates that left out different candidates estimated other pairs: estimate every pair
        log.info("sufficiency: the estimates left out different candidates; estimating every pair")
        only = None
        res = estimate(only)
        usable = [k for k in names if k not in res.excluded]
        reads = scored_targets(usable, references, ctx.families)
    heads = evidence(usable, references, ctx.families)
    consulted = [usable[i] for i in heads]
    scores = {s: float(np.median([res.matrix.loc[s, t] for t in reads[s]])) if s in reads else math.nan
              for s in res.scores}
    # pandas' mean / median skip NaN: the cells estimated only
    mean_out = {s: float(res.matrix.loc[s].drop(s).mean()) for s in names}
    median_in = {t: float(res.matrix[t].drop(t).median()) for t in names}
    details = res.to_dict()
    details["scores"] = scores
    details["targets"] = consulted
    details["pairs_computed"] = res.n_computed
    details["pairs_cached"] = res.n_cached
    if estimator == "knife":
        details["pairs_estimated"] = "scored" if only is not None else "all"
        details["pairs_not_estimated"] = len(usable) * (len(usable) - 1) - len({(p["source"], p["target"])
                                                                                for p in res.pairs})
    if res.communities is None:
        details["communities_note"] = (
            "not computed: only the pairs the scores read were estimated (sufficiency pairs='scored'), the other "
            "cells of the matrix are not estimated; Louvain communities need every pair: "
            "--option sufficiency.pairs=all")
    subsampled = _subsampled(res.settings)
    if subsampled:
        details["subsampled"] = subsampled
    columns: dict[str, dict[str, float]] = {"sufficiency_mean_out": mean_out, "sufficiency_median_in": median_in}
    if res.communities is not None:
        comm_of = {m: i for i, c in enumerate(res.communities) for m in c}
        columns["sufficiency_community"] = {k: float(v) for k, v in comm_of.items()}
    return MetricResult(name="sufficiency", scores=scores, columns=columns, details=details)


def missing_pairs(run_keys: Mapping[str, str], pair_cache: PairCache, *, seed: int = 0, n_items: int | None = None,
                  settings: SufficiencySettings | None = None, references: frozenset[str] | set[str] = frozenset(),
                  families: Mapping[str, str] | None = None, **options: Any) -> list[tuple[str, str]]:
    """The directed pairs (source, target) that the metric (:func:`compute`) with these arguments would have to
    estimate: of the pairs it estimates (with ``pairs="scored"``, the default, and ``targets="models"``, those its
    scores read, :func:`scored_targets`; else every pair), those whose pair, or whose target's marginal,
    ``pair_cache`` lacks. Reads only the cache's keys (no vectors); a candidate that the estimate would leave out as
    degenerate is not known here and may be listed (and the pairs its absence would change are not).

    Args:
        run_keys: candidate name -> content key of its embedding run (as for :func:`information_sufficiency`), in
            the order the metric receives the candidates.
        pair_cache: the :class:`PairCache` to look in.
        seed, settings: as for :func:`information_sufficiency`.
        n_items: the number of items the estimate will read, which decides how many seeds' estimates are averaged
            (:meth:`SufficiencySettings.repeats`); a pair is missing when any of them lacks it. None: the root seed's
            only.
        references, families: the pool's reference points and families, as the metric's context holds them
            (:attr:`~embedselect.metrics.base.MetricContext.references`, ``.families``).
        options: the metric's options (:func:`estimator_options`; ``batched`` / ``max_batch_bytes`` ignored). The
            Gaussian estimator caches no pairs: nothing is missing.
    """
    estimator, opts = estimator_options(options)
    if estimator != "knife":
        return []
    st = _settings(settings, {k: v for k, v in opts.items() if k not in RUN_OPTIONS})
    repeats = 1 if n_items is None else repeat_count(n_items, st)
    ids = {k: str(v) for k, v in run_keys.items()}
    pairs = pairs_of(list(ids), selector(options, references, families))
    missing: set[tuple[str, str]] = set()
    for skey in [st.key(s) for s in repeat_seeds(seed, repeats)]:
        pkeys = {p: pair_key(ids[p[0]], ids[p[1]], skey) for p in pairs}
        mkeys = {t: marginal_key(ids[t], skey) for t in ids}
        have = pair_cache.get_many(list(pkeys.values()) + list(mkeys.values())) if pairs else {}
        missing.update(p for p in pairs if pkeys[p] not in have or mkeys[p[1]] not in have)
    return [p for p in pairs if p in missing]

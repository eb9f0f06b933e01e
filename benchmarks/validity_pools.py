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

The steps' parts live by concern: the named pools in ``named_pools.py``, the cached truth and signals (steps 1-2) in
``signal_cache.py``, the measures of step 3 in ``scoring.py``, the leave-one-dataset-out choice of step 4 in ``lodo.py``
(:func:`benchmarks.lodo.lodo_choices`, the one ``validity_default.py`` reads too); this module holds the settings grid,
one dataset's run, the report and the command line.

Run (the pools must exist; see ``validity_data.py``)::

    nice -n 5 python -m benchmarks.validity_pools --datasets polarity analogy empath --out /tmp/vp.md

Every number is a benchmark result, never a test threshold.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from benchmarks.lodo import lodo_choices
from benchmarks.named_pools import DATASETS, POOL_MODALITY, POOLS, datasets_for_pool, pool_roles
from benchmarks.scoring import TARGETS, correlations, family_violations, regret, top_pick
from benchmarks.signal_cache import VARIANTS, ground_truth, signals
from benchmarks.sets.registry import stratified_indices
from benchmarks.validity_data import load_pool

MISSION = ("task_prior", "sufficiency")
COMPARATORS = ("rankme", "alpha_req", "uniformity", "nn_agreement", "modularity")
SIGNALS = MISSION + COMPARATORS
SUFF_WEIGHTS = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0)
DEFAULT_SETTING = (1.0, None)
"""The default combination before 2026-11-23 (task_prior and sufficiency with equal weights, mean rank, no comparator),
the reference of this harness's tables; the current default is chosen by ``validity_default.py``."""


# ------------------------------------------------------------------------------------------------
# the settings of the combination and their leave-one-dataset-out choice
# ------------------------------------------------------------------------------------------------
def settings_grid(comparators: Sequence[str] = COMPARATORS) -> list[tuple[float, str | None]]:
    """Every (sufficiency weight vs task_prior weight 1, comparator added with weight 1 or None); today's
    default first so it wins ties in :func:`lodo_settings`."""
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


def mean_rho(rhos: Sequence[float]) -> float:
    """The mean Spearman ρ, an undefined one (NaN) counting as -1: an undefined ranking is a failed one."""
    return float(np.mean([x if math.isfinite(x) else -1.0 for x in rhos]))


def lodo_settings(results: list[dict[str, Any]], settings: Sequence[Any]) -> dict[str, Any]:
    """Leave-one-dataset-out choice (:func:`benchmarks.lodo.lodo_choices`) among ``settings`` (each scored on every
    result of :func:`run_dataset`): for each held-out dataset, the setting with the highest :func:`mean_rho` over the
    other datasets, ties to the earlier setting in ``settings``. Returns held-out dataset -> chosen setting."""
    table = [[r["settings"][s]["spearman"] for r in results] for s in settings]
    return {d: settings[i] for d, i in lodo_choices(table, [r["name"] for r in results], mean_rho).items()}


# ------------------------------------------------------------------------------------------------
# one dataset, all datasets, markdown
# ------------------------------------------------------------------------------------------------
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
    common = [s for s in settings_grid() if all(s in r["settings"] for r in results)]
    if len(results) >= 2 and common:  # no setting is common when the signals a setting needs were not computed
        chosen = lodo_settings(results, common)
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
        mean_all = {s: mean_rho([r["settings"][s]["spearman"] for r in results]) for s in common}
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

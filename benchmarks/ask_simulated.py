"""Issue 42, measured with a simulated person: do a few answered triplet questions (``embedselect ask``) pick a model
within 0.02 of the best, and do targeted questions need fewer answers than random ones?

For every view of the validity benchmark (a dataset's pool folder of ``validity_data.py`` under a named pool of
``named_pools.POOLS``: ``all``, and ``issue`` / ``width`` for texts, ``photo8`` for images), at ``--max-items``
stratified items:

1. truth: the tuned logistic probe's held-out accuracy per candidate (``signal_cache.ground_truth``, cached);
2. label-free: the package's default combination for the view's modality (``default_grid.default_setting``,
   signals cached by ``signal_cache.signals``), derived copies below their parents; its first candidate is the
   label-free pick, its leaders those of :func:`embedselect.ranking.combine.decide` on the signals, the families and
   the reference points (as ``benchmarks.protocol`` reads them; no bootstrap), with the witnesses the product computes
   with weight 0 (``default_grid.default_witnesses``: nn_agreement for texts) asked about first place as
   ``select()`` asks them, and the contenders are
   :func:`embedselect.validation.duels.contenders` of the leaders, the order and the families (one per family);
3. the simulated person answers from the labels: the option that shares the anchor's label; ``skip`` when both or
   neither do;
4. targeted: the questions of :func:`embedselect.pipeline.questions.choose_triplets` over the contenders' vectors
   (``--pool-questions`` of them, seeded), answered in file order; random: uniformly drawn triplets of distinct
   items, answered the same way. For each budget (answers, skips not counted) the pick is the winner of
   :func:`~embedselect.validation.duels.verdict` between the contenders: the first contender in label-free order
   that no other one beats on the answers (the label-free pick when they rule nothing out), exactly the first row of
   ``rank --answers``. ``--z`` reads the same rule at other interval levels (the product's is
   :data:`~embedselect.validation.answers.Z_DECIDE`, 99.9 %); ``--half`` restricts the datasets to one half of the protocol
   (``benchmarks.protocol.half``): a level is chosen on the selection half and read once on the confirmation half.
   ``--contenders wide`` / ``reference`` read variants (:func:`wide_contenders`, :func:`reference_contenders`), not
   the product's rule.

Reported per budget: the share of views whose pick is within ``--tolerance`` (0.02) of the best accuracy, for
label-free alone, targeted and random questions (random averaged over ``--repeats`` seeds, targeted too), the views
where the pick is worse than label-free's by more than the tolerance, and the share of views where the best
contender is within the tolerance (what any answers can reach when they decide between the contenders).

    python -m benchmarks.ask_simulated --max-items 300 --half selection --z 1.96 2.58 --out /tmp/ask_sim.md

Every number is a benchmark result, never a test threshold.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from benchmarks.bench_io import bench_cache
from benchmarks.candidates import copy_pairs
from benchmarks.default_grid import default_setting, default_witnesses
from benchmarks.named_pools import POOL_MODALITY, POOLS, pool_roles
from benchmarks.protocol import HALVES, half, label_free
from benchmarks.sets.registry import DATASETS as ALL_DATASETS
from benchmarks.sets.registry import stratified_indices
from benchmarks.signal_cache import ground_truth, signals
from benchmarks.validity_data import load_pool
from embedselect.pipeline.questions import choose_triplets
from embedselect.ranking.ties import order_by_score
from embedselect.validation.answers import TOP_CONTENDERS, Z_DECIDE, Answered, agrees, contenders, verdict

log = logging.getLogger("ask_simulated")

BUDGETS = (10, 20, 40, 80)
VIEW_POOLS = {"text": ("issue", "width", "all"), "image": ("photo8", "all")}
"""Smallest pools first: their truths (cached per candidate) are part of the larger ones'."""


def simulated_answers(triplets: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """int8 (m,): +1 (a), -1 (b) or 0 (skip) per (anchor, a, b) row, from the labels."""
    t = np.asarray(triplets, dtype=np.int64).reshape(-1, 3)
    a = labels[t[:, 1]] == labels[t[:, 0]]
    b = labels[t[:, 2]] == labels[t[:, 0]]
    return np.where(a & ~b, 1, np.where(b & ~a, -1, 0)).astype(np.int8)


def random_triplets(n: int, m: int, usable: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """int64 (m, 3) uniformly drawn triplets of three distinct usable items."""
    pool = np.flatnonzero(usable)
    return np.array([rng.choice(pool, 3, replace=False) for _ in range(m)], dtype=np.int64).reshape(-1, 3)


def pick_with_answers(vectors: Mapping[str, np.ndarray], names: Sequence[str], label_free_pick: str,
                      triplets: np.ndarray, signs: np.ndarray, z: float = Z_DECIDE) -> tuple[str, bool]:
    """(the pick, whether the answers decided it): the verdict's winner between ``names`` (the first contender, in
    label-free order, that no other beats on the answers: what ``rank --answers`` puts first), the label-free pick
    without answers. ``triplets``/``signs``: the answered questions only; ``z``: the verdict's interval level."""
    ans = Answered(triplets, signs, np.arange(len(signs)), len(signs), 0)
    v = verdict({m: agrees(vectors[m], ans) for m in names}, names, z=z)
    return (label_free_pick, False) if v.winner is None else (str(v.winner), v.decided)


def wide_contenders(leaders: Sequence[str], order: Sequence[str], families: Mapping[str, str],
                    top: int = TOP_CONTENDERS) -> list[str]:
    """A variant read here (``--contenders wide``), not the product's rule: the product's contenders, plus the best
    member of each of the first ``top`` families of ``order`` not among them, in ``order``."""
    names = contenders(leaders, order, families, top)
    fam = {c: families.get(c, c) for c in order}
    have = {fam[c] for c in names}
    best: dict[str, str] = {}
    for c in order:
        best.setdefault(fam[c], c)
    extra = [c for f, c in list(best.items())[:top] if f not in have]
    return [c for c in order if c in set(names) | set(extra)]


def reference_contenders(leaders: Sequence[str], order: Sequence[str], families: Mapping[str, str],
                         references: Sequence[str], top: int = TOP_CONTENDERS) -> list[str]:
    """A variant read here (``--contenders reference``), not the product's rule: the product's contenders, plus the
    best reference point (the first of ``references`` in ``order``) when none of them is a reference point, in
    ``order``. A reference point beats the models on some data (debates-2016: tfidf-svd); as a contender the answers
    can name it."""
    names = contenders(leaders, order, families, top)
    refs = set(references)
    if any(c in refs for c in names):
        return names
    best = next((c for c in order if c in refs), None)
    return names if best is None else [c for c in order if c in set(names) | {best}]


def first_answered(triplets: np.ndarray, answers: np.ndarray, budget: int) -> tuple[np.ndarray, np.ndarray]:
    """The first ``budget`` answered (non-skip) questions in order: (triplets, signs)."""
    keep = np.flatnonzero(answers != 0)[:budget]
    return triplets[keep], answers[keep]


def view_data(name: str, pool: str, *, max_items: int, seed: int, folds: int, jobs: int) -> dict[str, Any] | None:
    """One view: labels, vectors, truth, the label-free combined scores; None when the pool lacks candidates."""
    meta, labels, items, entries, vectors = load_pool(name)
    keys = sorted(set(POOLS[pool] if POOLS.get(pool) is not None else vectors))
    if not set(keys) <= set(vectors):
        return None
    n_cls = len(np.unique(labels))
    keep_all = len(labels) - max_items < n_cls
    idx = np.arange(len(labels)) if keep_all else stratified_indices([str(v) for v in labels], max_items, seed)
    y = np.asarray(labels)[idx]
    sub = {k: np.ascontiguousarray(vectors[k][idx], dtype=np.float32) for k in keys}
    n = len(idx)
    truth = {c: r["acc"] for c, r in ground_truth(name, y, sub, n=n, seed=seed, folds=folds, jobs=jobs).items()}
    weights, method = default_setting(meta["modality"])
    shown = [m for m in default_witnesses(meta["modality"]) if m not in weights]
    ents = [e for e in entries if e["name"] in keys]
    refs, fams = pool_roles(ents, keys)
    sig = signals(name, sub, n=n, seed=seed, metrics=list(weights) + shown, jobs=jobs, pool=pool, references=refs,
                  families=fams)
    try:
        pairs = copy_pairs(ents, sub, seed)
    except Exception as err:  # noqa: BLE001 - a missing model folder: no copy rule, said in the log
        log.warning("%s/%s: copy pairs not found (%s); no copy rule", name, pool, err)
        pairs = []
    # as the product's rank stage: the witnesses computed beside the weights and asked about first place
    comb, dec = label_free({m: r["scores"] for m, r in sig.items()}, weights, method, families=fams,
                           references=refs, copies=pairs, witnesses=shown)
    texts = [str(x) for x in items]
    seen: dict[str, int] = {}
    for t in (texts[i] for i in idx):
        seen[t] = seen.get(t, 0) + 1
    usable = np.array([seen[texts[i]] == 1 for i in idx], dtype=bool)
    return {"dataset": name, "pool": pool, "modality": meta["modality"], "labels": y, "vectors": sub,
            "truth": truth, "combined": comb, "usable": usable, "families": fams, "references": sorted(refs), "decided": dec.decided,
            "leaders": list(dec.leaders)}


def simulate(view: Mapping[str, Any], *, budgets: Sequence[int], repeats: int, n_questions: int,
             tolerance: float, levels: Sequence[float] = (Z_DECIDE,), rule: str = "product") -> dict[str, Any]:
    """Per budget: the targeted and random picks' hit rates (within ``tolerance`` of the best) over ``repeats``
    seeds, the label-free pick, and the worst loss against label-free; ``out["budgets"]`` under the first of
    ``levels`` (the verdict's interval z), ``out["levels"][z]`` the same under each level. ``rule``: ``product``
    (:func:`~embedselect.validation.duels.contenders`), ``wide`` (:func:`wide_contenders`) or ``reference``
    (:func:`reference_contenders`)."""
    truth, comb, y, vec = view["truth"], view["combined"], view["labels"], view["vectors"]
    best = max(truth.values())
    order = order_by_score(comb)
    lf = order[0]
    if rule == "reference":
        names = reference_contenders(view["leaders"], order, view["families"], view.get("references", ()))
    else:
        names = (wide_contenders if rule == "wide" else contenders)(view["leaders"], order, view["families"])
    hit = {lf: truth[lf] >= best - tolerance}
    out: dict[str, Any] = {"dataset": view["dataset"], "pool": view["pool"], "modality": view["modality"],
                           "n": len(y), "n_candidates": len(truth), "label_free": lf, "label_free_hit": hit[lf],
                           "label_free_regret": best - truth[lf], "contenders": names,
                           "contender_hit": max(truth[c] for c in names) >= best - tolerance,
                           "decided": view["decided"], "levels": {}}
    for z in levels:
        out["levels"][z] = {b: {"targeted": [], "random": [], "targeted_answered": [], "random_drawn": [],
                                "targeted_loss": [], "random_loss": [], "targeted_decided": [], "random_decided": []}
                            for b in budgets}
    out["budgets"] = out["levels"][levels[0]]
    for r in range(repeats):
        t = np.array(choose_triplets({c: vec[c] for c in names}, n_questions, usable=view["usable"], seed=r),
                     dtype=np.int64).reshape(-1, 3)
        a = simulated_answers(t, y)
        rng = np.random.default_rng(1000 + r)
        rt = random_triplets(len(y), 40 * max(budgets), view["usable"], rng)
        ra = simulated_answers(rt, y)
        for z in levels:
            for b in budgets:
                row = out["levels"][z][b]
                for kind, trip, ans in (("targeted", t, a), ("random", rt, ra)):
                    tt, ss = first_answered(trip, ans, b)
                    pick, decided = pick_with_answers(vec, names, lf, tt, ss, z=z)
                    row[kind].append(truth[pick] >= best - tolerance)
                    row[f"{kind}_loss"].append(truth[lf] - truth[pick])
                    row[f"{kind}_decided"].append(decided)
                row["targeted_answered"].append(int(min(b, np.sum(a != 0))))
                row["random_drawn"].append(int(np.flatnonzero(ra != 0)[min(b, int(np.sum(ra != 0))) - 1] + 1)
                                           if np.any(ra != 0) else 0)
    return out


def budget_table(results: list[dict[str, Any]], budgets: Sequence[int], tolerance: float, z: float) -> list[str]:
    """The Markdown rows of the shares over views at the verdict level ``z`` (a key of each result's ``levels``)."""
    nv = len(results)
    lines = ["| answers | targeted: within 0.02 | random: within 0.02 | targeted decided | random decided | "
             "targeted answered (mean) | worst loss vs label-free (targeted / random) | views > 0.02 worse "
             "(targeted / random) |", "|---|---|---|---|---|---|---|---|"]
    for b in budgets:
        rows = [r["levels"][z][b] for r in results]
        tg = np.mean([np.mean(x["targeted"]) for x in rows])
        rd = np.mean([np.mean(x["random"]) for x in rows])
        td = np.mean([np.mean(x["targeted_decided"]) for x in rows])
        rdd = np.mean([np.mean(x["random_decided"]) for x in rows])
        ta = np.mean([np.mean(x["targeted_answered"]) for x in rows])
        tl = max(max(x["targeted_loss"]) for x in rows)
        rl = max(max(x["random_loss"]) for x in rows)
        worse = sum(1 for x in rows if max(x["targeted_loss"]) > tolerance)
        rworse = sum(1 for x in rows if max(x["random_loss"]) > tolerance)
        lines.append(f"| {b} | {tg:.1%} | {rd:.1%} | {td:.1%} | {rdd:.1%} | {ta:.1f} | {tl:.3f} / {rl:.3f} | "
                     f"{worse} / {rworse} of {nv} |")
    return lines


def summary(results: list[dict[str, Any]], budgets: Sequence[int], tolerance: float,
            levels: Sequence[float] = (Z_DECIDE,)) -> str:
    """The Markdown tables: the shares over views per level of ``levels``, then each view under the first level."""
    nv = len(results)
    lf = np.mean([r["label_free_hit"] for r in results]) if results else math.nan
    ch = np.mean([r["contender_hit"] for r in results]) if results else math.nan
    dd = np.mean([r["decided"] for r in results]) if results else math.nan
    lines = [f"{nv} views; label-free alone within {tolerance} of the best on {lf:.1%} (decided on {dd:.1%}); best "
             f"contender within {tolerance} on {ch:.1%}"]
    if not results:
        return lines[0]
    for z in levels:
        lines += ["", f"verdict interval z = {z:.3g}:", ""] + budget_table(results, budgets, tolerance, z)
    z0 = levels[0]
    lines += ["", f"Per view (z = {z0:.3g}):", "", "| view | n | candidates | label-free pick (regret) | contenders | " +
              " | ".join(f"targeted/random @{b}" for b in budgets) + " |", "|---|---|---|---|---|" + "---|" * len(budgets)]
    for r in results:
        cells = [f"{np.mean(r['levels'][z0][b]['targeted']):.2f} / {np.mean(r['levels'][z0][b]['random']):.2f}"
                 for b in budgets]
        lines.append(f"| {r['dataset']}/{r['pool']} | {r['n']} | {r['n_candidates']} | {r['label_free']} "
                     f"({r['label_free_regret']:.3f}) | {', '.join(r['contenders'])} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--datasets", nargs="*", default=None, help="default: every dataset whose pool folder exists")
    p.add_argument("--max-items", type=int, default=300)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--repeats", type=int, default=5, help="question seeds (targeted) and draws (random) per view")
    p.add_argument("--questions", type=int, default=400, help="targeted questions generated per view and seed")
    p.add_argument("--tolerance", type=float, default=0.02)
    p.add_argument("--contenders", choices=("product", "wide", "reference"), default="product",
                   help="the product's contenders (one per family of the leaders), or a variant: wide (plus the best "
                   "members of the first 3 families), reference (plus the best reference point)")
    p.add_argument("--half", choices=HALVES, default=None,
                   help="only the datasets of this half of the protocol (benchmarks.protocol; default: both)")
    p.add_argument("--z", type=float, nargs="+", default=[Z_DECIDE],
                   help="the verdict's interval levels to read (the first is the per-view table's; default: the "
                   "product's, %(default)s)")
    p.add_argument("--out", type=Path, help="also write the Markdown here")
    p.add_argument("--json", type=Path, help="per-view results as JSON")
    p.add_argument("--pools", nargs="+", default=None,
                   help="the named pools of named_pools.POOLS to read as views (each on the datasets of its "
                   "modality; default: " + "; ".join(f"{m}: {', '.join(ps)}" for m, ps in VIEW_POOLS.items()) + ")")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    root = bench_cache() / "pools"
    names = args.datasets or [d for d in ALL_DATASETS if (root / d / "candidates.json").is_file()]
    if args.half:
        names = [d for d in names if half(d) == args.half]
    results = []
    t0 = time.perf_counter()
    for d in names:
        try:
            modality = json.loads((root / d / "meta.json").read_text())["modality"]
        except (OSError, ValueError, KeyError):
            log.warning("%s: no pool folder under %s; skipped", d, root)
            continue
        pools = VIEW_POOLS[modality] if args.pools is None else [
            q for q in args.pools if POOL_MODALITY.get(q, modality) == modality]
        for pool in pools:
            try:
                view = view_data(d, pool, max_items=args.max_items, seed=args.seed, folds=args.folds, jobs=args.jobs)
            except Exception as err:  # noqa: BLE001 - a pool still being built: said, skipped
                log.warning("%s/%s: skipped (%s: %s)", d, pool, type(err).__name__, err)
                continue
            if view is None:
                continue
            r = simulate(view, budgets=BUDGETS, repeats=args.repeats, n_questions=args.questions,
                         tolerance=args.tolerance, levels=args.z, rule=args.contenders)
            log.info("%s/%s: label-free %s (regret %.3f); targeted @20 %.2f, random @20 %.2f", d, pool,
                     r["label_free"], r["label_free_regret"], np.mean(r["budgets"][20]["targeted"]),
                     np.mean(r["budgets"][20]["random"]))
            results.append(r)
    text = summary(results, BUDGETS, args.tolerance, args.z)
    text += (f"\n\n`python -m benchmarks.ask_simulated --max-items {args.max_items} --repeats {args.repeats} "
             f"--questions {args.questions}{' --half ' + args.half if args.half else ''} --contenders "
             f"{args.contenders} --z "
             f"{' '.join(f'{z:g}' for z in args.z)}` ({time.perf_counter() - t0:.0f} s)\n")
    print(text)
    if args.out:
        args.out.write_text(text)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=lambda o: o.tolist() if hasattr(o, "tolist")
                                        else str(o)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

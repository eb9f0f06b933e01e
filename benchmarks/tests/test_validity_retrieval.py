"""The retrieval views' harness (benchmarks/validity_retrieval.py) on synthetic data: the protocol's halves, the
documents-only int8 calibration, the pairs-to-set rule, and the protocol's reading of views and of a proposed search
default."""

import numpy as np
import pytest

from benchmarks import protocol
from benchmarks import validity_retrieval as vr


def test_sets_are_split_by_the_protocols_rule_and_every_view_is_a_known_pool():
    for name in vr.SETS:
        assert vr.half(name) == protocol.half(name)
    # the split of the five sets (fixed by their names)
    assert {n: vr.half(n) for n in vr.SETS} == {
        "chatterbot-qa": "selection", "movie-dialog": "confirmation", "python-topics": "confirmation",
        "emoji-names": "confirmation", "word-norm": "confirmation"}
    assert vr.VIEWS["issue"] == tuple(protocol.POOLS["issue8"])
    for view in ("minilm-heavy", "three-families", "families-unbalanced"):
        assert vr.VIEWS[view] == tuple(protocol.POOLS[view])


def test_int8_is_calibrated_on_the_documents_only():
    rng = np.random.default_rng(0)
    docs = rng.normal(size=(50, 4)).astype(np.float32)
    queries = np.vstack([docs.max(axis=0) + 5, docs.min(axis=0) - 5])  # outside the documents' range
    out = vr.int8_on_docs(np.vstack([docs, queries]), 50)
    assert out.dtype == np.float32 and out.min() >= -128 and out.max() <= 127
    assert np.array_equal(out[:50], vr.int8_on_docs(docs, 50))  # the queries change nothing of the documents
    assert (out[50] == 127).all() and (out[51] == -128).all()  # clipped to the documents' range


def test_pairs_become_documents_queries_and_relevant_rows():
    pairs = [("hi", "hello there"), ("hi", "good day"), ("bye", "see you"), ("see you", "see you")]
    docs, queries, rel = vr.from_pairs(pairs)
    assert docs == ["hello there", "good day", "see you"]
    assert queries == ["hi", "bye"]  # a query equal to its own document is dropped
    assert rel == [[0, 1], [2]]


ENTRIES = [
    {"name": "a", "parent": None, "kind": "transformer", "dims": 384},
    {"name": "a-copy", "parent": "a", "relation": "truncated", "kind": "transformer", "dims": 64},
    {"name": "b", "parent": None, "kind": "transformer", "dims": 768},
    {"name": "c", "parent": None, "kind": "transformer", "dims": 256},
    {"name": "tfidf-svd", "parent": None, "kind": "baseline", "dims": 256},
]


def _row(name, truth, signals):
    view = {"truth": truth, "signals": signals, "pairs": [("a-copy", "a")], "entries": ENTRIES}
    read = protocol.read_view(view, {"task_prior": 1.0}, "mean-rank")
    read.pop("combined")
    sig = {m: {"rho": protocol.correlations(s, truth)[0]} for m, s in signals.items()}
    best = max(truth, key=truth.get)
    return {"set": name, "view": "v", "half": vr.half(name), "truth": truth, **read, "kind": "q → a",
            "n_candidates": len(truth), "n_docs": 10, "n_queries": 10, "best": best, "best_mrr": truth[best],
            "raw": {"signals": signals, "pairs": [["a-copy", "a"]], "entries": ENTRIES},
            "signals": {m: sig.get(m, {"rho": float("nan")}) for m in vr.SIGNALS}}


@pytest.fixture
def rows(monkeypatch):
    """One selection view and two confirmation views where nn_agreement orders the candidates as the truth does and
    task_prior backwards; the text default is task_prior alone here."""
    monkeypatch.setitem(protocol.PARAMS, "a", 1.0)
    monkeypatch.setitem(protocol.PARAMS, "b", 3.0)
    monkeypatch.setitem(protocol.PARAMS, "c", 2.0)
    import benchmarks.validity_default as vdef

    monkeypatch.setattr(vdef, "default_setting", lambda modality: ({"task_prior": 1.0}, "mean-rank"))
    truth = {"a": 0.5, "a-copy": 0.45, "b": 0.7, "c": 0.6, "tfidf-svd": 0.1}
    good = dict(truth)
    bad = {k: -v for k, v in truth.items()}
    flat = {k: 0.0 for k in truth}
    signals = {"task_prior": bad, "nn_agreement": good, "sufficiency": flat, "rankme": flat, "modularity": flat}
    return [_row(n, truth, signals) for n in ("chatterbot-qa", "movie-dialog", "word-norm")]


def test_summary_reads_the_default_and_the_blind_orders(rows):
    s = vr.summary(rows)
    assert s["views"] == 3 and s["rho"] < -0.8 and s["within"] == 0.0  # the copy kept below its parent
    assert s["params"]["rho"] == pytest.approx(protocol.correlations({"a": 1, "a-copy": 1, "b": 3, "c": 2,
                                                                      "tfidf-svd": 0}, rows[0]["truth"])[0])
    assert s["signals"]["nn_agreement"] == pytest.approx(1.0)
    md = vr.to_markdown(rows)
    assert "| selection half | 1 |" in md and "| confirmation half | 2 |" in md


def test_a_search_default_is_chosen_on_selection_and_judged_by_the_rule_on_confirmation(rows):
    out = vr.choose_search_default(rows)
    assert "Selection half (1 views): ['chatterbot-qa']" in out
    chosen = out.split("Chosen on the selection half: ")[1].split(" (")[0]
    assert "nn_agreement" in chosen and "task_prior" not in chosen
    assert "Verdict: adopt" in out  # better ρ, more picks within 0.02, never confidently wrong more often
    worse = [dict(r) for r in rows]
    for r in worse[1:]:  # the confirmation views' nn_agreement now backwards too: the rule refuses
        r["raw"] = {**r["raw"], "signals": {**r["raw"]["signals"],
                                            "nn_agreement": r["raw"]["signals"]["task_prior"]}}
    assert "Verdict: not adopted" in vr.choose_search_default(worse)

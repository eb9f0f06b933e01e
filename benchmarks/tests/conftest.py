"""The benchmark harness's tests: the same session environment as tests/ (testkit.session: temporary HF_HOME,
loopback-only sockets), set before anything imports huggingface_hub, and the shared fixtures (among them the rows of
read retrieval views that test_validity_retrieval.py and test_retrieval_default.py share)."""

from __future__ import annotations

from testkit import session

session.isolate()

import pytest  # noqa: E402

from benchmarks import protocol  # noqa: E402
from benchmarks.validity_retrieval import SIGNALS, half  # noqa: E402
from embedselect._util.compat import ensure_torchvision_importable  # noqa: E402
from testkit.fixtures import cache_dir, one_thread  # noqa: E402,F401

ensure_torchvision_importable()


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
    return {"set": name, "view": "v", "half": half(name), "truth": truth, **read, "kind": "q → a",
            "n_candidates": len(truth), "n_docs": 10, "n_queries": 10, "best": best, "best_mrr": truth[best],
            "raw": {"signals": signals, "pairs": [["a-copy", "a"]], "entries": ENTRIES},
            "signals": {m: sig.get(m, {"rho": float("nan")}) for m in SIGNALS}}


@pytest.fixture
def rows(monkeypatch):
    """One selection view and two confirmation views where nn_agreement orders the candidates as the truth does and
    task_prior backwards; the text default is task_prior alone here."""
    monkeypatch.setitem(protocol.PARAMS, "a", 1.0)
    monkeypatch.setitem(protocol.PARAMS, "b", 3.0)
    monkeypatch.setitem(protocol.PARAMS, "c", 2.0)
    import benchmarks.default_grid as dg

    monkeypatch.setattr(dg, "default_setting", lambda modality: ({"task_prior": 1.0}, "mean-rank"))
    truth = {"a": 0.5, "a-copy": 0.45, "b": 0.7, "c": 0.6, "tfidf-svd": 0.1}
    good = dict(truth)
    bad = {k: -v for k, v in truth.items()}
    flat = {k: 0.0 for k in truth}
    signals = {"task_prior": bad, "nn_agreement": good, "sufficiency": flat, "rankme": flat, "modularity": flat}
    return [_row(n, truth, signals) for n in ("chatterbot-qa", "movie-dialog", "word-norm")]


@pytest.fixture
def witness_row(monkeypatch):
    """A selection view where nn_agreement and rankme put c first (b is best by 0.1) and task_prior follows the
    truth: the order alone is decided and wrong; task_prior as a witness leaves it undecided with b among the
    leaders; sufficiency (backwards) names the reference point instead."""
    monkeypatch.setitem(protocol.PARAMS, "a", 1.0)
    monkeypatch.setitem(protocol.PARAMS, "b", 3.0)
    monkeypatch.setitem(protocol.PARAMS, "c", 2.0)
    truth = {"a": 0.5, "a-copy": 0.45, "b": 0.7, "c": 0.6, "tfidf-svd": 0.1}
    nn = {"c": 0.9, "b": 0.8, "a": 0.5, "a-copy": 0.4, "tfidf-svd": 0.1}
    signals = {"task_prior": dict(truth), "nn_agreement": nn, "rankme": nn, "modularity": nn,
               "sufficiency": {k: -v for k, v in truth.items()}}
    return _row("chatterbot-qa", truth, signals)

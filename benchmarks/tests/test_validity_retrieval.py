"""The retrieval views' harness (benchmarks/validity_retrieval.py) on synthetic data: the protocol's halves, the
views' pools, and the summary and report of the views read (the rows: benchmarks/tests/conftest.py)."""

import pytest

from benchmarks import protocol
from benchmarks.sets.retrieval_registry import SETS
from benchmarks.validity_retrieval import VIEWS, half, summary, to_markdown


def test_sets_are_split_by_the_protocols_rule_and_every_view_is_a_known_pool():
    for name in SETS:
        assert half(name) == protocol.half(name)
    # the split of the five sets (fixed by their names)
    assert {n: half(n) for n in SETS} == {
        "chatterbot-qa": "selection", "movie-dialog": "confirmation", "python-topics": "confirmation",
        "emoji-names": "confirmation", "word-norm": "confirmation", "wordnet-definitions": "selection",
        "alice-qa": "selection", "newsgroup-subjects": "confirmation", "wikipedia-titles": "confirmation",
        "ruff-rules": "confirmation", "film-reviews": "confirmation", "python-docstrings": "confirmation",
        "chatterbot-world-qa": "selection", "sympy-docstrings": "confirmation",
        "networkx-docstrings": "confirmation", "scipy-docstrings": "confirmation",
        "matplotlib-rcparams": "confirmation", "wordnet-examples": "confirmation", "pandas-options": "selection",
        "mypy-error-codes": "selection", "pytest-options": "selection", "duckdb-functions": "selection",
        "sklearn-docstrings": "confirmation"}
    assert VIEWS["issue"] == tuple(protocol.POOLS["issue8"])
    for view in ("minilm-heavy", "three-families", "families-unbalanced"):
        assert VIEWS[view] == tuple(protocol.POOLS[view])


def test_summary_reads_the_default_and_the_blind_orders(rows):
    s = summary(rows)
    assert s["views"] == 3 and s["rho"] < -0.8 and s["within"] == 0.0  # the copy kept below its parent
    assert s["params"]["rho"] == pytest.approx(protocol.correlations({"a": 1, "a-copy": 1, "b": 3, "c": 2,
                                                                      "tfidf-svd": 0}, rows[0]["truth"])[0])
    assert s["signals"]["nn_agreement"] == pytest.approx(1.0)
    md = to_markdown(rows)
    assert "| selection half | 1 |" in md and "| confirmation half | 2 |" in md
    assert "| set word-norm (confirmation) | 1 |" in md  # one line per set too

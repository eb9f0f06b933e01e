"""The simulated user of benchmarks/queries_simulated.py: the picks on synthetic reciprocal ranks."""

from __future__ import annotations

import numpy as np

from benchmarks.queries_simulated import picks, simulate, table


def test_the_best_on_the_queries_follows_them_and_the_leaders_verdict_needs_a_clear_lead():
    rng = np.random.default_rng(0)
    m = 200
    good = rng.uniform(0.5, 1.0, m)
    rr = {"b": good * 0.5, "a": good, "a-int8": good * 0.99}  # the label-free order puts b first
    order = ["b", "a", "a-int8"]
    fams = {"b": "b", "a": "a", "a-int8": "a"}
    few = picks(rr, order, ["b"], fams, np.arange(5))
    assert few["label-free"] == "b" and few["best-on-queries"] == "a" and not few["decided-best"]
    many = picks(rr, order, ["b", "a"], fams, np.arange(40))
    assert many["best-on-queries"] == "a" and many["decided-best"]  # 40 of 40 queries: a finds it higher
    assert many["queries"] == "a" and many["ruled_out"] == ["b"]


def test_simulate_keeps_the_truth_off_the_drawn_queries_and_tables_the_shares():
    m = 120
    rr = {"x": np.linspace(0.2, 1.0, m), "y": np.full(m, 0.5)}
    view = {"set": "s", "view": "v", "half": "selection", "order": ["y", "x"], "leaders": ["y", "x"],
            "raw": {"entries": [{"name": "x"}, {"name": "y"}]}}
    out = simulate(view, rr, budgets=(10, 80), draws=3, tolerance=0.02)
    assert list(out["budgets"]) == [10]  # 80 would leave fewer than MIN_LEFT queries for the truth
    rows = out["budgets"][10]
    assert len(rows) == 3 and all(r["regret"]["label-free"] >= 0 for r in rows)
    lines = table([out], (10, 80), 0.02)
    assert len(lines) == 3 and lines[2].startswith("| 10 | 3 |")

"""Report plots: each plot appears when the ranking has its data, and decodes as a PNG image."""

from __future__ import annotations

import base64

from embedselect.publish import plots
from embedselect.publish.report import to_html
from tests.test_publish_badges_leaderboard import _ranking


def _full():
    r = _ranking(["a", "b", "c"], [0.9, 0.5, 0.1], "aaaa1111")
    for c, (m, s, p) in zip(r.candidates, [(0.8, 0.1, 0.6), (0.7, 0.05, 0.6), (0.5, 0.2, 0.2)]):
        c.columns.update({"task_prior.probe_acc_mean": m, "task_prior.probe_acc_std": s, "task_prior.probe_acc_p05": p})
    r.candidates[0].dim, r.candidates[1].dim, r.candidates[2].dim = 768, 128, 384
    names = ["a", "b", "c"]
    r.details["sufficiency"] = {"matrix": {s: {t: 0.1 for t in names if t != s} for s in names},
                                "communities": [["b", "c"], ["a"]]}  # fmt: skip
    r.validation = {"table": {"a": {"accuracy": 0.85}, "b": {"accuracy": 0.8}, "c": {"accuracy": 0.6}}}
    return r


def test_every_plot_is_drawn_as_png():
    figs = plots.plots(_full())
    assert len(figs) == len(plots.ALL) == 6
    for title, uri in figs:
        assert title and uri.startswith("data:image/png;base64,")
        assert base64.b64decode(uri.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    page = to_html(_full())
    assert page.count('<figure class="plot">') == 6 and "http://" not in page and "https://" not in page


def test_plots_missing_data_are_left_out():
    r = _ranking(["a"], [0.9], "aaaa1111")
    assert [t for t, _ in plots.plots(r)] == ["Ranking (combined score)"]


def test_pareto_front_lower_cost_higher_score():
    pts = [(1, 0.5), (2, 0.4), (3, 0.9), (4, 0.8), (0.5, 0.1)]
    assert sorted(plots.pareto_front(pts)) == [0, 2, 4]

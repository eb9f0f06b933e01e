"""A night whose ranking names no clear winner says so in every output: the summary, the printed line, the
leaderboard and the leader badge (the per-candidate badges already said ``tied #1``; the leader badge named the
first row as "best embedder" and the printed line as "leader")."""

from __future__ import annotations

import json

import pytest

from embedselect.cli.nightly import _human
from embedselect.nightly import load_config, run_night
from tests.test_nightly import publish_st, write_config
from testkit import tinymodels as tm


@pytest.mark.fault
def test_an_undecided_night_names_its_leaders_not_a_winner(hub, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for i, name in enumerate(["a", "b"]):  # two model families: too few for the ranking to decide
        publish_st(hub, f"acme/{name}", tm.make_tiny_sentence_transformer(tmp_path / f"st{i}", seed=i), 10 - i)
    summary = run_night(load_config(write_config(tmp_path)))

    assert summary["decided"] is False and summary["leader"] == summary["leaders"][0]
    leaders = summary["leaders"]
    site = tmp_path / "site"
    badge = json.loads((site / "badges" / "leader.json").read_text())
    assert badge["message"].startswith(("no clear winner: ", "unconfirmed: ")) and badge["color"] == "lightgrey"
    assert all(n in badge["message"] for n in leaders)
    board = (site / "leaderboard.md").read_text()
    assert "No clear winner" in board and all(n in board.split("|")[0] for n in leaders)
    first = _human(summary).splitlines()[0]
    assert "no clear winner" in first and "leader acme" not in first

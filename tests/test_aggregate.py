"""Combining per-metric scores into one rank (embedselect.aggregate)."""

from __future__ import annotations

import math

import pytest

from embedselect.aggregate import combine_ranks, metric_ranks, rank_table
from embedselect.errors import ConfigError, DataError


def test_agreeing_metrics_give_the_same_order_and_bounds():
    scores = {"a": {"x": 3.0, "y": 2.0, "z": 1.0}, "b": {"x": 30.0, "y": 20.0, "z": -5.0}}
    combined = combine_ranks(scores)
    assert combined == {"x": 1.0, "y": 0.5, "z": 0.0}
    table = rank_table(scores)
    assert list(table.index) == ["x", "y", "z"]
    assert list(table["rank"]) == [1, 2, 3]
    # the per-metric ranks stay visible
    assert list(table["a_rank"]) == [1.0, 2.0, 3.0]
    assert list(table["b_rank"]) == [1.0, 2.0, 3.0]


def test_disagreement_tie_is_broken_by_first_metric_then_name():
    scores = {"primary": {"x": 1.0, "y": 2.0}, "other": {"x": 2.0, "y": 1.0}}
    combined = combine_ranks(scores)
    assert combined["x"] == combined["y"] == 0.5
    assert list(rank_table(scores).index) == ["y", "x"]  # y is first on the primary metric
    # full tie on every metric: alphabetical
    tied = {"m": {"b": 1.0, "a": 1.0}}
    t = rank_table(tied)
    assert list(t.index) == ["a", "b"] and t.loc["a", "m_rank"] == 1.5


def test_weights_change_the_winner():
    scores = {"a": {"x": 1.0, "y": 0.0}, "b": {"x": 0.0, "y": 1.0}}
    assert rank_table(scores, weights={"a": 1.0, "b": 3.0}).index[0] == "y"
    assert rank_table(scores, weights={"a": 3.0, "b": 1.0}).index[0] == "x"
    assert combine_ranks(scores, weights={"a": 1.0}) == {"x": 1.0, "y": 0.0}


def test_missing_and_nan_scores_use_the_metrics_that_scored_the_candidate():
    scores = {"a": {"x": 2.0, "y": 1.0, "z": float("nan")}, "b": {"x": 1.0, "z": 5.0}}
    combined = combine_ranks(scores)
    assert combined["z"] == 1.0  # only b scored it, where it is first
    assert combined["x"] == pytest.approx(0.5)  # first on a (u=0), last on b (u=1)
    assert combined["y"] == 0.0
    ranks = metric_ranks(scores)
    assert math.isnan(ranks.loc["z", "a"]) and math.isnan(ranks.loc["y", "b"])


def test_mean_z_uses_gap_sizes_mean_rank_does_not():
    # x is far ahead on a and a close third on b; v is second on a and first on b
    scores = {
        "a": {"x": 100.0, "v": 3.0, "p": 2.0, "q": 1.0, "r": 0.0},
        "b": {"v": 1.0, "p": 0.995, "x": 0.99, "q": 0.01, "r": 0.0},
    }
    by_rank = rank_table(scores)
    by_z = rank_table(scores, method="mean-z")
    assert by_rank.index[0] == "v"
    assert by_z.index[0] == "x"
    assert by_rank.loc["x", "combined"] == pytest.approx(1 - (0.0 + 0.5) / 2)


@pytest.mark.parametrize(
    "kwargs, err",
    [
        ({"method": "median"}, ConfigError),
        ({"weights": {"nope": 1.0}}, ConfigError),
        ({"weights": {"a": -1.0}}, ConfigError),
        ({"weights": {"a": 0.0}}, ConfigError),
    ],
)
def test_bad_options_raise_config_error(kwargs, err):
    with pytest.raises(err):
        combine_ranks({"a": {"x": 1.0}}, **kwargs)


def test_no_scores_raise_data_error():
    with pytest.raises(DataError):
        combine_ranks({})
    with pytest.raises(DataError):
        combine_ranks({"a": {"x": float("nan")}})

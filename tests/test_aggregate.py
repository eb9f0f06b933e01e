"""Combining per-metric scores into one rank (embedselect.ranking.combine)."""

from __future__ import annotations

import math

import pytest

from embedselect.ranking.combine import combine_ranks, metric_ranks, rank_table
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


def test_a_tie_is_shown_as_a_tie_and_no_metric_breaks_it():
    """Issue 9 item 4: a mean-rank tie used to be decided by the first metric (task_prior put the distilled copy
    first); now tied candidates share rank 1 and are listed by name."""
    scores = {"primary": {"x": 1.0, "y": 2.0}, "other": {"x": 2.0, "y": 1.0}}
    combined = combine_ranks(scores)
    assert combined["x"] == combined["y"] == 0.5
    t = rank_table(scores)
    assert list(t.index) == ["x", "y"] and list(t["rank"]) == [1, 1]
    # full tie on every metric: alphabetical, average rank inside the metric
    tied = {"m": {"b": 1.0, "a": 1.0}}
    t = rank_table(tied)
    assert list(t.index) == ["a", "b"] and t.loc["a", "m_rank"] == 1.5 and list(t["rank"]) == [1, 1]


def test_one_rank_rule_everywhere():
    from embedselect.ranking.ties import order_by_score, rank_scores, tie_groups

    s = {"c": 0.1 + 0.2, "a": 0.3, "b": 1.0, "d": float("nan"), "e": None}
    assert tie_groups(s) == [["b"], ["a", "c"]]
    assert order_by_score(s) == ["b", "a", "c", "d", "e"]
    assert rank_scores(s) == {"b": 1, "a": 2, "c": 2, "d": None, "e": None}
    assert rank_scores(s, ties="average") == {"b": 1.0, "a": 2.5, "c": 2.5, "d": None, "e": None}


def test_decide_names_a_winner_only_when_it_can():
    from embedselect.ranking.combine import decide

    pool = {"a": 0.9, "b": 0.5, "c": 0.2, "d": 0.0}
    d = decide(pool)
    assert d.decided and d.leaders == ["a"] and d.reasons == []
    # a tie at the top
    d = decide({**pool, "b": 0.9})
    assert not d.decided and d.leaders == ["a", "b"] and "tie" in d.reasons[0]
    # overlapping bootstrap intervals on every bootstrapped score
    iv = {"a": {"m": (0.5, 0.9)}, "b": {"m": (0.4, 0.6)}, "c": {"m": (0.1, 0.3)}, "d": {"m": (0.0, 0.1)}}
    d = decide(pool, intervals=iv)
    assert not d.decided and d.leaders == ["a", "b"] and "overlap" in d.reasons[0]
    # separated on one bootstrapped score is enough
    iv2 = {k: {**v, "n": (1.0, 2.0) if k == "a" else (0.0, 0.5)} for k, v in iv.items()}
    assert decide(pool, intervals=iv2).decided
    # too small a pool: every family's best is a plausible best, and the decision says how to settle it
    d = decide({"a": 1.0, "b": 0.0})
    assert not d.decided and d.leaders == ["a", "b"] and "only 2 model families" in d.reasons[0]
    assert "embedselect ask" in d.settle and "embedselect validate" in d.settle
    assert decide(pool).settle == ""


def test_decide_counts_model_families_not_candidates():
    from embedselect.ranking.combine import decide

    # one model with three options beside a baseline: two families, however many candidates
    pool = {"a": 0.9, "a-cls": 0.8, "a-len8": 0.7, "tfidf": 0.1}
    fam = {"a-cls": "a", "a-len8": "a"}
    d = decide(pool, families=fam)
    assert not d.decided and d.leaders == ["a", "tfidf"] and "only 2 model families scored (4 candidates" in d.reasons[0]
    # two models and two reference points: four families, two of them models, one comparison
    pool = {"mpnet": 0.9, "tfidf": 0.6, "minilm": 0.5, "random": 0.0}
    d = decide(pool, references={"tfidf", "random"})
    assert not d.decided and d.leaders == ["mpnet", "minilm"]
    assert "two model families (mpnet and minilm" in d.reasons[0]
    # a third model family makes the comparison
    assert decide({**pool, "e5": 0.4}, references={"tfidf", "random"}).decided
    # the same with variants: the other family's best member is the plausible best
    pool = {"mpnet": 0.9, "minilm-cls": 0.7, "minilm": 0.5, "tfidf": 0.3, "random": 0.0}
    d = decide(pool, references={"tfidf", "random"}, families={"minilm-cls": "minilm"})
    assert not d.decided and d.leaders == ["mpnet", "minilm-cls"]


def test_decide_a_reference_point_first_is_not_a_decision():
    from embedselect.ranking.combine import decide

    # three model families, the signals agree, but a built-in baseline is first: undecided, the first model joins
    pool = {"pixel-pca": 0.9, "lite1": 0.8, "lite0": 0.7, "lite2": 0.6, "random": 0.1}
    fam = {"lite0": "lite0", "lite1": "lite1", "lite2": "lite2"}
    d = decide(pool, references={"pixel-pca", "random"}, families=fam)
    assert not d.decided and d.leaders == ["pixel-pca", "lite1"]
    assert d.reasons == ["pixel-pca, a reference point (a built-in baseline), is first: it measures what the models "
                         "add beyond it, it is not a pick; lite1 is the first candidate that is neither untrained nor a "
                         "reference point"]
    # the first model is a family's best member, a variant included
    d = decide({"tfidf": 0.9, "a-cls": 0.8, "a": 0.7, "b": 0.6, "c": 0.5}, references={"tfidf"},
               families={"a-cls": "a"})
    assert not d.decided and d.leaders == ["tfidf", "a-cls"]
    # a model first: the rule says nothing
    assert decide({"lite1": 0.9, "pixel-pca": 0.8, "lite0": 0.7, "lite2": 0.6}, references={"pixel-pca"}).decided


def test_decide_a_reference_point_first_adds_a_model_that_is_not_untrained():
    """Rule 7 added the first model below a reference point in first place even when that model looked untrained:
    the plausible best it named was random vectors. Rules 7 and 8 add the same candidate: the first that is neither
    untrained nor a reference point."""
    from embedselect.ranking.combine import decide

    pool = {"tfidf": 0.9, "fresh": 0.8, "trained": 0.7, "other": 0.6, "random": 0.1}
    refs = {"tfidf", "random"}
    d = decide(pool, references=refs, untrained={"fresh"})
    assert not d.decided and d.leaders == ["tfidf", "trained"] and d.codes == ["undecided"]
    assert d.reasons == ["tfidf, a reference point (a built-in baseline), is first: it measures what the models add "
                         "beyond it, it is not a pick; trained is the first candidate that is neither untrained "
                         "nor a reference point"]
    # a variant of a trained model counts; every model untrained: undecided, nobody joins
    d = decide({"tfidf": 0.9, "fresh": 0.8, "a-cls": 0.7, "a": 0.6, "b": 0.5}, references={"tfidf"},
               untrained={"fresh"}, families={"a-cls": "a"})
    assert d.leaders == ["tfidf", "a-cls"]
    d = decide(pool, references=refs, untrained={"fresh", "trained", "other"})
    assert not d.decided and d.leaders == ["tfidf"]
    assert d.reasons == ["tfidf, a reference point (a built-in baseline), is first: it measures what the models add "
                         "beyond it, it is not a pick; no candidate that is neither untrained nor a reference point "
                         "scored"]


def test_decide_an_untrained_checkpoint_first_is_not_a_decision():
    from embedselect.ranking.combine import SETTLE, decide

    # three model families and two reference points, the signals agree: decided, unless the first looks untrained
    pool = {"fresh-a": 0.9, "fresh-b": 0.8, "trained": 0.7, "tfidf": 0.3, "random": 0.1}
    refs = {"tfidf", "random"}
    assert decide(pool, references=refs).decided
    d = decide(pool, references=refs, untrained={"fresh-a", "fresh-b"})
    assert not d.decided and d.leaders == ["fresh-a", "trained"] and d.codes == ["undecided"] and d.settle == SETTLE
    assert d.reasons == ["fresh-a looks like an untrained checkpoint (every normalisation layer at its initial "
                         "values), and it is first: its vectors are random, and random models can agree with each "
                         "other well enough to lead; it is not a pick; trained is the first candidate that is neither "
                         "untrained nor a reference point"]
    # the plausible best skips the reference points and the untrained ones below the first, a variant included
    d = decide({"fresh": 0.9, "tfidf": 0.8, "fresh2": 0.7, "a-cls": 0.6, "a": 0.5, "b": 0.4},
               references={"tfidf"}, untrained={"fresh", "fresh2"}, families={"a-cls": "a"})
    assert not d.decided and d.leaders == ["fresh", "a-cls"]
    # no trained model: undecided, nobody joins
    d = decide({"fresh": 0.9, "fresh2": 0.8, "fresh3": 0.7, "tfidf": 0.3, "random": 0.1}, references=refs,
               untrained={"fresh", "fresh2", "fresh3"})
    assert not d.decided and d.leaders == ["fresh"] and d.reasons[0].endswith(
        "no candidate that is neither untrained nor a reference point scored")
    # an untrained candidate below a trained first: the rule says nothing
    assert decide(pool, references=refs, untrained={"fresh-b"}).decided


def test_decide_when_the_signals_disagree_about_first_place():
    from embedselect.ranking.combine import combine_ranks, copies_below_parents, decide

    # a is first on two signals of three, b on one (a second there): leaving out either of a's signals ties the top
    signals = {"s1": {"a": 3.0, "b": 2.0, "c": 1.0, "d": 0.0}, "s2": {"a": 3.0, "b": 2.0, "c": 1.0, "d": 0.0},
               "s3": {"b": 3.0, "a": 2.0, "c": 1.0, "d": 0.0}}
    w = {"s1": 1.0, "s2": 1.0, "s3": 1.0}
    combined = combine_ranks(signals, weights=w)
    assert max(combined, key=combined.get) == "a"
    d = decide(combined, per_metric=signals, weights=w)
    assert not d.decided and d.leaders == ["a", "b"]
    assert "the signals disagree about first place: without s1, s2, b would be first" in d.reasons[0]
    # the signals agree: decided
    agree = {m: signals["s1"] for m in w}
    assert decide(combine_ranks(agree, weights=w), per_metric=agree, weights=w).decided
    # a weight-0 signal is not consulted, and a lone signal cannot be left out
    d = decide(combine_ranks(signals, weights={"s1": 1.0, "s2": 0.0, "s3": 0.0}), per_metric=signals,
               weights={"s1": 1.0, "s2": 0.0, "s3": 0.0})
    assert d.decided and d.leaders == ["a"]
    # a copy first without a signal goes below its parent there too: no flip from the copy
    copy = {"s1": {"a": 3.0, "a8": 2.9, "c": 1.0, "d": 0.0, "e": -1.0},
            "s2": {"a8": 3.0, "a": 2.0, "c": 1.0, "d": 0.0, "e": -1.0}}
    combined, _ = copies_below_parents(combine_ranks(copy, weights={"s1": 1.0, "s2": 1.0}, families={"a8": "a"}),
                                       [("a8", "a")])
    d = decide(combined, per_metric=copy, weights={"s1": 1.0, "s2": 1.0}, families={"a8": "a"}, copies=[("a8", "a")])
    assert d.decided and d.leaders == ["a"]


def test_two_candidates_with_the_same_vectors_tie_without_a_disagreement_of_the_signals():
    """New-user audit: two candidates with identical vectors tie on every signal; rule 5 then added "the signals
    disagree about first place: without task_prior, sufficiency, b would be first", which was the tie again."""
    from embedselect.ranking.combine import combine_ranks, decide

    same = {"task_prior": {"a": 0.9, "b": 0.9, "c": 0.5, "d": 0.3, "e": 0.1},
            "sufficiency": {"a": 0.8, "b": 0.8, "c": 0.6, "d": 0.2, "e": 0.1}}
    w = {"task_prior": 1.0, "sufficiency": 0.25}
    d = decide(combine_ranks(same, weights=w), per_metric=same, weights=w)
    assert not d.decided and d.leaders == ["a", "b"]
    assert d.reasons == ["tie: a, b have the same combined score; listed by name, not by merit"], d.reasons
    # a third candidate a signal would put first is still named, the tied one is not
    third = {"task_prior": {**same["task_prior"], "c": 0.95}, "sufficiency": same["sufficiency"],
             "s3": {"a": 0.9, "b": 0.9, "c": 0.1, "d": 0.3, "e": 0.2}}
    w3 = {**w, "s3": 1.0}
    combined = combine_ranks(third, weights=w3)
    d = decide(combined, per_metric=third, weights=w3)
    assert d.leaders[:2] == ["a", "b"] and "c" in d.leaders
    (disagree,) = [r for r in d.reasons if r.startswith("the signals disagree")]
    assert "c would be first" in disagree and "b would be first" not in disagree, disagree


def test_a_witness_that_puts_a_candidate_tied_with_the_first_first_does_not_disagree():
    """Two candidates with identical vectors tie on every signal, the witness (nn_agreement, weight 0) too; rule 6
    then added "nn_agreement, shown beside the combination, puts b first (a tie)", the tie said again (as rule 5 did
    before it left the tied out). A witness that puts another candidate first is still named, the tied one not."""
    from embedselect.ranking.combine import combine_ranks, decide

    same = {"task_prior": {"a": 0.9, "b": 0.9, "c": 0.5, "d": 0.3, "e": 0.1},
            "sufficiency": {"a": 0.8, "b": 0.8, "c": 0.6, "d": 0.2, "e": 0.1},
            "nn_agreement": {"a": 0.7, "b": 0.7, "c": 0.5, "d": 0.2, "e": 0.1}}
    w = {"task_prior": 1.0, "sufficiency": 0.25, "nn_agreement": 0.0}
    d = decide(combine_ranks(same, weights=w), per_metric=same, weights=w)
    assert not d.decided and d.leaders == ["a", "b"]
    assert d.reasons == ["tie: a, b have the same combined score; listed by name, not by merit"], d.reasons
    witness = {**same, "nn_agreement": {**same["nn_agreement"], "c": 0.9}}  # the witness puts c first
    d = decide(combine_ranks(witness, weights=w), per_metric=witness, weights=w)
    assert d.leaders == ["a", "b", "c"]
    (said,) = [r for r in d.reasons if r.startswith("nn_agreement")]
    assert said == "nn_agreement, shown beside the combination, puts c first", d.reasons


def test_decide_asks_a_witness_shown_beside_the_combination():
    from embedselect.ranking.combine import WITNESSES, combine_ranks, copies_below_parents, decide

    # the two combined signals agree on a; nn_agreement, shown with weight 0, puts b first
    signals = {"s1": {"a": 3.0, "b": 2.0, "c": 1.0, "d": 0.0}, "s2": {"a": 3.0, "b": 2.0, "c": 1.0, "d": 0.0},
               "nn_agreement": {"b": 0.9, "a": 0.8, "c": 0.1, "d": 0.0}}
    w = {"s1": 1.0, "s2": 0.25, "nn_agreement": 0.0}
    combined = combine_ranks(signals, weights=w)
    assert decide(combined, per_metric=signals, weights=w, witnesses=()).decided
    d = decide(combined, per_metric=signals, weights=w, witnesses=("nn_agreement",))
    assert not d.decided and d.leaders == ["a", "b"] and d.codes == ["undecided"]
    assert "nn_agreement, shown beside the combination, puts b first" in d.reasons[0]
    # None reads the package's WITNESSES
    assert decide(combined, per_metric=signals, weights=w).decided == (WITNESSES != ("nn_agreement",))
    # the witness agrees: decided; a witness not computed, all NaN, or combined (weight > 0) is not asked
    agree = {**signals, "nn_agreement": signals["s1"]}
    assert decide(combined, per_metric=agree, weights=w, witnesses=("nn_agreement",)).decided
    for shown, weights in (({k: v for k, v in signals.items() if k != "nn_agreement"}, w),
                           ({**signals, "nn_agreement": {k: math.nan for k in signals["s1"]}}, w)):
        assert decide(combined, per_metric=shown, weights=weights, witnesses=("nn_agreement",)).decided
    # the witness counts each family once and puts copies below their parents: a copy or a variant first under it
    # names its family's head, not a new leader
    fam = {"a8": "a"}
    sig = {"s1": {"a": 3.0, "a8": 2.5, "c": 1.0, "d": 0.0, "e": -1.0},
           "nn_agreement": {"a8": 0.9, "a": 0.8, "c": 0.1, "d": 0.0, "e": 0.0}}
    ww = {"s1": 1.0, "nn_agreement": 0.0}
    comb, _ = copies_below_parents(combine_ranks(sig, weights=ww, families=fam), [("a8", "a")])
    assert decide(comb, per_metric=sig, weights=ww, families=fam, copies=[("a8", "a")],
                  witnesses=("nn_agreement",)).decided
    # a tie at the top of the witness is not agreement
    tie = {**signals, "nn_agreement": {"a": 0.9, "b": 0.9, "c": 0.1, "d": 0.0}}
    d = decide(combined, per_metric=tie, weights=w, witnesses=("nn_agreement",))
    assert not d.decided and d.leaders == ["a", "b"] and "(a tie)" in d.reasons[0]


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


def _every_reason_decide_gives():
    """(decision, the cause it should name) for one pool per rule of decide()."""
    from embedselect.ranking.combine import decide

    four = {"a": 0.9, "b": 0.7, "c": 0.5, "d": 0.3}
    split = {"m1": {"a": 3.0, "b": 2.0, "c": 1.0, "d": 0.0}, "m2": {"a": 0.0, "b": 3.0, "c": 2.0, "d": 1.0}}
    return [
        (decide({"a": 0.9, "b": 0.9, "c": 0.5, "d": 0.3}), "tie"),
        (decide(four, intervals={"a": {"m": [0.5, 0.9]}, "b": {"m": [0.4, 0.6]}, "c": {"m": [0.0, 0.1]},
                                 "d": {"m": [0.0, 0.1]}}), "overlap"),
        (decide({"a": 0.9, "b": 0.5, "c": 0.1}), "few-families"),
        (decide(four, references={"c", "d"}), "two-families"),
        (decide(four, per_metric=split, weights={"m1": 2.0, "m2": 1.0}), "signals"),
        (decide(four, per_metric={"m1": split["m1"], "nn_agreement": split["m2"]},
                weights={"m1": 1.0, "nn_agreement": 0.0}), "witness"),
        (decide({"t": 0.95, **four}, references={"t"}), "reference-first"),
        (decide(four, untrained={"a"}), "untrained-first"),
        (decide({}), "no-score"),
    ]


def test_every_reason_of_decide_names_one_of_the_causes_of_an_undecided_ranking():
    """WARNING_CODES["undecided"] named three causes where decide() had more (a witness, a baseline first, an
    untrained checkpoint first): the causes are one list, UNDECIDED_CAUSES, every reason names its cause and takes
    its code from it, and the codes' texts are made from it."""
    import re
    from pathlib import Path

    from embedselect.ranking.warning_codes import UNDECIDED_CAUSES, WARNING_CODES

    seen = set()
    for d, cause in _every_reason_decide_gives():
        assert not d.decided and cause in d.causes, (cause, d)
        assert len(d.causes) == len(d.reasons) == len(d.codes) and all(c in UNDECIDED_CAUSES for c in d.causes)
        assert d.codes == [UNDECIDED_CAUSES[c][0] for c in d.causes]
        seen |= set(d.causes)
    pipeline = Path(__file__).resolve().parents[1] / "embedselect" / "pipeline"
    named = {m for f in pipeline.glob("*.py") for m in re.findall(r'causes=\["([a-z-]+)"\]', f.read_text())}
    assert named == {"contenders-left", "one-family"}  # answers or queries that decide nothing
    assert seen | named == set(UNDECIDED_CAUSES), set(UNDECIDED_CAUSES) - seen - named
    for code, why in UNDECIDED_CAUSES.values():
        assert why in WARNING_CODES[code]


def test_the_documented_causes_of_an_undecided_ranking_are_the_codes():
    """docs/validation.md's warning-code table lists, for undecided and small-pool, the causes of UNDECIDED_CAUSES
    (its row is WARNING_CODES' text, then what the doc adds after a semicolon)."""
    from pathlib import Path

    from embedselect.ranking.warning_codes import WARNING_CODES

    doc = (Path(__file__).resolve().parents[1] / "docs" / "validation.md").read_text(encoding="utf-8")
    rows = {line.split(" | ")[0].strip("| `"): line.split(" | ", 1)[1].rstrip(" |").replace("`", "")
            for line in doc[doc.index("## Warning codes"):].splitlines() if line.startswith("| `")}
    for code in ("undecided", "small-pool"):
        row = rows[code]
        assert row == WARNING_CODES[code] or row.startswith(WARNING_CODES[code] + "; "), (code, row)

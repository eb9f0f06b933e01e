"""Results a pipeline can act on: select(strict=True), warnings with stable codes, rank --fail-on, and a ranking
file that reads back exactly (NaN included), refuses what it cannot read with a typed error."""

from __future__ import annotations

import json
import logging
import math
import re
from pathlib import Path

import pytest

import embedselect
from embedselect.cli import main
from embedselect.data import sample_path
from embedselect.config import RankConfig
from embedselect.errors import EXIT_CODES, CandidatesFailedError, ConfigError, RankingFormatError
from embedselect.ranking.result import FORMAT_VERSION, WARNING_CODES, CandidateResult, Ranking, RankingWarning
from testkit.tinymodels import make_pickle_only_model

SAMPLE = sample_path("texts")
DOCS = Path(__file__).resolve().parents[1] / "docs" / "validation.md"
README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.fixture(scope="module")
def baselines_ranking(tmp_path_factory):
    """Two baselines on the sample: a small pool, a baseline first (cached per module)."""
    cache = tmp_path_factory.mktemp("cache")
    return embedselect.select(SAMPLE, "tfidf-svd,random-projection", column="text", metrics=["task_prior"],
                              cache_dir=cache)


def test_a_small_pool_is_said_once(tmp_path):
    """Four candidates of two families: the ranking says the pool is small, and a metric's own note that the pool is
    small is not said again (it was, whenever the pool had 4 candidates or more, counted before families were)."""
    r = embedselect.select(SAMPLE, ["tfidf-svd", "tfidf-svd?dim=8", "random-projection", "random-projection?dim=8"],
                           column="text", metrics=["task_prior"], cache_dir=tmp_path / "c")
    small = r.warnings_with("small-pool")
    assert len(small) == 1 and "only 2 model families" in small[0], [str(w) for w in small]


def test_warnings_carry_stable_codes_and_the_candidates_they_concern(baselines_ranking):
    r = baselines_ranking
    assert all(isinstance(w, RankingWarning) and w.code in WARNING_CODES for w in r.warnings)
    small = r.warnings_with("small-pool")
    assert small and "unreliable in pools smaller" in small[0]  # still the message as a str
    wins = r.warnings_with("baseline-wins")
    assert len(wins) == 1 and r.best is not None and r.best.name in wins[0].candidates
    assert r.warnings_with("candidate-failed") == []
    with pytest.raises(embedselect.ConfigError, match="unknown warning code"):
        r.warnings_with("no-such-code")
    d = r.to_dict()["warnings"]
    assert {"code", "message", "candidates"} == set(d[0]) and d[0]["code"] == r.warnings[0].code


def test_strict_raises_a_typed_error_that_carries_the_ranking(tmp_path, cache_dir):
    bad = make_pickle_only_model(tmp_path / "pickle-only")
    models = [str(bad), "tfidf-svd", "random-projection"]
    with pytest.raises(CandidatesFailedError, match="1 of 3 candidate") as e:
        embedselect.select(SAMPLE, models, column="text", metrics=["task_prior"], strict=True)
    assert e.value.exit_code == EXIT_CODES["partial"]
    assert e.value.failed == [e.value.ranking.failed[0].name]
    assert isinstance(e.value, embedselect.CandidateError)
    lenient = embedselect.select(SAMPLE, models, column="text", metrics=["task_prior"])  # not strict: a failed row
    failed = lenient.warnings_with("candidate-failed")
    assert [w.candidates for w in failed] == [(lenient.failed[0].name,)]
    # strict with nothing failed returns the ranking
    ok = embedselect.select(SAMPLE, models[1:], column="text", metrics=["task_prior"], strict=True)
    assert not ok.failed


def test_fail_on_exits_11_after_writing_the_ranking(tmp_path, capsys):
    base = ["rank", str(SAMPLE), "-c", "text", "-m", "tfidf-svd,random-projection", "--metrics", "task_prior",
            "--cache-dir", str(tmp_path / "c"), "-q", "--json"]
    assert main(base + ["--fail-on", "candidate-failed"]) == 0  # nothing failed
    capsys.readouterr()
    assert main(base + ["--fail-on", "candidate-failed,baseline-wins,undecided"]) == EXIT_CODES["fail_on"] == 11
    out, err = capsys.readouterr()
    assert Ranking.from_json(out).best is not None  # the ranking was written first
    assert "--fail-on: baseline-wins (" in err and "--fail-on: undecided (" in err
    assert "candidate-failed" not in err


@pytest.mark.fault
def test_strict_says_on_stderr_which_candidates_failed_and_why(tmp_path, capsys):
    """``rank --json --strict`` exited 8 with nothing on stderr about the failed candidate (the JSON held it, the
    notes there leave it out for the table's '!' line); it now says one ``--strict:`` line naming each failed
    candidate with its reason, through the line --fail-on's conditions take (cli.rank.exit_status). ``embed`` alike."""
    bad = make_pickle_only_model(tmp_path / "bad")
    models = f"{bad},tfidf-svd,random-projection"
    base = [str(SAMPLE), "-c", "text", "-m", models, "--cache-dir", str(tmp_path / "c"), "-q", "--json", "--strict"]
    assert main(["rank", *base, "--metrics", "task_prior", "--fail-on", "baseline-wins"]) == EXIT_CODES["partial"] == 8
    out, err = capsys.readouterr()
    assert [c.name for c in Ranking.from_json(out).failed] == ["bad"]  # stdout: the JSON only
    said = [ln for ln in err.splitlines() if "--strict" in ln]
    assert len(said) == 1 and said[0].startswith("embedselect: --strict: 1 candidate(s) failed: bad (UnsafeModelError: "), err
    assert "only pickle weights" in said[0] and "--fail-on" not in err  # the strict exit is the one said
    assert main(["embed", *base]) == 8
    out, err = capsys.readouterr()
    assert [r["name"] for r in json.loads(out) if r["status"] != "ok"] == ["bad"]
    assert [ln for ln in err.splitlines() if ln.startswith("embedselect: --strict: 1 candidate(s) failed: bad (")]
    assert main(["rank", *base[:-1], "--metrics", "task_prior"]) == 0  # without --strict: no line, exit 0
    err = capsys.readouterr().err
    # the failure is said once on stderr all the same: a note (it was in the JSON only, as under the table's '!' line)
    assert "--strict" not in err and len([ln for ln in err.splitlines() if "only pickle weights" in ln]) == 1, err


@pytest.mark.fault
def test_embed_json_says_on_stderr_that_no_candidate_could_be_embedded_as_rank_does(tmp_path, capsys):
    """``embed --json`` when every candidate fails: exit 4 with the one ``error:`` line ``rank`` stops with, through
    cli.rank.exit_status (stderr said nothing: the reasons were only in the JSON); ``--strict`` changes neither."""
    bad = make_pickle_only_model(tmp_path / "bad")
    (tmp_path / "empty").mkdir()
    capsys.readouterr()  # the model's writer's own progress
    base = [str(SAMPLE), "-c", "text", "-m", f"{bad},{tmp_path / 'empty'}", "--cache-dir", str(tmp_path / "c"), "-q",
            "--json"]
    assert main(["rank", *base, "--metrics", "task_prior"]) == 4
    [ranks] = capsys.readouterr().err.splitlines()
    assert ranks.startswith("embedselect: error: no candidate could be embedded (bad: UnsafeModelError: "), ranks
    for strict in ([], ["--strict"]):
        assert main(["embed", *base, *strict]) == 4
        out, err = capsys.readouterr()
        assert [r["status"] for r in json.loads(out)] == ["failed", "failed"]  # stdout: the JSON only
        assert err.splitlines() == [ranks]


@pytest.mark.fault
def test_fail_on_an_unknown_condition_is_a_usage_error_before_any_work(tmp_path, capsys):
    code = main(["rank", str(SAMPLE), "-c", "text", "-m", "tfidf-svd", "--cache-dir", str(tmp_path / "c"),
                 "--fail-on", "undecided,baseline-wns"])
    assert code == 2
    err = capsys.readouterr().err
    assert "baseline-wns" in err and "baseline-wins" in err  # names the bad one and the known ones
    assert not (tmp_path / "c").exists()


@pytest.mark.fault
def test_a_misspelt_metric_option_is_refused_before_any_embedding_with_the_close_name(tmp_path, capsys):
    """New-user audit: ``--option sufficiency.repeats=1`` stored both candidates' embeddings, then said 'unknown
    sufficiency option(s)'. Now RankConfig checks every option against the metric's spec before any work."""
    cache = tmp_path / "c"
    code = main(["rank", str(SAMPLE), "-c", "text", "-m", "tfidf-svd,random-projection", "--cache-dir", str(cache),
                 "-q", "--option", "sufficiency.repeats=1"])
    assert code == 2
    err = capsys.readouterr().err
    assert "unknown sufficiency option 'repeats' (did you mean 'max_repeats'?)" in err, err
    assert not cache.exists()  # nothing read, nothing embedded


@pytest.mark.fault
def test_an_option_of_sufficiencys_other_estimator_is_named_as_such_not_as_a_typo(tmp_path, capsys):
    """With the Gaussian estimator, ``--option sufficiency.max_steps=10`` (a KNIFE setting) was answered "unknown
    sufficiency option 'max_steps' (did you mean 'max_items'?)": it says which estimator the option belongs to and that
    it has no effect with this one; a typo beside it still gets its close name, and KNIFE's side is the same."""
    cache = tmp_path / "c"
    code = main(["rank", str(SAMPLE), "-c", "text", "-m", "tfidf-svd,random-projection", "--cache-dir", str(cache),
                 "-q", "--metrics", "sufficiency", "--option", "sufficiency.estimator=gaussian",
                 "--option", "sufficiency.max_steps=10", "--option", "sufficiency.fold=3"])
    assert code == 2
    err = capsys.readouterr().err
    assert "sufficiency option 'max_steps' belongs to the KNIFE estimator (estimator='knife') and has no effect with " \
           "the Gaussian one (estimator='gaussian'): leave it out, or choose estimator='knife'" in err, err
    assert "did you mean 'max_items'" not in err and "unknown sufficiency option 'fold' (did you mean 'folds'?)" in err
    with pytest.raises(ConfigError, match=r"'folds' belongs to the Gaussian estimator \(estimator='gaussian'\) and "
                                          r"has no effect with the KNIFE one"):
        RankConfig(metric_options={"sufficiency": {"estimator": "knife", "folds": 3}})
    RankConfig(metric_options={"sufficiency": {"folds": 3}})  # no estimator named: the data's kind chooses it
    assert not cache.exists()  # nothing read, nothing embedded


def test_the_warning_codes_are_documented():
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index("## Warning codes"):]
    documented = set(re.findall(r"^\| `([a-z-]+)` \|", section, flags=re.M))
    assert documented == set(WARNING_CODES)


def test_readme_pipeline_section_names_strict_fail_on_and_their_exit_codes():
    text = README.read_text(encoding="utf-8")
    section = text[text.index("### In a pipeline"):]
    section = section[: section.index("\n## ")]
    for needle in ("strict=True", "--fail-on", "CandidatesFailedError", "AllCandidatesFailedError", ".reasons", "11", "8"):
        assert needle in section, needle


def _ranking_with_nan() -> Ranking:
    a = CandidateResult(name="a", spec="a", scores={"task_prior": 0.5, "rankme": math.nan},
                        ranks={"task_prior": 1}, columns={"x": math.inf, "y": -math.inf}, combined_score=1.0, rank=1,
                        intervals={"task_prior": [math.nan, 0.7]})
    b = CandidateResult(name="NaN", spec="NaN", scores={"task_prior": math.nan}, combined_score=math.nan)
    c = CandidateResult(name="c", spec="c", status="failed", error_type="HubError", error="unreachable")
    return Ranking(candidates=[a, b, c], metrics=["task_prior", "rankme"], combine="mean", dataset={"n": 3},
                   settings={"seed": 0, "metrics": ("task_prior", "rankme")}, versions={"embedselect": "x"},
                   details={"rankme": {"per": [math.nan, 1.0]}}, validation=None, uncertainty=None,
                   warnings=[RankingWarning("candidate-failed", "c failed (HubError): unreachable", ["c"])],
                   leaders=["a"], timings={"total": 1.5})


def test_the_json_round_trip_is_exact_with_nan_scores():
    r = _ranking_with_nan()
    text = r.to_json()
    json.loads(text)  # strict JSON: no bare NaN
    assert "NaN" not in text.replace('"NaN"', "")  # only as a string
    back = Ranking.from_json(text)
    assert back == r
    assert math.isnan(back["a"].scores["rankme"]) and back["a"].columns == {"x": math.inf, "y": -math.inf}
    assert back["NaN"].name == "NaN" and math.isnan(back["NaN"].combined_score)  # a name is never a number
    assert back["c"].combined_score is None  # None stays None
    assert back.warnings[0].code == "candidate-failed" and back.warnings[0].candidates == ("c",)
    back["a"].scores["task_prior"] = 0.6
    assert back != r  # equality still compares values


def test_a_real_ranking_round_trips_exactly(baselines_ranking):
    assert Ranking.from_json(baselines_ranking.to_json()) == baselines_ranking


def test_a_newer_field_is_ignored_with_a_warning(caplog):
    d = _ranking_with_nan().to_dict()
    d["from_the_future"] = 1
    d["candidates"][0]["also_new"] = True
    d["warnings"][0]["code"] = "a-future-code"
    with caplog.at_level(logging.WARNING, logger="embedselect"):
        back = Ranking.from_dict(d)
    assert "from_the_future" in caplog.text and "also_new" in caplog.text and "a-future-code" in caplog.text
    assert back.warnings[0].code == "note" and back.warnings[0].message.startswith("c failed")


def test_format_1_is_read_and_other_formats_are_refused_with_a_typed_error():
    d = _ranking_with_nan().to_dict()
    d["format_version"] = 1
    d["warnings"] = ["c failed (HubError): unreachable"]  # format 1: strings, non-finite numbers as null
    d["candidates"][0]["scores"]["rankme"] = None
    old = Ranking.from_dict(d)
    assert old.warnings == ["c failed (HubError): unreachable"] and old.warnings[0].code == "note"
    for version, match in ((FORMAT_VERSION + 1, "newer embedselect"), (0, "older than")):
        with pytest.raises(RankingFormatError, match=match):
            Ranking.from_dict({**d, "format_version": version})
    with pytest.raises(RankingFormatError, match="not JSON"):
        Ranking.from_json("{")
    with pytest.raises(RankingFormatError, match="not an embedselect ranking"):
        Ranking.from_json("[1, 2]")
    broken = _ranking_with_nan().to_dict()
    del broken["metrics"]
    with pytest.raises(RankingFormatError, match="not a readable ranking"):
        Ranking.from_dict(broken)


def test_a_warning_pickles_and_compares_as_its_message():
    import pickle

    w = RankingWarning("baseline-wins", "tfidf-svd ranks first", ["tfidf-svd"])
    assert pickle.loads(pickle.dumps(w)) == w and w == "tfidf-svd ranks first" and "first" in w
    assert w != RankingWarning("note", "tfidf-svd ranks first")
    with pytest.raises(ValueError, match="unknown warning code"):
        RankingWarning("nope", "x")


def test_a_secondary_score_is_named_in_the_label_check_beside_the_pools_central_references():
    """``Ranking.details`` holds the pool's ``central_references`` (a list) beside the metrics' details: the label
    check's lines read each metric's details through ``metric_details`` (reading every entry as a metric's raised
    AttributeError on the list)."""
    from embedselect.cli.format import format_validation
    from embedselect.ranking.result import Ranking

    r = Ranking(candidates=[], metrics=["task_prior"], combine="mean_rank", dataset={}, settings={}, versions={},
                details={"task_prior": {"secondary": ["alignment"]}, "central_references": ["tfidf-svd"]},
                validation={"metrics": [{"metric": "task_prior.alignment", "spearman": 0.5}], "table": {}})
    text = "\n".join(format_validation(r))
    assert "task_prior.alignment (a secondary score of task_prior, checked too; not in the combined rank): Spearman 0.50" in text
    assert r.metric_details("task_prior").get("secondary") == ["alignment"]
    assert r.metric_details("central_references") == {} and r.metric_details("nope") == {}



def test_a_rankings_repr_is_a_short_summary_of_what_it_says(baselines_ranking):
    """``print(ranking)`` / the repr in a notebook dumped every field (36 587 characters on the sample, the metrics'
    per-task arrays included); it is one short line now: the data, what was decided, the rows with their combined
    score, the failed candidates and the warnings' codes."""
    r = _ranking_with_nan()
    text = repr(r)
    assert text == str(r) and len(text) < 400, text
    assert text.startswith("<Ranking of 3 candidates") and "decided: a" in text, text
    assert "1. a 1.000" in text and "NaN nan" in text and "failed: c (HubError)" in text, text
    assert "warnings: candidate-failed" in text, text
    from dataclasses import replace

    undecided = repr(replace(r, decided=False, leaders=["a", "NaN"]))
    assert "undecided, leaders a, NaN" in undecided, undecided
    real = repr(baselines_ranking)
    assert len(real) < 600 and baselines_ranking.best.name in real, real
    one = repr(replace(r, candidates=r.candidates[:1]))
    assert one.startswith("<Ranking of 1 candidate on "), one
    many = replace(r, candidates=[replace(r["a"], name=f"m{i}", rank=i + 1) for i in range(12)])
    assert "… 4 more" in repr(many) and len(repr(many)) < 600, repr(many)

"""The command line: spellings from the README, JSON output, exit codes, cache management."""

from __future__ import annotations

import io
import json
import logging
import re
import subprocess
import sys

import pytest

from embedselect.cli import main
from embedselect.data import sample_path
from embedselect.ranking.result import Ranking

SAMPLE = str(sample_path("texts"))


def test_rank_json_with_the_documented_spelling(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("EMBEDSELECT_CACHE_DIR", str(tmp_path / "c"))
    out = tmp_path / "r.json"
    code = main(
        ["rank", SAMPLE, "--column", "text", "--models", "tfidf-svd,random-projection", "--json",
         "--metrics", "task_prior", "--out", str(out), "-q"]
    )
    assert code == 0
    printed = capsys.readouterr().out
    r = Ranking.from_json(printed)
    assert {c.name for c in r} == {"tfidf-svd", "random-projection"}
    assert Ranking.from_json(out.read_text()).to_dict() == r.to_dict()
    assert (tmp_path / "c" / "embedselect.duckdb").exists()  # cache location from the environment


def test_table_output_and_cache_commands(tmp_path, capsys):
    cache = str(tmp_path / "c")
    assert main(["rank", SAMPLE, "-c", "text", "-m", "tfidf-svd,random-projection", "--metrics", "task_prior",
                 "--cache-dir", cache, "-q"]) == 0
    table = capsys.readouterr().out
    assert "rank" in table.splitlines()[0] and "tfidf-svd" in table
    assert main(["cache", "ls", "--cache-dir", cache, "--json"]) == 0
    runs = json.loads(capsys.readouterr().out)
    assert len(runs) == 2
    assert main(["cache", "rm", "--cache-dir", cache, "--model", "random-projection"]) == 0
    assert "removed 1" in capsys.readouterr().out
    assert main(["cache", "ls", "--cache-dir", cache, "--json"]) == 0
    assert [r["model_id"] for r in json.loads(capsys.readouterr().out)] == ["baseline:tfidf-svd"]
    assert main(["cache", "rm", "--cache-dir", cache]) == 2  # says what to remove
    # a run key after an option (was "unrecognized arguments", exit 2: one parser held the command and the keys)
    key = runs[0]["run_key"] if runs[0]["model_id"] == "baseline:tfidf-svd" else runs[1]["run_key"]
    assert main(["cache", "rm", "--cache-dir", cache, key[:12]]) == 0
    assert "removed 1" in capsys.readouterr().out
    assert main(["cache", "ls", "--cache-dir", cache]) == 0 and "empty" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["cache", "rm", "--help"])
    rm_help = capsys.readouterr().out
    assert "--model" in rm_help and "--json" not in rm_help  # each command's own options


class _Terminal(io.StringIO):
    """Standard input that is a terminal, holding the user's answer."""

    def isatty(self) -> bool:
        return True


@pytest.mark.fault
def test_cache_rm_of_a_model_removes_that_model_only_and_asks_before_a_pattern_takes_several(tmp_path, capsys,
                                                                                             monkeypatch):
    """`cache rm --model e` removed every run whose model id contains an 'e' (all three models here), listing
    nothing. --model names one model exactly (as -m does: 'random-projection' or 'baseline:random-projection'); a
    value that names none removes nothing and names the ids that contain it; a glob pattern removes what it matches,
    listed, and when that is more than one model only after a yes on a terminal, or with --yes (no terminal: exit 2,
    nothing removed)."""
    cache = str(tmp_path / "c")
    assert main(["embed", SAMPLE, "-c", "text", "-m", "tfidf-svd,tfidf-svd?dim=8,random-projection",
                 "--cache-dir", cache, "-q"]) == 0
    capsys.readouterr()

    def models() -> list[str]:
        assert main(["cache", "ls", "--cache-dir", cache, "--json"]) == 0
        return sorted(r["model_id"] for r in json.loads(capsys.readouterr().out))

    everything = ["baseline:random-projection", "baseline:tfidf-svd", "baseline:tfidf-svd"]
    assert models() == everything
    assert main(["cache", "rm", "--cache-dir", cache, "--model", "e"]) == 0
    out = capsys.readouterr().out
    assert "removed 0 embedding run(s)" in out and "no cached model has the id 'e'" in out
    assert "baseline:tfidf-svd, baseline:random-projection" in out or \
        "baseline:random-projection, baseline:tfidf-svd" in out
    assert models() == everything
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))  # not a terminal: a pattern naming 2 models needs --yes
    assert main(["cache", "rm", "--cache-dir", cache, "--model", "*-*"]) == 2
    captured = capsys.readouterr()
    assert "3 embedding run(s) of 2 model(s) to remove" in captured.out
    assert "  baseline:tfidf-svd: 2 run(s)" in captured.out and "  baseline:random-projection: 1 run(s)" in captured.out
    assert "give --yes" in captured.err and "nothing was removed" in captured.err
    assert models() == everything
    monkeypatch.setattr(sys, "stdin", _Terminal("n\n"))  # a terminal: asked, and a no keeps everything
    assert main(["cache", "rm", "--cache-dir", cache, "--model", "*-*"]) == 0
    captured = capsys.readouterr()
    assert "remove the runs of these 2 models? [y/N]" in captured.err and "nothing was removed" in captured.out
    assert models() == everything
    assert main(["cache", "rm", "--cache-dir", cache, "--model", "*projection"]) == 0  # one model: not asked
    captured = capsys.readouterr()
    assert "1 embedding run(s) of 1 model(s)" in captured.out and "removed 1 embedding run(s)" in captured.out
    assert "[y/N]" not in captured.err and models() == everything[1:]
    assert main(["cache", "rm", "--cache-dir", cache, "--model", "baseline:TFIDF-SVD"]) == 0
    assert "removed 2 embedding run(s)" in capsys.readouterr().out and models() == []
    assert main(["embed", SAMPLE, "-c", "text", "-m", "tfidf-svd,random-projection", "--cache-dir", cache, "-q"]) == 0
    monkeypatch.setattr(sys, "stdin", _Terminal("y\n"))
    assert main(["cache", "rm", "--cache-dir", cache, "--model", "*-*"]) == 0
    assert "removed 2 embedding run(s)" in capsys.readouterr().out and models() == []
    assert main(["embed", SAMPLE, "-c", "text", "-m", "tfidf-svd,random-projection", "--cache-dir", cache, "-q"]) == 0
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    assert main(["cache", "rm", "--cache-dir", cache, "--model", "*-*", "--yes"]) == 0
    assert "removed 2 embedding run(s)" in capsys.readouterr().out and models() == []


def test_models_given_several_times_are_all_ranked(tmp_path, capsys):
    """``-m tfidf-svd -m random-projection`` ranked random-projection alone: argparse kept the last value."""
    assert main(["rank", SAMPLE, "-c", "text", "-m", "tfidf-svd", "-m", "random-projection,tfidf-svd?dim=8",
                 "--metrics", "task_prior", "--json", "-q", "--cache-dir", str(tmp_path / "c")]) == 0
    r = Ranking.from_json(capsys.readouterr().out)
    assert {c.name for c in r} == {"tfidf-svd", "random-projection", "tfidf-svd?dim=8"}


def test_table_marks_a_metric_shown_but_not_in_the_score(tmp_path, capsys):
    """A metric of weight 0 (sufficiency by default) is a column of the table, marked, with a footnote saying it is
    not part of the score."""
    assert main(["rank", SAMPLE, "-c", "text", "-m", "tfidf-svd,random-projection,tfidf-svd?dim=8", "--metrics",
                 "task_prior,rankme", "--weight", "rankme=0", "--cache-dir", str(tmp_path / "c"), "-q"]) == 0
    table = capsys.readouterr().out
    assert "rankme*" in table.splitlines()[0] and "task_prior*" not in table
    assert "* shown, not in the score (weight 0): rankme" in table


@pytest.mark.parametrize(
    "argv, code, message",
    [
        (["rank", "missing.csv", "-m", "tfidf-svd"], 3, "missing.csv"),
        (["rank", SAMPLE, "-c", "nope", "-m", "tfidf-svd"], 3, "nope"),
        (["rank", SAMPLE, "-c", "text", "-m", "tfidf-svd", "--metrics", "bogus"], 2, "bogus"),
        (["rank", SAMPLE, "-c", "text", "-m", "not a model!!"], 4, "accepted forms"),
        (["rank", SAMPLE, "-c", "text", "-m", "tfidf-svd", "--option", "oops"], 2, "METRIC.KEY=VALUE"),
    ],
)
@pytest.mark.fault
def test_exit_codes_for_bad_input(tmp_path, capsys, argv, code, message):
    assert main([*argv, "--cache-dir", str(tmp_path / "c")]) == code
    assert message in capsys.readouterr().err


@pytest.mark.fault
def test_strict_exit_code_when_a_candidate_fails(tmp_path, capsys, caplog):
    """A failed candidate is said once, by the '!' line under the table (it was also a WARNING log line during the
    run, the same message twice on the terminal); the log line is INFO, for --verbose."""
    from testkit.tinymodels import make_pickle_only_model

    bad = make_pickle_only_model(tmp_path / "bad")
    argv = ["rank", SAMPLE, "-c", "text", "-m", f"{bad},tfidf-svd,random-projection", "--metrics", "task_prior",
            "--cache-dir", str(tmp_path / "c"), "-q"]
    with caplog.at_level(logging.INFO, logger="embedselect"):
        assert main(argv) == 0
    out = capsys.readouterr().out
    assert "FAILED" in out and out.count("only pickle weights") == 1
    assert [ln for ln in out.splitlines() if "only pickle weights" in ln][0].startswith("! bad: ")
    said = [r for r in caplog.records if "only pickle weights" in r.getMessage()]
    assert [r.levelno for r in said] == [logging.INFO]
    assert "--allow-pickle" in out and "allow_pickle=True" not in out  # the remedy names the CLI's own flag
    assert main([*argv, "--strict"]) == 8


@pytest.mark.fault
def test_a_metric_that_does_not_score_a_candidate_says_so_once(tmp_path, capsys, caplog):
    """A candidate a metric leaves out (degenerate for it: every row points one way) is said once, by the note under
    the table (it was also a WARNING log line on stderr during the run); the log line is INFO, for --verbose. The
    JSON and select()'s warnings carry it as a metric-excluded warning."""
    import numpy as np

    import embedselect

    n = 240  # the sample's items
    rng = np.random.default_rng(0)
    np.save(tmp_path / "bad.npy", np.outer(rng.uniform(1, 2, n), rng.normal(size=8)).astype(np.float32))
    models = ["tfidf-svd", "random-projection", f"bad=vectors:{tmp_path / 'bad.npy'}"]
    argv = ["rank", SAMPLE, "-c", "text", "-m", ",".join(models), "--metrics", "task_prior",
            "--cache-dir", str(tmp_path / "c")]
    with caplog.at_level(logging.INFO, logger="embedselect"):
        assert main(argv) == 0
    out = capsys.readouterr().out
    said = [ln for ln in out.splitlines() if "did not score bad" in ln]
    assert len(said) == 1 and said[0].startswith("note: task_prior did not score bad: ")
    logged = [r for r in caplog.records if "did not score bad" in r.getMessage()]
    assert [r.levelno for r in logged] == [logging.INFO]
    assert main([*argv, "--json", "-q"]) == 0
    r = Ranking.from_json(capsys.readouterr().out)
    assert [w.candidates for w in r.warnings if w.code == "metric-excluded"] == [("bad",)]
    r = embedselect.select(SAMPLE, models, column="text", metrics=["task_prior"], cache_dir=tmp_path / "c")
    assert [str(w) for w in r.warnings if "did not score bad" in str(w)] == [said[0].removeprefix("note: ")]


@pytest.mark.fault
def test_a_metric_that_fails_is_said_once(tmp_path, capsys, caplog, monkeypatch):
    """A metric that raises (a test double) was said twice: a WARNING log line on stderr during the run and the
    'note: metric rankme was not computed: ...' line under the table. The note says it; the log line is INFO, for
    --verbose; the JSON and select()'s warnings carry it as a metric-failed warning."""
    import embedselect
    from embedselect.errors import MetricError
    from embedselect.pipeline import scoring

    real = scoring.get_metric

    def broken(*a, **k):
        raise MetricError("rankme broke on purpose")

    monkeypatch.setattr(scoring, "get_metric", lambda m: broken if m == "rankme" else real(m))
    argv = ["rank", SAMPLE, "-c", "text", "-m", "tfidf-svd,random-projection", "--metrics", "task_prior,rankme",
            "--cache-dir", str(tmp_path / "c")]
    with caplog.at_level(logging.INFO, logger="embedselect"):
        assert main(argv) == 0
    out = capsys.readouterr()
    assert (out.out + out.err).count("broke on purpose") == 1
    assert "note: metric rankme was not computed: rankme broke on purpose" in out.out.splitlines()
    assert [r.levelno for r in caplog.records if "broke on purpose" in r.getMessage()] == [logging.INFO]
    assert main([*argv, "--json", "-q"]) == 0
    r = Ranking.from_json(capsys.readouterr().out)
    assert [str(w) for w in r.warnings if w.code == "metric-failed"] == ["metric rankme was not computed: rankme "
                                                                        "broke on purpose"]
    r = embedselect.select(SAMPLE, ["tfidf-svd", "random-projection"], column="text", metrics=["task_prior", "rankme"],
                           cache_dir=tmp_path / "c")
    assert any(str(w) == "metric rankme was not computed: rankme broke on purpose" for w in r.warnings)


def test_validate_with_the_documented_spelling(tmp_path, capsys):
    code = main(["validate", SAMPLE, "--column", "text", "--labels", "label", "--models", "tfidf-svd,random-projection",
                 "--json", "--metrics", "task_prior", "--cache-dir", str(tmp_path / "c"), "-q"])
    assert code == 0
    r = Ranking.from_json(capsys.readouterr().out)
    assert r.validation["accuracy_column"] == "logistic_acc"
    assert {m["metric"] for m in r.validation["metrics"]} >= {"task_prior", "combined"}
    assert all(0.0 <= c.columns["labels.logistic_acc"] <= 1.0 for c in r)
    # --labels or --queries is required: a usage error (exit 2) that names both, before any work
    assert main(["validate", SAMPLE, "--column", "text", "--models", "tfidf-svd"]) == 2
    assert "--labels COLUMN" in capsys.readouterr().err


def test_weights_reach_the_combined_rank(tmp_path, capsys):
    from embedselect.ranking.combine import DEFAULT_METHOD, combine_ranks

    base = ["rank", SAMPLE, "-c", "text", "-m", "tfidf-svd,random-projection", "--json", "-q",
            "--metrics", "task_prior,sufficiency", "--cache-dir", str(tmp_path / "c")]
    for weight, expected in (("sufficiency=0.5", {"task_prior": 1.0, "sufficiency": 0.5}),
                             ("task_prior=0.5", {"task_prior": 0.5, "sufficiency": 0.25})):
        assert main([*base, "--weight", weight]) == 0
        r = Ranking.from_json(capsys.readouterr().out)
        assert r.settings["combined_weights"] == expected  # unnamed metrics keep their default weight
        per_metric = {m: {c.name: c.scores[m] for c in r} for m in r.metrics}
        assert {c.name: c.combined_score for c in r} == pytest.approx(
            combine_ranks(per_metric, weights=expected, method=DEFAULT_METHOD))
    assert main([*base, "--weight", "nope=1"]) == 2
    assert main([*base, "--weight", "sufficiency=lots"]) == 2


def _parser_options(parser) -> set[str]:
    import argparse

    found = set()
    for action in parser._actions:
        found.update(action.option_strings)
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= _parser_options(sub)
    return found


@pytest.mark.fault
def test_every_flag_named_in_a_message_exists():
    """Error messages and help name real options (an error once told users about a missing --max-model-bytes)."""
    import ast
    import re
    from pathlib import Path

    from embedselect.cli import build_parser

    known = _parser_options(build_parser())
    named: dict[str, str] = {}
    for path in (Path(__file__).resolve().parents[1] / "embedselect").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                # a flag, not a CSS custom property (`--fg: #222`, `var(--fg)`)
                for flag in re.findall(r"(?<![\w(-])--[a-z][a-z0-9-]+(?![\w:-])", node.value):
                    named.setdefault(flag, path.name)
    unknown = {f: where for f, where in named.items() if f not in known}
    assert not unknown, f"messages name options the CLI does not have: {unknown}"


def test_max_model_bytes_reaches_the_policy():
    from embedselect.cli import build_parser
    from embedselect.cli.common import load_policy as _policy

    args = build_parser().parse_args(["rank", SAMPLE, "-m", "tfidf-svd", "--max-model-bytes", "500MB"])
    assert _policy(args).max_bytes == 500_000_000
    args = build_parser().parse_args(["rank", SAMPLE, "-m", "tfidf-svd", "--max-model-bytes", "2GiB"])
    assert _policy(args).max_bytes == 2 * 1024**3
    assert _policy(build_parser().parse_args(["rank", SAMPLE, "-m", "x", "--max-model-bytes", "none"])).max_bytes is None
    with pytest.raises(SystemExit):
        build_parser().parse_args(["rank", SAMPLE, "-m", "x", "--max-model-bytes", "lots"])


def test_demo_help_counts_the_candidates_it_ranks():
    from embedselect.cli import build_parser, demo_candidates

    words = {3: "three", 4: "four", 5: "five", 6: "six"}
    (sub,) = [a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction"]
    helps = {c.dest: c.help for c in sub._choices_actions}
    assert words[len(demo_candidates())] in helps["demo"]


@pytest.mark.slow
@pytest.mark.fault
def test_quiet_still_shows_warnings(tmp_path):
    """--quiet: no progress bars, warnings only (it used to raise the log level to ERROR and hide them). A failed
    candidate is said once, under the table (it was a WARNING line on stderr too); a warning said nowhere else (a
    query that embeds to zeros) is still on stderr."""
    import os

    data = tmp_path / "few.csv"
    data.write_text("text\n" + "\n".join(f"item number {i} about topic {i % 3}" for i in range(30)) + "\n")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}

    def cli(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "embedselect.cli", *argv, "--cache-dir", str(tmp_path / "c"),
                               "--quiet"], capture_output=True, text=True, timeout=300, env=env)

    proc = cli("rank", str(data), "-c", "text", "-m", "tfidf-svd,random-projection,some-org/not-in-any-cache",
               "--metrics", "task_prior")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("! some-org/not-in-any-cache: ") == 1 and "not-in-any-cache" not in proc.stderr
    assert "it/s" not in proc.stderr  # no progress bars
    assert cli("index", str(data), "-c", "text", "-m", "tfidf-svd", "--out", str(tmp_path / "idx")).returncode == 0
    proc = cli("search", str(tmp_path / "idx"), "zzzz qqqq")
    assert proc.returncode == 0 and "WARNING" in proc.stderr and "zero vector" in proc.stderr, proc.stderr


def test_rank_and_validate_drop_duplicates(tmp_path, capsys, monkeypatch):
    import pandas as pd

    from embedselect.publish.text import esc
    from embedselect.publish.text import md as md_text

    monkeypatch.setenv("EMBEDSELECT_CACHE_DIR", str(tmp_path / "c"))
    frame = pd.read_csv(SAMPLE)
    data = tmp_path / "dup.csv"
    pd.concat([frame, frame.iloc[:20]]).to_csv(data, index=False)
    for cmd, extra in (("rank", []), ("validate", ["--labels", "label"])):
        assert main([cmd, str(data), "-c", "text", "-m", "tfidf-svd,random-projection", "--metrics", "task_prior",
                     "--drop-duplicates", "exact", "--json", "-q", *extra]) == 0
        r = Ranking.from_json(capsys.readouterr().out)
        assert r.dataset["n"] == 240 and r.dataset["report"]["n_dropped_duplicates"] == 20
    # the table and the HTML / Markdown reports say how many were dropped, not only the JSON
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    assert main(["rank", str(data), "-c", "text", "-m", "tfidf-svd,random-projection", "--metrics", "task_prior",
                 "--drop-duplicates", "exact", "--html", str(html), "--markdown", str(md)]) == 0
    said = "20 exact duplicates dropped before ranking (rule 'exact': the same item); the scores use the 240 items left"
    assert f"note: {said}" in capsys.readouterr().out
    assert f'<li class="note">{esc(said)}</li>' in html.read_text() and f"- note: {md_text(said)}" in md.read_text()
    assert main(["rank", str(data), "-c", "text", "-m", "tfidf-svd,random-projection", "--metrics", "task_prior",
                 "--html", str(html)]) == 0  # no rule, no such note
    assert "dropped before ranking" not in capsys.readouterr().out + html.read_text()
    with pytest.raises(SystemExit) as exit_:  # argparse's usage error names the choices
        main(["rank", str(data), "-c", "text", "-m", "tfidf-svd", "--drop-duplicates", "some"])
    assert exit_.value.code == 2 and "choose from 'exact', 'near'" in capsys.readouterr().err


@pytest.mark.fault
def test_every_command_has_help_examples_that_parse(capsys):
    """Issue 14: every command's --help ends with examples, and each example is a valid command line for the real
    parser (so an example cannot name a flag or a choice that does not exist)."""
    import shlex

    from embedselect.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.choices and "rank" in a.choices)
    for name, p in sub.choices.items():
        text = p.format_help()
        assert "\nexamples:\n" in text, f"`embedselect {name} --help` has no examples"
        lines = [ln.strip() for ln in text.split("\nexamples:\n", 1)[1].splitlines() if ln.strip().startswith("embedselect")]
        assert lines, name
        for line in lines:
            argv = shlex.split(line)[1:]
            assert argv[0] in (name, p.prog.split()[-1]) or sub.choices[argv[0]] is p, line
            try:
                parser.parse_args(argv)
            except SystemExit as exc:
                raise AssertionError(f"example does not parse: {line}\n{capsys.readouterr().err}") from exc


def test_an_interrupt_says_the_embeddings_are_cached_only_when_the_command_stored_some(tmp_path, capsys, monkeypatch):
    """New-user audit: every command said 'embeddings finished so far are cached' on Ctrl-C, whatever it had stored
    (`cache ls`, a rank stopped before its first candidate was stored)."""
    from embedselect.store.vectors import VectorStore

    cache = str(tmp_path / "c")
    save_run = VectorStore.save_run
    calls = []

    def stop_at_the_second(self, **kw):
        calls.append(kw["model_id"])
        if len(calls) == 2:
            raise KeyboardInterrupt
        return save_run(self, **kw)

    monkeypatch.setattr(VectorStore, "save_run", stop_at_the_second)
    argv = ["rank", SAMPLE, "-c", "text", "-m", "tfidf-svd,random-projection", "--cache-dir", cache, "-q"]
    assert main(argv) == 130
    assert capsys.readouterr().err.strip() == ("interrupted; the embedding run this command finished is cached and "
                                               "will be reused by the next run")
    calls[:] = ["x"]  # the next run stores nothing before the interrupt: it embeds random-projection only
    assert main(argv) == 130
    assert capsys.readouterr().err.strip() == "interrupted"

    def interrupt(args):
        raise KeyboardInterrupt

    monkeypatch.setattr("embedselect.cli.cache.cmd_cache", interrupt)
    assert main(["cache", "ls", "--cache-dir", cache]) == 130
    assert capsys.readouterr().err.strip() == "interrupted"


def test_cache_ls_shows_a_baselines_revision_whole_and_cuts_hashes(tmp_path, capsys):
    """New-user audit: `cache ls` cut every revision to 12 characters: 'builtin-0.1.' for a baseline."""
    from embedselect.models.candidates.resolve import _builtin_revision

    cache = str(tmp_path / "c")
    assert main(["embed", SAMPLE, "-c", "text", "-m", "tfidf-svd", "--cache-dir", cache, "-q"]) == 0
    capsys.readouterr()
    assert main(["cache", "ls", "--cache-dir", cache]) == 0
    out = capsys.readouterr().out
    assert len(_builtin_revision()) > 12 and f" {_builtin_revision()} " in out, out


def test_cache_ls_shows_the_unknown_seconds_of_a_run_put_together_from_earlier_runs_as_a_dash(tmp_path, capsys):
    """A run of items all embedded before (here a sub-sample) is put together from earlier runs, its ``seconds``
    unknown (null in the JSON): the table printed ``NaN`` there; now ``-``, as every table shows an unknown value."""
    cache = str(tmp_path / "c")
    embed = ["embed", SAMPLE, "-c", "text", "-m", "random-projection", "--cache-dir", cache, "-q"]
    assert main(embed) == 0 and main([*embed, "--max-items", "100"]) == 0
    capsys.readouterr()
    assert main(["cache", "ls", "--cache-dir", cache, "--json"]) == 0
    assert sorted((r["n"], r["seconds"] is None) for r in json.loads(capsys.readouterr().out)) == [(100, True),
                                                                                                    (240, False)]
    assert main(["cache", "ls", "--cache-dir", cache]) == 0
    lines = capsys.readouterr().out.splitlines()
    header, rows = lines[1].split(), {ln.split()[5]: ln.split() for ln in lines[2:]}
    assert "NaN" not in "\n".join(lines) and rows["100"][header.index("seconds")] == "-", lines
    assert float(rows["240"][header.index("seconds")]) > 0


def _no_nan(constant: str):
    raise ValueError(f"bare {constant} in the JSON")


@pytest.mark.fault
def test_an_interval_that_does_not_exist_is_never_nan(tmp_path, capsys):
    """``rank --bootstrap`` where a metric leaves a candidate out (every row points one way): its interval was
    ``["NaN", "NaN"]`` in the JSON (``to_pandas``' CSV and the report read it as a number). An interval that does not
    exist is not there: none in the JSON (``intervals`` has no entry for it), empty cells in the CSV, no bracket in
    the HTML report or the Markdown; the others keep theirs."""
    import numpy as np

    rng = np.random.default_rng(0)
    np.save(tmp_path / "bad.npy", np.outer(rng.uniform(1, 2, 240), rng.normal(size=8)).astype(np.float32))
    models = f"tfidf-svd,random-projection,bad=vectors:{tmp_path / 'bad.npy'}"
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    assert main(["rank", SAMPLE, "-c", "text", "-m", models, "--metrics", "task_prior,rankme", "--bootstrap", "10",
                 "--cache-dir", str(tmp_path / "c"), "--json", "-q", "--html", str(html), "--markdown", str(md)]) == 0
    text = capsys.readouterr().out
    d = json.loads(text, parse_constant=_no_nan)
    intervals = {c["name"]: c["intervals"] for c in d["candidates"]}
    assert intervals["bad"] == {} and set(intervals["tfidf-svd"]) == {"task_prior_alignment"}
    r = Ranking.from_json(text)
    assert r == Ranking.from_json(r.to_json())
    csv = r.to_pandas().to_csv(index=False).lower()
    assert "nan" not in csv and "inf" not in csv.replace("info", "")
    assert not re.search(r"nan|\[-?inf", html.read_text(encoding="utf-8").lower().replace("nanosec", ""))
    assert "nan" not in md.read_text(encoding="utf-8").lower()

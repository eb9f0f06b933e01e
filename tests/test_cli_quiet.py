"""``-q/--quiet`` and ``-v/--verbose`` are options of every command, from one definition (cli.common.add_log_args):
badge, card, leaderboard, report, metrics and the cache commands had neither. With ``-q`` a command whose result goes
to a file prints nothing but errors; one whose result is what it prints (``cache ls``, ``cache path``, ``metrics``)
prints that and nothing else."""

from __future__ import annotations

import argparse

import pytest

from embedselect import cli
from embedselect.data import sample_path

MODELS = "tfidf-svd,random-projection,rp64=random-projection?dim=64,rp32=random-projection?dim=32"


def _leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield " ".join(path), parser
    for action in subs:
        for name, p in action.choices.items():
            yield from _leaves(p, (*path, name))


def test_every_command_takes_quiet_and_verbose_from_one_definition():
    missing = []
    for name, p in _leaves(cli.build_parser()):
        flags = {tuple(a.option_strings) for a in p._actions}
        if ("--quiet", "-q") not in flags or ("--verbose", "-v") not in flags:
            missing.append(name)
    assert not missing, f"commands without -q/--quiet and -v/--verbose: {missing}"


@pytest.fixture(scope="module")
def ranked(tmp_path_factory):
    """A cache holding one ranking (and its embedding runs)."""
    import embedselect

    cache = tmp_path_factory.mktemp("quiet") / "cache"
    embedselect.select(sample_path("texts"), MODELS, column="text", max_items=60, metrics=["nn_agreement", "rankme"],
                       cache_dir=cache)
    return cache


def _run(argv, capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


QUIET_COMMANDS = {
    "badge": lambda t: ["badge", "--out", str(t / "badges")],
    "card": lambda t: ["card", "--candidate", "tfidf-svd", "--out", str(t / "README.md")],
    "leaderboard": lambda t: ["leaderboard", "--out", str(t / "board.md")],
    "report": lambda t: ["report", "--out", str(t / "report.html")],
    "cache gc": lambda t: ["cache", "gc"],
    "cache rm": lambda t: ["cache", "rm", "--model", "random-projection", "--yes"],
}


@pytest.mark.parametrize("command", sorted(QUIET_COMMANDS))
def test_quiet_prints_nothing_but_errors(command, ranked, tmp_path, capsys):
    import shutil

    cache = tmp_path / "cache"
    shutil.copytree(ranked, cache)
    argv = [*QUIET_COMMANDS[command](tmp_path), "--cache-dir", str(cache)]
    code, out, err = _run([*argv, "-q"], capsys)
    assert code == 0, err
    assert (out, err) == ("", "")
    if command != "cache rm":  # the runs it removed are gone: the same command again says nothing was removed
        shutil.rmtree(cache)
        shutil.copytree(ranked, cache)
    code, out, err = _run([*argv, "--overwrite"] if command in ("card", "leaderboard", "report") else argv, capsys)
    assert code == 0, err
    assert out + err or command == "leaderboard"  # without -q it says what it wrote (leaderboard --out says nothing)


@pytest.mark.parametrize("argv", [["metrics"], ["cache", "ls"], ["cache", "path"]], ids=" ".join)
def test_quiet_prints_only_what_a_listing_command_was_asked_for(argv, ranked, capsys):
    code, out, err = _run([*argv, "-q"], capsys) if argv == ["metrics"] else \
        _run([*argv, "--cache-dir", str(ranked), "-q"], capsys)
    assert code == 0 and out and err == ""


@pytest.mark.parametrize("command", ["badge", "report", "cache rm"])
def test_quiet_still_prints_an_error(command, ranked, tmp_path, capsys):
    argv = {"badge": ["badge", "--out", str(tmp_path / "b"), "--ranking", "nosuchranking"],
            "report": ["report", "--out", str(tmp_path / "r.html"), "--ranking", "nosuchranking"],
            "cache rm": ["cache", "rm"]}[command]
    code, out, err = _run([*argv, "--cache-dir", str(ranked), "-q"], capsys)
    assert code != 0 and out == "" and err.startswith("embedselect: error: ")

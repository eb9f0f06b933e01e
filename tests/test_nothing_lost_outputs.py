"""Issue 47, "Nothing lost, round 4", the single-file outputs: an output never names a file the same run reads (the
data, the labels, a model folder, the cache), never replaces a file the tool did not write (unless ``--overwrite``;
a model card at ``card --out`` is updated as a card), is written into a character device or a named pipe instead of
replacing it, and a full disk is a typed error naming the file. Also: a closed stdout, and a ``$`` in a candidate's
name in the figures.

Every case snapshots the user's files (paths, bytes, modes, link targets) before and after, as
tests/test_nothing_lost.py does. The closed-loop check at the end introspects the CLI's parser: every output option
of every command is tried against every file the run reads, and against what it may not replace."""

from __future__ import annotations

import argparse
import ast
import errno
import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from embedselect.errors import EXIT_CODES
from tests.test_nothing_lost import TEXTS, _fake, snapshot
from tests.test_nothing_lost_replay import _cli as _cli_of_a_ranking

ROOT = Path(__file__).resolve().parents[1]


def _cli(monkeypatch, argv: list[str]) -> int:
    """``embedselect ARGV`` with the publishing commands given a made-up ranking (and no previous one)."""
    import embedselect.publish.leaderboard as lb

    monkeypatch.setattr(lb, "previous_ranking", lambda store, ranking: None)
    return _cli_of_a_ranking(monkeypatch, argv)


def _texts(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "small.csv"
    data.write_text("text,label\n" + "".join(f"{t},{i % 2}\n" for i, t in enumerate(TEXTS)))
    return data


def _no_work(monkeypatch) -> list:
    """Make every command's work a recorder: what reaches it passed the checks made before any work."""
    import embedselect.cli as cli

    started: list = []
    real = cli.build_parser

    def build():
        parser = real()
        for sp in _commands(parser).values():
            sp.set_defaults(func=lambda args: started.append(args.command) or 0)
        return parser

    monkeypatch.setattr(cli, "build_parser", build)
    return started


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Command name -> its parser (aliases left out)."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    out: dict[str, argparse.ArgumentParser] = {}
    for name, sp in sub.choices.items():
        if sp not in out.values():
            out[name] = sp
    return out


# --- 1. an output that names an input ----------------------------------------------------------------------------
def _model_dir(t: Path) -> Path:
    (t / "model").mkdir()
    (t / "model" / "config.json").write_text('{"model_type": "bert"}')
    return t / "model"


TEXT = ["-c", "text", "-m", "tfidf-svd?dim=4,random-projection?dim=8", "--metrics", "task_prior", "-q"]
IMAGE = ["-m", "pixel-pca?dim=4,random-projection?dim=8", "--metrics", "task_prior", "-q"]
READ = {
    "rank --out at the data": ["rank", "small.csv", *TEXT, "--out", "small.csv"],
    "validate --html at the data (with its labels)": ["validate", "small.csv", "--labels", "label", *TEXT,
                                                      "--html", "small.csv"],
    "rank --markdown at the data through ..": ["rank", "small.csv", *TEXT, "--markdown", "sub/../small.csv"],
    "rank --out at a hard link to the data": ["rank", "small.csv", *TEXT, "--out", "hard.csv"],
    "validate --out at the labels file of an image folder": ["validate", "photos", "--labels", "labels.csv", *IMAGE,
                                                             "--out", "labels.csv"],
    "rank --html inside the image folder": ["rank", "photos", *IMAGE, "--html", "photos/cat/report.html"],
    "embed --out at a model folder's file": ["embed", "small.csv", "-c", "text", "-m", "tfidf-svd?dim=4,mine=./model",
                                             "-q", "--out", "model/config.json"],
    "neighbours --write-deduped at the data": ["neighbours", "small.csv", "-c", "text", "-m", "tfidf-svd?dim=4",
                                               "--near-duplicates", "0.99", "--write-deduped", "small.csv"],
}
"""Each ran to exit 0 on the code before issue 47 (the image one as `validate` of 32 images) and replaced the file."""


def _photos(t: Path) -> None:
    """An image folder of 2 x 16 small PNGs, with a labels file of path,label rows."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    rows = ["path,label"]
    for c in ("cat", "dog"):
        (t / "photos" / c).mkdir(parents=True)
        for i in range(16):
            Image.fromarray((rng.random((16, 16, 3)) * 255).astype("uint8")).save(t / "photos" / c / f"{i}.png")
            rows.append(f"{c}/{i}.png,{c}")
    (t / "labels.csv").write_text("\n".join(rows) + "\n")


@pytest.mark.fault
@pytest.mark.parametrize("case", list(READ))
def test_an_output_naming_a_file_the_run_reads_is_refused_before_any_work(tmp_path, monkeypatch, capsys, case):
    """``rank small.csv -c text -m M --out small.csv`` exited 0 with the data file now the JSON result; ``validate
    ... --html small.csv`` replaced the data (with the user's labels) by the report. Links, ``..`` and hard links
    name the same file; a file inside an image folder the run reads is refused too."""
    from embedselect.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EMBEDSELECT_CACHE_DIR", str(tmp_path / "cache"))
    _texts(tmp_path)
    os.link(tmp_path / "small.csv", tmp_path / "hard.csv")
    (tmp_path / "sub").mkdir()
    _photos(tmp_path)
    _model_dir(tmp_path)
    argv = READ[case]
    before = snapshot(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "an input of this command" in err and err.count("\n") == 1, err
    assert snapshot(tmp_path) == before


# --- 2. an existing file the tool did not write ------------------------------------------------------------------
USERS_FILE = {
    "report --out": ["report", "--out", "notes.txt"],
    "leaderboard --out": ["leaderboard", "--out", "notes.txt"],
    "card --out (not a card)": ["card", "--candidate", "a", "--out", "notes.txt"],
    "rank --out": ["rank", "small.csv", *TEXT, "--out", "notes.txt"],
    "rank --html": ["rank", "small.csv", *TEXT, "--html", "notes.txt"],
    "rank --markdown": ["rank", "small.csv", *TEXT, "--markdown", "notes.txt"],
    "embed --out": ["embed", "small.csv", "-c", "text", "-m", "tfidf-svd?dim=4", "-q", "--out", "notes.txt"],
    "neighbours --html": ["neighbours", "small.csv", "-c", "text", "-m", "tfidf-svd?dim=4", "--html", "notes.txt"],
}
"""Each replaced notes.txt on the code before issue 47."""


@pytest.mark.fault
@pytest.mark.parametrize("case", list(USERS_FILE))
def test_an_existing_file_the_tool_did_not_write_is_refused_unless_overwrite(tmp_path, monkeypatch, capsys, case):
    """Every single-file output at a user's file: refused (exit 2, the file as it was) before any work; with
    ``--overwrite`` the run goes ahead."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EMBEDSELECT_CACHE_DIR", str(tmp_path / "cache"))
    _texts(tmp_path)
    (tmp_path / "notes.txt").write_text("my own notes, years of them\n")
    before = snapshot(tmp_path)
    assert _cli(monkeypatch, USERS_FILE[case]) == 2
    assert "was not written by embedselect" in capsys.readouterr().err
    assert snapshot(tmp_path) == before
    started = _no_work(monkeypatch)
    assert _cli(monkeypatch, [*USERS_FILE[case], "--overwrite"]) == 0 and started, capsys.readouterr().err
    assert snapshot(tmp_path) == before


def test_a_file_the_tool_wrote_is_replaced_run_after_run(tmp_path, monkeypatch, capsys):
    """Its generator mark (HTML's ``<meta name="generator">``, a first Markdown comment) or the shape of its JSON
    says the tool wrote it: the next run replaces it without ``--overwrite``."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EMBEDSELECT_CACHE_DIR", str(tmp_path / "cache"))
    for argv in (["report", "--out", "r.html"], ["leaderboard", "--out", "l.md"],
                 ["leaderboard", "--format", "json", "--out", "l.json"], ["leaderboard", "--format", "html", "--out", "l.html"]):
        assert _cli(monkeypatch, argv) == 0
        first = (tmp_path / argv[-1]).read_text()
        assert _cli(monkeypatch, argv) == 0, capsys.readouterr().err
        assert (tmp_path / argv[-1]).read_text() == first
    from embedselect._fs.outfile import is_tool_output

    assert all(is_tool_output(tmp_path / n) for n in ("r.html", "l.md", "l.json", "l.html"))
    (tmp_path / "mine.json").write_text('{"ranking_id": "mine", "rows": []}')
    assert not is_tool_output(tmp_path / "mine.json")


CARD = """---
license: mit
language: en
---
# My model

Years of notes about my model.
"""


@pytest.mark.fault
def test_card_out_at_an_existing_card_updates_it_and_keeps_the_users_card(tmp_path, monkeypatch, capsys):
    """``card --out README.md`` without ``--card`` replaced the user's model card (front matter, title and text
    gone) by a new card with a stray empty ``---``/``---`` pair. It now updates the card that is there."""
    _check_card_update(tmp_path, monkeypatch, capsys, "card --out README.md")


def test_card_card_and_out_at_one_card_is_the_in_place_update(tmp_path, monkeypatch, capsys):
    """``card --card README.md --out README.md``: the one output allowed to name a file the run reads."""
    _check_card_update(tmp_path, monkeypatch, capsys, "card --card README.md --out README.md")


def _check_card_update(tmp_path, monkeypatch, capsys, how: str) -> None:
    import yaml

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EMBEDSELECT_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "README.md").write_text(CARD)
    argv = ["card", "--candidate", "a", "--out", "README.md"]
    if "--card" in how:
        argv += ["--card", "README.md"]
    assert _cli(monkeypatch, argv) == 0, capsys.readouterr().err
    assert _cli(monkeypatch, argv) == 0, capsys.readouterr().err  # twice: one section, one result
    text = (tmp_path / "README.md").read_text()
    meta = yaml.safe_load(text.split("---\n")[1])
    assert meta["license"] == "mit" and meta["language"] == "en" and len(meta["model-index"][0]["results"]) == 1
    assert "# My model\n\nYears of notes about my model." in text and text.count("---\n") == 2
    assert text.count("<!-- embedselect:start -->") == 1


@pytest.mark.fault
def test_a_new_card_has_one_front_matter_and_no_stray_pair(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EMBEDSELECT_CACHE_DIR", str(tmp_path / "cache"))
    assert _cli(monkeypatch, ["card", "--candidate", "a", "--out", "NEW.md"]) == 0
    text = (tmp_path / "NEW.md").read_text()
    assert text.startswith("---\nmodel-index:") and text.count("---") == 2, text


# --- 3. device nodes and named pipes -----------------------------------------------------------------------------
def _char_device(t: Path, name: str) -> Path:
    """A copy of ``/dev/<name>`` in ``t`` (root may make one), else the system's own (which a user cannot
    replace, so the check stays safe)."""
    real = Path("/dev") / name
    copy = t / name
    try:
        os.mknod(copy, stat.S_IFCHR | 0o666, os.stat(real).st_rdev)
        return copy
    except PermissionError:
        return real


PUBLISHERS = {"report": ["report"], "leaderboard": ["leaderboard", "--format", "html"],
              "card": ["card", "--candidate", "a"]}


@pytest.mark.fault
@pytest.mark.parametrize("command", list(PUBLISHERS))
@pytest.mark.parametrize("node", ["a copy of /dev/null", "a copy of /dev/full", "a named pipe"])
def test_outputs_write_into_devices_and_pipes_and_never_replace_them(tmp_path, monkeypatch, capsys, command, node):
    """``--out`` at a copy of ``/dev/null``, ``/dev/full`` or a named pipe exited 0 and left a regular file in its
    place (as root, ``--out /dev/null`` replaced the system's); ``/dev/full`` gave no disk-full error."""
    monkeypatch.setenv("EMBEDSELECT_CACHE_DIR", str(tmp_path / "cache"))
    got: list[bytes] = []
    if node == "a named pipe":
        target = tmp_path / "pipe"
        os.mkfifo(target)
        reader = threading.Thread(target=lambda: got.append(target.read_bytes()), daemon=True)
        reader.start()
    else:
        target = _char_device(tmp_path, node.rsplit("/", 1)[1])
    kind = stat.S_IFMT(os.lstat(target).st_mode)
    code = _cli(monkeypatch, [*PUBLISHERS[command], "--out", str(target)])
    err = capsys.readouterr().err
    assert stat.S_IFMT(os.lstat(target).st_mode) == kind  # still the device or the pipe it was
    if node == "a copy of /dev/full":
        assert code == 2 and "no space left on device" in err and str(target) in err, err
    else:
        assert code == 0, err
    if node == "a named pipe":
        reader.join(10)
        assert got and (b"embedselect" in got[0]), got
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "cache") == ([target.name] if target.parent == tmp_path else [])


# --- 9. a closed stdout ------------------------------------------------------------------------------------------
@pytest.mark.fault
@pytest.mark.parametrize("argv", [["cache", "ls"], ["embed", "{data}", "-c", "text", "-m", "tfidf-svd"]],
                         ids=["cache-ls", "embed"])
def test_a_closed_stdout_is_refused_before_any_work(tmp_path, argv):
    """``embedselect cache ls >&-``: Python's ``sys.stdout`` is None; an ``AttributeError`` traceback came out."""
    data = _texts(tmp_path / "d")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "EMBEDSELECT_CACHE_DIR": str(tmp_path / "cache")}
    cmd = " ".join([sys.executable, "-m", "embedselect", *(a.format(data=data) for a in argv)])
    proc = subprocess.run(["sh", "-c", f"exec {cmd} >&-"], stderr=subprocess.PIPE, text=True, env=env, timeout=120)
    assert proc.returncode == EXIT_CODES["usage"], proc.stderr
    assert proc.stderr.startswith("embedselect: error: the standard output is closed") and proc.stderr.count("\n") == 1
    assert not (tmp_path / "cache").exists()  # nothing was done


# --- 13. a full disk ---------------------------------------------------------------------------------------------
@pytest.mark.fault
@pytest.mark.parametrize("code,said", [(errno.ENOSPC, "no space left on device"), (errno.EDQUOT, "disk quota exceeded"),
                                       (errno.EROFS, "the file system is read-only")])
@pytest.mark.parametrize("argv", [["report", "--out", "report.html"], ["rank", "{data}", "-c", "text", "-m", "tfidf-svd",
                                                                        "--html", "report.html"]],
                         ids=["report --out", "rank --html"])
def test_a_full_disk_while_writing_an_output_is_a_typed_error_naming_the_file(tmp_path, monkeypatch, capsys, code,
                                                                                said, argv):
    """A full disk while writing ``--html`` or ``report --out`` was "unexpected OSError" (exit 1); the old file
    (one the tool wrote earlier) is kept and no temporary file is left."""
    import embedselect.pipeline

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EMBEDSELECT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(embedselect.pipeline, "select", lambda *a, **k: _fake(["a", "b"]))
    data = _texts(tmp_path / "d")
    argv = [a.format(data=data) for a in argv]
    assert _cli(monkeypatch, argv) == 0  # an earlier report
    capsys.readouterr()
    before = snapshot(tmp_path)

    def full(fd):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, "fsync", full)
    assert _cli(monkeypatch, argv) == 2
    err = capsys.readouterr().err
    assert f"could not write --{argv[-2].lstrip('-')} to report.html: {said}" in err and "unexpected" not in err, err
    assert err.count("\n") == 1 and snapshot(tmp_path) == before


# --- 14. a $ in a candidate's name -------------------------------------------------------------------------------
def _dollars(names: list[str]):
    ranking = _fake(names)
    for i, c in enumerate(ranking.candidates):  # what the Task Prior scatter draws, each point labelled by its name
        c.columns.update({"task_prior_mean": 0.5 + i / 10, "task_prior_var": 0.1 + i / 20})
    return ranking


@pytest.mark.fault
def test_a_dollar_in_a_candidates_name_is_text_in_every_figure(tmp_path, monkeypatch, capsys):
    """A candidate named ``mini$x_$`` made matplotlib's mathtext raise a ``ValueError`` in ``rank --html``, in
    ``report`` of that ranking and in every night's publish: figure text is plain text now."""
    import embedselect.cli.publish as cli_publish
    import embedselect.pipeline
    from embedselect.cli import main
    from embedselect.nightly import outputs
    from embedselect.publish.report import to_html
    from tests.test_nothing_lost import _board, _summary

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EMBEDSELECT_CACHE_DIR", str(tmp_path / "cache"))
    names = ["mini$x_$", "$a$^b$", "plain"]
    figures = to_html(_dollars(["one", "two", "three"])).count("<svg")
    assert figures >= 2  # the scatter and score vs cost, labelled by name
    ranking = _dollars(names)
    monkeypatch.setattr(embedselect.pipeline, "select", lambda *a, **k: ranking)
    data = _texts(tmp_path / "d")
    assert _cli(monkeypatch, ["rank", str(data), "-c", "text", "-m", "x", "--html", "r.html"]) == 0, capsys.readouterr().err
    html = (tmp_path / "r.html").read_text()
    assert html.count("<svg") == figures and "mini$x_$" in html
    monkeypatch.setattr(cli_publish, "_ranking", lambda args: (None, ranking))
    assert main(["report", "--out", "again.html"]) == 0, capsys.readouterr().err
    assert (tmp_path / "again.html").read_text().count("<svg") == figures
    site = outputs.publish(tmp_path / "site", "20261127T000000Z-aaaaa0", ranking, _board(ranking),
                           _summary("20261127T000000Z-aaaaa0"))
    assert (site / "report.html").read_text().count("<svg") == figures


# --- the closed loop ---------------------------------------------------------------------------------------------
BASE = {
    "rank": ["rank", "small.csv", "-c", "text", "-m", "tfidf-svd,mine=./model"],
    "validate": ["validate", "small.csv", "-c", "text", "--labels", "labels.csv", "-m", "tfidf-svd,mine=./model"],
    "embed": ["embed", "small.csv", "-c", "text", "-m", "tfidf-svd,mine=./model"],
    "demo": ["demo"],
    "index": ["index", "small.csv", "-c", "text", "-m", "mine=./model"],
    "neighbours": ["neighbours", "small.csv", "-c", "text", "-m", "mine=./model", "--near-duplicates", "0.9"],
    "badge": ["badge"],
    "card": ["card", "--candidate", "a", "--card", "card.md"],
    "leaderboard": ["leaderboard"],
    "report": ["report"],
    "ask": ["ask", "small.csv", "-c", "text", "-m", "tfidf-svd,mine=./model"],
}
"""A command line for each command that has an output option; the test fails for a command missing here."""
READS = {"small.csv": "the data", "labels.csv": "the labels file", "model/config.json": "a candidate's input",
         "model": "a candidate's input", "card.md": "--card", "cache/embedselect.duckdb": "the cache", "cache": "the cache"}
"""What those command lines read, by the message's name for it."""


def _world(t: Path) -> None:
    _texts(t)
    (t / "labels.csv").write_text("path,label\n")
    _model_dir(t)
    (t / "card.md").write_text(CARD)
    (t / "cache").mkdir()
    (t / "cache" / "embedselect.duckdb").write_bytes(b"DUCK a database")
    (t / "notes.txt").write_text("the user's own file\n")
    (t / "folder").mkdir()
    (t / "link").symlink_to("notes.txt")
    (t.parent / "pipes").mkdir()
    os.mkfifo(t.parent / "pipes" / "pipe")  # outside the snapshot's tree (reading a pipe would block)


def _outputs() -> dict[str, list[argparse.Action]]:
    from embedselect.cli import build_parser
    from embedselect.cli.common import path_options

    return {name: path_options(sp)[0] for name, sp in _commands(build_parser()).items() if path_options(sp)[0]}


def test_every_option_that_names_a_path_is_tagged_as_an_output_or_an_input():
    """The closed loop holds only while every path option is known: an option with ``type=Path``, or named like
    an output (``--out``, ``--html``, ``--markdown``, ``--write-*``), carries its role (``cli.common.ROLE``)."""
    from embedselect.cli import build_parser
    from embedselect.cli.common import ROLE

    untagged = []
    for name, sp in _commands(build_parser()).items():
        for a in sp._actions:
            outish = any(s in ("--out", "-o", "--html", "--markdown") or s.startswith("--write-") for s in a.option_strings)
            if (outish or a.type is Path) and getattr(a, ROLE, None) is None:
                untagged.append(f"{name} {a.option_strings or a.dest}")
    assert not untagged
    assert set(_outputs()) == set(BASE), "add a command line for each command with an output to BASE"


@pytest.mark.fault
def test_closed_loop_no_output_of_any_command_names_a_file_the_run_reads(tmp_path, monkeypatch, capsys):
    """Every output option of every command (introspected), pointed at each file the same command line reads
    (data, labels, a model folder and a file in it, the card, the cache and its database): refused, exit 2, before
    any work, every file as it was. The one exception is declared on the parser: ``card --card F --out F`` updates
    the card F in place (its text kept, see the card test above)."""
    from embedselect.cli import main

    tmp_path = tmp_path / "w"
    tmp_path.mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EMBEDSELECT_CACHE_DIR", str(tmp_path / "cache"))
    _world(tmp_path)
    started = _no_work(monkeypatch)
    tried = 0
    for command, actions in _outputs().items():
        base = BASE[command]
        for action in actions:
            flag = max(action.option_strings, key=len)
            for target, name in READS.items():
                reads = target.startswith("cache") or target in base or target.split("/")[0] in " ".join(base)
                if not reads or (command, flag, target) == ("card", "--out", "card.md"):
                    continue
                before = snapshot(tmp_path)
                code = main([*base, flag, target])
                err = capsys.readouterr().err
                assert code == 2 and not started, (command, flag, target, err)
                assert name in err or "cache" in err, (command, flag, target, err)
                assert snapshot(tmp_path) == before, (command, flag, target)
                tried += 1
    assert tried >= 40, tried


@pytest.mark.fault
def test_closed_loop_no_output_replaces_anything_but_a_file_the_tool_wrote_or_a_new_path(tmp_path, monkeypatch,
                                                                                         capsys):
    """Every single-file output option of every command at a user's regular file, a folder, a link: refused, exit
    2, as it was; at a new path, a file the tool wrote, a named pipe: the run goes ahead (its writer writes into the
    pipe, see above). Folder outputs (``index``, ``badge``) have their own rule (tests/test_nothing_lost_replay.py)."""
    from embedselect._fs.outfile import HTML_MARK
    from embedselect.cli import main

    tmp_path = tmp_path / "w"
    tmp_path.mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EMBEDSELECT_CACHE_DIR", str(tmp_path / "cache"))
    _world(tmp_path)
    (tmp_path / "ours.html").write_text(f"<!DOCTYPE html><html><head>{HTML_MARK}</head></html>")
    started = _no_work(monkeypatch)
    tried = 0
    for command, actions in _outputs().items():
        for action in actions:
            if action.embedselect_folder:
                continue
            flag = max(action.option_strings, key=len)
            for target, ok in (("notes.txt", False), ("folder", False), ("link", False), ("new.txt", True),
                               ("ours.html", True), ("../pipes/pipe", True)):
                before = snapshot(tmp_path)
                started.clear()
                code = main([*BASE[command], flag, target])
                err = capsys.readouterr().err
                assert (code == 0 and started) if ok else (code == 2 and not started), (command, flag, target, err)
                assert snapshot(tmp_path) == before, (command, flag, target)
                tried += 1
    assert tried >= 40, tried


@pytest.mark.fault
def test_closed_loop_the_cli_writes_files_only_through_the_output_writer():
    """No command module writes a file by itself (``open(..., "w")``, ``write_text``, ``to_csv(path)``,
    ``savefig``): every single-file output goes through ``cli.common.write_atomic`` (``_fs.outfile.write``)."""
    bad = []
    for f in sorted((ROOT / "embedselect" / "cli").glob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if not isinstance(node, ast.Call):
                continue
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
            if name in ("write_text", "write_bytes", "savefig", "to_parquet", "to_json") and node.args:
                bad.append(f"{f.name}:{node.lineno} {name}")
            if name == "to_csv" and (node.args or any(k.arg == "path_or_buf" for k in node.keywords)):
                bad.append(f"{f.name}:{node.lineno} {name}")
            to_null = bool(node.args) and getattr(node.args[0], "attr", None) == "devnull"  # os.open(os.devnull, ...)
            if name == "open" and len(node.args) > 1 and not to_null:
                bad.append(f"{f.name}:{node.lineno} open")
    assert not bad


def test_embed_out_replaces_its_own_file_run_after_run(tmp_path, monkeypatch, capsys):
    """``embed --out`` writes rows with the incremental cache's two counts (``embedded_items``, ``stored_items``); the
    check for the tool's own file knew only the first rows' keys, so the second run refused the file the first had
    written ("already exists and was not written by embedselect")."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EMBEDSELECT_CACHE_DIR", str(tmp_path / "cache"))
    _texts(tmp_path)
    argv = ["embed", "small.csv", "-c", "text", "-m", "tfidf-svd?dim=4", "-q", "--out", "rows.json"]
    assert _cli(monkeypatch, argv) == 0, capsys.readouterr().err
    first = json.loads((tmp_path / "rows.json").read_text())
    assert _cli(monkeypatch, argv) == 0, capsys.readouterr().err
    second = json.loads((tmp_path / "rows.json").read_text())
    assert [r["cached"] for r in first] == [False] and [r["cached"] for r in second] == [True]
    (tmp_path / "mine.json").write_text(json.dumps([{**second[0], "my_note": "mine"}]))  # a user's file of that shape
    from embedselect._fs.outfile import is_tool_output

    assert is_tool_output(tmp_path / "rows.json") and not is_tool_output(tmp_path / "mine.json")

"""What the command line shows a person at a terminal carries no terminal control sequences and no bidirectional
controls: model names, data items and error messages are untrusted text (an ESC sequence could clear the screen,
retitle the window or hide what follows; U+202E makes a name read as another)."""

from __future__ import annotations

import io
import re
import sys

import pytest

from embedselect import cli
from embedselect.data import sample_path
from embedselect.publish.text import terminal, terminal_line


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_terminal_drops_escapes_and_bidi_controls_and_keeps_the_rest():
    text = "ev\x1b[31mil\x07 \u202egnp.exe\tok\nnext \U0001f468\u200d\U0001f469 caf\u00e9"
    assert terminal(text) == "ev[31mil gnp.exe\tok\nnext \U0001f468\u200d\U0001f469 caf\u00e9"
    assert terminal_line(text) == "ev[31mil gnp.exe ok next \U0001f468\u200d\U0001f469 caf\u00e9"


@pytest.mark.fault
def test_the_table_on_a_terminal_shows_a_hostile_name_without_its_escape(monkeypatch, tmp_path):
    out = _Tty()
    monkeypatch.setattr(sys, "stdout", out)
    models = "ev\x1b]0;pwned\x07il=tfidf-svd,random-projection,rp64=random-projection?dim=64,rp32=random-projection?dim=32"
    code = cli.main(["rank", str(sample_path("texts")), "--column", "text", "--max-items", "60", "--metrics",
                     "nn_agreement,rankme", "-m", models, "--cache-dir", str(tmp_path / "cache")])
    assert code == 0
    shown = out.getvalue()
    assert "ev]0;pwnedil" in shown and "\x1b" not in shown and "\x07" not in shown
    assert sys.stdout is out  # restored after the command


@pytest.mark.fault
def test_an_error_message_loses_its_escape_too(capsys, tmp_path):
    assert cli.one_line(ValueError("bad\x1b[2J\n  thing\u202e")) == "bad[2J thing"
    code = cli.main(["rank", str(tmp_path / "no\x1b[2Jsuch.csv"), "-m", "tfidf-svd"])
    err = capsys.readouterr().err
    assert code == 3 and "such.csv" in err and "\x1b" not in err


def test_json_on_a_pipe_is_left_exact(capsys, tmp_path):
    """Not a terminal: the bytes a pipeline reads are not rewritten (JSON escapes control characters itself)."""
    code = cli.main(["rank", str(sample_path("texts")), "--column", "text", "--max-items", "60", "--metrics",
                     "nn_agreement,rankme", "--json", "-m", "a\u202eb=tfidf-svd,random-projection,rp64=random-projection?dim=64",
                     "--cache-dir",
                     str(tmp_path / "cache")])
    assert code == 0
    assert "a\\u202eb" in capsys.readouterr().out


@pytest.mark.fault
def test_a_log_line_quoting_a_crafted_file_name_stays_one_line_on_a_terminal(tmp_path):
    """A file name with a line break and an escape, quoted by a warning (a link in an image folder that leads out of
    it), printed as two lines on the terminal: the second read as a log line of its own ("ERROR embedselect: ...").
    Every log record's message is one line through the one rule of stderr lines (publish.text.terminal_line)."""
    import os

    from testkit.terminal import run_on_pty
    from testkit.tinymodels import make_tiny_images

    folder, outside = tmp_path / "photos", tmp_path / "elsewhere"
    make_tiny_images(folder, n=6)
    (secret,) = make_tiny_images(outside, n=1)
    (folder / "x\nERROR embedselect: forged\x1b[2J line.png").symlink_to(secret)
    argv = [sys.executable, "-m", "embedselect", "embed", str(folder), "-m", "pixel-pca", "-q",
            "--cache-dir", str(tmp_path / "cache")]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    screen, code = run_on_pty(argv, env=env, timeout=300, read_timeout=120)
    assert code == 0, screen[-2000:]
    lines = [line for line in screen.replace("\r", "").split("\n") if "forged" in line]
    assert len(lines) == 1, screen[-2000:]
    assert lines[0].startswith("WARNING embedselect.data") and "x ERROR embedselect: forged[2J line.png" in lines[0]
    assert "\x1b" not in screen


FORGED = "m\nERROR forged: all good\x1b[31m"
"""A model folder's name that printed a row of rank's table across two lines, the second reading as a log line."""


def _forged_lines(text: str) -> list[str]:
    """The lines of ``text`` that show the crafted name, each of which must hold it whole (its break a space)."""
    lines = [ln for ln in text.splitlines() if "forged" in ln]
    assert lines and all(re.search(r"\bm ERROR forged: all good", ln) for ln in lines), text
    assert not [ln for ln in text.splitlines() if ln.lstrip().startswith("ERROR")], text
    return lines


@pytest.mark.fault
def test_a_name_with_a_line_break_never_adds_a_line_to_a_table(monkeypatch, tmp_path):
    """A local model in a folder named ``m\\nERROR forged: all good`` (an escape after it) printed rank's row across
    two lines (``2     m`` / ``ERROR forged: all good  0.58 ...``), on a terminal too (its cleaning keeps line
    breaks), and so did each note, cache ls's row and leaderboard --list's first. Each cell and each line under a
    table is one line (cli.format.cell: publish.text.terminal_line on a terminal, its one_line half on a pipe)."""
    import pandas as pd

    from embedselect.cli.publish import _ranking_list
    from testkit.tinymodels import make_tiny_sentence_transformer

    monkeypatch.setenv("COLUMNS", "400")  # the terminal's width: the lines under the table are not wrapped
    folder = make_tiny_sentence_transformer(tmp_path / FORGED, seed=1)
    cache = ["--cache-dir", str(tmp_path / "cache")]
    argv = ["rank", str(sample_path("texts")), "--column", "text", "--max-items", "60", "--metrics",
            "nn_agreement,rankme", "-m", f"{folder},random-projection,tfidf-svd", "-q", *cache]
    for out in (_Tty(), io.StringIO()):
        monkeypatch.setattr(sys, "stdout", out)
        assert cli.main(argv) == 0 and cli.main(["cache", "ls", *cache]) == 0
        shown = out.getvalue()
        rows = [ln for ln in _forged_lines(shown) if re.match(r"\d+ ", ln)]
        assert len(rows) == 1, shown  # the ranking's row, whole
        assert len([ln for ln in _forged_lines(shown) if "local:" in ln]) == 1, shown  # cache ls's row
        assert ("\x1b" in shown) is not isinstance(out, _Tty)  # a pipe keeps the other characters
    first = pd.DataFrame({"ranking_id": ["a" * 32], "created_at": ["2026-01-01T00:00:00Z"], "source": ["t.csv"],
                          "fingerprint": ["f" * 64], "n_candidates": [3], "first": [FORGED], "decided": [True],
                          "metrics": ["rankme"]})
    for tty in (True, False):
        monkeypatch.setattr(sys, "stdout", _Tty() if tty else io.StringIO())
        assert len(_forged_lines(_ranking_list(first))) == 1

"""What the command line shows a person at a terminal carries no terminal control sequences and no bidirectional
controls: model names, data items and error messages are untrusted text (an ESC sequence could clear the screen,
retitle the window or hide what follows; U+202E makes a name read as another)."""

from __future__ import annotations

import io
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

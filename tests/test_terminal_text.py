"""What the command line shows a person at a terminal carries no terminal control sequences and no bidirectional
controls: model names, data items and error messages are untrusted text (an ESC sequence could clear the screen,
retitle the window or hide what follows; U+202E makes a name read as another)."""

from __future__ import annotations

import io
import sys

import pytest

from embedselect import cli
from embedselect.data import sample_path
from embedselect.publish.text import terminal


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_terminal_drops_escapes_and_bidi_controls_and_keeps_the_rest():
    text = "ev\x1b[31mil\x07 \u202egnp.exe\tok\nnext \U0001f468\u200d\U0001f469 caf\u00e9"
    assert terminal(text) == "ev[31mil gnp.exe\tok\nnext \U0001f468\u200d\U0001f469 caf\u00e9"


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

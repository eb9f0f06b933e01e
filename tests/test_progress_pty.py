"""The progress display on a real terminal (a pty): the run's line is the only bar (transformers' own "Loading weights"
bar stayed on the screen after every model; sentence-transformers' "Batches" bar and the transformers backend's
per-item bar were drawn under it, two or three bars fighting for the screen), a terminal that reports 0×0 still gets the run's bar (tqdm
drew nothing there) (issue 20), and the bar's line never runs past the terminal's edge."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import sys
import termios

import pytest

from embedselect.data import sample_path
from testkit.terminal import run_on_pty
from testkit.tinymodels import make_tiny_sentence_transformer, make_tiny_transformers_text

LIBRARY_BAR = re.compile(r"Batches|Loading weights|Loading checkpoint|transformers: +\d|\d+(it|item|img)/s\]")
"""What another bar than the run's own draws: sentence-transformers' "Batches", transformers' loading bars, a
backend's per-item bar ("transformers:  13%|... 32/240 [00:01<00:11, 18.65item/s]"): tqdm's rate in brackets."""


@pytest.mark.fault
@pytest.mark.slow
@pytest.mark.parametrize("rows,cols", [(40, 120), (0, 0)], ids=["40x120", "0x0"])
def test_on_a_terminal_only_the_runs_own_bar_is_drawn(tmp_path, rows, cols):
    model = make_tiny_transformers_text(tmp_path / "tiny-tf")
    st = make_tiny_sentence_transformer(tmp_path / "tiny-st")
    argv = [sys.executable, "-m", "embedselect.cli", "rank", str(sample_path("texts")), "-m",
            f"{model},st={st},random-projection,tfidf-svd", "--column", "text", "--max-items", "30", "--metrics",
            "task_prior", "--batch-size", "8", "--cache-dir", str(tmp_path / "cache")]
    env = {k: v for k, v in os.environ.items() if k != "TQDM_DISABLE"}  # set by earlier in-process cli.main() calls
    screen, code = run_on_pty(argv, size=(rows, cols), env=env, timeout=1800, read_timeout=300)
    assert code == 0, screen[-2000:]
    bar = LIBRARY_BAR.search(screen)
    assert bar is None, screen[max(bar.start() - 300, 0):bar.end() + 300]  # no bar of a library or a backend
    assert "st: embed 30 text items" in screen and "tiny-tf: embed" in screen, screen[:3000]  # their stages, shown
    assert "embedselect " in screen and "%|" in screen, screen[:3000]  # the run's own bar, also on a 0×0 terminal
    assert "random-projection" in screen.split("%|")[-1]  # the table follows


def _drawn(master: int) -> str:
    """What the terminal received so far, without its control sequences."""
    chunks = []
    while select.select([master], [], [], 0.5)[0]:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(chunks).decode("utf-8", "replace"))


@pytest.mark.parametrize("cols", [0, 60, 120], ids=["unsized-pty-COLUMNS-80", "60-columns", "120-columns"])
@pytest.mark.fault
def test_the_progress_line_never_runs_past_the_terminal(monkeypatch, cols):
    """A 0×0 pty (``script``) with COLUMNS=80 drew 100 columns; a sized one cut a long stage's line at its end, the
    bar one cell wide and its counts gone. Now the speed note goes first, then the label is cut in the middle."""
    from embedselect._util.progress import RunProgress

    master, slave = pty.openpty()
    if cols:
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, cols, 0, 0))
    width = cols or 80
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.delenv("TQDM_DISABLE", raising=False)  # set by earlier in-process cli.main() calls
    with open(slave, "w", encoding="utf-8", closefd=True) as term:
        monkeypatch.setattr(sys, "stderr", term)
        bar = RunProgress(3, enabled=True)
        with bar.stage("all-MiniLM-L6-v2 (first 8 tokens): embed 240 text items"):
            pass
        bar.rate("all-MiniLM-L6-v2 (first 8 tokens)", 240, 1.07)
        with bar.stage("all-MiniLM-L6-v2 (first 8 tokens): store 0.4 MiB"):
            pass
        with bar.stage("tfidf-svd: embed"):
            bar.rate("tfidf-svd", 240, 0.1)
        bar.close()
        term.flush()
        drawn = _drawn(master)
    os.close(master)
    frames = [f for f in re.split(r"[\r\n]", drawn) if f.strip()]
    assert frames and max(len(f.rstrip()) for f in frames) < width, frames
    long_stage = [f for f in frames if "text items" in f]
    assert long_stage and all(re.search(r"\| \d/3 \[", f) for f in long_stage), long_stage  # the counts stay
    if width >= 100:  # with room for it, a short label keeps the speed note
        assert any("tfidf-svd: embed" in f and "tfidf-svd: 240 items, 2,400 items/s" in f for f in frames), frames

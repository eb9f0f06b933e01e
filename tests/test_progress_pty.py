"""The progress display on a real terminal (a pty): transformers' own "Loading weights" bar no longer leaks beside the
run's bar (it stayed on the screen after every model), and a terminal that reports 0×0 still gets the run's bar
(tqdm drew nothing there) (issue 20)."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import sys
import termios

import pytest

from embedselect.data import sample_path
from testkit.tinymodels import make_tiny_transformers_text


def _run_in_pty(argv: list[str], rows: int, cols: int, timeout: float = 300) -> tuple[str, int]:
    """Run ``argv`` with stdin/stdout/stderr on a new pty of ``rows``×``cols``; returns everything it wrote (str) and
    its exit status."""
    env = {k: v for k, v in os.environ.items() if k != "TQDM_DISABLE"}  # set by earlier in-process cli.main() calls
    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.execve(argv[0], argv, env)
        finally:
            os._exit(127)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    out = b""
    while True:
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            os.kill(pid, 9)
            break
        try:
            data = os.read(fd, 65536)
        except OSError:  # the child closed the pty
            break
        if not data:
            break
        out += data
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return out.decode("utf-8", "replace"), os.waitstatus_to_exitcode(status)


@pytest.mark.fault
@pytest.mark.slow
@pytest.mark.parametrize("rows,cols", [(40, 120), (0, 0)], ids=["40x120", "0x0"])
def test_on_a_terminal_only_the_runs_own_bar_is_drawn(tmp_path, rows, cols):
    model = make_tiny_transformers_text(tmp_path / "tiny-tf")
    argv = [sys.executable, "-m", "embedselect.cli", "rank", str(sample_path("texts")), "-m",
            f"{model},random-projection,tfidf-svd", "--column", "text", "--max-items", "30", "--metrics", "task_prior",
            "--cache-dir", str(tmp_path / "cache")]
    screen, code = _run_in_pty(argv, rows, cols)
    assert code == 0, screen[-2000:]
    assert "Loading weights" not in screen and "it/s]" not in screen, screen[:3000]  # no library bar
    assert "embedselect " in screen and "%|" in screen, screen[:3000]  # the run's own bar, also on a 0×0 terminal
    assert "random-projection" in screen.split("%|")[-1]  # the table follows

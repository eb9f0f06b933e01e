"""Run a command on a pseudo-terminal as a person would: wait for a text on the screen, type keys, and read what
the terminal showed (for the tests of prompts, interactive questions and interrupts)."""

from __future__ import annotations

import codecs
import fcntl
import os
import pty
import select
import signal
import struct
import termios
import time
from typing import Mapping, Sequence

import pytest


def run_on_pty(argv: Sequence[str], keys_at: Sequence[tuple[str, str]] = (), *, timeout: float = 120.0,
               env: Mapping[str, str] | None = None, kill_after: int | None = None,
               kill_once: str = "", size: tuple[int, int] | None = None,
               read_timeout: float | None = None) -> tuple[str, int | None]:
    """Run ``argv`` (an executable's path first) on a pty with ``env`` (default: this process's). ``keys_at``: (text
    to wait for, keys to type) pairs, in order; each text is looked for in what was shown since the keys before it.
    With ``kill_after``: SIGKILL once that many keys were typed and ``kill_once`` was shown after the last of them.
    ``size``: the terminal's (rows, columns), set before the command draws anything ((0, 0): a terminal that says no
    size, as ``script`` gives); None leaves the pty's own. Returns (what the terminal showed, the exit status, or
    None when killed); a run past ``timeout`` seconds, or one that showed nothing for ``read_timeout`` seconds, is
    killed and fails the test saying which, with the last of what it showed (a slow or overloaded machine, or a
    hang), not as a bare exit status."""
    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.execve(argv[0], list(argv), dict(os.environ if env is None else env))
        finally:
            os._exit(127)
    if size is not None:
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", size[0], size[1], 0, 0))
    screen, sent, mark, deadline, killed, stalled = "", 0, 0, time.monotonic() + timeout, False, ""
    last_read, decoder = time.monotonic(), codecs.getincrementaldecoder("utf-8")("replace")  # a character may
    try:  # be split between two reads
        while time.monotonic() < deadline:
            if read_timeout is not None and time.monotonic() - last_read > read_timeout:
                os.kill(pid, signal.SIGKILL)
                stalled = f"showed nothing for {read_timeout:.0f} s"
                break
            if sent < len(keys_at) and keys_at[sent][0] in screen[mark:]:
                os.write(fd, keys_at[sent][1].encode())
                sent, mark = sent + 1, len(screen)
                if kill_after is not None and sent == kill_after:
                    while kill_once not in screen[mark:] and time.monotonic() < deadline:
                        if select.select([fd], [], [], 1)[0]:
                            screen += decoder.decode(os.read(fd, 65536))
                    os.kill(pid, signal.SIGKILL)
                    killed = True
                    break
            if select.select([fd], [], [], 0.5)[0]:
                try:
                    data = os.read(fd, 65536)
                except OSError:
                    break
                if not data:
                    break
                screen += decoder.decode(data)
                last_read = time.monotonic()
        else:
            os.kill(pid, signal.SIGKILL)
            stalled = f"was still running after {timeout:.0f} s"
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    if stalled:
        pytest.fail(f"{' '.join(argv[1:4])} {stalled}; it was stopped (a slow or overloaded machine, or a hang); "
                    f"what it showed last: {screen[-400:]!r}")
    return screen, None if killed else os.waitstatus_to_exitcode(status)

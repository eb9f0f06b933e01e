"""Kill a child process where it says it holds (for the crash-safety tests): the child writes a marker file at a named
stage and waits there; :func:`sigkill_when_marked` waits for the marker and sends SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Mapping, Sequence


def sigkill_when_marked(argv: Sequence[str], marker: Path, *, env: Mapping[str, str] | None = None,
                        timeout: float = 240.0) -> None:
    """Start ``argv``, wait until it has written something into ``marker`` (at most ``timeout`` seconds; the child
    must not end before), SIGKILL it and check that the kill is what ended it."""
    child = subprocess.Popen(list(argv), env=dict(env) if env is not None else None)
    try:
        deadline = time.monotonic() + timeout
        while not marker.exists() or not marker.read_text():
            assert child.poll() is None, "child ended before reaching the stage"
            assert time.monotonic() < deadline, f"child did not reach the stage in {timeout:.0f} s"
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL

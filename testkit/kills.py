"""Signal a child process where it says it holds (for the crash-safety and interrupt tests): the child writes a
marker file at a named stage and waits there; :func:`signal_when_marked` waits for the marker and sends a signal
(:func:`sigkill_when_marked`: SIGKILL)."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import IO, Mapping, Sequence


def signal_when_marked(argv: Sequence[str], marker: Path, sig: int, *, env: Mapping[str, str] | None = None,
                       timeout: float = 240.0) -> subprocess.CompletedProcess[str]:
    """Start ``argv``, wait until it has written something into ``marker`` (at most ``timeout`` seconds; the child
    must not end before), send it ``sig`` and wait for it to end (60 s). Returns its exit status, stdout and stderr
    (written to files, not pipes, so that a child that writes much never blocks before its stage)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        child = subprocess.Popen(list(argv), env=dict(env) if env is not None else None, stdout=out, stderr=err)
        try:
            deadline = time.monotonic() + timeout
            while not marker.exists() or not marker.read_text():
                assert child.poll() is None, f"child ended ({child.returncode}) before reaching the stage: " \
                                             f"{_read(err)[-2000:]}"
                assert time.monotonic() < deadline, f"child did not reach the stage in {timeout:.0f} s"
                time.sleep(0.05)
            os.kill(child.pid, sig)
            child.wait(timeout=60)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        return subprocess.CompletedProcess(list(argv), child.returncode, _read(out), _read(err))


def _read(f: IO[str]) -> str:
    """All of the text file ``f`` (a child's output so far)."""
    f.seek(0)
    return f.read()


def sigkill_when_marked(argv: Sequence[str], marker: Path, *, env: Mapping[str, str] | None = None,
                        timeout: float = 240.0) -> None:
    """:func:`signal_when_marked` with SIGKILL, checking that the kill is what ended the child."""
    done = signal_when_marked(argv, marker, signal.SIGKILL, env=env, timeout=timeout)
    assert done.returncode == -signal.SIGKILL, (done.returncode, done.stderr[-2000:])

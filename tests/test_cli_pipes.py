"""The command line on a closed stdout (``embedselect cache ls | head -1``): every command exits quietly with 141
(128 + SIGPIPE, as a shell tool ended by the pipe), never a traceback or an "unexpected BrokenPipeError" (issue 20)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from embedselect.data import sample_path
from embedselect.errors import EXIT_CODES


def _run_into_a_closed_pipe(argv: list[str]) -> subprocess.CompletedProcess:
    """Run ``python -m embedselect.cli ARGV`` with stdout a real pipe whose reading end is already closed."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run([sys.executable, "-m", "embedselect.cli", *argv], stdout=write_end,
                              stderr=subprocess.PIPE, text=True, timeout=300)
    finally:
        os.close(write_end)


@pytest.fixture(scope="module")
def filled_cache(tmp_path_factory):
    cache = tmp_path_factory.mktemp("pipes") / "cache"
    from embedselect.cli import main

    assert main(["embed", str(sample_path("texts")), "-m", "random-projection,tfidf-svd", "--column", "text",
                 "--max-items", "20", "--cache-dir", str(cache)]) == 0
    return cache


@pytest.mark.fault
@pytest.mark.parametrize("argv", [
    ["cache", "ls", "--cache-dir", "{cache}"],
    ["cache", "ls", "--json", "--cache-dir", "{cache}"],
    ["cache", "path", "--cache-dir", "{cache}"],
    ["rank", "--help"],
    ["--version"],
], ids=["cache-ls", "cache-ls-json", "cache-path", "help", "version"])
def test_a_closed_stdout_ends_every_command_quietly(filled_cache, argv):
    proc = _run_into_a_closed_pipe([a.format(cache=filled_cache) for a in argv])
    if argv[-1] in ("--help", "--version"):  # argparse itself drops what it cannot print and exits 0
        assert proc.returncode in (0, EXIT_CODES["broken_pipe"]), proc.stderr
    else:
        assert proc.returncode == EXIT_CODES["broken_pipe"] == 141, proc.stderr
    assert "BrokenPipe" not in proc.stderr and "Traceback" not in proc.stderr and "error" not in proc.stderr, proc.stderr

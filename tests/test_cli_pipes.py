"""The command line on a pipe. On a closed stdout (``embedselect cache ls | head -1``) every command exits quietly
with 141 (128 + SIGPIPE, as a shell tool ended by the pipe), never a traceback or an "unexpected BrokenPipeError"
(issue 20); with ``--json`` stdout holds one JSON document and nothing else."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

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


def _run_into_a_pipe(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """Run ``python -m embedselect.cli ARGV`` with stdout and stderr pipes (no terminal: the unattended case)."""
    return subprocess.run([sys.executable, "-m", "embedselect.cli", *argv], capture_output=True, text=True,
                          timeout=300, cwd=cwd, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """A cache with a stored ranking of the sample's first 60 items and an index of it under tfidf-svd, and a
    nightly configuration that ranks two baselines."""
    import yaml

    from embedselect.cli import main

    root = tmp_path_factory.mktemp("json-pipes")
    cache, data = root / "cache", str(sample_path("texts"))
    assert main(["rank", data, "-c", "text", "-m", "tfidf-svd,random-projection", "--metrics", "task_prior",
                 "--max-items", "60", "--cache-dir", str(cache), "-q", "--json"]) == 0
    assert main(["index", data, "-c", "text", "--max-items", "60", "-m", "tfidf-svd", "--out", str(root / "index"),
                 "--cache-dir", str(cache), "-q"]) == 0
    (root / "night").mkdir()
    (root / "night" / "texts.csv").write_text(Path(data).read_text(encoding="utf-8"), encoding="utf-8")
    (root / "night" / "nightly.yaml").write_text(yaml.safe_dump({
        "data": {"path": "texts.csv", "column": "text", "max_items": 60},
        "crawl": {"library": "sentence-transformers", "sort": "trending", "limit": 5},
        "pinned": ["tfidf-svd", "random-projection"], "keep_top": 2, "output": "./site", "cache": "./cache",
        "metrics": ["task_prior"], "budget_minutes": 10}))
    return root


_JSON_COMMANDS = {
    "crawl": ["crawl", "--limit", "10", "--cache-dir", "{hubcache}", "--json"],
    "hub-ls": ["hub", "ls", "--cache-dir", "{hubcache}", "--json"],
    "index": ["index", str(sample_path("texts")), "-c", "text", "--max-items", "60", "-m", "random-projection",
              "--out", "{tmp}/index2", "--cache-dir", "{root}/cache", "--json"],
    "search": ["search", "{root}/index", "a cat on a mat", "-k", "3", "--json"],
    "neighbours": ["neighbours", str(sample_path("texts")), "-c", "text", "--max-items", "60", "-m",
                   "tfidf-svd,random-projection", "--sample", "2", "--cache-dir", "{root}/cache", "--json"],
    "badge": ["badge", "--cache-dir", "{root}/cache", "--out", "{tmp}/badges", "--json"],
    "leaderboard": ["leaderboard", "--cache-dir", "{root}/cache", "--json"],
    "leaderboard-list": ["leaderboard", "--cache-dir", "{root}/cache", "--list", "--json"],
    "nightly": ["nightly", "--config", "{root}/night/nightly.yaml", "--json"],
}


@pytest.mark.fault
@pytest.mark.parametrize("name", list(_JSON_COMMANDS))
def test_json_on_a_pipe_is_one_document_and_nothing_else(published, hub, tmp_path, name):
    """With ``--json`` and stdout a pipe, stdout holds exactly one JSON document (progress, log lines and notes go to
    stderr): ``hub ls`` with rows, after a crawl of the loopback hub that also lists an id no hub would accept (its
    count is a note, on stderr), and each other command that has ``--json``."""
    for i in range(3):
        hub.publish(f"acme/m{i}", files={"config.json": b"{}"}, library_name="sentence-transformers",
                    pipeline_tag="sentence-similarity", trending_score=float(10 - i))
    hub.publish("evil/x|y<b>", files={"config.json": b"{}"}, library_name="sentence-transformers",
                pipeline_tag="sentence-similarity", trending_score=20.0)
    hubcache = tmp_path / "hubcache"
    if name == "hub-ls":
        assert _run_into_a_pipe(["crawl", "--limit", "10", "--cache-dir", str(hubcache), "-q"], tmp_path).returncode == 0
    argv = [a.format(root=published, tmp=tmp_path, hubcache=hubcache) for a in _JSON_COMMANDS[name]]
    proc = _run_into_a_pipe(argv, tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)  # one document: anything before or after it fails here
    assert doc and proc.stdout.strip().startswith(("{", "[")), proc.stdout[:200]
    if name in ("crawl", "hub-ls"):
        models = doc["models"] if name == "crawl" else doc
        assert sorted(m["repo_id"] for m in models) == ["acme/m0", "acme/m1", "acme/m2"]
        assert "1 crawled id(s) left out" in proc.stderr, proc.stderr

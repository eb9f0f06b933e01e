"""``cache rm`` asks before one selector takes several things: ``--all``, a ``--model`` pattern naming several models
(tests/test_cli.py), a run-key prefix naming several runs. Asked on a terminal (a real one here: a pty), else
``--yes``; a run key naming one run is removed at once."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from embedselect.cli import main
from embedselect.data import sample_path
from testkit.terminal import run_on_pty

SAMPLE = str(sample_path("texts"))
ROOT = Path(__file__).resolve().parents[1]


def _fill(cache: str) -> list[str]:
    assert main(["embed", SAMPLE, "-c", "text", "-m", "tfidf-svd,tfidf-svd?dim=8,random-projection",
                 "--cache-dir", cache, "-q"]) == 0
    return _keys(cache)


def _keys(cache: str) -> list[str]:
    from embedselect.store import Store

    return sorted(Store.open(cache).list_runs().run_key)


def _shared_prefix(keys: list[str]) -> str:
    """The longest prefix two of ``keys`` share (possibly ""): a prefix that names several runs."""
    return max((os.path.commonprefix([a, b]) for a, b in zip(keys, keys[1:])), key=len)


@pytest.mark.fault
def test_all_and_a_prefix_naming_several_runs_need_a_yes_without_a_terminal(tmp_path, capsys, monkeypatch):
    """`cache rm --all` and `cache rm PREFIX` naming several runs removed everything they took, unasked, while a
    `--model` pattern naming several models asked. Without a terminal they exit 2 and remove nothing, the runs
    listed; `--yes` removes them; a prefix naming one run is removed at once."""
    import io

    cache = str(tmp_path / "c")
    keys = _fill(cache)
    capsys.readouterr()
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))  # not a terminal: the y is never read
    assert main(["cache", "rm", "--all", "--cache-dir", cache]) == 2
    out = capsys.readouterr()
    assert "3 embedding run(s) of 2 model(s) to remove" in out.out and "baseline:tfidf-svd: 2 run(s)" in out.out
    assert "--all takes every run of the cache (3 embedding run(s))" in out.err and "give --yes" in out.err
    assert _keys(cache) == keys
    prefix = _shared_prefix(keys)
    assert main(["cache", "rm", prefix, "--cache-dir", cache]) == 2
    assert f"the run key prefix {prefix!r} matches" in capsys.readouterr().err and _keys(cache) == keys
    assert main(["cache", "rm", keys[0][:12], "--cache-dir", cache]) == 0  # one run: removed at once
    assert "removed 1 embedding run(s)" in capsys.readouterr().out and _keys(cache) == keys[1:]
    assert main(["cache", "rm", "--all", "--yes", "--cache-dir", cache]) == 0
    assert "removed 2 embedding run(s)" in capsys.readouterr().out and _keys(cache) == []


def _on_a_pty(argv: list[str], answer: str, timeout: float = 120) -> tuple[str, int | None]:
    """Run ``argv`` on a pty, type ``answer`` once it asks ``[y/N]``; (what the terminal showed, exit status)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return run_on_pty([sys.executable, "-m", "embedselect", *argv], [("[y/N]", answer)], timeout=timeout, env=env)


@pytest.mark.fault
def test_on_a_terminal_all_and_a_wide_prefix_are_asked_and_only_a_y_removes(tmp_path):
    cache = str(tmp_path / "c")
    keys = _fill(cache)
    screen, code = _on_a_pty(["cache", "rm", "--all", "--cache-dir", cache], "n\n")
    assert code == 0 and "remove all 3 embedding run(s) of the cache? [y/N]" in screen, screen
    assert "nothing was removed" in screen and _keys(cache) == keys
    prefix = _shared_prefix(keys)
    screen, code = _on_a_pty(["cache", "rm", prefix, "--cache-dir", cache], "y\n")
    took = [k for k in keys if k.startswith(prefix)]
    assert code == 0 and f"remove these {len(took)} embedding run(s)? [y/N]" in screen, screen
    assert f"removed {len(took)} embedding run(s)" in screen and _keys(cache) == sorted(set(keys) - set(took))
    assert main(["embed", SAMPLE, "-c", "text", "-m", "tfidf-svd,tfidf-svd?dim=8,random-projection",
                 "--cache-dir", cache, "-q"]) == 0
    screen, code = _on_a_pty(["cache", "rm", "--all", "--cache-dir", cache], "y\n")
    assert code == 0 and "removed 3 embedding run(s)" in screen and _keys(cache) == []


@pytest.mark.fault
def test_rm_says_partial_runs_apart_from_runs(tmp_path, capsys, monkeypatch):
    """A cache holding one whole run and the 5 chunks a kill left (partial runs, docs/cache.md): `cache rm` listed
    and removed "6 embedding run(s)" of a model that had one. It says them apart as `cache ls` does, in its listing,
    its question and what it removed."""
    import io

    import embedselect.pipeline.chunked as chunked
    from embedselect.store import Store

    cache = str(tmp_path / "c")
    monkeypatch.setattr(chunked, "SLICE_ITEMS", 40)
    monkeypatch.setattr(chunked, "CHUNK_SECONDS", 0.0)
    monkeypatch.setattr(Store, "drop_covered_chunks", lambda self, space=None: 0)  # as if killed before removal
    assert main(["embed", SAMPLE, "-c", "text", "-m", "random-projection", "--cache-dir", cache, "-q"]) == 0
    monkeypatch.undo()
    runs = Store.open(cache).list_runs()
    assert sorted(runs.partial) == [False] + [True] * 5
    model = runs.model_id[0]
    capsys.readouterr()
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))  # not a terminal: asked, refused
    assert main(["cache", "rm", "--all", "--cache-dir", cache]) == 2
    out = capsys.readouterr()
    said = "1 embedding run(s) and 5 partial run(s) kept from interrupted embeddings"
    assert f"{said} of 1 model(s) to remove:" in out.out and f"{model}: 1 run(s) and 5 partial run(s)," in out.out
    assert f"--all takes every run of the cache ({said})" in out.err, out.err
    assert main(["cache", "rm", "--model", model, "--cache-dir", cache]) == 0
    out = capsys.readouterr().out
    assert f"{said} of 1 model(s) to remove:" in out, out
    assert "removed 1 embedding run(s) and 5 partial run(s)\n" in out, out
    assert _keys(cache) == []

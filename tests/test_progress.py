"""The run's one progress display: drawn on a terminal (read back through a real pseudo-terminal), never in a
pipe, with --quiet, or from the Python API unless asked."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from functools import partial

import pytest

from embedselect.data import sample_path
from testkit.terminal import run_on_pty

SAMPLE = str(sample_path("texts"))
RATE = re.compile(r"\d+ items, \S+ items/s")
"""The progress display's speed note after the bar ("tfidf-svd: 240 items, 1,234 items/s"); the result table's
"items/s" column header is not it."""


on_terminal = partial(run_on_pty, size=(40, 120), timeout=300)
"""Run on the pty every run here draws on (testkit.terminal.run_on_pty): a terminal has a size; a run past 300 s
fails the test saying so. Returns (what it drew, its exit code)."""


def _env(tmp_path) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "HF_HUB_OFFLINE": "1",
            "PYTHONPATH": os.getcwd(), "COLUMNS": "120", "TERM": "xterm"}


ARGV = [sys.executable, "-m", "embedselect.cli", "rank", SAMPLE, "-c", "text", "-m", "tfidf-svd,random-projection",
        "--metrics", "task_prior,sufficiency", "--labels", "label",
        *[a for kv in ("max_repeats=1", "max_steps=60", "eval_every=20", "hidden=16")
          for a in ("--option", f"sufficiency.{kv}")]]
"""The display is what is checked, not the estimate: sufficiency runs one small estimate (its default averages five
full ones on the sample), which still shows as the "metric sufficiency" stage."""


@pytest.mark.slow
def test_a_terminal_gets_one_progress_display_for_the_whole_run(tmp_path):
    drawn, code = on_terminal([*ARGV, "--cache-dir", str(tmp_path / "c")], env=_env(tmp_path))
    assert code == 0, drawn
    # every stage of every candidate, each metric and the validation are named while they run
    for stage in ("tfidf-svd: resolve", "tfidf-svd: embed", "random-projection: load", "random-projection: store",
                  "the pool: copies", "metric task_prior", "metric sufficiency", "validation"):
        assert stage in drawn, stage
    assert RATE.search(drawn), drawn
    assert "9/9 [" in drawn  # 2 candidates x 3 stages + 2 metrics + validation, counted in one display
    assert "rank  candidate" in drawn  # and the table after it


@pytest.mark.slow
@pytest.mark.fault
def test_quiet_and_pipes_get_no_progress(tmp_path):
    drawn, code = on_terminal([*ARGV, "--cache-dir", str(tmp_path / "c"), "-q"], env=_env(tmp_path))
    assert code == 0, drawn
    assert not RATE.search(drawn) and "resolve" not in drawn and "/9 [" not in drawn, drawn
    assert "rank  candidate" in drawn
    piped = subprocess.run([*ARGV, "--cache-dir", str(tmp_path / "c2")], capture_output=True, text=True,
                           env=_env(tmp_path), timeout=300)
    assert piped.returncode == 0, piped.stderr
    assert not RATE.search(piped.stderr) and "resolve" not in piped.stderr and "/9 [" not in piped.stderr


def test_the_python_api_draws_nothing_unless_asked(tmp_path, capsys, monkeypatch):
    import embedselect

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    embedselect.select(SAMPLE, ["tfidf-svd", "random-projection"], column="text", metrics=["task_prior"],
                       cache_dir=tmp_path / "c")
    assert "resolve" not in capsys.readouterr().err
    embedselect.select(SAMPLE, ["tfidf-svd", "random-projection"], column="text", metrics=["task_prior"],
                       cache_dir=tmp_path / "c2", progress=True)
    assert "tfidf-svd: resolve" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.fault
def test_no_library_bar_leaks_when_progress_is_off(tmp_path):
    """sentence-transformers draws its "Batches" bar whenever its logger is at INFO (``-v``) unless told not to,
    and transformers its "Loading weights" bar: with --quiet neither may reach the terminal; without it, the run's own
    line is the only bar (the "Batches" bar was drawn under it)."""
    from testkit.tinymodels import make_tiny_sentence_transformer

    model = make_tiny_sentence_transformer(tmp_path / "tiny")
    argv = [sys.executable, "-m", "embedselect.cli", "rank", SAMPLE, "-c", "text", "-m", f"tiny={model},tfidf-svd",
            "--metrics", "task_prior"]
    drawn, code = on_terminal([*argv, "--cache-dir", str(tmp_path / "c"), "-q", "-v"], env=_env(tmp_path))
    assert code == 0, drawn
    assert "Batches" not in drawn and "Loading weights" not in drawn and "it/s" not in drawn
    assert "rank  candidate" in drawn
    drawn, code = on_terminal([*argv, "--cache-dir", str(tmp_path / "c2")], env=_env(tmp_path))
    assert code == 0, drawn
    assert "tiny: embed" in drawn and RATE.search(drawn), drawn
    assert "Batches" not in drawn and "Loading weights" not in drawn and "it/s]" not in drawn, drawn


@pytest.mark.fault
@pytest.mark.parametrize("tf_on,hub_on", [(True, True), (True, False), (False, True), (False, False)])
def test_library_bars_are_off_inside_and_the_callers_settings_come_back(tf_on, hub_on):
    """transformers' switch sets the hub's too: a caller with transformers' bars on and the hub's off got the hub's
    back on after a run."""
    import huggingface_hub.utils as hub
    from huggingface_hub import constants
    from transformers.utils import logging as tf

    from embedselect.models.backends.device import library_output

    if constants.HF_HUB_DISABLE_PROGRESS_BARS is not None:
        pytest.skip("HF_HUB_DISABLE_PROGRESS_BARS is set: the hub's switch is the environment's")
    before = tf.is_progress_bar_enabled(), hub.are_progress_bars_disabled()
    try:
        tf.enable_progress_bar() if tf_on else tf.disable_progress_bar()
        hub.enable_progress_bars() if hub_on else hub.disable_progress_bars()
        with library_output():
            assert not tf.is_progress_bar_enabled() and hub.are_progress_bars_disabled()
        assert (tf.is_progress_bar_enabled(), hub.are_progress_bars_disabled()) == (tf_on, not hub_on)
    finally:
        tf.enable_progress_bar() if before[0] else tf.disable_progress_bar()
        hub.disable_progress_bars() if before[1] else hub.enable_progress_bars()


@pytest.mark.fault
def test_an_interrupted_stage_is_not_counted_as_done(monkeypatch):
    """Ctrl-C in a candidate's embed stage drew the bar at ``9/9 100%`` above the "interrupted" line: an interrupted
    stage is not counted; a failed one is (its candidate's stage is over)."""
    import io

    from embedselect._util.progress import RunProgress

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stderr", Tty())
    bar = RunProgress(3, enabled=True)
    with bar.stage("a: embed"):
        pass
    with pytest.raises(ValueError), bar.stage("b: embed"):
        raise ValueError("b failed")
    with pytest.raises(KeyboardInterrupt), bar.stage("c: embed"):
        raise KeyboardInterrupt
    assert bar._bar.n == 2
    bar.close()
    assert "3/3" not in sys.stderr.getvalue() and "2/3" in sys.stderr.getvalue()


@pytest.mark.fault
def test_a_night_run_at_a_terminal_draws_its_progress_and_quiet_draws_none(hub, tmp_path):
    """`embedselect nightly` drew nothing on a terminal (its runtime had progress off) while a person running it by
    hand waited through every download and embedding: it draws the line `rank` draws for each model it embeds and
    for the ranking; `--quiet` (cron) draws none."""
    import yaml

    from testkit import tinymodels as tm

    hub.publish("acme/a", tm.make_tiny_sentence_transformer(tmp_path / "st", seed=0),
                library_name="sentence-transformers", pipeline_tag="sentence-similarity", trending_score=5)
    (tmp_path / "texts.csv").write_text("text\n" + "".join(f"item {i} of the night's set\n" for i in range(30)))
    config = {"data": {"path": "texts.csv", "column": "text"}, "crawl": {"library": "sentence-transformers",
              "sort": "trending", "limit": 5}, "pinned": ["tfidf-svd"], "output": "./site", "cache": "./cache",
              "metrics": ["task_prior"]}
    env = {**_env(tmp_path), "HF_ENDPOINT": hub.url}
    del env["HF_HUB_OFFLINE"]
    for night, flags in (("loud", []), ("quiet", ["-q"])):
        (tmp_path / night).mkdir()
        (tmp_path / night / "texts.csv").write_bytes((tmp_path / "texts.csv").read_bytes())
        (tmp_path / night / "nightly.yaml").write_text(yaml.safe_dump(config))
        drawn, code = on_terminal([sys.executable, "-m", "embedselect.cli", "nightly", "--config",
                                   str(tmp_path / night / "nightly.yaml"), *flags], env=env)
        assert code == 0, drawn
        if night == "loud":
            assert "acme/a: embed" in drawn and RATE.search(drawn) and "metric task_prior" in drawn, drawn
        else:
            assert not RATE.search(drawn) and "acme/a: embed" not in drawn, drawn

"""Kill-and-resume: a real `embedselect nightly` subprocess killed with SIGKILL mid-night; the next night resumes."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from embedselect.nightly import load_config, run_night
from tests.test_nightly import publish_st, tiny, write_config  # noqa: F401 - fixture reused

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.fault
def test_sigkill_mid_night_then_the_next_night_resumes(hub, tiny, tmp_path):  # noqa: F811
    for i in range(5):
        publish_st(hub, f"acme/k{i}", tiny[i], 10 - i)
    path = write_config(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_ENDPOINT": hub.url, "TQDM_DISABLE": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "embedselect.cli", "nightly", "--config", str(path), "-v"],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env, cwd=str(ROOT))
    done_before_kill = []
    deadline = time.monotonic() + 300
    try:
        for line in proc.stderr:
            m = re.search(r"nightly: (\S+) embedded", line)
            if m:
                done_before_kill.append(m.group(1))
                if len(done_before_kill) == 2:
                    os.kill(proc.pid, signal.SIGKILL)
                    break
            assert time.monotonic() < deadline, "the subprocess never embedded two models"
    finally:
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL and len(done_before_kill) == 2
    assert not (tmp_path / "site").exists()  # nothing published by the killed night

    s = run_night(load_config(path))  # the lock died with the process; this night resumes
    everyone = {f"acme/k{i}" for i in range(5)} | {"tfidf-svd"}
    assert set(done_before_kill) <= set(s["reused"]["names"])
    assert not set(done_before_kill) & set(s["embedded"]["names"])
    assert set(s["embedded"]["names"]) | set(s["reused"]["names"]) == everyone
    assert s["ranked"] == 6 and (tmp_path / "site" / "run.json").is_file()

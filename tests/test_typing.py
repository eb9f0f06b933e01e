"""The public surface type-checks under ``mypy --strict``: the facade, the run configuration, the errors and the
result types, and a small user script written against them (issue 46)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PUBLIC = ["embedselect/__init__.py", "embedselect/config.py", "embedselect/errors.py", "embedselect/ranking/result.py",
          "embedselect/ranking/candidate.py", "embedselect/ranking/warning_codes.py", "embedselect/ranking/form.py"]

USER_SCRIPT = '''
from __future__ import annotations

import embedselect
from embedselect.errors import HubError, TooFewItemsError


def best_name(path: str) -> str | None:
    config = embedselect.RankConfig(column="text", max_items=200, seed=1, metrics=["task_prior"], on_error="skip")
    runtime = embedselect.Runtime(device="cpu", progress=False, save=False)
    try:
        ranking: embedselect.Ranking = embedselect.select(path, ["tfidf-svd", "random-projection"], config=config,
                                                          runtime=runtime)
    except TooFewItemsError as exc:
        print(f"needs {exc.needed}, got {exc.got}")
        return None
    except HubError as exc:
        print(exc.status_code, exc.request_id, exc.repo_id)
        return None
    except embedselect.DataError:
        return None
    failed: list[str] = [c.name for c in ranking.candidates if c.status == "failed"]
    weights: dict[str, float] = ranking.settings["combined_weights"]
    seed: int = ranking.settings["seed"]
    print(failed, weights, seed, ranking.validation["level"] if ranking.validation else None)
    secondary: list[str] = ranking.metric_details("task_prior").get("secondary", [])
    embed_seconds: dict[str, float] = ranking.timings.get("candidates", {})
    print(secondary, embed_seconds, ranking.timings.get("total"))
    best = ranking.best
    return best.name if best is not None else None


policy: embedselect.LoadPolicy = embedselect.LoadPolicy(allow_pickle=False, max_bytes=10**9)
print(best_name("texts.csv"), policy.for_model("org/model"))
'''


def _mypy(*args: str) -> subprocess.CompletedProcess[str]:
    """``mypy --strict`` on ``args``, reading embedselect from this checkout (not an installed copy)."""
    env = {**os.environ, "MYPYPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--python-version",
                           "3.11", "--cache-dir", str(REPO / ".mypy_cache"), *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_the_public_modules_and_a_user_script_pass_mypy_strict(tmp_path):
    done = _mypy(*PUBLIC)
    assert done.returncode == 0, done.stdout + done.stderr
    script = tmp_path / "user_script.py"
    script.write_text(textwrap.dedent(USER_SCRIPT), encoding="utf-8")
    done = _mypy(str(script))
    assert done.returncode == 0, done.stdout + done.stderr
    # the modes are literals: a misspelt one is a type error, not a run-time surprise
    script.write_text(USER_SCRIPT.replace('on_error="skip"', 'on_error="ignore"'), encoding="utf-8")
    done = _mypy(str(script))
    assert done.returncode == 1 and "on_error" in done.stdout, done.stdout

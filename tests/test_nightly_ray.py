"""The Ray executor on a local Ray instance (num_cpus=2): the same two nights give the same ranking as local."""

from __future__ import annotations

import json

import pytest

from embedselect.nightly import load_config, run_night
from embedselect.config import Runtime
from tests.test_nightly import publish_st, tiny, write_config  # noqa: F401 - fixture reused
from tests.test_nightly_failures import model_info_calls


@pytest.fixture
def local_ray():
    import ray  # the `ray` extra, part of `dev`

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def board(path):
    return [(r["name"], r["rank"], r["prev_rank"], r["delta"])
            for r in json.loads((path / "site" / "leaderboard.json").read_text())["rows"]]


@pytest.mark.slow
def test_ray_nights_match_local_nights(hub, tiny, tmp_path, local_ray):  # noqa: F811
    from embedselect.nightly.executors.ray import RayExecutor

    for i, name in enumerate(["a", "b", "c"]):
        publish_st(hub, f"acme/{name}", tiny[i], 10 - i)
    (tmp_path / "local").mkdir()
    (tmp_path / "ray").mkdir()
    metrics = ["task_prior", "sufficiency"]
    # a metric option the estimator on the workers does not take; two averaged estimates per pair (the workers must
    # estimate both seeds' pairs, so that select() only reads them)
    options = {"sufficiency": {"targets": "all", "max_repeats": 2}}
    local = load_config(write_config(tmp_path / "local", metrics=metrics, metric_options=options))
    on_ray = load_config(write_config(tmp_path / "ray", metrics=metrics, executor={"kind": "ray"}, metric_options=options))
    ex = RayExecutor()  # joins the running local Ray
    nights = []
    for night in (1, 2):
        if night == 2:
            publish_st(hub, "acme/b", tiny[3], 9)
            publish_st(hub, "acme/d", tiny[4], 20)
        hub.requests.clear()
        a = run_night(local)
        calls_local = {r: model_info_calls(hub, r) for r in hub.repos}
        hub.requests.clear()
        b = run_night(on_ray, executor=ex)
        calls_ray = {r: model_info_calls(hub, r) for r in hub.repos}
        nights.append((a, b))
        # one resolve per hub candidate per night, on the workers or on the driver (issue 22 item 1)
        assert calls_local == calls_ray == {r: 1 for r in hub.repos}, (calls_local, calls_ray)
        assert b["executor"] == "ray"
        assert sorted(a["embedded"]["names"]) == sorted(b["embedded"]["names"])
        assert board(tmp_path / "local") == board(tmp_path / "ray")
    (a1, b1), (a2, b2) = nights
    assert sorted(b2["embedded"]["names"]) == ["acme/b", "acme/d"]
    # pairs: the Ray workers estimated the missing ones, select() only read them
    assert b1["pairs_on_executor"] == 2 * 12 and b2["pairs_on_executor"] == 2 * 2 * (4 + 3)
    assert b2["pairs"]["total"] == 2 * 20 and b2["pairs"]["reused"] == 2 * 20 - b2["pairs"]["computed"]
    assert a2["pairs"]["computed"] == b2["pairs"]["computed"] == 2 * 14


@pytest.mark.slow
@pytest.mark.fault
def test_a_ray_task_that_raises_fails_its_candidates_with_the_workers_own_error(tmp_path, local_ray):
    """Issue 14 (fault suite, Ray): a task that raises in the worker (here: a device the workers do not have) fails
    its candidate with the worker's own error type and one-line message, recorded in the store, not Ray's coloured
    remote traceback; the executor then runs the next job normally."""
    from embedselect.models.candidates import parse_candidates
    from embedselect.data import ReferenceData, sample_path
    from embedselect.nightly.executors.base import EmbedJob
    from embedselect.nightly.executors.ray import RayExecutor
    from embedselect.store import Store

    ex = RayExecutor()
    ref = ReferenceData.load(sample_path("texts"), column="text")
    cands = parse_candidates("tfidf-svd,random-projection", modality="text")
    store = Store.open(tmp_path / "c")
    done, left = ex.embed(ref, cands, store=store, job=EmbedJob(runtime=Runtime(device="cuda:9")), should_stop=lambda: False)
    assert left == [] and len(done) == 2
    for unit in done:
        r = unit.outcome.result
        assert r.status == "failed" and r.error_type == "ConfigError", (r.error_type, r.error)
        assert r.error.startswith("device 'cuda:9' requested") and "\n" not in r.error and "\x1b" not in r.error
    rows = store.query_df("SELECT error_type, message FROM failures").to_dict("records")
    assert len(rows) == 2 and all(x["error_type"] == "ConfigError" and "File " not in x["message"] for x in rows)
    done, _ = ex.embed(ref, cands, store=store, job=EmbedJob(runtime=Runtime(device="cpu")), should_stop=lambda: False)
    assert [u.outcome.result.status for u in done] == ["ok", "ok"]


def test_make_test_installs_ray_and_runs_the_ray_nights():
    """Issue 20: the Ray path is tested in `make test`, not reported as "Ray is not installed": the dev extra that
    `make test` installs pulls the `ray` extra, ray imports, and `make test` deselects no marker (the Ray nights
    above are marked slow, not skipped)."""
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    extras = tomllib.loads((root / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert "embedselect[ray]" in extras["dev"] and any(r.startswith("ray") for r in extras["ray"])
    import ray  # noqa: F401 - an ImportError here is a failure, not a skip

    makefile = (root / "Makefile").read_text()

    def recipe_of(target: str) -> str:  # the target's own recipe and its prerequisites' (e.g. test: lint)
        head, body = makefile.split(f"\n{target}:", 1)[1].split("\n", 1)
        return "".join(recipe_of(dep) for dep in head.split()) + body.split("\n\n", 1)[0]

    recipe = recipe_of("test")
    pytest_args = recipe.split("-m pytest", 1)[1]
    assert "scripts/setup.sh dev" in recipe and " -m " not in pytest_args and "slow" not in pytest_args

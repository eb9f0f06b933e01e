"""The Ray executor on a local Ray instance (num_cpus=2): the same two nights give the same ranking as local."""

from __future__ import annotations

import json
import os

import pytest

from embedselect.nightly import load_config, run_night
from embedselect.config import Runtime
from tests.test_nightly import publish_st, tiny, write_config  # noqa: F401 - fixture reused
from testkit.options import FAST_SUFFICIENCY
from tests.test_nightly_failures import model_info_calls


@pytest.fixture(scope="module")
def local_ray():
    """One local Ray for the module's Ray tests: its start and its workers' start-up (each imports torch and
    embedselect) are paid once, not once per test. Started without the session's ``OMP_NUM_THREADS`` (2), so that
    Ray gives each 1-CPU task one thread, as it does where that is not set: two workers on two threads each would
    share the two cores four ways."""
    import ray  # the `ray` extra, part of `dev`

    threads = os.environ.pop("OMP_NUM_THREADS", None)
    try:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    finally:
        if threads is not None:
            os.environ["OMP_NUM_THREADS"] = threads
    yield
    ray.shutdown()


SMALL_SUFFICIENCY = {**FAST_SUFFICIENCY, "max_steps": 40, "eval_every": 10, "min_steps": 10, "hidden": 16,
                     "n_components": 2}
"""Smaller estimates still than :data:`testkit.options.FAST_SUFFICIENCY` (a third of its steps, half its width): what
these tests check is which pairs run where and that both executors rank alike, not the estimates."""


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
    # estimate both seeds' pairs, so that select() only reads them); small estimates: what is checked is which pairs
    # run where and that both executors rank alike, not the estimates (nor task_prior's: 64 tasks on one split)
    options = {"sufficiency": {"targets": "all", "max_repeats": 2, **SMALL_SUFFICIENCY},
               "task_prior": {"n_tasks": 64, "splits": 1}}
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


class _InlineRay:
    """The Ray calls the pairs precompute makes, run in this process; ``asked`` holds the directed pairs each task
    was given."""

    def __init__(self):
        self.asked = []

    def cluster_resources(self):
        return {"CPU": 2}

    def put(self, obj):
        return obj

    def get(self, results):
        return list(results)

    def remote(self, **_resources):
        def task(fn):
            asked = self.asked

            class Remote:
                @staticmethod
                def remote(pairs, *args):
                    asked.append(list(pairs))
                    return fn(pairs, *args)

            return Remote()

        return task


@pytest.fixture
def one_torch_thread():
    """Small estimates run several times faster on one torch thread than on two on a shared 2-core machine."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_the_ray_precompute_asks_for_exactly_the_pairs_the_scores_read(one_torch_thread):
    """A pool of two model families (one with a variant) and two reference points: the precompute asks the workers
    for the directed pairs the sufficiency scores read (``scored_targets`` with the pool's reference points and
    families), 7 of 20, and nothing else; the metric then only reads them and scores as it does alone; with
    ``pairs="all"`` it asks for the rest."""
    import numpy as np

    from embedselect.metrics import MemoryPairCache, MetricContext, get_metric
    from embedselect.metrics.sufficiency.score import scored_targets
    from embedselect.nightly.executors.ray import RayExecutor

    rng = np.random.default_rng(0)
    base = rng.standard_normal((120, 4))
    embs = {"m1": base @ rng.standard_normal((4, 6)) + 0.3 * rng.standard_normal((120, 6)),
            "m1-cls": base[:, :3] + 0.2 * rng.standard_normal((120, 3)),
            "m2": np.c_[base[:, :2], rng.standard_normal((120, 3))],
            "tfidf-svd": rng.standard_normal((120, 5)) + 0.5 * base[:, :1], "random-projection": rng.standard_normal((120, 4))}
    embs = {k: v.astype(np.float32) for k, v in embs.items()}
    keys = {k: f"run-{k}" for k in embs}
    refs = frozenset({"tfidf-svd", "random-projection"})
    fams = {"m1": "m1", "m1-cls": "m1", "m2": "m2", "tfidf-svd": "tfidf-svd", "random-projection": "random-projection"}
    options = {**SMALL_SUFFICIENCY, "max_repeats": 1}
    read = {(s, t) for s, ts in scored_targets(list(embs), refs, fams).items() for t in ts}
    assert read == {("m1", "m2"), ("m1-cls", "m2"), ("m2", "m1"), ("tfidf-svd", "m1"), ("tfidf-svd", "m2"),
                    ("random-projection", "m1"), ("random-projection", "m2")}
    ex = RayExecutor.__new__(RayExecutor)  # no Ray: its calls run inline
    ex.ray, ex.cpus_per_task = _InlineRay(), 1.0
    store = MemoryPairCache()
    n = ex.precompute_pairs(embs, keys, seed=0, options=options, pair_cache=store, device="cpu", references=refs,
                            families=fams)
    asked = [tuple(p) for batch in ex.ray.asked for p in batch]
    assert sorted(asked) == sorted(read) and n == len(read) == 7

    def metric(cache, **more):
        return get_metric("sufficiency")(MetricContext(embeddings=embs, run_keys=keys, seed=0,
                                                       options={**options, **more}, references=refs, families=fams,
                                                       pair_cache=cache))

    after = metric(store)
    assert after.details["pairs_computed"] == 0 and after.details["pairs_cached"] == 7
    alone = metric(MemoryPairCache())
    assert after.scores == pytest.approx(alone.scores, abs=1e-6)
    ex.ray.asked.clear()
    assert ex.precompute_pairs(embs, keys, seed=0, options={**options, "pairs": "all"}, pair_cache=store, device="cpu",
                               references=refs, families=fams) == 20 - 7
    assert {tuple(p) for batch in ex.ray.asked for p in batch} == {
        (s, t) for s in embs for t in embs if s != t} - read
    assert metric(store, pairs="all").details["pairs_computed"] == 0


@pytest.mark.slow
def test_a_night_hands_the_precompute_the_pools_roles_and_select_only_reads_its_pairs(hub, tiny, tmp_path,  # noqa: F811
                                                                                       one_torch_thread):
    """Two model families (one with a variant: the same model fed 8 tokens) and two reference points (the
    built-in baselines), sufficiency at its ``pairs`` default: the night hands the executor's pairs precompute (the
    Ray executor's, its Ray calls run inline) the reference points and families select()'s metrics receive; the
    workers are asked for exactly the pairs those make the scores read (``scored_targets``: none towards the variant,
    nor between it and its model), select() trains none and reads every one of them."""
    from embedselect.metrics.sufficiency.score import scored_targets

    for i, name in enumerate(["a", "b"]):
        publish_st(hub, f"acme/{name}", tiny[i], 10 - i)
    fast = {**SMALL_SUFFICIENCY, "max_repeats": 1}
    variant = "acme/a?max_length=8"
    conf = load_config(write_config(tmp_path, metrics=["sufficiency"], metric_options={"sufficiency": fast},
                                    pinned=["tfidf-svd", "random-projection", variant]))
    ex = _pairs_inline()
    night = run_night(conf, executor=ex)
    assert night["ranked"] == 5 and len(ex.handed) == 1
    names, references, families = ex.handed[0]
    assert sorted(names) == sorted(["acme/a", "acme/b", variant, "random-projection", "tfidf-svd"])
    assert references <= {"tfidf-svd", "random-projection"} and set(families) == set(names)
    assert families[variant] == families["acme/a"] != families["acme/b"]
    read = {(s, t) for s, ts in scored_targets(names, references, families).items() for t in ts}
    assert sorted(tuple(p) for batch in ex.ray_side.ray.asked for p in batch) == sorted(read)
    assert night["pairs_on_executor"] == night["pairs"]["computed"] == night["pairs"]["total"] == len(read)
    assert not any(variant in p and families[p[0]] == families[p[1]] for p in read)
    assert not any(t == variant for _, t in read) and len(read) < 5 * 4


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


def _pairs_inline():
    """A local executor whose sufficiency pairs are the Ray executor's precompute, its Ray calls run inline; its
    ``handed`` lists what each precompute was handed (the names, the reference points, the families)."""
    from embedselect.nightly.executors.local import LocalExecutor
    from embedselect.nightly.executors.ray import RayExecutor

    class PairsInline(LocalExecutor):
        computes_pairs = True

        def __init__(self):
            super().__init__()
            self.ray_side = RayExecutor.__new__(RayExecutor)
            self.ray_side.ray, self.ray_side.cpus_per_task = _InlineRay(), 1.0
            self.handed = []

        def precompute_pairs(self, embeddings, run_keys, **kw):
            self.handed.append((list(embeddings), kw["references"], dict(kw["families"])))
            return self.ray_side.precompute_pairs(embeddings, run_keys, **kw)

    return PairsInline()


def _refused_pair_night(hub, tiny, folder, monkeypatch, executor):  # noqa: F811
    """One night of two hub models and tfidf-svd ranked by sufficiency, in ``folder``, every write of pairs refused
    by the cache (a file-size limit); returns its summary, its ranking and what it printed."""
    from embedselect.cli.nightly import _human
    from embedselect.errors import CacheError
    from embedselect.ranking.result import Ranking
    from embedselect.store import Store

    def too_large(self, *a, **k):
        raise CacheError(f"could not write its database in the cache at {folder}: writing embedselect.duckdb.wal "
                         "failed (File too large); raise the file-size limit (ulimit -f)")

    for i, name in enumerate(["a", "b"]):
        publish_st(hub, f"acme/{name}", tiny[i], 10 - i)
    folder.mkdir()
    conf = load_config(write_config(folder, metrics=["sufficiency"],
                                    metric_options={"sufficiency": {**SMALL_SUFFICIENCY, "max_repeats": 1}}))
    with monkeypatch.context() as m:
        m.setattr(Store, "put_many", too_large)
        night = run_night(conf, executor=executor)
    ranking = Ranking.from_json((folder / "site" / "ranking.json").read_text())
    return night, ranking, _human(night)


@pytest.mark.fault
def test_pairs_estimated_on_ray_that_the_cache_refuses_are_ranked_and_said_once(hub, tiny, tmp_path,  # noqa: F811
                                                                                 monkeypatch, one_torch_thread):
    """The cache refuses the sufficiency pairs the Ray workers estimated (a file-size limit): the night goes on
    (it ended with the cache's error), the metric ranks with the pairs the workers sent (carried in memory, none
    estimated again), and run.json and the printed summary say once what was not stored and why."""
    night, ranking, printed = _refused_pair_night(hub, tiny, tmp_path / "ray", monkeypatch, _pairs_inline())
    assert night["status"] == "ok" and night["ranked"] == 3 and len(ranking.ok) == 3
    n = night["pairs_on_executor"]
    assert n > 0 and night["pairs"]["computed"] == n and night["pairs"]["total"] == n
    assert ranking.metric_details("sufficiency")["pairs_computed"] == 0  # every pair read from the workers' values
    note = night["not_stored"]
    assert note.startswith("not stored in the cache: the pair results of metric nn_agreement, the pair results of "
                           "metric sufficiency (a later run computes them again)") and "File too large" in note, note
    assert json.dumps(night).count("not stored") == 1
    assert printed.count("not stored") == 1 and f"note: {note}" in printed
    assert [w.message for w in ranking.warnings_with("not-stored")] == [note]


@pytest.mark.fault
def test_local_and_ray_nights_rank_alike_and_say_alike_what_the_cache_refused(hub, tiny, tmp_path,  # noqa: F811
                                                                               monkeypatch, one_torch_thread):
    """The same night with the same refused pair writes on the local executor (the metric estimates the pairs) and on
    Ray (the workers do): the same ranking, the same pairs counted, the same not-stored note."""
    from embedselect.nightly.executors.local import LocalExecutor

    local, r_local, _ = _refused_pair_night(hub, tiny, tmp_path / "local", monkeypatch, LocalExecutor())
    ray, r_ray, _ = _refused_pair_night(hub, tiny, tmp_path / "ray", monkeypatch, _pairs_inline())
    assert local["pairs_on_executor"] == 0 and ray["pairs_on_executor"] > 0
    assert board(tmp_path / "local") == board(tmp_path / "ray")
    assert [(r.name, r.rank) for r in r_local.ok] == [(r.name, r.rank) for r in r_ray.ok]
    assert {r.name: r.scores["sufficiency"] for r in r_local.ok} == pytest.approx(
        {r.name: r.scores["sufficiency"] for r in r_ray.ok}, abs=1e-6)
    assert local["pairs"] == ray["pairs"]
    assert local["not_stored"] == ray["not_stored"].replace(str(tmp_path / "ray"), str(tmp_path / "local"))

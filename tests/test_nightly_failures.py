"""Issue 20 case 4 and issue 22 item 1: a night records refusals (safety policy, per revision) apart from failures
(one recorder; a passing hub fault is retried the next night, any failure at a new revision), and pins each hub
candidate once (one ``model_info`` per candidate per night)."""

from __future__ import annotations

import re
import shutil

import pytest

from embedselect.nightly import load_config, run_night
from embedselect.store import Store
from tests.test_nightly import publish_st, tiny, write_config  # noqa: F401 - fixture reused


@pytest.fixture
def no_backoff(monkeypatch):
    """embedselect's and huggingface_hub's retry waits take no time (the retries themselves still happen)."""
    import huggingface_hub.file_download as fd
    import huggingface_hub.utils._http as hf_http

    import embedselect.models.hub.fetch as fetch
    from embedselect.models.hub.http import RetryPolicy

    monkeypatch.setattr(fetch, "RetryPolicy", lambda: RetryPolicy(sleep=lambda s: None))
    monkeypatch.setattr(hf_http.time, "sleep", lambda s: None)
    monkeypatch.setattr(fd.time, "sleep", lambda s: None)


def ranked(tmp_path) -> dict[str, str]:
    import json

    return {r["name"]: r["revision"] for r in json.loads((tmp_path / "site" / "leaderboard.json").read_text())["rows"]}


def model_info_calls(hub, repo: str) -> int:
    """Requests for ``repo``'s model info (``/api/models/<repo>`` or ``.../revision/<rev>``; not its tree listing)."""
    return len(hub.requests_to(rf"^/api/models/{re.escape(repo)}(/revision/[^/?]+)?(\?|$)"))


FAULTS = {  # {weights}: the flaky model's weights on the CDN (its sha256)
    "503 on the model info": dict(pattern=r"^/api/models/acme/flaky(/revision/[^/?]+)?(\?|$)", kind="status", status=503),
    "404 during the weights download": dict(pattern=r"^/cdn/{weights}", kind="status", status=404, method="GET"),
    "connection reset during the weights download": dict(pattern=r"^/cdn/{weights}", kind="drop", method="GET"),
}


@pytest.mark.fault
@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_passing_hub_fault_is_a_failure_retried_the_next_night(hub, tiny, tmp_path, no_backoff, fault):  # noqa: F811
    """A hub fault that outlives the retries fails the model tonight; it is not a refusal: the next night plans the
    same revision again ("retry") and ranks it. Before, it was recorded as a permanent refusal."""
    import hashlib

    from testkit import tinymodels as tm

    publish_st(hub, "acme/good", tiny[0], 5)
    # weights no earlier test put into the session's HF cache, so that they are downloaded tonight
    flaky = tm.make_tiny_sentence_transformer(tmp_path / "flaky", seed=40 + list(FAULTS).index(fault))
    sha = publish_st(hub, "acme/flaky", flaky, 9)
    f = FAULTS[fault]
    weights = hashlib.sha256((flaky / "model.safetensors").read_bytes()).hexdigest()
    hub.add_fault(f["pattern"].replace("{weights}", weights), f["kind"], status=f.get("status", 503),
                  method=f.get("method"), times=-1)
    conf = load_config(write_config(tmp_path))
    s1 = run_night(conf)
    (fail,) = s1["failed"]
    assert fail["name"] == "acme/flaky" and fail["error_type"] == "HubError", fail
    assert s1["status"] == "partial" and "acme/flaky" not in ranked(tmp_path)
    store = Store.open(tmp_path / "cache")
    from embedselect.store import hub_models

    assert hub_models.refusals(store).empty  # a fault is never a refusal
    hub.faults.clear()
    s2 = run_night(conf)
    assert s2["failed"] == [] and ranked(tmp_path)["acme/flaky"] == sha
    assert s2["candidates"].get("retry") == ["acme/flaky"] and fail.get("transient") is True
    assert "acme/flaky" in [r["model_id"] for r in store.failure_rows()]


@pytest.mark.fault
def test_a_failure_at_one_revision_is_planned_again_at_the_next(hub, tiny, tmp_path, no_backoff):  # noqa: F811
    """A model that failed at revision A (here: the hub stayed down for it) is planned at its new revision B, without
    ``retry_failed``; a model that is broken at A is not tried again at A."""
    publish_st(hub, "acme/good", tiny[0], 5)
    publish_st(hub, "acme/moving", tiny[1], 9)
    bad = tmp_path / "bad"
    shutil.copytree(tiny[2], bad)
    (bad / "model.safetensors").write_bytes(b"not a safetensors file")
    broken_a = publish_st(hub, "acme/broken", bad, 8)
    hub.add_fault(r"^/api/models/acme/moving(/revision/[^/?]+)?(\?|$)", status=503, times=-1)
    conf = load_config(write_config(tmp_path))
    s1 = run_night(conf)
    assert sorted(f["name"] for f in s1["failed"]) == ["acme/broken", "acme/moving"]
    s2 = run_night(conf)  # the hub is still down for acme/moving; acme/broken is not tried again at A
    assert {"name": "acme/broken", "revision": broken_a, "reason": "unchanged since an earlier night"} in \
        s2["candidates"]["skipped"]
    assert [f["name"] for f in s2["failed"]] == ["acme/moving"]
    hub.faults.clear()
    moving_b = publish_st(hub, "acme/moving", tiny[3], 9)
    broken_b = publish_st(hub, "acme/broken", tiny[4], 8)
    s3 = run_night(conf)
    assert sorted(s3["candidates"]["updated"]) == ["acme/broken", "acme/moving"] and s3["failed"] == []
    board = ranked(tmp_path)
    assert board["acme/moving"] == moving_b and board["acme/broken"] == broken_b
    assert {f["name"]: f.get("transient") for f in s1["failed"]} == {"acme/moving": True, "acme/broken": False}


@pytest.mark.fault
def test_a_policy_refusal_stays_at_its_revision_and_a_new_revision_is_planned(hub, tiny, tmp_path):  # noqa: F811
    """Pickle-only weights are refused by the safety policy: recorded as a refusal of that commit, not planned again
    at it (not even with ``retry_failed``), but planned again once the repo has a new commit."""
    publish_st(hub, "acme/good", tiny[0], 5)
    pick = tmp_path / "pick"
    shutil.copytree(tiny[1], pick)
    (pick / "model.safetensors").rename(pick / "pytorch_model.bin")
    sha_a = publish_st(hub, "acme/pickled", pick, 9)
    conf = load_config(write_config(tmp_path, retry_failed=True))
    s1 = run_night(conf)
    (fail,) = s1["failed"]
    assert fail["name"] == "acme/pickled" and fail["error_type"] == "UnsafeModelError"
    # the remedy is in the night's own terms, its YAML's policy: keys (it named the CLI's --allow-pickle)
    assert "allow_pickle: true under policy:" in fail["reason"] and "--allow" not in fail["reason"]
    from embedselect.store import hub_models

    refusals = hub_models.refusals(Store.open(tmp_path / "cache"))
    assert refusals[["repo_id", "revision", "reason"]].values.tolist() == [["acme/pickled", sha_a, "pickle_only"]]
    s2 = run_night(conf)
    assert {"name": "acme/pickled", "revision": sha_a, "reason": "refused by the safety policy at this revision"} in \
        s2["candidates"]["skipped"]
    sha_b = publish_st(hub, "acme/pickled", tiny[2], 9)
    s3 = run_night(conf)
    assert s3["candidates"]["updated"] == ["acme/pickled"] and s3["failed"] == []
    assert ranked(tmp_path)["acme/pickled"] == sha_b and fail.get("transient") is False


def test_a_night_resolves_each_hub_candidate_once(hub, tiny, tmp_path):  # noqa: F811
    """Issue 22 item 1: a night is plan -> executor -> rank over what was embedded; each hub candidate is pinned once
    (one model_info request), whether it is embedded tonight or read from the store."""
    repos = ["acme/a", "acme/b", "acme/c"]
    for i, repo in enumerate(repos):
        publish_st(hub, repo, tiny[i], 10 - i)
    conf = load_config(write_config(tmp_path))
    s1 = run_night(conf)
    assert s1["ranked"] == 4
    assert {r: model_info_calls(hub, r) for r in repos} == {r: 1 for r in repos}
    hub.requests.clear()
    publish_st(hub, "acme/b", tiny[3], 9)  # updated: embedded tonight; a and c: leaders, read from the store
    s2 = run_night(conf)
    assert sorted(s2["embedded"]["names"]) == ["acme/b"] and sorted(s2["reused"]["names"]) == ["acme/a", "acme/c",
                                                                                               "tfidf-svd"]
    assert {r: model_info_calls(hub, r) for r in repos} == {r: 1 for r in repos}

"""`card --push`: the model card goes through huggingface_hub's real client to the loopback fake hub as a pull
request (never a direct commit), and the token is sent to the hub but never logged or put in an error."""

from __future__ import annotations

import logging

import pytest
from huggingface_hub import ModelCard

from embedselect.errors import HubError
from embedselect.publish import push_card, update_card
from embedselect.ranking import CandidateResult, Ranking

TOKEN = "hf_PushTokenDoNotLeak0123456789"
CARD = "---\nlicense: mit\n---\n# acme/m1\n\nKeep me.\n"


def _ranking() -> Ranking:
    cands = [CandidateResult(name=n, spec=n, model_id=n, scores={"task_prior": s}, ranks={"task_prior": i},
                             combined_score=s, rank=i, dim=8)
             for i, (n, s) in enumerate([("acme/m1", 0.9), ("acme/m2", 0.4)], start=1)]  # fmt: skip
    return Ranking(candidates=cands, metrics=["task_prior"], combine="mean-rank",
                   dataset={"source": "reviews.csv", "n": 100, "modality": "text", "fingerprint": "ab" * 32},
                   settings={"seed": 0}, versions={"embedselect": "0"}, ranking_id="aaaa1111", created_at="2026")  # fmt: skip


def test_push_opens_a_pull_request_through_the_real_client(hub, caplog):
    caplog.set_level(logging.DEBUG)
    hub.publish("acme/m1", files={"README.md": CARD.encode(), "config.json": b"{}"})
    card = update_card(CARD, _ranking(), "acme/m1")
    url = push_card("acme/m1", card, token=TOKEN, endpoint=hub.url)
    assert url.endswith("/acme/m1/discussions/1")
    [pr] = hub.pull_requests
    assert pr["repo_id"] == "acme/m1" and pr["revision"] == "main"
    pushed = ModelCard(pr["files"]["README.md"].decode())
    assert pushed.data.license == "mit" and "Keep me." in pushed.text and "model-index" in pr["files"]["README.md"].decode()
    assert pr["authorization"] == f"Bearer {TOKEN}"  # the token reached the hub ...
    assert TOKEN not in caplog.text  # ... and was never logged
    assert all(r["query"].get("create_pr") == ["1"] for r in hub.requests_to(r"/commit/", "POST"))


def test_push_failure_is_a_typed_error_without_the_token(hub, caplog):
    caplog.set_level(logging.DEBUG)
    with pytest.raises(HubError) as ei:  # no such repository on the hub
        push_card("acme/missing", CARD, token=TOKEN, endpoint=hub.url)
    assert TOKEN not in str(ei.value) and TOKEN not in caplog.text
    assert hub.pull_requests == []

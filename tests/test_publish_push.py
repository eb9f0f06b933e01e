"""`card --push`: the model card goes through huggingface_hub's real client to the loopback fake hub as a pull
request (never a direct commit), and the token is sent to the hub but never logged or put in an error."""

from __future__ import annotations

import logging

import pytest
from huggingface_hub import ModelCard

from embedselect.errors import HubError
from embedselect.publish import push_card, update_card
from embedselect.ranking.result import CandidateResult, Ranking

TOKEN = "hf_PushTokenDoNotLeak0123456789"
CARD = "---\nlicense: mit\n---\n# acme/m1\n\nKeep me.\n"


def _ranking() -> Ranking:
    cands = [CandidateResult(name=n, spec=n, model_id=n, scores={"task_prior": s}, ranks={"task_prior": i},
                             combined_score=s, rank=i, dim=8)
             for i, (n, s) in enumerate([("acme/m1", 0.9), ("acme/m2", 0.4)], start=1)]
    return Ranking(candidates=cands, metrics=["task_prior"], combine="mean-rank",
                   dataset={"source": "reviews.csv", "n": 100, "modality": "text", "fingerprint": "ab" * 32},
                   settings={"seed": 0}, versions={"embedselect": "0"}, ranking_id="aaaa1111", created_at="2026")


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


@pytest.mark.fault
def test_push_failure_is_a_typed_error_without_the_token(hub, caplog):
    caplog.set_level(logging.DEBUG)
    hub.publish("acme/m1", files={"README.md": CARD.encode()})
    hub.add_fault(r"/commit/", status=500, times=-1)  # the hub fails the commit (retried, then given up)
    with pytest.raises(HubError) as ei:
        push_card("acme/m1", CARD, token=TOKEN, endpoint=hub.url)
    assert TOKEN not in str(ei.value) and TOKEN not in caplog.text
    assert hub.pull_requests == []


@pytest.mark.parametrize("name", ["../../etc/passwd", "/abs/path", "..", "", "ünï/cødé模型", "a\\b\x00c", "x" * 500])
@pytest.mark.fault
def test_safe_filename_never_leaves_its_directory(name, tmp_path):
    from embedselect.publish.text import safe_filename

    f = safe_filename(name)
    assert f and f.isascii() and not f.startswith(".") and len(f) <= 100
    assert not any(ch in f for ch in "/\\\x00")
    assert (tmp_path / f).resolve().parent == tmp_path.resolve()
    assert safe_filename("a/b") != safe_filename("a_b")


def test_cli_card_push_opens_a_pull_request(hub, tmp_path, monkeypatch, capsys):
    from embedselect.cli import main
    from embedselect.store import Store

    monkeypatch.setenv("HF_TOKEN", TOKEN)
    hub.publish("acme/m1", files={"README.md": CARD.encode(), "config.json": b"{}"})
    r = _ranking()
    Store.open(tmp_path / "store").save_ranking(r.ranking_id, r.to_dict(), [])
    card = tmp_path / "README.md"
    card.write_text(CARD)
    rc = main(["card", "--cache-dir", str(tmp_path / "store"), "--candidate", "acme/m1", "--card", str(card),
               "--push", "acme/m1"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert len(hub.pull_requests) == 1 and "discussions/1" in out.err
    assert TOKEN not in out.out + out.err

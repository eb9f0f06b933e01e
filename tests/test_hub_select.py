"""select() with hub ids, end to end through the fake hub: pin, fetch, refuse, rank, then rank again offline."""

from __future__ import annotations

import pytest

import embedselect
from embedselect.data import sample_path
from embedselect.store import Store, hub_models
from testkit import tinymodels as tm

SAMPLE = sample_path("texts")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny-select")
    return {
        "st": tm.make_tiny_sentence_transformer(root / "st", seed=1),
        "remote": tm.make_remote_code_model(root / "remote"),
    }


def test_select_hub_models_refuses_unsafe_ones_and_reruns_offline(hub, tiny, cache_dir, monkeypatch):
    sha = hub.publish("acme/tiny-st-select", tiny["st"], library_name="sentence-transformers")
    hub.publish("acme/remote-select", tiny["remote"], library_name="transformers", pipeline_tag="feature-extraction")
    models = ["acme/tiny-st-select", "acme/remote-select", "tfidf-svd", "random-projection"]

    first = embedselect.select(SAMPLE, models, column="text", metrics=["task_prior"])
    st = first["acme/tiny-st-select"]
    assert st.ok and st.revision == sha and st.model_id == "acme/tiny-st-select" and not st.cached
    refused = first["acme/remote-select"]
    assert refused.status == "failed" and refused.error_type == "UnsafeModelError"
    assert "trust" in refused.error.lower() or "remote code" in refused.error.lower()
    assert len(first.ok) == 3

    store = Store.open(cache_dir)
    reasons = store.query_df("SELECT repo_id, reason FROM hub_refusals")
    assert reasons.to_dict("records") == [{"repo_id": "acme/remote-select", "reason": "remote_code"}]
    assert store.query_df("SELECT revision FROM embedding_runs WHERE model_id = 'acme/tiny-st-select'").revision[0] == sha

    # offline, from the HF cache: same revision, everything cached, no model loaded, no hub request
    import embedselect.models.backends.loader as loader
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(loader, "load_embedder", lambda *a, **k: pytest.fail("model loaded on a cached run"))
    hub.requests.clear()
    second = embedselect.select(SAMPLE, ["acme/tiny-st-select", "tfidf-svd", "random-projection"], column="text",
                                metrics=["task_prior"])
    assert all(c.cached for c in second)
    assert second["acme/tiny-st-select"].revision == sha
    assert [r for r in hub.requests if r["path"] != "/api/agent-harnesses"] == []
    assert hub_models.refusals(store)["repo_id"].tolist() == ["acme/remote-select"]

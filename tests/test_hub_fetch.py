"""Resolve → policy → fetch → embed through the real libraries, against the fake hub (testkit/hubserver.py).

Tiny models come from testkit/tinymodels.py (built once per module); each test publishes what it needs.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import numpy as np
import pytest

from embedselect.models import hub as H
from embedselect.errors import CandidateError, ConfigError, HubError, ModelLoadError, UnsafeModelError
from embedselect.config import LoadPolicy
from embedselect.store import Store
from embedselect.store import hub_models
from testkit import tinymodels as tm

TOKEN = "hf_TestTokenDoNotLeak0123456789"


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Tiny model folders, built once: {name: Path}."""
    import torch

    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("tiny")
    return {
        "st": tm.make_tiny_sentence_transformer(root / "st"),
        "timm": tm.make_tiny_timm(root / "timm"),
        "text": tm.make_tiny_transformers_text(root / "text"),
        "image": tm.make_tiny_transformers_image(root / "image"),
        "pickle": tm.make_pickle_only_model(root / "pickle"),
        "remote": tm.make_remote_code_model(root / "remote"),
    }


@pytest.fixture
def sleeps():
    return []


@pytest.fixture
def retry(sleeps):
    return H.RetryPolicy(max_retries=2, base_wait=0.01, max_wait=0.05, timeout=5.0, sleep=sleeps.append)


_counter = [0]


def _rid(name: str) -> str:
    """A fresh repo id per publication, so the session-wide HF cache never hides a download."""
    _counter[0] += 1
    return f"acme/{name}-{_counter[0]}"


def _downloaded(hub, rid: str) -> set[str]:
    """Repo files the client GET-downloaded (resolve routes; LFS bodies come from /cdn)."""
    import hashlib

    out = set()
    for r in hub.requests_to(rf"^/{rid}/resolve/", "GET"):
        out.add(r["path"].split("/resolve/", 1)[1].split("/", 1)[1])
    by_digest = {hashlib.sha256(data).hexdigest(): name for files in hub.repos[rid].commits.values()
                 for name, data in files.items()}
    for r in hub.requests_to(r"^/cdn/", "GET"):
        name = by_digest.get(r["path"].rsplit("/", 1)[1])
        if name is not None:
            out.add(name)
    return out


# --- the happy path through the real libraries --------------------------------------------------------------
def test_crawl_record_fetch_embed_sentence_transformers(hub, models, retry, tmp_path):
    rid = _rid("st")
    sha = hub.publish(
        rid, models["st"], library_name="sentence-transformers", pipeline_tag="sentence-similarity",
        extra_files={"pytorch_model.bin": b"pickle" * 10, "onnx/model.onnx": b"o" * 30, "README.md": b"# card"},
    )
    store = Store.open(tmp_path / "cache")
    res = H.crawl(library="sentence-transformers", limit=5, retry=retry)
    hub_models.record_crawl(store, res)
    cand = hub_models.candidates(store, modality="text")
    assert list(cand["repo_id"]) == [rid] and cand["sha"][0] == sha and cand["num_params"][0] > 0

    fm = H.fetch_model(rid, retry=retry)
    assert fm.revision == sha and fm.library == "sentence-transformers" and fm.backend == "sentence-transformers"
    assert fm.pipeline_tag == "sentence-similarity"
    assert fm.local_dir.name == sha and (fm.local_dir / "1_Pooling" / "config.json").is_file()
    assert {"modules.json", "model.safetensors", "tokenizer.json", "1_Pooling/config.json", "README.md"} <= set(fm.files)
    assert not {"pytorch_model.bin", "onnx/model.onnx"} & set(fm.files)  # the card is read for its base_model
    assert _downloaded(hub, rid) == set(fm.files)  # only what the backend needs went over the wire
    assert not (fm.local_dir / "pytorch_model.bin").exists()
    assert len(hub.requests_to(rf"^/api/models/{rid}")) == 2  # one model info + one tree listing

    from sentence_transformers import SentenceTransformer

    emb = SentenceTransformer(str(fm.local_dir), device="cpu").encode(["the cat sat on the mat", "a red car"])
    ref = SentenceTransformer(str(models["st"]), device="cpu").encode(["the cat sat on the mat", "a red car"])
    assert emb.shape == (2, 32) and np.allclose(emb, ref, atol=1e-6)

    # second fetch: resolved once more (one model-info request), every file from the local cache
    hub.requests.clear()
    again = H.fetch_model(rid, retry=retry)
    assert again.local_dir == fm.local_dir
    assert [r["path"] for r in hub.requests if r["path"] != "/api/agent-harnesses"] == [f"/api/models/{rid}"]


def test_fetch_timm_and_transformers_models_and_embed(hub, models, retry):
    import timm
    import torch
    from transformers import AutoModel, AutoTokenizer

    rid_timm = _rid("vit")
    hub.publish(rid_timm, models["timm"], library_name="timm", pipeline_tag="image-classification",
                extra_files={"pytorch_model.bin": b"x" * 10})
    fm = H.fetch_model(rid_timm, retry=retry)
    assert fm.backend == "timm" and set(fm.files) == {"config.json", "model.safetensors"}
    m = timm.create_model(f"local-dir:{fm.local_dir}", pretrained=True, num_classes=0).eval()
    with torch.no_grad():
        assert m(torch.zeros(2, 3, 32, 32)).shape == (2, 32)

    rid_text = _rid("bert")
    hub.publish(rid_text, models["text"], library_name="transformers", pipeline_tag="feature-extraction")
    fm = H.fetch_model(rid_text, retry=retry)
    assert fm.backend == "transformers" and "vocab.txt" in fm.files and "model.safetensors" in fm.files
    tok = AutoTokenizer.from_pretrained(fm.local_dir)
    with torch.no_grad():
        out = AutoModel.from_pretrained(fm.local_dir)(**tok(["a dog"], return_tensors="pt")).last_hidden_state
    assert out.shape[-1] == 32

    rid_img = _rid("vitmodel")
    hub.publish(rid_img, models["image"], library_name="transformers", pipeline_tag="image-feature-extraction")
    fm = H.fetch_model(rid_img, retry=retry)
    assert "preprocessor_config.json" in fm.files
    with torch.no_grad():
        out = AutoModel.from_pretrained(fm.local_dir)(pixel_values=torch.zeros(1, 3, 32, 32)).pooler_output
    assert out.shape == (1, 32)


@pytest.mark.fault
def test_an_open_clip_checkpoint_for_timm_is_fetched_by_the_safetensors_timm_reads(hub, models, retry):
    """A timm repo holding an open_clip checkpoint (open_clip_model.safetensors + open_clip_pytorch_model.bin, no
    model.safetensors) was refused as pickle-only, though timm reads the safetensors; a repo with both timm's and
    open_clip's safetensors fetches the one timm reads, never the pickles."""
    import shutil

    from embedselect.models.backends.loader import check_local_files

    folder = Path(models["timm"]).parent / "open_clip_hub"
    if not folder.exists():
        shutil.copytree(models["timm"], folder)
        (folder / "model.safetensors").rename(folder / "open_clip_model.safetensors")
    rid = _rid("clip")
    hub.publish(rid, folder, library_name="timm", extra_files={"open_clip_pytorch_model.bin": b"x" * 10})
    fm = H.fetch_model(rid, retry=retry)
    assert fm.backend == "timm" and set(fm.files) == {"config.json", "open_clip_model.safetensors"}
    check_local_files(fm.local_dir, "timm", LoadPolicy(), rid)

    rid = _rid("clip-both")
    hub.publish(rid, models["timm"], library_name="timm", extra_files={
        "open_clip_model.safetensors": (Path(models["timm"]) / "model.safetensors").read_bytes(),
        "open_clip_pytorch_model.bin": b"x" * 10, "pytorch_model.bin": b"x" * 10})
    assert set(H.fetch_model(rid, retry=retry).files) == {"config.json", "model.safetensors"}


@pytest.mark.fault
def test_a_router_model_from_the_hub_is_fetched_whole_and_ranked(hub, models, retry, tmp_path, capsys):
    """A sentence-transformers Router keeps its routes' modules in folders named by route (query_0_Transformer/,
    document_1_Pooling/, ...) and its own config in router_config.json: the hub fetch took neither (it takes numbered
    module folders and the ST config files), so the snapshot could not be loaded. A Router whose routes use a
    module type outside sentence_transformers. is refused as remote code when fetched, before its code is downloaded."""
    import json as _json

    from embedselect.cli import main
    from embedselect.data import sample_path
    from embedselect.ranking.result import Ranking

    router = tm.make_tiny_router(tmp_path / "router")
    rid = _rid("router")
    hub.publish(rid, router, library_name="sentence-transformers")
    fm = H.fetch_model(rid, retry=retry)
    assert {"router_config.json", "query_0_Transformer/model.safetensors", "document_0_Transformer/model.safetensors",
            "document_1_Pooling/config.json", "query_0_Transformer/tokenizer.json", "1_Normalize/config.json"} \
        <= set(fm.files)
    code = main(["rank", str(sample_path("texts")), "-c", "text", "-m", f"{rid},tfidf-svd", "--metrics", "task_prior",
                 "--json", "-q", "--cache-dir", str(tmp_path / "c")])
    out = capsys.readouterr().out
    assert code == 0, out
    r = Ranking.from_json(out)
    assert r[rid].ok and r[rid].dim == 32

    evil = tmp_path / "evil"
    router_config = _json.loads((router / "router_config.json").read_text())
    router_config["types"]["query_0_Transformer"] = "modeling_evil.Evil"
    rid = _rid("router-evil")
    hub.publish(rid, router, library_name="sentence-transformers",
                files={"router_config.json": _json.dumps(router_config).encode(),
                       "modeling_evil.py": f"open({str(evil)!r}, 'w').close()\n".encode()})
    err = _refused(hub, rid, "remote_code", retry=retry)
    assert "router_config.json" in str(err) and "modeling_evil.Evil" in str(err) and not evil.exists()
    assert "modeling_evil.py" not in _downloaded(hub, rid) and "query_0_Transformer/model.safetensors" not in \
        _downloaded(hub, rid)


@pytest.mark.fault
def test_a_peft_adapter_is_fetched_with_the_model_and_its_pickle_weights_refused(hub, models, retry, monkeypatch):
    """The fetch left a repo's PEFT adapter (adapter_config.json, adapter_model.*) behind: the snapshot then loaded as
    the base model alone, ranked under the adapter's name. It takes the adapter and the weights transformers reads
    of it (adapter_model.safetensors first); a pickle-only adapter is refused before any weights are fetched."""
    import json as _json

    from embedselect.models.backends import loader

    config = _json.dumps({"peft_type": "LORA", "base_model_name_or_path": "acme/base", "r": 2}).encode()
    rid = _rid("adapter")
    hub.publish(rid, models["text"], library_name="transformers",
                extra_files={"adapter_config.json": config, "adapter_model.safetensors": b"{}",
                             "adapter_model.bin": b"a pickle"})
    fm = H.fetch_model(rid, retry=retry)
    assert {"adapter_config.json", "adapter_model.safetensors", "model.safetensors"} <= set(fm.files)
    assert "adapter_model.bin" not in _downloaded(hub, rid)
    monkeypatch.setattr(loader, "_peft_available", lambda: False)
    with pytest.raises(ModelLoadError, match="PEFT adapter"):  # not the base model, silently
        loader.check_local_files(fm.local_dir, "transformers", LoadPolicy(), rid)

    for backend, model in (("transformers", "text"), ("sentence-transformers", "st")):
        rid = _rid("adapter-pickle")
        hub.publish(rid, models[model], library_name=backend,
                    extra_files={"adapter_config.json": config, "adapter_model.bin": b"a pickle"})
        err = _refused(hub, rid, "pickle_only", retry=retry)
        assert "PEFT adapter" in str(err) and "adapter_model.bin" in str(err) and "allow_pickle" in str(err)
        fm = H.fetch_model(rid, policy=LoadPolicy(allow_pickle=True), retry=retry)
        assert "adapter_model.bin" in fm.files


@pytest.mark.fault
def test_pickle_weights_named_by_transformers_weights_are_refused_before_any_weights_are_fetched(hub, models, retry,
                                                                                                  monkeypatch):
    """transformers reads the file config.json names in transformers_weights (adapter_model.bin is the one pickle
    name it takes there): the fetch took model.safetensors and left the named pickle behind, so the snapshot failed to
    load. It is refused from the downloaded config, before any weights; online and offline."""
    import json as _json

    import huggingface_hub.constants as c

    for backend, model in (("transformers", "text"), ("sentence-transformers", "st")):
        config = _json.loads((models[model] / "config.json").read_text())
        rid = _rid("named-pickle")
        hub.publish(rid, models[model], library_name=backend,
                    files={"config.json": _json.dumps({**config, "transformers_weights": "adapter_model.bin"}).encode(),
                           "adapter_model.bin": b"a pickle"})
        err = _refused(hub, rid, "pickle_only", retry=retry)
        assert "transformers_weights: adapter_model.bin" in str(err) and "allow_pickle" in str(err)
        assert H.fetch_model(rid, policy=LoadPolicy(allow_pickle=True), retry=retry).revision
        monkeypatch.setattr(c, "HF_HUB_OFFLINE", True)  # the cached config is checked too
        with pytest.raises(UnsafeModelError, match="transformers_weights") as ei:
            H.fetch_model(rid, retry=retry)
        assert ei.value.reason == "pickle_only"
        monkeypatch.setattr(c, "HF_HUB_OFFLINE", False)


def test_revision_is_pinned_to_a_commit(hub, models, retry):
    rid = _rid("st")
    old = hub.publish(rid, models["st"], library_name="sentence-transformers")
    first = H.fetch_model(rid, retry=retry)
    new = hub.publish(rid, models["st"], extra_files={"extra.txt": b"v2"})
    assert new != old
    assert H.fetch_model(rid, retry=retry).revision == new
    pinned = H.fetch_model(rid, revision=old, retry=retry)
    assert pinned.revision == old and pinned.local_dir == first.local_dir
    assert hub.requests_to(rf"^/api/models/{rid}/revision/{old}$")  # resolved by sha, not by branch


def test_backend_is_inferred_or_given(hub, models, retry):
    rid = _rid("noinfo")
    hub.publish(rid, models["text"], library_name=None)
    assert H.fetch_model(rid, retry=retry).backend == "transformers"  # from the files
    with pytest.raises(ConfigError, match="backend"):
        H.fetch_model(rid, backend="onnx")
    with pytest.raises(CandidateError, match="owner/name"):
        H.fetch_model("no-slash")


# --- refusals -----------------------------------------------------------------------------------------------
def _refused(hub, rid, reason, **kw):
    hub.requests.clear()  # CDN requests are keyed by content: count only this attempt's
    with pytest.raises(UnsafeModelError) as ei:
        H.fetch_model(rid, **kw)
    assert ei.value.reason == reason
    assert not any(p.endswith((".safetensors", ".bin")) for p in _downloaded(hub, rid))  # no weights fetched
    return ei.value


def test_refuses_remote_code_pickle_size_and_gated_unless_opted_in(hub, models, retry, tmp_path):
    store = Store.open(tmp_path / "cache")
    remote = _rid("remote")
    hub.publish(remote, models["remote"], library_name="transformers")
    err = _refused(hub, remote, "remote_code", retry=retry)
    assert "auto_map" in str(err) and "trust_remote_code" in str(err)
    hub_models.record_refusal(store, remote, hub.repos[remote].main, err.reason, str(err))
    assert H.fetch_model(remote, policy=LoadPolicy(trust_remote_code=True), retry=retry).revision

    # custom sentence-transformers module types are remote code too (found in modules.json)
    st_custom = _rid("stcustom")
    hub.publish(st_custom, models["st"], library_name="sentence-transformers",
                files={"modules.json": b'[{"idx":0,"name":"0","path":"","type":"my_pkg.CustomModule"}]'})
    assert "CustomModule" in str(_refused(hub, st_custom, "remote_code", retry=retry))

    pickle = _rid("pickle")
    hub.publish(pickle, models["pickle"], library_name="transformers")
    assert "allow_pickle" in str(_refused(hub, pickle, "pickle_only", retry=retry))
    fm = H.fetch_model(pickle, policy=LoadPolicy(allow_pickle=True), retry=retry)
    assert "pytorch_model.bin" in fm.files and (fm.local_dir / "pytorch_model.bin").is_file()

    big = _rid("big")
    hub.publish(big, models["text"], library_name="transformers")
    assert "max_bytes" in str(_refused(hub, big, "too_large", policy=LoadPolicy(max_bytes=1000), retry=retry))
    optin = LoadPolicy(max_bytes=1000, allow_models=frozenset({big}))
    assert H.fetch_model(big, policy=optin, retry=retry).revision == hub.repos[big].main

    gated = _rid("gated")
    hub.publish(gated, models["st"], library_name="sentence-transformers", gated="manual", allowed_tokens={TOKEN})
    _refused(hub, gated, "gated", retry=retry)
    # opted in, but the (absent) token has no access: the hub's GatedRepo answer becomes a "gated" refusal
    err = _refused(hub, gated, "gated", policy=LoadPolicy(allow_gated=True), retry=retry)
    assert "HF_TOKEN" in str(err)
    fm = H.fetch_model(gated, policy=LoadPolicy(allow_gated=True), token=TOKEN, retry=retry)
    assert (fm.local_dir / "model.safetensors").is_file()

    reasons = set(hub_models.refusals(store)["reason"])
    assert reasons == {"remote_code"}



@pytest.mark.fault
@pytest.mark.parametrize("how, lift, opt_in, never", [
    ("python", {"allow_pickle": "Pass allow_pickle=True", "allow_gated": "Pass allow_gated=True",
                "trust_remote_code": "Pass trust_remote_code=True", "max_bytes": "Raise max_bytes or"},
     "allow_models={'org/m'}", ["--", "policy:"]),
    ("cli", {"allow_pickle": "Pass --allow-pickle", "allow_gated": "Pass --allow-gated",
             "trust_remote_code": "Pass --trust-remote-code", "max_bytes": "Raise --max-model-bytes"},
     "--allow-model org/m", ["=True", "policy:", "allow_models"]),
    ("nightly", {"allow_pickle": "Set allow_pickle: true under policy:", "allow_gated": "Set allow_gated: true under "
                 "policy:", "trust_remote_code": "Set trust_remote_code: true under policy:",
                 "max_bytes": "Raise max_bytes under policy:"},
     "allow_models: [org/m] under policy:", ["--", "=True"]),
])
def test_a_refusal_names_the_setting_the_way_the_run_is_configured(tmp_path, how, lift, opt_in, never):
    """A night's refusal named the CLI's flags, though a night is configured by the policy: keys of its YAML: each
    refusal (a hub repo's files, the hub policy checks, a local folder) names the setting as the run it is in sets it
    (embedselect.models.policy.remedy, the one place)."""
    from embedselect.models.backends.loader import check_local_files
    from embedselect.models.hub.files import check_policy, select_files
    from embedselect.models.policy import configured_by

    folder = tm.make_pickle_only_model(tmp_path / "pick")
    kw = dict(gated=None, remote_reason=None, weights=["model.safetensors"], sizes={"model.safetensors": 10**9})
    refusals = [
        ("allow_pickle", lambda: select_files("org/m", "transformers", ["config.json", "pytorch_model.bin"])),
        ("allow_pickle", lambda: check_local_files(folder, "transformers", LoadPolicy(), "org/m")),
        ("allow_gated", lambda: check_policy("org/m", LoadPolicy(), **{**kw, "gated": "manual"})),
        ("trust_remote_code", lambda: check_policy("org/m", LoadPolicy(), **{**kw, "remote_reason": "auto_map"})),
        ("max_bytes", lambda: check_policy("org/m", LoadPolicy(max_bytes=1000), **kw)),
    ]
    for setting, refuse in refusals:
        with configured_by(how), pytest.raises(UnsafeModelError) as ei:
            refuse()
        m = str(ei.value)
        assert lift[setting] in m and opt_in in m and not any(n in m for n in never), m
        # the opt-in offered beside the setting lifts every check: a pickle refusal's reader who takes it for the
        # per-model form of the setting would run the model's code unwarned (it said only "opt in for this model")
        assert "lifts every check for the model, remote code and pickle weights included" in m, m
    with pytest.raises(UnsafeModelError, match="allow_pickle=True"):  # outside the block: the Python wording
        refusals[0][1]()

# --- faults -------------------------------------------------------------------------------------------------
def test_fetch_retries_429_and_5xx(hub, models, retry, sleeps):
    rid = _rid("st")
    hub.publish(rid, models["st"], library_name="sentence-transformers")
    hub.add_fault(rf"^/api/models/{rid}(\?|$)", status=429, headers={"Retry-After": "2"})
    hub.add_fault(rf"^/api/models/{rid}(\?|$)", status=500)
    hub.add_fault(r"/resolve/.*/tokenizer\.json$", status=503, method="GET")
    fm = H.fetch_model(rid, retry=retry)
    assert (fm.local_dir / "tokenizer.json").read_bytes() == (models["st"] / "tokenizer.json").read_bytes()
    assert sleeps[:2] == [2.0, 0.02]  # Retry-After honoured, then exponential backoff


def test_fetch_not_found_errors(hub, models, retry):
    with pytest.raises(CandidateError, match="not found"):
        H.fetch_model("acme/missing", retry=retry)
    rid = _rid("st")
    hub.publish(rid, models["st"], library_name="sentence-transformers")
    with pytest.raises(CandidateError, match="revision"):
        H.fetch_model(rid, revision="v9", retry=retry)


def test_fetch_truncated_download_retried_then_clear_error(hub, models, retry):
    rid = _rid("st")
    hub.publish(rid, models["st"], library_name="sentence-transformers")
    hub.add_fault(r"^/cdn/", "truncate", method="GET")  # once: the retry completes the file
    fm = H.fetch_model(rid, retry=retry)
    assert (fm.local_dir / "model.safetensors").read_bytes() == (models["st"] / "model.safetensors").read_bytes()

    rid2 = _rid("st")
    hub.publish(rid2, models["text"], library_name="transformers")
    hub.add_fault(r"^/cdn/", "truncate", method="GET", times=-1)
    with pytest.raises(HubError, match="truncated"):
        H.fetch_model(rid2, retry=retry)
    snaps = list((Path(os.environ["HF_HOME"]) / "hub" / f"models--acme--{rid2.split('/')[1]}").rglob("model.safetensors"))
    assert snaps == []  # no half file was ever put in place


def test_fetch_dropped_connection_resumes(hub, models, retry, monkeypatch):
    import huggingface_hub.file_download as fd

    monkeypatch.setattr(fd.time, "sleep", lambda s: None)  # the client's own 1 s pause before resuming
    rid = _rid("st")
    hub.publish(rid, models["st"], library_name="sentence-transformers")
    hub.add_fault(r"^/cdn/", "drop", method="GET")
    fm = H.fetch_model(rid, retry=retry)
    assert (fm.local_dir / "model.safetensors").read_bytes() == (models["st"] / "model.safetensors").read_bytes()
    cdn = hub.requests_to(r"^/cdn/", "GET")
    assert len(cdn) == 2  # the cut-off body was fetched again (resumed with Range when bytes had been kept)


def test_fetch_malformed_info_and_timeouts_are_hub_errors(hub, models, sleeps):
    rid = _rid("st")
    hub.publish(rid, models["st"], library_name="sentence-transformers")
    retry = H.RetryPolicy(max_retries=1, base_wait=0.01, timeout=0.3, sleep=sleeps.append)
    hub.add_fault(rf"^/api/models/{rid}(\?|$)", "malformed", times=-1)
    with pytest.raises(HubError, match="malformed answer"):
        H.fetch_model(rid, retry=retry)
    hub.faults.clear()
    hub.add_fault(rf"^/api/models/{rid}(\?|$)", "delay", delay=1.0, times=-1)
    with pytest.raises(HubError, match="in time"):
        H.fetch_model(rid, retry=retry)
    assert len(sleeps) == 2  # one retry each


# --- offline ------------------------------------------------------------------------------------------------
def test_offline_uses_the_cache_alone(hub, models, retry, monkeypatch):
    import huggingface_hub.constants as c

    rid = _rid("st")
    hub.publish(rid, models["st"], library_name="sentence-transformers")
    online = H.fetch_model(rid, retry=retry)
    hub.requests.clear()
    monkeypatch.setattr(c, "HF_HUB_OFFLINE", True)
    offline = H.fetch_model(rid)
    assert offline.revision == online.revision and offline.local_dir == online.local_dir
    assert set(offline.files) == set(online.files) and offline.backend == "sentence-transformers"
    assert H.fetch_model(rid, revision=online.revision).revision == online.revision
    with pytest.raises(CandidateError, match="HF_HUB_OFFLINE"):
        H.fetch_model(_rid("never-fetched"))
    assert hub.requests == []


def test_a_damaged_cached_config_is_a_typed_error_naming_the_file(hub, models, retry, monkeypatch):
    """Offline, a cached config.json that is not JSON used to escape as the hub's internal ``Malformed`` (no
    EmbedselectError at all); now it is the one JSON reader's ModelFileError, naming the file."""
    import huggingface_hub.constants as c

    from embedselect.errors import ModelFileError

    rid = _rid("st-damaged")
    hub.publish(rid, models["st"], library_name="sentence-transformers")
    online = H.fetch_model(rid, retry=retry)
    cfg = online.local_dir / "config.json"
    cfg.unlink()  # a link into blobs/ that other repos may share: replace the link, not the blob
    cfg.write_text("{not json", encoding="utf-8")
    monkeypatch.setattr(c, "HF_HUB_OFFLINE", True)
    with pytest.raises(ModelFileError, match=r"config\.json is not valid JSON"):
        H.fetch_model(rid)


def test_revision_names_cannot_escape_the_cache_and_ref_files_must_hold_a_sha(hub, models, retry, monkeypatch):
    """A revision becomes a file under the HF cache's refs/ folder: '..' and friends are refused before any
    request, and a ref file that does not hold a 40-hex sha is never trusted as a commit id."""
    import huggingface_hub.constants as c

    for bad in ("../../../../tmp/x", "a/../b", ".hidden", "main/", "/abs", "v1.lock", "-x", "a//b", ""):
        with pytest.raises(CandidateError, match="bad revision"):
            H.check_revision(bad)
    for good in ("main", "v1.0", "refs/pr/1", "release/2024-01", "0" * 40):
        assert H.check_revision(good) == good
    hub.requests.clear()
    with pytest.raises(CandidateError, match="bad revision"):
        H.fetch_model(_rid("st"), revision="../../../escape", retry=retry)
    assert hub.requests == []  # refused before asking the hub

    rid = _rid("st-ref")
    hub.publish(rid, models["st"], library_name="sentence-transformers")
    online = H.fetch_model(rid, revision="main", retry=retry)
    ref = online.local_dir.parent.parent / "refs" / "main"
    assert ref.read_text().strip() == online.revision  # written by the online fetch, read back offline
    monkeypatch.setattr(c, "HF_HUB_OFFLINE", True)
    assert H.fetch_model(rid).revision == online.revision
    ref.write_text("../../snapshots/elsewhere")  # damaged or foreign content: not a sha, not trusted
    with pytest.raises(CandidateError, match="HF_HUB_OFFLINE"):
        H.fetch_model(rid)
    with pytest.raises(CandidateError, match="bad revision"):
        H.fetch_model(rid, revision="../../../../etc")


# --- token --------------------------------------------------------------------------------------------------
def test_token_reaches_the_hub_but_never_logs_or_store(hub, models, retry, monkeypatch, caplog, tmp_path):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    caplog.set_level(logging.DEBUG)
    rid = _rid("gated")
    hub.publish(rid, models["st"], library_name="sentence-transformers", gated="auto", allowed_tokens={TOKEN})
    store = Store.open(tmp_path / "cache")
    hub.add_fault(r"^/api/models\?", status=503)  # a retried page: the warning must not show the token
    res = H.crawl(limit=5, retry=retry)
    hub_models.record_crawl(store, res)
    fm = H.fetch_model(rid, policy=LoadPolicy(allow_gated=True), retry=retry)
    assert (fm.local_dir / "model.safetensors").is_file()
    hub_side = [r for r in hub.requests if not r["path"].startswith("/cdn/")]
    assert hub_side and all(r["headers"].get("authorization") == f"Bearer {TOKEN}" for r in hub_side
                            if r["path"] != "/api/agent-harnesses")
    assert all("authorization" not in r["headers"] for r in hub.requests_to(r"^/cdn/"))  # not sent to the CDN
    # a refusal message that quotes the token is scrubbed before it is stored
    hub_models.record_refusal(store, rid, fm.revision, "gated", f"failed with {TOKEN}")
    hub.add_fault(rf"^/api/models/{rid}(\?|$)", status=500, times=-1)
    with pytest.raises(HubError) as ei:
        H.fetch_model(rid, policy=LoadPolicy(allow_gated=True), retry=retry)
    assert TOKEN not in str(ei.value)
    assert TOKEN not in caplog.text and "WARNING" in caplog.text
    assert TOKEN.encode() not in (tmp_path / "cache" / "embedselect.duckdb").read_bytes()
    assert TOKEN not in hub_models.refusals(store)["message"][0]


@pytest.mark.fault
def test_an_outage_is_not_retried_on_top_of_huggingface_hubs_own_retries(hub, models, retry, monkeypatch):
    """Issue 20 (nested retries): huggingface_hub already retries the tree listing (and a file's metadata and its
    dropped downloads) itself; embedselect wrapped that in its own retries, so that in an outage every request was
    made (1 + hub retries) x (1 + embedselect retries) times. Now only what huggingface_hub does not retry (a file
    download answered with 5xx, a truncated body) is retried by embedselect."""
    import huggingface_hub.utils._http as hf_http

    monkeypatch.setattr(hf_http.time, "sleep", lambda s: None)  # huggingface_hub's own backoff, not timed here
    rid = _rid("st")
    hub.publish(rid, models["st"], library_name="sentence-transformers")
    hub.add_fault(rf"^/api/models/{rid}/tree/", status=503, times=-1)
    with pytest.raises(HubError):
        H.fetch_model(rid, retry=retry)
    listing = hub.requests_to(rf"^/api/models/{rid}/tree/")
    assert len(listing) == 1 + 5, len(listing)  # huggingface_hub's own 5 retries, and nothing on top
    # a file download answered with 503 is not retried by huggingface_hub: embedselect retries it, within its budget
    hub.faults.clear()
    rid2 = _rid("st")
    hub.publish(rid2, models["st"], library_name="sentence-transformers")
    hub.add_fault(r"/resolve/.*/tokenizer\.json$", status=503, method="GET", times=-1)
    with pytest.raises(HubError):
        H.fetch_model(rid2, retry=retry)
    assert len(hub.requests_to(rf"^/{rid2}/resolve/.*/tokenizer\.json$", "GET")) == 1 + retry.max_retries


@pytest.mark.fault
def test_a_hub_error_carries_the_status_code_request_id_and_repo(hub, models, retry, monkeypatch):
    """Issue 46: a HubError kept one line of text; it now carries the HTTP status, the hub's request id and the
    repository (as huggingface_hub's errors do), and keeps them through pickling (the Ray executor's path)."""
    import pickle

    import huggingface_hub.utils._http as hf_http

    monkeypatch.setattr(hf_http.time, "sleep", lambda s: None)
    rid = _rid("st")
    hub.publish(rid, models["st"], library_name="sentence-transformers")
    hub.add_fault(rf"^/api/models/{rid}/tree/", status=503, times=-1, headers={"X-Request-Id": "req-46"})
    with pytest.raises(HubError) as ei:
        H.fetch_model(rid, retry=retry)
    err = ei.value
    assert (err.status_code, err.request_id, err.repo_id) == (503, "req-46", rid)
    back = pickle.loads(pickle.dumps(err))
    assert (back.status_code, back.request_id, back.repo_id, str(back)) == (503, "req-46", rid, str(err))

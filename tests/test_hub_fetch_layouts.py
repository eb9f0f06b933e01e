"""Hub repos whose layout the fetch must read from their own files, against the fake hub (testkit/hubserver.py): a
sentence-transformers Router saved below the repo's root (modules.json names its folder, router_config.json its
routes' folders), and a repo that holds only a PEFT adapter."""

from __future__ import annotations

import json

import numpy as np
import pytest

from embedselect.config import LoadPolicy
from embedselect.models import hub as H
from testkit import tinymodels as tm
from tests.test_hub_fetch import _downloaded, _refused, _rid

TEXTS = ["the cat sat on the mat", "a red car", "stock prices fell sharply"]


@pytest.fixture
def retry():
    return H.RetryPolicy(max_retries=2, base_wait=0.01, max_wait=0.05, timeout=5.0, sleep=lambda s: None)


@pytest.mark.fault
@pytest.mark.parametrize("below", ["0_Router", "mods/0_Router"])
def test_a_router_saved_below_the_root_is_fetched_whole_and_embeds_as_the_folder_does(hub, retry, tmp_path, capsys,
                                                                                      below):
    """A Router saved at a module path (modules.json's 0_Router, or mods/0_Router) keeps router_config.json in that
    folder and its routes' modules one level deeper (0_Router/query_0_Transformer/): the fetch took module folders
    one level deep, by name, so the snapshot lacked the Router. It takes what modules.json and each router_config.json
    name, at any depth, safetensors only: a route folder's pickle beside its safetensors is not fetched, and a route
    whose weights are a pickle alone is refused before any weights are."""
    from sentence_transformers import SentenceTransformer

    from embedselect.cli import main
    from embedselect.models.backends.loader import load_embedder
    from embedselect.models.candidates import parse_candidates, resolve_candidate

    router = tm.make_tiny_router(tmp_path / "router", below=below)
    rid = _rid("router-below")
    hub.publish(rid, router, library_name="sentence-transformers",
                extra_files={f"{below}/query_0_Transformer/pytorch_model.bin": b"a pickle",
                             f"{below}/onnx/model.onnx": b"o" * 30})
    fm = H.fetch_model(rid, retry=retry)
    assert {f"{below}/router_config.json", f"{below}/query_0_Transformer/model.safetensors",
            f"{below}/query_0_Transformer/tokenizer.json", f"{below}/document_0_Transformer/model.safetensors",
            f"{below}/document_1_Pooling/config.json", "1_Normalize/config.json", "modules.json"} <= set(fm.files)
    assert _downloaded(hub, rid) <= set(fm.files)  # (by content: the two routes' equal tokenizer files count once)
    assert all((fm.local_dir / f).is_file() for f in fm.files)
    assert not {f"{below}/query_0_Transformer/pytorch_model.bin", f"{below}/onnx/model.onnx"} & _downloaded(hub, rid)

    (tmp_path / "t.csv").write_text("text\n" + "\n".join(TEXTS) + "\n")
    code = main(["embed", str(tmp_path / "t.csv"), "-c", "text", "-m", rid, "-q", "--cache-dir", str(tmp_path / "c")])
    assert code == 0, capsys.readouterr()
    (cand,) = parse_candidates([rid], modality="text")
    vectors = load_embedder(resolve_candidate(cand, policy=LoadPolicy()), device="cpu").embed(TEXTS)
    assert np.allclose(vectors, SentenceTransformer(str(router), device="cpu").encode(TEXTS), atol=1e-5)

    rid = _rid("router-below-pickle")
    weights = f"{below}/query_0_Transformer/model.safetensors"
    hub.publish(rid, router, library_name="sentence-transformers",
                files={f"{below}/query_0_Transformer/pytorch_model.bin": b"a pickle"})
    hub.repos[rid].commits[hub.repos[rid].main].pop(weights)
    err = _refused(hub, rid, "pickle_only", retry=retry)
    assert f"{below}/query_0_Transformer/" in str(err)


@pytest.mark.fault
def test_a_repo_of_a_peft_adapter_alone_is_refused_saying_what_it_is_and_what_to_do(hub, retry, tmp_path, capsys,
                                                                                   monkeypatch):
    """A repo holding only a PEFT adapter (adapter_config.json + adapter_model.safetensors) was refused for something
    else: "cannot tell which backend loads" it (library_name peft), "has no config.json", "has neither modules.json
    nor config.json", or "has no weight files" when it had a config.json. It is an AdapterOnlyError (exit 4) that says
    it is an adapter, names the base model its adapter_config.json records (quoted, escapes and all, when that is
    no hub model id) and what to do; before any weights are fetched, online and offline."""
    import huggingface_hub.constants as c

    from embedselect.cli import main
    from embedselect.errors import AdapterOnlyError, EXIT_CODES

    def adapter(base) -> bytes:
        return json.dumps({"peft_type": "LORA", "base_model_name_or_path": base, "r": 2}).encode()

    (tmp_path / "t.csv").write_text("text\n" + "\n".join(TEXTS) + "\n")
    for library, extra in (("peft", {}), ("transformers", {}), ("sentence-transformers", {"modules.json": b"[]"}),
                           ("transformers", {"config.json": b'{"model_type": "bert"}', "README.md": b"# card"})):
        rid = _rid("adapter-only")
        hub.publish(rid, files={"adapter_config.json": adapter("acme/base-model"), "adapter_model.safetensors": b"{}",
                                **extra}, library_name=library)
        hub.requests.clear()
        with pytest.raises(AdapterOnlyError) as ei:
            H.fetch_model(rid, retry=retry)
        m = str(ei.value)
        assert "PEFT adapter" in m and "rank acme/base-model instead" in m and "merge_and_unload" in m, m
        assert ei.value.base_model == "acme/base-model"
        assert _downloaded(hub, rid) == {"adapter_config.json"}, library
        capsys.readouterr()
        code = main(["embed", str(tmp_path / "t.csv"), "-c", "text", "-m", rid, "--cache-dir", str(tmp_path / "c")])
        err = capsys.readouterr().err
        assert code == EXIT_CODES["candidate"] == 4 and "AdapterOnlyError" in err and "acme/base-model" in err, err

    from huggingface_hub import snapshot_download

    snapshot_download(rid, revision=hub.repos[rid].main)  # in the HF cache whole (another tool fetched it): offline,
    monkeypatch.setattr(c, "HF_HUB_OFFLINE", True)  # the fetch says the same of the cached snapshot
    with pytest.raises(AdapterOnlyError, match="rank acme/base-model instead"):
        H.fetch_model(rid, revision=hub.repos[rid].main, retry=retry)
    monkeypatch.setattr(c, "HF_HUB_OFFLINE", False)

    hostile = "/home/me/ckpt\n\x1b[2JERROR all good\u202e"  # untrusted text: a local path with escapes
    for base, said in ((hostile, repr(hostile)), (None, "names no base model")):
        rid = _rid("adapter-only-odd")
        hub.publish(rid, files={"adapter_config.json": adapter(base), "adapter_model.safetensors": b"{}"},
                    library_name="peft")
        with pytest.raises(AdapterOnlyError) as ei:
            H.fetch_model(rid, retry=retry)
        m = str(ei.value)
        assert said in m and "\n" not in m and "\x1b" not in m and "\u202e" not in m and ei.value.base_model is None

    rid = _rid("adapter-with-model")  # an adapter beside its model's weights is fetched with them, as before
    text = tm.make_tiny_transformers_text(tmp_path / "text2")
    hub.publish(rid, text, library_name="transformers",
                extra_files={"adapter_config.json": adapter("acme/base-model"), "adapter_model.safetensors": b"{}"})
    assert {"adapter_config.json", "model.safetensors"} <= set(H.fetch_model(rid, retry=retry).files)


@pytest.mark.fault
def test_a_peft_adapter_in_a_transformer_module_folder_is_fetched_with_its_weights(hub, retry, tmp_path):
    """transformers loads a PEFT adapter in any folder it reads, a sentence-transformers Transformer module's too
    (the local check's rule, loader._reader): the fetch took such a folder's adapter_config.json and left its
    adapter_model.safetensors behind (it took an adapter's weights at the root only), so the snapshot loaded without
    the adapter's weights. It takes them, safetensors first; a pickle alone is refused before any weights are."""
    router = tm.make_tiny_router(tmp_path / "router")
    config = json.dumps({"peft_type": "LORA", "base_model_name_or_path": "acme/base", "r": 2}).encode()
    rid = _rid("route-adapter")
    hub.publish(rid, router, library_name="sentence-transformers",
                extra_files={"query_0_Transformer/adapter_config.json": config,
                             "query_0_Transformer/adapter_model.safetensors": b"{}",
                             "query_0_Transformer/adapter_model.bin": b"a pickle",
                             "query_1_Pooling/adapter_model.safetensors": b"{}"})  # no Transformer: not read there
    files = set(H.fetch_model(rid, retry=retry).files)
    assert {"query_0_Transformer/adapter_config.json", "query_0_Transformer/adapter_model.safetensors"} <= files
    assert not {"query_0_Transformer/adapter_model.bin", "query_1_Pooling/adapter_model.safetensors"} & files

    rid = _rid("route-adapter-pickle")
    hub.publish(rid, router, library_name="sentence-transformers",
                extra_files={"query_0_Transformer/adapter_config.json": config,
                             "query_0_Transformer/adapter_model.bin": b"a pickle"})
    err = _refused(hub, rid, "pickle_only", retry=retry)
    assert "query_0_Transformer/adapter_model.bin" in str(err)
    assert "query_0_Transformer/adapter_model.bin" in H.fetch_model(rid, policy=LoadPolicy(allow_pickle=True),
                                                                    retry=retry).files


@pytest.mark.fault
@pytest.mark.parametrize("name", ["pytorch_model.pth", "model.pth"])
def test_a_timm_repo_whose_weights_are_a_pth_pickle_is_refused_and_with_allow_pickle_fetched_and_embedded(
        hub, retry, tmp_path, capsys, name):
    """timm reads pytorch_model.pth and model.pth (policy.WEIGHTS_READ_ORDER), and the loader counts them as pickle
    weights by their suffix, but the fetch had its own list of weight names without them: such a repo "has no weight
    files", and --allow-pickle could not fetch it. It is a pickle_only refusal naming the file, before any weights
    are fetched; allowed, the file is fetched and the model embeds as its folder does."""
    import torch
    from safetensors.torch import load_file

    from embedselect.cli import main
    from embedselect.models.backends.loader import load_embedder
    from embedselect.models.candidates import parse_candidates, resolve_candidate

    folder = tm.make_tiny_timm(tmp_path / "timm")
    torch.save(load_file(folder / "model.safetensors"), folder / name)
    (folder / "model.safetensors").unlink()
    rid = _rid("timm-pth")
    hub.publish(rid, folder, library_name="timm")
    err = _refused(hub, rid, "pickle_only", retry=retry)
    assert name in str(err) and "allow_pickle=True" in str(err) and name not in _downloaded(hub, rid)

    images = tm.make_tiny_images(tmp_path / "imgs", n=6, size=32)[0].parent
    code = main(["embed", str(images), "-m", rid, "-q", "--cache-dir", str(tmp_path / "c")])
    assert code != 0 and "--allow-pickle" in capsys.readouterr().err and name not in _downloaded(hub, rid)
    code = main(["embed", str(images), "-m", rid, "--allow-pickle", "-q", "--cache-dir", str(tmp_path / "c")])
    assert code == 0, capsys.readouterr()
    fm = H.fetch_model(rid, policy=LoadPolicy(allow_pickle=True), retry=retry)
    assert name in fm.files
    (cand,) = parse_candidates([rid], modality="image")
    paths = sorted(str(p) for p in images.iterdir())
    fetched = load_embedder(resolve_candidate(cand, policy=LoadPolicy(allow_pickle=True)), device="cpu",
                            policy=LoadPolicy(allow_pickle=True)).embed(paths)
    rc = resolve_candidate(parse_candidates([str(folder)], modality="image")[0], policy=LoadPolicy())
    local = load_embedder(rc, device="cpu", policy=LoadPolicy(allow_pickle=True)).embed(paths)
    assert np.allclose(fetched, local, atol=1e-5)


@pytest.mark.fault
def test_training_state_in_a_module_folder_is_not_weights_for_the_fetch_as_for_the_loader(hub, retry, tmp_path):
    """A sentence-transformers module folder's training_args.bin is training state the loader ignores
    (policy.NOT_WEIGHTS), but the fetch counted it as the folder's pickle weights: a Pooling folder holding one was
    refused as pickle-only, and with --allow-pickle it was fetched as weights. The fetch leaves it, as the loader
    does, and a pickle the loader reads there is still refused."""
    router = tm.make_tiny_router(tmp_path / "router")
    rid = _rid("training-args")
    hub.publish(rid, router, library_name="sentence-transformers",
                extra_files={"query_1_Pooling/training_args.bin": b"a pickle", "training_args.bin": b"a pickle"})
    fm = H.fetch_model(rid, retry=retry)
    assert "query_0_Transformer/model.safetensors" in fm.files and not any("training_args" in f for f in fm.files)
    fm = H.fetch_model(rid, policy=LoadPolicy(allow_pickle=True), retry=retry)
    assert not any("training_args" in f for f in fm.files)

    rid = _rid("pooling-pickle")
    hub.publish(rid, router, library_name="sentence-transformers",
                extra_files={"query_1_Pooling/pytorch_model.bin": b"a pickle"})
    err = _refused(hub, rid, "pickle_only", retry=retry)
    assert "query_1_Pooling/pytorch_model.bin" in str(err)


@pytest.mark.fault
@pytest.mark.parametrize("below", ["0_Router", "mods/0_Router\u202e"])
def test_a_nested_routers_remote_code_refusal_names_its_router_config_in_the_repo(hub, retry, tmp_path, below):
    """A Router saved below the root whose router_config.json names a module type outside sentence_transformers. is
    refused as remote code, but the refusal said "its router_config.json", not which folder's. It names the file's
    path in the repo, quoted with its escapes (repo paths are untrusted text), before any weights are fetched."""
    router = tm.make_tiny_router(tmp_path / "router", below=below)
    config = json.loads((router / below / "router_config.json").read_text())
    config["types"]["query_0_Transformer"] = "modeling_evil.Evil"
    rid = _rid("router-below-evil")
    hub.publish(rid, router, library_name="sentence-transformers",
                files={f"{below}/router_config.json": json.dumps(config).encode()})
    m = str(_refused(hub, rid, "remote_code", retry=retry))
    assert f"its {f'{below}/router_config.json'!r} uses the custom module type 'modeling_evil.Evil'" in m, m
    assert "\u202e" not in m

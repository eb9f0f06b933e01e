"""The safe-loading rule on the layouts a library reads beyond a model's own weights (a PEFT adapter, a
``transformers_weights`` file named in ``config.json``, a sentence-transformers ``CLIPModel`` module folder): which
file the library reads there (``policy.weights_read``) decides, and a pickle is refused without the opt-in."""

from __future__ import annotations

import json
import shutil

import pytest

from embedselect.errors import ModelLoadError, UnsafeModelError
from embedselect.models.backends import load_embedder
from embedselect.models.backends import loader
from embedselect.models.backends.loader import check_local_files
from embedselect.models.candidates import parse_candidates, resolve_candidate
from embedselect.models.policy import LoadPolicy
from testkit import tinymodels as tm

pytestmark = pytest.mark.usefixtures("one_thread")

ADAPTER = {"peft_type": "LORA", "base_model_name_or_path": "acme/base", "r": 2, "lora_alpha": 4,
           "target_modules": ["query", "value"], "task_type": "FEATURE_EXTRACTION"}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    base = tmp_path_factory.mktemp("tiny")
    return {"hf_text": tm.make_tiny_transformers_text(base / "hf_text"),
            "st": tm.make_tiny_sentence_transformer(base / "st")}


def _load(path, policy=LoadPolicy()):
    (c,) = parse_candidates(str(path), modality="text")
    return load_embedder(resolve_candidate(c, policy=policy), device="cpu", policy=policy)


def _adapter(folder, *weights: str) -> None:
    """Make ``folder`` a PEFT adapter: its adapter_config.json and the adapter weight files ``weights`` (a
    safetensors file with one tensor, a .bin that is no pickle at all: read, it would fail)."""
    import torch
    from safetensors.torch import save_file

    (folder / "adapter_config.json").write_text(json.dumps(ADAPTER))
    for name in weights:
        if name.endswith(".safetensors"):
            save_file({"lora_A": torch.zeros(2, 32)}, str(folder / name))
        else:
            (folder / name).write_bytes(b"a pickle")


@pytest.mark.fault
def test_a_peft_adapter_is_refused_without_peft_and_its_pickle_weights_without_the_opt_in(models, tmp_path,
                                                                                          monkeypatch):
    """transformers 5 loads a folder's PEFT adapter (adapter_config.json) only when peft is installed, reading
    adapter_model.safetensors, else adapter_model.bin (unpickled, use_safetensors=True or not); without peft it
    loads the model alone. peft is no dependency: the transformers backend ranked the base model under the
    adapter's name, and sentence-transformers failed with an ImportError that suggested another backend."""
    hf = shutil.copytree(models["hf_text"], tmp_path / "hf")
    _adapter(hf, "adapter_model.safetensors")
    monkeypatch.setattr(loader, "_peft_available", lambda: False, raising=False)  # as in the tests' environment
    with pytest.raises(ModelLoadError, match="PEFT adapter .*peft package is not installed") as ei:
        _load(hf)
    assert "adapter_config.json in the model folder" in str(ei.value) and "merge_and_unload" in str(ei.value)
    monkeypatch.setattr(loader, "_peft_available", lambda: True)  # peft installed: the safetensors adapter passes
    check_local_files(hf, "transformers", LoadPolicy(), "hf")

    (hf / "adapter_model.safetensors").unlink()
    _adapter(hf, "adapter_model.bin")  # read by load_adapter when there is no adapter_model.safetensors
    for peft in (True, False):  # refused whether or not peft is installed: the policy does not depend on it
        monkeypatch.setattr(loader, "_peft_available", lambda: peft)
        with pytest.raises(UnsafeModelError, match="allow_pickle") as ei:
            check_local_files(hf, "transformers", LoadPolicy(), "hf")
        assert ei.value.reason == "pickle_only" and "PEFT adapter" in str(ei.value)
        assert "adapter_model.bin" in str(ei.value)
    monkeypatch.setattr(loader, "_peft_available", lambda: True)
    check_local_files(hf, "transformers", LoadPolicy(allow_pickle=True), "hf")  # the opt-in lifts it
    _adapter(hf, "adapter_model.safetensors")  # read first: the pickle beside it is not read
    check_local_files(hf, "transformers", LoadPolicy(), "hf")

    st = shutil.copytree(models["st"], tmp_path / "st")  # sentence-transformers' Transformer at the root
    _adapter(st, "adapter_model.bin")
    with pytest.raises(UnsafeModelError, match="allow_pickle") as ei:
        _load(st)
    assert ei.value.reason == "pickle_only"
    monkeypatch.setattr(loader, "_peft_available", lambda: False)
    with pytest.raises(ModelLoadError, match="PEFT adapter"):
        _load(st, LoadPolicy(allow_pickle=True))


@pytest.mark.fault
def test_pickle_weights_named_by_transformers_weights_in_config_json_are_refused(models, tmp_path):
    """transformers 5 reads the file a config.json names in transformers_weights instead of its own order, and
    accepts one pickle name there (adapter_model.bin, else only safetensors): beside model.safetensors, that
    pickle is what gets read. The rule (weights_read's explicit) refused it; no test held it."""
    for name, backend in (("hf_text", "transformers"), ("st", "sentence-transformers")):
        d = shutil.copytree(models[name], tmp_path / name)
        config = json.loads((d / "config.json").read_text())
        (d / "config.json").write_text(json.dumps({**config, "transformers_weights": "adapter_model.bin"}))
        (d / "adapter_model.bin").write_bytes(b"a pickle")
        assert (d / "model.safetensors").is_file()
        with pytest.raises(UnsafeModelError, match="allow_pickle") as ei:
            check_local_files(d, backend, LoadPolicy(), name)
        assert ei.value.reason == "pickle_only" and "adapter_model.bin" in str(ei.value)
        check_local_files(d, backend, LoadPolicy(allow_pickle=True), name)  # the opt-in lifts it
        (d / "config.json").write_text(json.dumps({**config, "transformers_weights": "model.safetensors"}))
        check_local_files(d, backend, LoadPolicy(), name)  # a safetensors file named there: the pickle is not read


@pytest.mark.fault
def test_a_clipmodel_module_folder_is_read_by_transformers_rules(tmp_path):
    """sentence-transformers 6's CLIPModel module is a Transformer: transformers' from_pretrained reads its folder
    (model.safetensors, then the shard index, then pytorch_model.bin; a config.json's transformers_weights first).
    The check took it for a module read by load_torch_weights: it refused sharded safetensors beside a
    pytorch_model.bin, and let through a pickle its config.json names."""
    from transformers import CLIPModel

    clip = tm.make_tiny_clip(tmp_path / "clip")
    d = tmp_path / "st_clip"
    folder = d / "0_CLIPModel"
    CLIPModel.from_pretrained(clip).save_pretrained(folder, max_shard_size="40KB")
    (folder / "model.safetensors").unlink(missing_ok=True)
    assert (folder / "model.safetensors.index.json").is_file()
    (folder / "pytorch_model.bin").write_bytes(b"not a pickle at all")  # never read: the index is read first
    (d / "modules.json").write_text(json.dumps(
        [{"idx": 0, "name": "0", "path": "0_CLIPModel", "type": "sentence_transformers.models.CLIPModel"}]))
    check_local_files(d, "sentence-transformers", LoadPolicy(), "st_clip")

    decoy = tmp_path / "decoy"
    (decoy / "0_CLIPModel").mkdir(parents=True)
    shutil.copy(d / "modules.json", decoy)
    shutil.copy(clip / "model.safetensors", decoy / "0_CLIPModel")
    config = json.loads((clip / "config.json").read_text())
    (decoy / "0_CLIPModel" / "config.json").write_text(json.dumps({**config, "transformers_weights":
                                                                   "adapter_model.bin"}))
    (decoy / "0_CLIPModel" / "adapter_model.bin").write_bytes(b"a pickle")
    with pytest.raises(UnsafeModelError, match="0_CLIPModel/") as ei:
        check_local_files(decoy, "sentence-transformers", LoadPolicy(), "decoy")
    assert ei.value.reason == "pickle_only" and "adapter_model.bin" in str(ei.value)

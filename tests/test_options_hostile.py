"""Issue 47, backend options out of range: ``?max_length=-5`` (was a raw OverflowError), ``=0`` / ``=1`` (vectors
byte-identical to the untruncated model's while the run recorded the option) and a length past the model's longest
input are typed ConfigErrors naming the range; timm ``?resolution=4096`` on a small ViT (was a forward pass asking
for memory until the allocator failed) is refused before it runs, naming the largest resolution that fits."""

from __future__ import annotations

import numpy as np
import pytest

from embedselect.errors import ConfigError
from embedselect.models.backends import load_embedder
from embedselect.models.backends import device as device_mod
from embedselect.models.candidates import parse_candidates, resolve_candidate
from embedselect.models.policy import LoadPolicy
from testkit import tinymodels as tm

pytestmark = pytest.mark.usefixtures("one_thread")

TEXTS = ["the cat sat on the mat today", "a dog ran in the park quickly", "hello there"]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("opt-models")
    return {"st": tm.make_tiny_sentence_transformer(root / "st"), "tf": tm.make_tiny_transformers_text(root / "tf"),
            "vit": tm.make_tiny_timm(root / "vit"), "images": tm.make_tiny_images(root / "imgs", n=3)}


def _load(path, query: str, modality: str):
    (c,) = parse_candidates(str(path) + query, modality=modality)
    return load_embedder(resolve_candidate(c, policy=LoadPolicy()), device="cpu", policy=LoadPolicy())


@pytest.mark.fault
@pytest.mark.parametrize("kind", ["st", "tf"])
@pytest.mark.parametrize("value,match", [("-5", r"whole number of tokens \(1 or more\), got -5"),
                                         ("0", r"whole number of tokens \(1 or more\), got 0"),
                                         ("1", r"max_length=1 would not truncate .* takes 3 to \d+ tokens"),
                                         ("2", r"max_length=2 would not truncate .* adds 2 special tokens"),
                                         ("100000", r"max_length=100000 would not truncate .* longest input is \d+")],
                         ids=["-5", "0", "1", "2", "100000"])
def test_a_max_length_out_of_range_is_refused(models, kind, value, match):
    with pytest.raises(ConfigError, match=match):
        _load(models[kind], f"?max_length={value}", "text")


@pytest.mark.parametrize("kind", ["st", "tf"])
def test_the_shortest_accepted_max_length_changes_the_vectors_and_is_recorded(models, kind):
    whole = _load(models[kind], "", "text").embed(TEXTS)
    short = _load(models[kind], "?max_length=3", "text")
    assert short.settings()["max_length"] == 3
    assert not np.array_equal(short.embed(TEXTS), whole)


@pytest.mark.fault
def test_a_resolution_whose_one_image_does_not_fit_is_refused_before_it_runs(models, monkeypatch):
    with pytest.raises(ConfigError, match=r"resolution=4096 is too large for .* the largest resolution that fits is \d+"):
        _load(models["vit"], "?resolution=4096", "image")
    monkeypatch.setattr(device_mod, "available_memory", lambda device: 2 * 1024**3)  # 1 GiB for activations
    with pytest.raises(ConfigError, match=r"resolution=1024 .* 1\.0 GiB \(half of the free memory\)") as err:
        _load(models["vit"], "?resolution=1024", "image")
    largest = int(str(err.value).rsplit(" ", 1)[1])
    emb = _load(models["vit"], f"?resolution={largest}", "image")  # the resolution it names is accepted
    assert emb.max_batch == 1 and emb.settings()["input_size"] == [3, largest, largest]
    small = _load(models["vit"], "?resolution=48", "image")
    assert small.embed(models["images"]).shape == (3, 32) and small.max_batch >= 32

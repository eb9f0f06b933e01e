"""Hub repos whose layout the fetch must read from their own files, against the fake hub (testkit/hubserver.py): a
sentence-transformers Router saved below the repo's root (modules.json names its folder, router_config.json its
routes' folders), and a repo that holds only a PEFT adapter."""

from __future__ import annotations


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

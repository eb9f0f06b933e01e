"""One rule for the precision in an embedding run's cache key: the dtype the backend computes in."""

from __future__ import annotations

import pytest

import testkit.tinymodels as tm
from embedselect.config import RankConfig, Runtime
from embedselect.pipeline import context, pinning
from embedselect.models.backends.device import key_precision, resolve_dtype
from embedselect.data import ReferenceData
from embedselect.errors import ConfigError
from embedselect.ranking.result import CandidateResult
from embedselect.store import Store, run_key


@pytest.mark.parametrize(
    "dtype, device, label",
    [(None, "cpu", "fp32"), (None, "cuda", "fp16"), ("auto", "cuda:1", "fp16"), ("float32", "cuda", "fp32"),
     ("float16", "cpu", "fp16"), ("bfloat16", "cuda", "bf16"), ("FLOAT32", "cuda", "fp32")],
)
def test_the_key_precision_is_the_dtype_the_backend_computes_in(dtype, device, label):
    assert key_precision(dtype, device) == label
    assert label == {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}[resolve_dtype(dtype, device)]


def test_baselines_are_always_fp32_and_a_bad_dtype_is_a_config_error():
    assert key_precision("float16", "cuda", baseline=True) == "fp32"
    with pytest.raises(ConfigError, match="unknown dtype"):
        key_precision("float8", "cuda")


def test_an_explicit_float32_run_on_cuda_is_keyed_fp32_not_fp16(tmp_path):
    """The run key select() computes for a model with ?dtype=float32 on a CUDA device (the key is computed before
    any model is loaded, so a CPU machine can check it): it used to say fp16."""
    st_dir = tm.make_tiny_sentence_transformer(tmp_path / "st")
    ref = ReferenceData.from_texts([f"text number {i}" for i in range(8)])
    store = Store.open(tmp_path / "cache")
    ctx = context.run_context(ref, [f"st={st_dir}?dtype=float32"], store=store, config=RankConfig(),
                              runtime=Runtime(device="cpu"))
    ctx.device = "cuda"
    cand = ctx.candidates[0]
    res = CandidateResult(name=cand.name, spec=cand.spec)
    pinned = pinning.pin_candidate(ctx, cand, res, {"done": 0})
    rc = pinned.rc
    expect = run_key(model_id=rc.model_id, revision=rc.revision, backend=rc.backend, options={"dtype": "float32"},
                     fingerprint=ref.fingerprint, precision="fp32")
    assert pinned.key == expect

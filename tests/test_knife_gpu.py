"""KNIFE training on a CUDA device: the captured CUDA-graph step (embedselect.metrics.sufficiency.knife.engine.CUDA_GRAPHS) gives
the eager step's results (its kernels are the eager step's), with early stopping dropping pairs (each drop captures
the step again). Runs only where torch sees a CUDA device; the eager step it is checked against is the one the CPU
suite tests."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from embedselect.metrics.sufficiency.knife import engine
from embedselect.metrics.sufficiency.score import information_sufficiency
from testkit.tinymodels import latent_views

needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


def _pool(n: int = 3000, dims=(16, 24, 32, 48), seed: int = 3) -> dict[str, np.ndarray]:
    return latent_views(n, dims, seed, noise_step=0.3)


@needs_gpu
def test_cuda_graph_steps_give_the_eager_steps_scores(monkeypatch):
    captures = []

    class Counting(torch.cuda.CUDAGraph):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            captures.append(self)

    pool = _pool()
    opts = {"max_steps": 400, "eval_every": 20, "patience": 2, "min_steps": 40}
    monkeypatch.setattr(engine, "CUDA_GRAPHS", False)
    eager = information_sufficiency(pool, seed=0, device="cuda", **opts)
    monkeypatch.setattr(engine, "CUDA_GRAPHS", True)
    monkeypatch.setattr(torch.cuda, "CUDAGraph", Counting)
    graphed = information_sufficiency(pool, seed=0, device="cuda", **opts)
    assert captures, "no CUDA graph was captured"
    assert len({p["steps"] for p in graphed.pairs}) > 1, "every pair stopped at once: the recapture after a drop went untested"
    assert [p["steps"] for p in graphed.pairs] == [p["steps"] for p in eager.pairs]  # the same stopping decisions
    for k in pool:
        assert graphed.scores[k] == pytest.approx(eager.scores[k], rel=1e-5), k


@needs_gpu
def test_a_fixed_length_graph_run_matches_the_eager_run(monkeypatch):
    """No early stopping: both runs take the same 150 steps with the same kernels (the graph replays the eager
    step's), so their losses agree to float32 rounding."""
    pool = _pool(n=2000, dims=(16, 32, 48))
    opts = {"max_steps": 150, "patience": 10**6, "min_steps": 150}
    monkeypatch.setattr(engine, "CUDA_GRAPHS", False)
    eager = information_sufficiency(pool, seed=1, device="cuda", **opts)
    monkeypatch.setattr(engine, "CUDA_GRAPHS", True)
    graphed = information_sufficiency(pool, seed=1, device="cuda", **opts)
    key = [(p["source"], p["target"]) for p in eager.pairs]  # a pair appears once per repeat of the estimate
    assert [(p["source"], p["target"]) for p in graphed.pairs] == key and len(key) > 6
    for g, e in zip(graphed.pairs, eager.pairs):
        assert g["h_z_given_u"] == pytest.approx(e["h_z_given_u"], rel=1e-5), (g, e)

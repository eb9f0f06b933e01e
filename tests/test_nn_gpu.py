"""FAISS on the GPU (embedselect.nn.knn / nn_device): the CPU fallback gives the CPU answer, the GPU branch shards over
every visible GPU (exercised with a mocked FAISS on any machine), and on a CUDA machine the real GPU k-NN and
indexes agree with the CPU ones."""

from __future__ import annotations

import numpy as np
import pytest

from embedselect.config import Runtime

from embedselect.nn import knn as nn
from embedselect.nn import device as nn_device

faiss = pytest.importorskip("faiss")


def _has_cuda() -> bool:
    try:
        import torch

        if torch.cuda.is_available():
            return True
    except ImportError:  # pragma: no cover - torch is a core dependency
        pass
    return nn_device.num_gpus() > 0


needs_gpu = pytest.mark.skipif(not _has_cuda(), reason="no CUDA device")


def _data(n=600, d=16, seed=0):
    return np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)


@pytest.fixture
def fake_gpus(monkeypatch):
    """A FAISS that reports 4 working GPUs; cloning records its arguments and returns the CPU index itself."""
    calls: dict[str, list] = {"one": [], "multi": [], "to_cpu": [], "knn_gpu": []}

    class FakeResources:
        pass

    class FakeClonerOptions:
        shard = False

    def one(res, dev, index):
        calls["one"].append((res, dev))
        return index

    def multi(resources, index, co=None, gpus=None):
        calls["multi"].append((list(resources), co, list(gpus)))
        return index

    def to_cpu(index):
        calls["to_cpu"].append(index)
        return index

    def knn_gpu(res, xq, xb, k, metric=faiss.METRIC_L2, device=-1):
        calls["knn_gpu"].append((res, device, xq.shape, xb.shape))
        return faiss.knn(xq, xb, k, metric=metric)

    monkeypatch.setattr(faiss, "knn_gpu", knn_gpu, raising=False)
    monkeypatch.setattr(faiss, "StandardGpuResources", FakeResources, raising=False)
    monkeypatch.setattr(faiss, "GpuMultipleClonerOptions", FakeClonerOptions, raising=False)
    monkeypatch.setattr(faiss, "get_num_gpus", lambda: 4, raising=False)
    monkeypatch.setattr(faiss, "index_cpu_to_gpu", one, raising=False)
    monkeypatch.setattr(faiss, "index_cpu_to_gpu_multiple_py", multi, raising=False)
    monkeypatch.setattr(faiss, "index_gpu_to_cpu", to_cpu, raising=False)
    monkeypatch.setattr(nn_device, "_GPU_CHECK", [True])
    monkeypatch.setattr(nn_device, "_GPU_RESOURCES", {})
    return calls


def test_the_gpu_branch_shards_the_index_over_every_visible_gpu(fake_gpus):
    x = _data()
    index = nn.build_index(x, device="cuda", exact=True)
    [(resources, co, gpus)] = fake_gpus["multi"]
    assert gpus == [0, 1, 2, 3] and co.shard is True
    assert len({id(r) for r in resources}) == 4  # one resource object per GPU, kept for the process
    assert nn.index_device(index) == "cuda:0,1,2,3 (sharded)" and nn.is_exact(index)
    got = nn.knn(x, 5, device="cuda")
    assert got.device == "cuda:0,1,2,3 (sharded)"
    ref = nn.knn(x, 5, device="cpu")
    assert ref.device == "cpu"
    np.testing.assert_array_equal(got.ids, ref.ids)


def test_one_named_gpu_is_not_sharded_and_an_approximate_gpu_index_is_ivf(fake_gpus):
    x = _data(n=4000)
    index = nn.build_index(x, device="cuda:2", exact=True)
    assert [dev for _, dev in fake_gpus["one"]] == [2] and not fake_gpus["multi"]
    assert nn.index_device(index) == "cuda:2"
    ivf = nn.build_index(x, device="cuda", exact=False)
    # k-means trained on the first GPU, then the trained index sharded over all four
    assert [dev for _, dev in fake_gpus["one"]][1:] == [0] and fake_gpus["multi"][-1][2] == [0, 1, 2, 3]
    assert isinstance(ivf, faiss.IndexIVFFlat) and ivf.is_trained and ivf.ntotal == 4000 and not nn.is_exact(ivf)
    with pytest.raises(Exception, match="FAISS sees 4 GPU"):
        nn.build_index(x, device="cuda:7")


def test_auto_device_follows_faiss_gpu_support(fake_gpus, monkeypatch):
    assert nn_device.auto_device(None) == "cuda" and nn_device.auto_device("cuda:1") == "cuda:1"
    assert nn_device.auto_device("cpu") == "cpu" and nn_device.auto_device("mps") == "cpu"
    monkeypatch.setattr(nn_device, "_GPU_CHECK", [False])  # kernels fail here: the CPU, whatever was asked
    assert nn_device.auto_device(None) == "cpu" and nn_device.gpu_ids("cuda") == []


def test_ties_past_the_gpu_selection_limit_are_resolved_on_the_cpu(fake_gpus):
    """A GPU index answers at most 2048 neighbours; widening a tie past that moves the search to the CPU copy."""
    x = np.ones((3000, 4), dtype=np.float32)  # every row ties with every other
    index = nn.build_index(x, device="cuda:0", exact=True)
    s, i = nn.search_index(index, x[:3], 5)
    assert fake_gpus["to_cpu"]  # the widened search went to the CPU
    np.testing.assert_array_equal(i, np.tile(np.arange(5), (3, 1)))  # lower rows first, as brute force


def test_without_gpu_support_cuda_falls_back_to_the_cpu_answer(monkeypatch, caplog):
    monkeypatch.setattr(nn_device, "faiss_has_gpu", lambda: False)
    x = _data()
    with caplog.at_level("WARNING", logger="embedselect.nn.device"):
        got = nn.knn(x, 7, device="cuda")
    ref = nn.knn(x, 7)
    assert got.device == ref.device == "cpu" and "searching on CPU" in caplog.text
    np.testing.assert_array_equal(got.ids, ref.ids)
    np.testing.assert_array_equal(got.scores, ref.scores)
    nd = nn.near_duplicates(np.vstack([x, x[:3]]), device="cuda")
    assert nd.to_dict()["device"] == "cpu" and nd.n_drop == 3


@needs_gpu
def test_gpu_knn_equals_cpu_knn():
    x = _data(n=20_000, d=64, seed=3)
    ref = nn.knn(x, 10, exact=True)
    got = nn.knn(x, 10, exact=True, device="cuda")
    assert got.device.startswith("cuda")
    assert (got.ids == ref.ids).mean() >= 0.999
    np.testing.assert_allclose(got.scores, ref.scores, atol=1e-4)


@needs_gpu
def test_gpu_ivf_index_recall_and_cpu_copy():
    x = _data(n=50_000, d=32, seed=4)
    ivf = nn.build_index(x, exact=False, device="cuda")
    assert nn.index_device(ivf).startswith("cuda") and not nn.is_exact(ivf)
    _, got = nn.search_index(ivf, x[:200], 10)
    _, ref = nn.search_index(nn.build_index(x, exact=True), x[:200], 10)
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(got.tolist(), ref.tolist())])
    assert recall >= 0.9
    cpu = nn.to_cpu(ivf)
    assert type(cpu).__name__ == "IndexIVFFlat" and cpu.ntotal == 50_000


def test_nn_agreement_runs_its_knn_on_the_gpu_and_records_the_device(fake_gpus):
    from embedselect.metrics import MetricContext, get_metric

    rng = np.random.default_rng(5)
    z = rng.standard_normal((300, 8))
    emb = {f"c{i}": (z @ rng.standard_normal((8, 12)) + 0.5 * rng.standard_normal((300, 12))).astype(np.float32)
           for i in range(3)}
    metric = get_metric("nn_agreement")
    cpu = metric(MetricContext(embeddings=emb, run_keys={k: k for k in emb}, seed=0))
    gpu = metric(MetricContext(embeddings=emb, run_keys={k: k for k in emb}, seed=0, device="cuda"))
    assert cpu.details["knn_device"] == "cpu" and gpu.details["knn_device"] == "cuda:0,1,2,3 (sharded)"
    assert fake_gpus["multi"]  # the GPU branch was taken
    for k in emb:  # FAISS float32 vs float64 brute force: the same neighbours on tie-free data
        assert gpu.scores[k] == pytest.approx(cpu.scores[k], abs=1e-12)


def test_the_search_index_is_built_on_the_gpus_and_the_manifest_says_so(tmp_path, cache_dir, fake_gpus, one_thread):
    import json

    from embedselect.search import SearchIndex, build_index, search
    from testkit.tinymodels import make_tiny_sentence_transformer

    texts = [f"item {i} about {w}" for i, w in enumerate("cats dogs rain stocks bread goals trains music".split())]
    model = make_tiny_sentence_transformer(tmp_path / "st")
    out = tmp_path / "idx"
    idx = build_index(texts, str(model), out=out)  # device unset: FAISS on every (mocked) GPU, embedding on CPU
    assert idx.manifest.index_device == "cuda:0,1,2,3 (sharded)" and fake_gpus["multi"]
    assert fake_gpus["to_cpu"] and idx.manifest.index_type == "IndexFlatIP"  # written as the CPU index
    assert [h[0].row for h in search(out, texts, k=2)] == list(range(len(texts)))
    # a manifest written before index_device existed still loads (as built on the CPU)
    raw = json.loads((out / "manifest.json").read_text())
    del raw["index_device"]
    (out / "manifest.json").write_text(json.dumps(raw))
    assert SearchIndex.load(out).manifest.index_device == "cpu"
    cpu = build_index(texts, str(model), out=tmp_path / "idx-cpu", runtime=Runtime(device="cpu"))
    assert cpu.manifest.index_device == "cpu"


def test_the_html_report_says_where_the_nearest_neighbours_ran():
    from embedselect.publish.report import to_html
    from embedselect.ranking.result import CandidateResult, Ranking

    cand = CandidateResult(name="a", spec="a", model_id="local:a", revision="r", backend="sentence-transformers",
                           scores={"nn_agreement": 0.5}, ranks={"nn_agreement": 1}, combined_score=0.0, rank=1, dim=8)
    ranking = Ranking(candidates=[cand], metrics=["nn_agreement"], combine="mean-rank", dataset={"n": 10},
                      settings={"seed": 0}, versions={"embedselect": "0"}, created_at="2026-01-01",
                      details={"nn_agreement": {"knn_device": "cuda:0,1 (sharded)"}})
    assert "Nearest neighbours (FAISS) ran on: <code>cuda:0,1 (sharded)</code>" in to_html(ranking)
    ranking.details = {}
    assert "Nearest neighbours (FAISS)" not in to_html(ranking)


def test_an_approximate_gpu_index_is_tuned_to_its_recall_target_on_structureless_data(fake_gpus):
    """Isotropic noise is IVF's worst case: at the first nprobe (64 of 894 lists) recall@10 is about 0.78; the
    index raises nprobe on sampled indexed rows until nn_device.IVF_RECALL is reached (on the fake GPUs the IVF index is
    FAISS's CPU one, which searches as the GPU one does; the real GPU run is test_gpu_ivf_index_recall_and_cpu_copy)."""
    x = _data(n=50_000, d=32, seed=4)
    ivf = nn.build_index(x, exact=False, device="cuda:2")
    assert isinstance(ivf, faiss.IndexIVFFlat) and ivf.nprobe > nn.IVF_NPROBE
    # the sample's exact neighbours come from a brute-force search on the index's own GPU, not the CPU
    assert [(dev, q, xb) for _, dev, q, xb in fake_gpus["knn_gpu"]] == [(2, (nn.RECALL_SAMPLE, 32), (50_000, 32))]
    q = nn.prepare(x[-200:])  # rows outside the tuning sample's seed, searched as a user would
    _, got = nn.search_index(ivf, q, 10, prepared=True)
    _, ref = nn.search_index(nn.build_index(x, exact=True), q, 10, prepared=True)
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(got.tolist(), ref.tolist())])
    assert recall >= 0.9


def test_the_gpu_smoke_check_accepts_a_faiss_that_answers_correctly():
    """The child-process check that FAISS's GPU kernels run must pass when the search is right: run on the CPU
    (the GPU clone removed), its own assertion holds. It once searched unnormalised rows by inner product and
    expected each row to be its own nearest, which fails on every GPU, so FAISS never ran there."""
    code = nn_device._GPU_SMOKE.replace("faiss.index_cpu_to_gpu(faiss.StandardGpuResources(), 0, ", "(")
    assert code != nn_device._GPU_SMOKE
    ok, reason = nn_device.gpu_smoke_test(code)
    assert ok, reason


def test_an_approximate_knn_on_the_gpu_checks_its_recall_there(fake_gpus):
    """nn.knn measures an approximate search's recall against exact neighbours of sampled queries; when the search
    ran on the GPUs, so does that brute-force search (on the first GPU of a sharded index)."""
    x = _data(n=3_000, d=16, seed=5)
    nb = nn.knn(x, 5, exact=False, device="cuda")
    assert nb.device == "cuda:0,1,2,3 (sharded)" and nb.recall is not None and nb.recall > 0.5
    assert [dev for _, dev, _, _ in fake_gpus["knn_gpu"]] == [0, 0]  # the IVF tuning, then the recall check
    assert nn.index_gpus(nn.build_index(x, exact=False, device="cuda")) == (0, 1, 2, 3)
    assert nn.index_gpus(nn.build_index(x, exact=False, device="cpu")) == ()

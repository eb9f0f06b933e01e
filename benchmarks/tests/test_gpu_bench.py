"""The CPU half of benchmarks/gpu.py runs in the suite (CI sizes), so the GPU script cannot rot."""

from __future__ import annotations

import json

import pytest


def _gpu_module():
    from benchmarks import gpu

    return gpu


@pytest.mark.slow  # every section of the script: about 13 s (pytest --durations); `make test` runs it
def test_cpu_half_of_the_gpu_script_runs_every_section_and_every_check_passes(tmp_path, one_thread):
    gpu = _gpu_module()
    out, md = tmp_path / "gpu.json", tmp_path / "gpu.md"
    code = gpu.main(["--ci", "--device", "cpu", "--sections", "embed,moments,probes,sufficiency,faiss", "--out", str(out),
                     "--markdown", str(md)])
    result = json.loads(out.read_text())
    failed = [r for r in result["rows"] if not r["ok"]]
    assert code == 0 and result["ok"], failed
    assert result["device"] == "cpu" and result["ci"] is True
    sections = [r["section"] for r in result["rows"]]
    assert sections == ["embed", "embed", "embed", "moments", "probes", "sufficiency", "faiss"]
    assert {r["case"].split(" ")[0] for r in result["rows"] if r["section"] == "embed"} == {
        "sentence-transformers", "transformers", "timm"}
    for r in result["rows"]:
        assert r["cpu_s"] > 0 and r["device_s"] > 0
    moments = next(r for r in result["rows"] if r["section"] == "moments")
    assert moments["gemm_floor_s"] > 0
    suff = next(r for r in result["rows"] if r["section"] == "sufficiency")
    assert suff["one_pair_at_a_time_s"] > 0
    table = md.read_text()
    assert table.count("\n| ") == 1 + 7 and "**NO**" not in table  # header + one line per row


def test_a_failing_section_is_reported_not_hidden(monkeypatch):
    gpu = _gpu_module()

    def broken(dev, ci):
        raise RuntimeError("CUDA error: out of memory")

    monkeypatch.setitem(gpu.SECTIONS, "faiss", broken)
    result = gpu.run(ci=True, device="cpu", sections=["faiss"])
    assert not result["ok"] and result["rows"][0]["check"] == "RuntimeError: CUDA error: out of memory"
    assert "**NO**" in gpu.markdown(result)
    with pytest.raises(SystemExit):
        gpu.main(["--ci", "--sections", "nope"])


@pytest.mark.slow
def test_the_at_scale_sections_run_on_cpu_at_a_tiny_n(tmp_path, one_thread):
    """e2e (rank, raw encode, k-NN, index, search) and faiss_scale (CPU vs device at two sizes) at a tiny n on the
    CPU: every stage is reported with its time and host memory, the ratios are computed, the checks pass."""
    gpu = _gpu_module()
    out = tmp_path / "gpu.json"
    code = gpu.main(["--ci", "--device", "cpu", "--sections", "e2e,faiss_scale", "--n", "200", "--faiss-sizes",
                     "300,600", "--metrics", "rankme,nn_agreement", "--out", str(out)])
    result = json.loads(out.read_text())
    assert code == 0 and result["ok"], [r for r in result["rows"] if not r["ok"]]
    e2e = [r for r in result["rows"] if r["section"] == "e2e"]
    stages = [r["case"] for r in e2e]
    for want in ("select (whole rank)", "select: minilm: embed", "select: metric rankme", "raw SentenceTransformer"
                 ".encode: minilm", "raw SentenceTransformer.encode: mpnet", "k-NN: 10-NN graph", "index: build_index",
                 "search: 200 queries"):
        assert any(c.startswith(want) for c in stages), (want, stages)
    assert all(r["device_s"] > 0 and r["peak_host_mib"] > 0 for r in e2e[:-1])
    summary = e2e[-1]
    assert summary["rank_over_encode"] == pytest.approx(summary["device_s"] / summary["raw_encode_s"])
    assert summary["knn_device"] == "cpu" and summary["index_device"] == "cpu"
    scale = [r for r in result["rows"] if r["section"] == "faiss_scale"]
    assert len(scale) == 4 and {r["case"].split(" ")[0] for r in scale} == {"exact", "approximate"}
    assert all(r["build_ratio"] > 0 and r["search_ratio"] > 0 for r in scale)

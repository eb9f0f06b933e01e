"""benchmarks/bench_scale.py runs end to end in a CI-sized form, so that it cannot rot."""

from __future__ import annotations

import json

from benchmarks.bench_scale import main, synthetic_texts


def test_synthetic_texts_are_seeded_and_varied():
    a, topics = synthetic_texts(300, seed=1)
    assert a == synthetic_texts(300, seed=1)[0] and a != synthetic_texts(300, seed=2)[0]
    assert len(set(a)) == 300 and topics.shape == (300,) and len(set(topics.tolist())) == 12


def test_bench_scale_small(tmp_path, cache_dir):
    out = tmp_path / "scale.json"
    result = main(["--n", "300", "--metrics", "task_prior", "--json", str(out)])
    stages = [r["stage"] for r in result["stages"]]
    assert stages[:2] == ["generate 300 texts", "load + fingerprint"]
    assert "tfidf-svd: embed 300 text items" in stages and "metric task_prior" in stages
    assert stages[-1] == "select again (all cached)"
    assert all(r["seconds"] >= 0 and r["peak_rss_mib"] > 0 for r in result["stages"])
    assert json.loads(out.read_text())["n"] == 300 and len(result["ranking"]) == 2
    assert result["n_candidates"] == 2 and result["vectors_mib"]["all"] >= result["vectors_mib"]["largest"] >= 0
    assert "select (whole first run)" in stages
    assert all(0 <= r["peak_anon_mib"] <= r["peak_rss_mib"] for r in result["stages"])

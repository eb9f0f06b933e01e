"""benchmarks/bench_data.py: importing it runs nothing (it used to write 100 000 rows and 500 JPEGs at import), and
its main() times each format on a CI-sized input."""

from __future__ import annotations

import importlib
import sys


def test_importing_bench_data_runs_nothing(monkeypatch, capsys):
    import embedselect.data

    def refuse(*a, **k):
        raise AssertionError("bench_data loaded data at import")

    monkeypatch.setattr(embedselect.data.ReferenceData, "from_file", refuse)
    monkeypatch.setattr(sys, "argv", ["bench_data", "10", "1"])
    sys.modules.pop("benchmarks.bench_data", None)
    mod = importlib.import_module("benchmarks.bench_data")
    assert callable(mod.main) and capsys.readouterr().out == ""


def test_bench_data_main_times_each_format(capsys):
    from benchmarks.bench_data import main, run

    main(["50", "2"])
    out = capsys.readouterr().out
    assert all(f"{name:10s} 50 rows -> 50 items" in out for name in ("d.csv", "d.jsonl", "d.parquet", "d.txt"))
    assert "images     2 JPEG 224x224" in out
    assert set(run(20, 1)) == {"d.csv", "d.jsonl", "d.parquet", "d.txt", "images"}

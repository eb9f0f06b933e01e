"""Issue 47, hostile data files: a file name with a byte that is not UTF-8 (the dataset's source is stored with a
``\\xNN`` escape), a JSON document or JSONL line nested 200 000 deep, and a JSONL number of 100 001 digits (a typed
DecodeError naming the line; skipped and counted with ``--on-error skip``)."""

from __future__ import annotations

import json
import os

import pytest

from embedselect.cli import main
from embedselect.data import ReferenceData
from embedselect.errors import DataError, DecodeError
from embedselect.store import Store

TEXTS = [f"item number {i} about the {w}" for i in range(15) for w in ("cat", "dog")]


@pytest.mark.fault
def test_a_data_file_whose_name_is_not_utf8_is_embedded_and_recorded(tmp_path, capsys):
    name = os.fsencode(tmp_path) + b"/caf\xe9.csv"
    with open(name, "wb") as fh:
        fh.write(b"text\n" + "".join(t + "\n" for t in TEXTS).encode())
    path = os.fsdecode(name)
    ref = ReferenceData.load(path, column="text")
    assert ref.source.endswith("caf\\xe9.csv")
    json.dumps(ref.to_dict(), ensure_ascii=False).encode("utf-8")  # storable and printable as UTF-8
    cache = tmp_path / "cache"
    code = main(["embed", path, "-c", "text", "-m", "random-projection?dim=8", "--cache-dir", str(cache)])
    err = capsys.readouterr().err
    assert code == 0, err
    sources = Store.open(cache).query_df("SELECT source FROM datasets")["source"].tolist()
    assert sources == [ref.source]


def _deep(n: int) -> str:
    return "[" * n + "]" * n


@pytest.mark.fault
def test_a_json_document_nested_200000_deep_is_a_decode_error(tmp_path):
    p = tmp_path / "deep.json"
    p.write_text(_deep(200_000))
    for on_error in ("fail", "skip"):
        with pytest.raises(DecodeError, match="not valid JSON: nested too deeply"):
            ReferenceData.load(p, column="text", on_error=on_error)


def _jsonl(tmp_path, bad: dict[int, str]):
    lines = [json.dumps({"text": t}) for t in TEXTS]
    for i, line in bad.items():
        lines[i] = line
    p = tmp_path / "data.jsonl"
    p.write_text("\n".join(lines) + "\n")
    return p


@pytest.mark.fault
def test_jsonl_lines_nested_too_deep_or_with_a_100001_digit_number(tmp_path, capsys):
    p = _jsonl(tmp_path, {4: '{"text": ' + _deep(200_000) + "}", 8: '{"text": "x", "n": ' + "7" * 100_001 + "}"})
    with pytest.raises(DataError, match=r"rows 5, 9; first: invalid JSON on line 5: nested too deeply") as err:
        ReferenceData.load(p, column="text")
    assert isinstance(err.value, DecodeError)
    ref = ReferenceData.load(p, column="text", on_error="skip")
    assert len(ref) == len(TEXTS) - 2 and ref.report.n_skipped_undecodable == 2
    reasons = " ".join(e["reason"] for e in ref.report.skipped_examples)
    assert "line 5: nested too deeply" in reasons and "line 9: a number of more than" in reasons
    code = main(["embed", str(p), "-c", "text", "-m", "random-projection?dim=8", "--cache-dir", str(tmp_path / "c")])
    out = capsys.readouterr()
    assert code == 3 and "Traceback" not in out.err and "line 5" in out.err

"""Badges (SVG + shields.io endpoint), safe file names, stored-ranking history and the leaderboard, CLI."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from embedselect.cli import main
from embedselect.publish import badges, leaderboard, safe_filename, write_badges
from embedselect.ranking import CandidateResult, Ranking
from embedselect.store import Store
from embedselect.store.rankings import RankingNotFoundError, get_ranking, latest_ranking, previous_ranking

SVG = "{http://www.w3.org/2000/svg}"
EVIL = "<script>alert(1)</script>"
FP = "ab" * 32


def _ranking(order: list[str], scores: list[float], rid: str, *, failed: list[str] = ()) -> Ranking:
    cands = [
        CandidateResult(name=n, spec=n, model_id=n, scores={"task_prior": s}, ranks={"task_prior": i},
                        combined_score=s, rank=i, dim=8, intervals={"task_prior": [s - 0.1, s + 0.1]})
        for i, (n, s) in enumerate(zip(order, scores), start=1)
    ]  # fmt: skip
    cands += [CandidateResult(name=n, spec=n, status="failed", error_type="ModelLoadError", error="x") for n in failed]
    return Ranking(
        candidates=cands, metrics=["task_prior"], combine="mean-rank",
        dataset={"source": "/data/reviews.csv", "n": 100, "modality": "text", "fingerprint": FP},
        settings={"seed": 0}, versions={"embedselect": "0"}, ranking_id=rid, created_at="2026-01-01",
    )  # fmt: skip


def _save(store: Store, r: Ranking) -> None:
    store.save_ranking(r.ranking_id, r.to_dict(), [])


# --- endpoint JSON schema (shields.io "endpoint" badge, schemaVersion 1) ---------------------------------
def _valid_endpoint(doc: dict) -> None:
    assert doc["schemaVersion"] == 1
    assert isinstance(doc["label"], str) and isinstance(doc["message"], str) and doc["message"]
    allowed = {"schemaVersion", "label", "message", "color", "labelColor", "isError", "namedLogo", "logoSvg",
               "logoColor", "logoWidth", "style", "cacheSeconds"}  # fmt: skip
    assert set(doc) <= allowed
    assert doc["color"] in {"brightgreen", "green", "yellowgreen", "yellow", "orange", "red", "lightgrey", "blue"}


def test_badges_parse_as_svg_and_show_rank_of_n():
    r = _ranking(["a/m1", EVIL, "c/m3"], [0.9, 0.5, 0.1], "r1", failed=["broken/x"])
    bs = badges(r)
    assert [b.message for b in bs[:3]] == ["#1 of 3 · reviews.csv", "#2 of 3 · reviews.csv", "#3 of 3 · reviews.csv"]
    assert bs[3].message.startswith("failed") and bs[3].rank is None
    for b in bs:
        root = ET.fromstring(b.svg.encode())  # parses: the hostile name cannot break the XML
        assert root.tag == f"{SVG}svg"
        texts = "".join(t.text or "" for t in root.iter(f"{SVG}text"))
        assert b.message in texts and "embedselect" in texts
        assert "http" not in b.svg.replace("http://www.w3.org/2000/svg", "")  # nothing fetched
        _valid_endpoint(b.endpoint)
    assert bs[0].colour == "brightgreen" and bs[2].colour == "orange"


@pytest.mark.parametrize("name", ["../../etc/passwd", "/abs/path", "..", "", "ünï/cødé模型", "a\\b\x00c", "x" * 500])
def test_safe_filename_never_escapes_the_directory(name, tmp_path):
    f = safe_filename(name, suffix=".svg")
    assert "/" not in f and "\\" not in f and "\x00" not in f and not f.startswith(".")
    assert len(f) <= 100 and f.isascii()
    assert (tmp_path / f).resolve().parent == tmp_path.resolve()
    assert safe_filename("a/b") != safe_filename("a_b")  # distinct ids never share a file


def test_write_badges_writes_inside_out_dir_only(tmp_path):
    r = _ranking(["../../etc/passwd", "ünï/cødé"], [0.9, 0.2], "r1")
    out = tmp_path / "badges"
    index = write_badges(r, out, base_url="https://example.org/b")
    files = sorted(p.name for p in out.iterdir())
    assert len(files) == 5 and "index.json" in files  # 2 svg + 2 json + index
    assert not (tmp_path / "etc").exists()
    assert json.loads((out / "index.json").read_text()) == index
    for e in index:
        _valid_endpoint(json.loads((out / e["endpoint"]).read_text()))
        ET.fromstring((out / e["svg"]).read_bytes())
        assert e["markdown"].startswith("![embedselect: #") and "https://example.org/b/" in e["markdown"]
        assert e["shields_markdown"].startswith("![embedselect](https://img.shields.io/endpoint?url=https%3A")


def test_store_queries_and_leaderboard_history(tmp_path):
    store = Store.open(tmp_path / "store")
    old = _ranking(["m1", "m2", "m3"], [0.9, 0.5, 0.1], "aaaa1111")
    _save(store, old)
    other_set = _ranking(["m3", "m4"], [0.3, 0.2], "bbbb2222")  # same data, different candidate set
    _save(store, other_set)
    new = _ranking(["m2", "m1", "m3"], [0.8, 0.7, 0.2], "cccc3333")
    _save(store, new)

    assert get_ranking(store, "cccc").ranking_id == "cccc3333"
    assert latest_ranking(store, FP[:8]).ranking_id == "cccc3333"
    with pytest.raises(RankingNotFoundError, match="no stored ranking"):
        get_ranking(store, "dddd")
    with pytest.raises(RankingNotFoundError, match="dataset"):
        latest_ranking(store, "ffff")

    prev = previous_ranking(store, new)
    assert prev is not None and prev.ranking_id == "aaaa1111"  # same candidate set, skipping bbbb2222
    rows = {r["candidate"]: r for r in leaderboard.leaderboard_rows(new, prev)}
    assert rows["m2"]["rank_change"] == 1 and rows["m1"]["rank_change"] == -1 and rows["m3"]["rank_change"] == 0
    assert rows["m2"]["score_change"] == pytest.approx(0.3)
    assert not any(r["new"] for r in rows.values())

    newer = _ranking(["m5", "m2"], [0.95, 0.4], "dddd4444")
    _save(store, newer)
    assert previous_ranking(store, newer) is None  # no earlier ranking with this exact set
    loose = previous_ranking(store, newer, same_candidates=False)
    assert loose.ranking_id == "cccc3333"
    rows = {r["candidate"]: r for r in leaderboard.leaderboard_rows(newer, loose)}
    assert rows["m5"]["new"] is True and rows["m2"]["rank_change"] == -1

    md = leaderboard.to_markdown(newer, loose)
    assert "| 1 | new | m5 |" in md and "▼1" in md
    doc = json.loads(leaderboard.to_json(newer, loose))
    assert doc["previous_ranking_id"] == "cccc3333" and doc["rows"][0]["new"] is True


def test_leaderboard_html_escapes_names():
    r = _ranking([EVIL], [0.5], "r1")
    h = leaderboard.to_html(r)
    assert "<script>" not in h and "&lt;script&gt;" in h


def test_cli_badge_leaderboard_report(tmp_path, capsys):
    store = Store.open(tmp_path / "store")
    _save(store, _ranking(["m1", "m2"], [0.9, 0.5], "aaaa1111"))
    _save(store, _ranking(["m2", "m1"], [0.8, 0.7], "bbbb2222"))
    cd = ["--cache-dir", str(tmp_path / "store")]
    assert main(["badge", *cd, "--out-dir", str(tmp_path / "b"), "--json"]) == 0
    index = json.loads(capsys.readouterr().out)
    assert [e["message"] for e in index] == ["#1 of 2 · reviews.csv", "#2 of 2 · reviews.csv"]
    assert index[0]["candidate"] == "m2"  # the latest ranking

    assert main(["leaderboard", *cd, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ranking_id"] == "bbbb2222" and doc["previous_ranking_id"] == "aaaa1111"
    assert doc["rows"][0]["rank_change"] == 1

    assert main(["leaderboard", *cd, "--ranking", "aaaa", "--format", "markdown"]) == 0
    assert "| 1 | – | m1 |" in capsys.readouterr().out  # the first ranking has no history

    out = tmp_path / "r.html"
    assert main(["report", *cd, "--dataset", FP[:6], "-o", str(out)]) == 0
    assert "m1" in out.read_text()

    assert main(["report", *cd, "--ranking", "zzzz", "-o", str(out)]) != 0
    assert "no stored ranking" in capsys.readouterr().err

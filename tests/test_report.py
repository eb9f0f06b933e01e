"""HTML report and Markdown leaderboard: complete, and safe with hostile hub-provided text."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from embedselect.cli import main
from embedselect.data import sample_path
from embedselect.ranking.result import CandidateResult, Ranking
from embedselect.publish.report import to_html, to_markdown

EVIL = '<script>alert("x")</script> | [click](javascript:alert(1)) <img src=x onerror=alert(1)>'


def _ranking() -> Ranking:
    good = CandidateResult(
        name=EVIL, spec=EVIL, model_id=f"acme/{EVIL}", revision="a" * 40, backend="sentence-transformers",
        scores={"task_prior": 0.8}, ranks={"task_prior": 1}, combined_score=1.0, rank=1, dim=384,
    )
    other = CandidateResult(
        name="tfidf-svd", spec="tfidf-svd", model_id="baseline:tfidf-svd", revision="builtin",
        scores={"task_prior": 0.2}, ranks={"task_prior": 2}, combined_score=0.0, rank=2, dim=64,
    )
    bad = CandidateResult(name="broken", spec="broken", status="failed", error_type="ModelLoadError", error=EVIL)
    return Ranking(
        candidates=[good, other, bad], metrics=["task_prior"], combine="mean-rank",
        dataset={"source": EVIL, "n": 240, "modality": "text", "fingerprint": "f" * 64},
        settings={"seed": 0}, versions={"embedselect": "0.1.0"}, warnings=[EVIL], created_at="2026-01-01",
    )


class _Collector(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [k for k, _ in attrs]

    def handle_data(self, data):
        self.text.append(data)


@pytest.mark.fault
def test_html_escapes_untrusted_text_and_shows_every_candidate():
    page = to_html(_ranking())
    parsed = _Collector()
    parsed.feed(page)
    assert "script" not in parsed.tags and "img" not in parsed.tags
    assert not any(a.startswith("on") for a in parsed.attrs)
    text = "".join(parsed.text)
    assert EVIL in text  # shown to the reader, as text
    assert "tfidf-svd" in text and "broken" in text and "ModelLoadError" in text


@pytest.mark.fault
def test_markdown_table_cannot_be_broken_out_of():
    md = to_markdown(_ranking())
    rows = [line for line in md.splitlines() if line.startswith("| ") and "tfidf" not in line]
    header_cells = md.splitlines()[0].count(" | ")
    for line in md.splitlines()[2:4]:
        assert line.replace("\\|", "").count(" | ") == header_cells  # no extra cells
    assert "<script>" not in md and "](javascript" not in md
    assert rows


def test_cli_writes_html_and_markdown(tmp_path, capsys):
    html_path, md_path = tmp_path / "r.html", tmp_path / "r.md"
    code = main(["rank", str(sample_path("texts")), "-c", "text", "-m", "tfidf-svd,random-projection",
                 "--metrics", "task_prior", "--cache-dir", str(tmp_path / "c"), "-q",
                 "--html", str(html_path), "--markdown", str(md_path)])
    assert code == 0
    assert "random-projection" in html_path.read_text() and html_path.read_text().startswith("<!DOCTYPE html>")
    head, table = md_path.read_text().split("\n", 1)  # the first line: the generator mark (a Markdown comment)
    assert head.startswith("<!-- generator: embedselect") and table.count("\n| ") == 2


def test_html_says_what_the_score_is_and_its_weights(tmp_path):
    import embedselect

    r = embedselect.select(str(sample_path("texts")), ["tfidf-svd", "random-projection", "tfidf-svd?dim=16"],
                           column="text", labels="label", metrics=["task_prior", "rankme"], cache_dir=tmp_path / "c",
                           weights={"rankme": 0.5})
    html = to_html(r, plots=False)
    assert "weighted mean rank (1 = first in every metric)" in html and "task_prior × 1" in html and "rankme × 0.5" in html
    # a metric that scored no candidate (rankme capped by the item count for every one) is not said to be in the score
    capped = embedselect.select(str(sample_path("texts")), ["tfidf-svd", "random-projection"], column="text",
                                metrics=["task_prior", "rankme"], cache_dir=tmp_path / "c")
    page = to_html(capped, plots=False)
    assert "task_prior × 1" in page and "rankme × 1" not in page and "shown, not in the score: rankme" in page
    # the check against the labels: each accuracy with its interval, chance, and the wrongly ordered pairs
    acc = r.validation["table"]["tfidf-svd"]
    assert f"[{acc['logistic_acc_lo']:.4g}, {acc['logistic_acc_hi']:.4g}]" in html
    assert "chance (always the most frequent class)" in html and "ranked the wrong way round" in html
    wrong = next(m for m in r.validation["metrics"] if m["wrong_pairs"])["wrong_pairs"][0]
    assert f"{wrong['ranked_higher']} above {wrong['ranked_lower']}" in html

"""A candidate that fails (a checkpoint without some of its weights: ModelLoadError) in every output of a ranking: it
is said once, with its reason, and nothing says it was embedded, cached or ranked."""

from __future__ import annotations

import json

import pytest

from embedselect.cli import main
from embedselect.data import sample_path
from embedselect.publish import leaderboard as lb
from embedselect.publish.badges import badge_for
from embedselect.publish.cards import update_card
from embedselect.ranking.result import CandidateResult, Ranking
from testkit import tinymodels as tm

pytestmark = pytest.mark.usefixtures("one_thread")

SAMPLE = str(sample_path("texts"))
REASON = "of the model are not in its checkpoint"


@pytest.fixture
def ranked(tmp_path, cache_dir, capsys):
    """``rank`` of two baselines and a model whose checkpoint lacks a layer: its JSON, its HTML, its table."""
    broken = tm.make_tiny_sentence_transformer(tmp_path / "st")
    tm.drop_checkpoint_weights(broken, "encoder.layer.1.")
    out, html = tmp_path / "r.json", tmp_path / "r.html"
    code = main(["rank", SAMPLE, "-c", "text", "-m", f"tfidf-svd,random-projection,broken={broken}",
                 "--metrics", "task_prior", "--out", str(out), "--html", str(html), "-q"])
    table = capsys.readouterr().out
    assert code == 0
    return Ranking.from_json(out.read_text(encoding="utf-8")), html.read_text(encoding="utf-8"), table


@pytest.mark.fault
def test_a_failed_candidate_is_said_once_with_its_reason_and_never_as_embedded(ranked, tmp_path, capsys):
    """Its row said 240 items embedded and 0 read from the cache (the JSON's ``embedded_items``, the table's ``cached``
    ``no``): counts set before the load that failed. The HTML said its reason only in the last column, out of sight
    beside a blank row; the leaderboard did not name it at all."""
    ranking, html, table = ranked
    c = ranking["broken"]
    assert c.error_type == "ModelLoadError" and REASON in (c.error or "")
    assert (c.cached, c.embedded_items, c.stored_items, c.rank, c.scores) == (None, None, None, None, {})
    row = next(line for line in table.splitlines() if line.startswith("-") and "broken" in line).split()
    assert row[-2:] == ["-", "FAILED:ModelLoadError"] or row[-3:] == ["-", "FAILED:", "ModelLoadError"], row
    assert table.count(REASON) == 1
    # HTML: the reason is the cell beside the name, spanning the score and metric columns
    assert html.count(REASON) == 1
    assert '<td class="name"><span class="nb">broken</span></td><td class="why" colspan="2">failed: ModelLoadError: ' in html
    # the leaderboard (Markdown and HTML) ranks the others and names it under the table, once, with its reason
    md, page = lb.to_markdown(ranking), lb.to_html(ranking)
    assert "| broken |" not in md and md.count(REASON) == 1 and "- failed: broken — ModelLoadError: " in md
    assert page.count(REASON) == 1 and ">broken</td>" not in page
    # badges only for the ranked; a card for it is refused with its reason
    assert main(["badge", "--out", str(tmp_path / "b")]) == 0
    assert "broken" not in capsys.readouterr().out
    assert main(["card", "--candidate", "broken", "--out", str(tmp_path / "card.md")]) == 2
    assert "failed in this ranking (ModelLoadError)" in capsys.readouterr().err
    assert json.loads((tmp_path / "b" / next(p.name for p in (tmp_path / "b").glob("tfidf-svd-*.json"))).read_text())


def _undecided() -> Ranking:
    """Leaders a (first row) and c (third): b, between them, is not a leader (a reference point, say)."""
    cands = [CandidateResult(name=n, spec=n, scores={"task_prior": s}, ranks={"task_prior": r}, combined_score=s,
                             rank=r, dim=8) for n, s, r in (("a", 0.9, 1), ("b", 0.5, 2), ("c", 0.2, 3))]
    return Ranking(candidates=cands, metrics=["task_prior"], combine="mean-rank",
                   dataset={"source": "texts.csv", "n": 240, "modality": "text", "fingerprint": "f" * 64},
                   settings={"seed": 0}, versions={"embedselect": "0.1.0"}, created_at="2026-01-01",
                   ranking_id="r" * 32, decided=False, leaders=["a", "c"], undecided_reasons=["a is a baseline"])


def test_a_tied_leaders_card_says_what_its_badge_says():
    """The badge said "tied #1 of 3" and the sentence under it "Ranked #3 of 3", without naming the leaders."""
    r = _undecided()
    assert "tied #1 of 3" in badge_for(r, "c").message and "#2 of 3" in badge_for(r, "b").message
    card = update_card(None, r, "c")
    assert "Ranked **tied #1 of 3** (#3 by combined score) by" in card
    assert "The leading candidates (a, c) could not be told apart: a is a baseline." in card
    assert "Ranked **#2 of 3** by" in update_card(None, r, "b")
    assert "Ranked **tied #1 of 3** by" in update_card(None, r, "a")


@pytest.mark.fault
def test_ask_says_a_candidate_that_failed_as_rank_does(ranked, tmp_path, capsys, caplog):
    """``ask`` over a pool with a candidate that failed asked its questions from the others and said nothing of it
    (CLI and ``embedselect.ask()``): it says it as ``rank`` does, a ``!`` line, a note on stderr under ``--json``,
    ``--strict``'s line and exit 8, and ``strict=True`` / a warning and ``attrs["failed"]`` from Python."""
    import embedselect
    from embedselect.errors import CandidatesFailedError

    pool = f"tfidf-svd,random-projection,broken={tmp_path / 'st'}"
    args = ["ask", SAMPLE, "-c", "text", "-m", pool, "-n", "3"]
    assert main([*args, "--out", str(tmp_path / "q.csv")]) == 0
    out = capsys.readouterr().out
    assert out.count(REASON) == 1 and "\n! broken: " in out
    assert main([*args, "--json"]) == 0
    cap = capsys.readouterr()
    assert len(json.loads(cap.out)) == 3 and REASON not in cap.out
    assert cap.err.count(REASON) == 1 and "note: broken failed (ModelLoadError): " in cap.err
    assert main([*args, "--json", "--strict"]) == 8
    cap = capsys.readouterr()
    assert len(json.loads(cap.out)) == 3
    assert cap.err.count(REASON) == 1 and "--strict: 1 candidate(s) failed: broken (ModelLoadError: " in cap.err
    with caplog.at_level("WARNING", logger="embedselect"):
        df = embedselect.ask(SAMPLE, pool, column="text", n=3)
    assert len(df) == 3 and list(df.attrs["failed"]) == ["broken"] and REASON in df.attrs["failed"]["broken"]
    assert sum(REASON in r.getMessage() for r in caplog.records) == 1
    with pytest.raises(CandidatesFailedError) as info:
        embedselect.ask(SAMPLE, pool, column="text", n=3, strict=True)
    assert info.value.failed == ["broken"] and REASON in str(info.value)

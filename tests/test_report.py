"""HTML report and Markdown leaderboard: complete, and safe with hostile hub-provided text."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from embedselect.cli import main
from embedselect.data import sample_path
from embedselect.ranking.result import CandidateResult, Ranking, RankingWarning
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


def _with_retrieval() -> Ranking:
    r = _ranking()
    r.retrieval = {
        "queries": {"source": EVIL, "n_queries": 9, "fingerprint": "q" * 64, "relevant_per_query": 1.111},
        "prompts": {EVIL: {"query": "query", "document": "passage"}, "tfidf-svd": {"query": None, "document": None}},
        "scores": {
            "tfidf-svd": {"mrr@10": 0.4, "mrr@10_lo": 0.25, "mrr@10_hi": 0.55, "ndcg@10": 0.45, "ndcg@10_lo": 0.3,
                          "ndcg@10_hi": 0.6, "recall@1": 0.3, "recall@1_lo": 0.1, "recall@1_hi": 0.5,
                          "recall@10": 0.8, "recall@10_lo": 0.6, "recall@10_hi": 1.0, "n_queries": 9,
                          "n_documents": 240},
            EVIL: {"mrr@10": 0.9, "mrr@10_lo": 0.8, "mrr@10_hi": 1.0, "ndcg@10": 0.92, "ndcg@10_lo": 0.85,
                   "ndcg@10_hi": 1.0, "recall@1": 0.875, "recall@1_lo": 0.7, "recall@1_hi": 1.0, "recall@10": 1.0,
                   "recall@10_lo": 1.0, "recall@10_hi": 1.0, "n_queries": 9, "n_documents": 240},
        },
        "score_column": "mrr@10", "level": 0.9, "n_boot": 1000, "seed": 0,
        "metrics": [{"metric": "task_prior", "spearman": 1.0, "spearman_ci": [0.5, 1.0], "kendall": 1.0,
                     "kendall_ci": None, "top_pick": EVIL, "best": EVIL, "regret": 0.0, "wrong_pairs": []},
                    {"metric": "combined", "spearman": -1.0, "kendall": -1.0, "top_pick": "tfidf-svd", "best": EVIL,
                     "regret": 0.5, "wrong_pairs": [{"ranked_higher": "tfidf-svd", "ranked_lower": EVIL,
                                                     "accuracy_diff": 0.5}]}],
        "warnings": [EVIL],
    }
    return r


@pytest.mark.fault
def test_the_search_check_is_a_table_in_html_and_markdown():
    """A ranking that carries the search check shows each candidate's MRR@10, nDCG@10, recall@1 and recall@10 with
    their intervals, best first, and each label-free score's correlation with MRR@10; hostile text stays text."""
    page = to_html(_with_retrieval())
    parsed = _Collector()
    parsed.feed(page)
    assert "script" not in parsed.tags and "img" not in parsed.tags
    text = "".join(parsed.text)
    assert "Check against your queries" in text and "9 queries from " + EVIL in text
    assert "MRR@10nDCG@10recall@1recall@10" in text.replace(" ", "")  # the four score columns
    section = text[text.index("Check against your queries"):]
    # best MRR@10 first, each value with its interval
    assert section.index(EVIL + "0.900[0.800, 1.000]0.920[0.850, 1.000]") < section.index("tfidf-svd0.400[0.250, 0.550]")
    assert "best by MRR@10" in section and "tfidf-svd above" in section and "(MRR@10 0.5 lower)" in section
    assert "Prompts used: " + EVIL + ": query query, documents passage" in section

    md = to_markdown(_with_retrieval())
    assert "### Check against your queries" in md and "<script>" not in md and "](javascript" not in md
    assert "| tfidf-svd | 0.400 [0.250, 0.550] | 0.450 [0.300, 0.600] | 0.300 [0.100, 0.500] | 0.800 [0.600, 1.000] |" in md
    rows = md[md.index("### Check against your queries"):].splitlines()
    head = next(line for line in rows if line.startswith("| candidate | MRR@10"))
    first = rows[rows.index(head) + 2]
    assert first.replace("\\|", "").count(" | ") == head.count(" | ")  # a hostile name adds no cell
    assert first.endswith("| 0.900 [0.800, 1.000] | 0.920 [0.850, 1.000] | 0.875 [0.700, 1.000] | 1.000 [1.000, 1.000] |"), first
    assert "| task\\_prior | 1 \\[0.5, 1\\] | 1 |" in md and "| combined | -1 | -1 | tfidf-svd |" in md


def test_a_note_the_search_check_shows_is_not_repeated_under_the_ranking():
    """A warning that is both the search check's and the ranking's appears once in the Markdown and in the HTML;
    the ranking's other warnings are still listed."""
    r = _with_retrieval()
    shared = "only 1 candidate has search scores"
    r.retrieval["warnings"] = [shared]
    r.warnings = [RankingWarning("metric-note", shared), RankingWarning("metric-note", "another note")]
    md = to_markdown(r)
    assert md.count(shared) == 1 and "- note: another note" in md
    page = to_html(r)
    assert page.count(shared) == 1 and "another note" in page


def test_no_search_section_without_queries():
    assert "Check against your queries" not in to_html(_ranking())
    assert "Check against your queries" not in to_markdown(_ranking())


def _heatmap_ranking(matrix, communities):
    names = list(matrix)
    cands = [CandidateResult(name=n, spec=n, model_id=n, revision="a" * 40, scores={"sufficiency": 0.1 - 0.01 * i},
                             ranks={"sufficiency": i + 1}, combined_score=1 - i / 3, rank=i + 1, dim=8)
             for i, n in enumerate(names)]
    return Ranking(candidates=cands, metrics=["sufficiency"], combine="mean-rank",
                   dataset={"source": "x", "n": 240, "modality": "text", "fingerprint": "f" * 64},
                   settings={"seed": 0}, versions={"embedselect": "0"}, created_at="2026-01-01",
                   details={"sufficiency": {"matrix": matrix, "communities": communities}})


def _heatmap_pixels(svg):
    """The RGB colours (a set of tuples) of the heatmap's raster image in the SVG."""
    import base64
    import io
    import re

    import numpy as np
    from PIL import Image

    colours = set()
    for b64 in re.findall(r'data:image/png;base64,\s*([A-Za-z0-9+/=\s]+)"', svg):
        px = np.asarray(Image.open(io.BytesIO(base64.b64decode("".join(b64.split())))).convert("RGBA")).reshape(-1, 4)
        colours |= {tuple(int(c) for c in p[:3]) for p in px[px[:, 3] == 255]}
    return colours


def test_the_sufficiency_heatmap_shows_cells_not_estimated_in_a_named_grey():
    """With pairs="scored" the cells no score reads are NaN ("NaN" in the JSON, None in older files): drawn in the
    "not estimated" grey with a legend, never as a value (the colour map's 0 would read as "tells nothing")."""
    from embedselect.publish.plots import NOT_ESTIMATED, sufficiency_heatmap

    names = ["a", "b", "ref"]
    grey = tuple(int(NOT_ESTIMATED[i:i + 2], 16) for i in (1, 3, 5))
    full = {s: {t: 0.01 * (i + j) for j, t in enumerate(names) if t != s} for i, s in enumerate(names)}
    svg = sufficiency_heatmap(_heatmap_ranking(full, [["a", "b"], ["ref"]]))
    assert svg and NOT_ESTIMATED not in svg and grey not in _heatmap_pixels(svg)
    scored = {s: dict(row) for s, row in full.items()}
    scored["a"]["ref"], scored["b"]["ref"] = float("nan"), "NaN"
    svg = sufficiency_heatmap(_heatmap_ranking(scored, None))
    assert svg and NOT_ESTIMATED in svg  # the legend's patch
    assert grey in _heatmap_pixels(svg)
    page = to_html(_heatmap_ranking(scored, None))
    assert "not estimated" in page and "sufficiency.pairs=all" in page


def test_tables_keep_named_revisions_whole_and_use_one_placeholder():
    """New-user audit: revisions were cut to 12 characters, so ``builtin-0.1.0-v2`` read 'builtin-0.1.' in the
    tables; the Markdown table showed a missing items/s as '-' and missing tokens as '–'."""
    from embedselect.publish import leaderboard as lb
    from embedselect.publish.text import MISSING, short_revision

    assert short_revision("builtin-0.1.0-v2") == "builtin-0.1.0-v2" and short_revision("v3") == "v3"
    assert short_revision("0123456789abcdef" * 4) == "0123456789ab" and short_revision(None) == ""
    assert short_revision("a" * 40, 10) == "a" * 10
    base = dict(scores={"task_prior": 0.5}, ranks={"task_prior": 1}, combined_score=1.0, dim=8)
    api = CandidateResult(name="api", spec="openai:m", model_id="openai:m", revision="", rank=1, api_tokens=1200,
                          items_per_second=50.0, **base)
    tfidf = CandidateResult(name="tfidf-svd", spec="tfidf-svd", model_id="baseline:tfidf-svd",
                            revision="builtin-0.1.0-v2", rank=2, **{**base, "scores": {"task_prior": float("nan")}})
    r = Ranking(candidates=[api, tfidf], metrics=["task_prior"], combine="mean-rank",
                dataset={"source": "d.csv", "n": 240, "modality": "text", "fingerprint": "f" * 64},
                settings={"seed": 0}, versions={"embedselect": "0.1.0"}, created_at="2026-01-01")
    md = to_markdown(r)
    row = next(line for line in md.splitlines() if line.startswith("| 2 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[-1] == "builtin-0.1.0-v2", cells
    assert cells[3] == f"{MISSING} (1)" and cells[-3] == MISSING and cells[-2] == MISSING, cells  # score, items/s, tokens
    assert "–" not in md and "builtin-0.1.0-v2" in to_html(r)
    assert "| builtin-0.1.0-v2 |" in lb.to_markdown(r) and ">builtin-0.1.0-v2<" in lb.to_html_table(r)


def test_the_score_vs_cost_figure_takes_a_whole_row_of_the_grid():
    """Its three panels were drawn in one 320 px cell of the figure grid, their text too small to read."""
    pytest.importorskip("matplotlib")
    html = to_html(_ranking())
    assert '<figure id="fig-score_vs_cost" class="span">' in html
    assert "figure.span{grid-column:1/-1}" in html


def test_a_failed_candidate_is_said_once_in_markdown_and_html():
    """Its ``failed`` line (Markdown) or row (HTML) and then its warning ("NAME failed (TYPE): why") said it twice."""
    r = _ranking()
    broken = r.candidates[2]
    r.warnings = [broken.failure_note]
    md = to_markdown(r)
    assert md.count("ModelLoadError") == 1
    html = to_html(r, plots=False)
    assert html.count("ModelLoadError") == 1


def test_a_failed_candidates_reason_keeps_a_readable_width():
    """At 400 px its reason, in the last column, wrapped a word a line (rows hundreds of pixels tall); on a laptop it
    was out of sight. It spans the score and metric columns beside the name, and the table scrolls."""
    html = to_html(_ranking(), plots=False)
    assert '<td class="name"><span class="nb">broken</span></td><td class="why" colspan="2">failed: ModelLoadError: ' in html
    assert "tr.failed td.why{color:var(--warn)}" in html


def test_task_prior_labels_stay_readable_when_points_coincide(monkeypatch):
    """Three candidates at one place (copies) and two a hair apart drew their labels over each other: each label is
    now clear of every other, the coinciding ones listed in one label, every name said once."""
    from matplotlib.text import Text

    from embedselect.publish import plots

    at = {"copy-a": (70.0, 0.01), "copy-b": (70.0, 0.01), "copy-c": (70.0, 0.01), "random-projection-64": (8.5, 0.031),
          "random-projection-32": (6.0, 0.034), "tfidf-svd": (8.4, 0.0312), "minilm": (40.0, 0.02)}
    cands = [CandidateResult(name=n, spec=n, scores={"task_prior": m}, ranks={"task_prior": i + 1}, combined_score=m,
                             rank=i + 1, dim=8, columns={"task_prior_mean": m, "task_prior_var": v})
             for i, (n, (m, v)) in enumerate(at.items())]
    ranking = Ranking(candidates=cands, metrics=["task_prior"], combine="mean-rank", dataset={"n": 240},
                      settings={"seed": 0}, versions={"embedselect": "0"}, created_at="2026-11-29")
    seen = {}
    draw = plots._svg

    def capture(plt, fig):
        renderer = fig.canvas.get_renderer()
        # the text's own box (an annotation's extent takes in its line back to the point)
        seen["labels"] = [(t.get_text(), Text.get_window_extent(t, renderer)) for t in fig.gca().texts]
        return draw(plt, fig)

    monkeypatch.setattr(plots, "_svg", capture)
    assert plots.task_prior_scatter(ranking)
    labels = seen["labels"]
    assert sorted(n for text, _ in labels for n in text.split("\n")) == sorted(at)
    assert "copy-a\ncopy-b\ncopy-c" in [text for text, _ in labels]
    boxes = [box for _, box in labels]
    assert not [(i, j) for i, a in enumerate(boxes) for j, b in enumerate(boxes) if i < j and a.overlaps(b)], labels


def test_the_figures_cut_long_names_in_the_middle(monkeypatch):
    """Three paraphrase-multilingual-mpnet-base-v1/v2/v3 style names were cut at their 28th character (their start
    kept, an ellipsis at the end) and read alike in the figures. They are cut in the middle now, by the one rule for a
    shortened name (``_util.names.cut_middle``, as the CLI's table does): the start and the end, an ellipsis between."""
    from embedselect.publish import plots

    names = [f"sentence-transformers/paraphrase-multilingual-mpnet-base-v{i}" for i in (1, 2, 3)]
    cands = [CandidateResult(name=n, spec=n, scores={"task_prior": 0.5 - i / 10}, ranks={"task_prior": i + 1},
                             combined_score=0.5 - i / 10, rank=i + 1, dim=8,
                             columns={"task_prior_mean": 40.0 + 10 * i, "task_prior_var": 0.01 + i / 100,
                                      "task_prior.probe_acc_mean": 0.8 - i / 10, "task_prior.probe_acc_std": 0.05,
                                      "task_prior.probe_acc_p05": 0.7 - i / 10})
             for i, n in enumerate(names)]
    ranking = Ranking(candidates=cands, metrics=["task_prior"], combine="mean-rank", dataset={"n": 240},
                      settings={"seed": 0}, versions={"embedselect": "0"}, created_at="2026-11-29")
    seen: dict[str, list[str]] = {}
    draw = plots._svg

    def capture(plt, fig):
        ax = fig.gca()
        seen.setdefault("texts", []).extend(t.get_text() for t in ax.texts)
        seen.setdefault("ticks", []).extend(t.get_text() for t in ax.get_yticklabels() if "sentence" in t.get_text())
        return draw(plt, fig)

    monkeypatch.setattr(plots, "_svg", capture)
    assert plots.task_prior_scatter(ranking) and plots.task_accuracy(ranking)
    for shown in (sorted(seen["texts"]), sorted(seen["ticks"])):
        assert len(set(shown)) == 3, shown
        assert all(len(s) == 28 and s.startswith("sentence-tran") and "…" in s for s in shown), shown
        assert [s[-3:] for s in shown] == ["-v1", "-v2", "-v3"], shown
    assert plots._short(names[0]) == "sentence-tran…-mpnet-base-v1"

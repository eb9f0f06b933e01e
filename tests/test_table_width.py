"""rank's table on a narrow terminal: it was always every column (about 150 characters for five metrics), so at 60
or 100 columns each row wrapped over two or three lines. On a terminal it leaves columns out in a fixed order
(:data:`~embedselect.cli.format.DROP_ORDER`) and says which, cuts long names last, and wraps the lines under it at
words; a pipe, a file and ``--wide`` get every column."""

from __future__ import annotations

import io
import re
import sys

import pytest

import embedselect
from embedselect.cli import main
from embedselect.cli.format import DROP_ORDER, format_table, table_width
from embedselect.data import sample_path
from embedselect.ranking.result import CandidateResult, Ranking

METRICS = ["task_prior", "sufficiency", "nn_agreement", "rankme", "modularity"]


def _ranking(name: str = "all-MiniLM-L6-v2 (CLS pooling)") -> Ranking:
    def row(nm, rank, model_id):
        return CandidateResult(
            name=nm, spec=nm, model_id=model_id, revision="a" * 40, scores={m: 0.123456 for m in METRICS},
            ranks={m: rank for m in METRICS}, combined_score=1.0 / rank, rank=rank, dim=384, bytes_per_vector=1536,
            items_per_second=75.1, parameters=22_700_000,
        )
    return Ranking(
        candidates=[row(name, 1, "local:/m"), row("tfidf-svd", 2, "baseline:tfidf-svd")], metrics=METRICS,
        combine="mean-rank", dataset={"source": "t.csv", "n": 240, "modality": "text", "fingerprint": "f" * 64},
        settings={"combined_weights": {"task_prior": 1.0, "sufficiency": 0.25, "nn_agreement": 0.0, "rankme": 0.0,
                                       "modularity": 0.0}},
        versions={"embedselect": "0.1.0"}, decided=True, leaders=[name],
    )


def _table_lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.startswith(("rank ", "----", "1 ", "2 "))]


@pytest.mark.fault
def test_a_narrow_terminal_gets_the_columns_that_fit_and_is_told_which_were_left_out():
    full = format_table(_ranking())
    assert max(len(ln) for ln in _table_lines(full)) > 120 and "left out" not in full
    for width, name in ((60, "minilm"), (100, "all-MiniLM-L6-v2 (CLS pooling)")):  # names are never cut
        text = format_table(_ranking(name), width=width)
        lines = _table_lines(text)
        assert lines and max(len(ln) for ln in lines) <= width, (width, text)
        head = lines[0].split()
        assert head[:3] == ["rank", "candidate", "score"] and "task_prior" in head and head[-1] == "status"
        said = " ".join(text.split()).split("left out")[1]  # the line, wrapped at words: DROP_ORDER, # first
        assert said.startswith(f" to fit {width} columns: #, bytes/vec, items/s, params, cached, modularity"), said
    assert format_table(_ranking(), width=300) == full  # room for every column: nothing left out


@pytest.mark.fault
def test_a_terminal_name_is_measured_without_its_escape_sequence():
    text = format_table(_ranking("ev\x1b[31mil"), width=300)
    rows = _table_lines(text)
    assert "\x1b" not in text and rows[2].index("0.1235") == rows[3].index("0.1235")


def test_only_a_terminal_has_a_width():
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert table_width(io.StringIO()) is None and isinstance(table_width(Tty()), int)


SAMPLE = str(sample_path("texts"))
LONG = "a-rather-long-name-for-a-copy-of-tfidf"
FULL = ["rank", "candidate", "score", "task_prior", "#", "nn_agreement*", "#", "rankme*", "#", "modularity*", "#",
        "dim", "bytes/vec", "items/s", "cached", "status"]
"""Every column of the pool below (baselines have no parameter count), in order."""
POOL_METRICS = "task_prior,nn_agreement,rankme,modularity"
"""task_prior weighted, the three comparators shown with weight 0 (the text default), no slow sufficiency."""
WEIGHT_0 = ("nn_agreement", "rankme", "modularity")


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("fit") / "cache"


@pytest.fixture(scope="module")
def ranking(cache):
    return embedselect.select(SAMPLE, ["tfidf-svd", "random-projection", f"{LONG}=tfidf-svd?dim=64"], column="text",
                              metrics=POOL_METRICS.split(","), cache_dir=cache)


def _left_out(text: str, width: int) -> list[str]:
    """The names in the "to fit N columns, left out: ..." line (wrapped lines joined)."""
    joined = " ".join(line.strip() for line in text.splitlines())
    m = re.search(rf"\(left out to fit {width} columns: (.*?); --wide, --json or --markdown FILE shows every column\)",
                  joined)
    assert m, text
    return m.group(1).split(", ")


@pytest.mark.parametrize("width", [80, 100])
@pytest.mark.fault
def test_the_table_fits_the_terminal_and_names_what_it_left_out_in_the_documented_order(ranking, width):
    text = format_table(ranking, width)
    assert max(len(line) for line in text.splitlines()) <= width, text
    header = text.splitlines()[0].split()
    assert header[:4] == ["rank", "candidate", "score", "task_prior"], header  # the weighted signal stays
    assert LONG in text.splitlines()[2 + [c.name for c in ranking.candidates].index(LONG)]  # names cut only last
    left = _left_out(text, width)
    assert set(left) == {h.rstrip("*") for h in FULL} - {h.rstrip("*") for h in header} and len(set(left)) == len(left)
    keys = ["weight-0" if name in WEIGHT_0 else name for name in left]
    assert keys == sorted(keys, key=DROP_ORDER.index), left  # dropped in DROP_ORDER, the weight-0 ones from the last
    shown = [m for m in WEIGHT_0 if m + "*" in header]
    assert [m for m in WEIGHT_0 if m in left] == list(WEIGHT_0[len(shown):])
    footnote = [line for line in text.splitlines() if line.startswith("* shown")]
    assert footnote == ([f"* shown, not in the score (weight 0): {', '.join(shown)}"] if shown else [])


def test_a_narrow_terminal_cuts_long_names_in_the_middle_only_when_no_other_column_is_left_to_drop(ranking):
    text = format_table(ranking, 50)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 50, text
    assert lines[0].split() == ["rank", "candidate", "score", "task_prior"]
    (cut,) = [line.split()[1] for line in lines[2:5] if "…" in line]
    assert cut.startswith(LONG[:8]) and cut.endswith(LONG[-8:]) and len(cut) < len(LONG)
    assert _left_out(text, 50)[-1] == "the candidates' full names"
    # narrower still: the weighted signal goes too, rather than a name shorter than 16 characters
    narrow = format_table(ranking, 40)
    assert narrow.splitlines()[0].split() == ["rank", "candidate", "score"]
    assert "task_prior" in _left_out(narrow, 40)


@pytest.mark.parametrize("width", [200, None], ids=["200", "not-a-terminal"])
@pytest.mark.fault
def test_a_wide_terminal_and_a_pipe_get_every_column(ranking, width):
    text = format_table(ranking, width)
    assert text.splitlines()[0].split() == FULL
    assert "left out" not in text and "…" not in text


@pytest.mark.fault
def test_the_cli_fits_a_terminal_and_prints_everything_to_a_pipe_or_with_wide(ranking, cache, capsys, monkeypatch):
    argv = ["rank", SAMPLE, "-c", "text", "-m", f"tfidf-svd,random-projection,{LONG}=tfidf-svd?dim=64",
            "--metrics", POOL_METRICS, "--cache-dir", str(cache), "-q"]
    assert main(argv) == 0
    assert capsys.readouterr().out.splitlines()[0].split() == FULL  # captured: not a terminal
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80, out
    assert "(left out to fit 80 columns: #, bytes/vec, items/s" in out
    assert main([*argv, "--wide"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == FULL and "left out" not in out


def _searched(ranking: Ranking, per_query: float = 1.0) -> Ranking:
    """``ranking`` with a search check of five queries (its per-candidate scores as ``validate --queries`` stores
    them)."""
    from dataclasses import replace

    scores = {c.name: {"mrr@10": 0.467, "mrr@10_lo": 0.133, "mrr@10_hi": 0.8, "ndcg@10": 0.5, "recall@1": 0.4,
                       "recall@10": 0.6} for c in ranking.candidates}
    retrieval = {"queries": {"source": "queries.csv", "n_queries": 5, "relevant_per_query": per_query},
                 "level": 0.9, "scores": scores, "prompts": {}, "metrics": [], "warnings": []}
    return replace(ranking, retrieval=retrieval)


@pytest.mark.fault
def test_the_search_checks_table_fits_a_narrow_terminal_with_a_header():
    """At 60 columns each candidate's row of the search check split in two (every line under the ranking's table was
    wrapped as words, recall@10 alone on the next line), under no header, and "1 relevant items per query". It is a
    table of its own with a header, fitted as the ranking's is: columns left out and named."""
    ranking = _searched(_ranking("random-projection"))
    text = format_table(ranking, width=60)
    lines = text.splitlines()
    assert max(len(ln) for ln in lines) <= 60, text
    at = next(i for i, ln in enumerate(lines) if ln.split()[:2] == ["candidate", "MRR@10"])
    assert lines[at].split() == ["candidate", "MRR@10", "interval", "recall@10"], lines[at]
    assert lines[at + 2].split() == ["random-projection", "0.467", "[0.133,", "0.800]", "0.600"], text
    assert lines[at + 3].split() == ["tfidf-svd", "0.467", "[0.133,", "0.800]", "0.600"], text
    assert "(left out to fit 60 columns: recall@1, nDCG@10;" in " ".join(" ".join(lines[at + 4:]).split())
    assert "1 relevant item per query;" in " ".join(text.split())
    assert "1.5 relevant items per query on average" in format_table(_searched(_ranking(), 1.5), width=60)
    full = format_table(ranking)  # a pipe: every column, one row a candidate
    head = next(ln for ln in full.splitlines() if ln.split()[:2] == ["candidate", "MRR@10"])
    assert head.split() == ["candidate", "MRR@10", "interval", "nDCG@10", "recall@1", "recall@10"]
    assert "left out to fit" not in full

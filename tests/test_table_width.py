"""rank's table on a narrow terminal: it was always every column (about 150 characters for five metrics), so at 60
or 100 columns each row wrapped over two or three lines. On a terminal it leaves columns out, least needed first,
and says which; a pipe still gets every column."""

from __future__ import annotations

import io

from embedselect.cli.format import format_table, table_width
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


def test_a_narrow_terminal_gets_the_columns_that_fit_and_is_told_which_were_left_out():
    full = format_table(_ranking())
    assert max(len(ln) for ln in _table_lines(full)) > 120 and "left out" not in full
    for width, name in ((60, "minilm"), (100, "all-MiniLM-L6-v2 (CLS pooling)")):  # names are never cut
        text = format_table(_ranking(name), width=width)
        lines = _table_lines(text)
        assert lines and max(len(ln) for ln in lines) <= width, (width, text)
        head = lines[0].split()
        assert head[:3] == ["rank", "candidate", "score"] and "task_prior" in head and head[-1] == "status"
        assert f"(left out to fit {width} columns: " in text and "nn_agreement" in text.split("left out")[1]
    assert format_table(_ranking(), width=300) == full  # room for every column: nothing left out


def test_a_terminal_name_is_measured_without_its_escape_sequence():
    text = format_table(_ranking("ev\x1b[31mil"), width=300)
    rows = _table_lines(text)
    assert "\x1b" not in text and rows[2].index("0.1235") == rows[3].index("0.1235")


def test_only_a_terminal_has_a_width():
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert table_width(io.StringIO()) is None and isinstance(table_width(Tty()), int)

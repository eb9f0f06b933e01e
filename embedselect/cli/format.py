"""The plain text the CLI prints for a ranking: the table, the validation and search-check sections, the
timings footer, and the number formats they share."""

from __future__ import annotations

import math
import sys
import textwrap
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from embedselect._util.names import cut_middle
from embedselect._util.terminal import columns

def fmt(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def cell(text: Any, tty: bool) -> str:
    """``text`` as a cell of a table the CLI prints (the ranking's, hub ls's, cache ls's, leaderboard --list's), or
    a line under one that quotes a name: always one line, so that a name holding a line break (a model folder named
    ``m\\nERROR forged: ...``) cannot print a row across two lines or a line that reads as another; on a terminal
    (``tty``) also without control and bidi characters, measured as the terminal shows it
    (:func:`embedselect.publish.text.terminal_line`, the rule of stderr's lines too); to a pipe or a file the other
    characters are kept as they are (:func:`embedselect.publish.text.one_line`)."""
    from embedselect.publish.text import one_line, terminal_line

    return terminal_line(text) if tty else one_line(text)


def frame_cells(df: Any, tty: bool) -> Any:
    """A DataFrame printed as a table (``cache ls``, ``leaderboard --list``) with each text cell :func:`cell`."""
    return df.map(lambda v: cell(v, tty) if isinstance(v, str) else v)


def prose(line: str, tty: bool) -> str:
    """A line of words under a table (a note, a failure's ``!`` line, a check's line) as :func:`cell`, its leading
    indent kept."""
    body = line.lstrip(" ")
    return line[:len(line) - len(body)] + cell(body, tty)


def format_table(ranking, width: int | None = None, *, tty: bool | None = None) -> str:
    """A plain-text table of a Ranking, best first, with the lines that belong under it. A ``kind`` column (hub,
    local, baseline, vectors, api, embedder: :func:`~embedselect._util.kinds.kind_of_model_id`) follows the
    candidate's name when a row is one the user brought (precomputed vectors, a hosted API, an embedder object), as
    ``params`` and ``tokens`` appear only when a row has them.

    ``width`` (a terminal's columns; :func:`table_width`) fits the table to it by :func:`fit_columns`' order, with
    a line naming what was left out, and wraps the lines under it at words. None (a pipe, a file, ``--wide``) prints
    every column.

    Every cell and every line under the table is one line (:func:`cell`, :func:`prose`); ``tty`` (default: whether
    ``width`` is given; ``rank`` passes whether stdout is a terminal, ``--wide`` too) also drops their control
    characters, so that they are measured as the terminal shows them."""
    from embedselect.publish.text import count, rate

    from embedselect._util.kinds import BROUGHT_KINDS, kind_of_model_id

    cands = ranking.candidates
    kinds = [kind_of_model_id(c.model_id) for c in cands]
    tty = width is not None if tty is None else tty
    cols = [Column("rank", "rank", [fmt(c.rank) for c in cands]),
            Column("candidate", "candidate", [c.name for c in cands])]
    if any(k in BROUGHT_KINDS for k in kinds):  # the kind column, when a row is vectors, an API or an object
        cols.append(Column("kind", "kind", [fmt(k) for k in kinds]))
    cols.append(Column("score", "score", [fmt(c.combined_score) for c in cands]))
    answers = bool(getattr(ranking, "answers", None))
    if answers:
        cols.append(Column("answers", "answers", [_agreement_cell(c.columns) for c in cands]))
    if getattr(ranking, "retrieval", None):  # with queries the table follows MRR@10 (pipeline.queries.queries_stage)
        cols.append(Column("MRR@10", "MRR@10", [fmt(c.columns.get("search.mrr@10")) for c in cands]))
    shown_only = ranking.shown_only
    for m in ranking.metrics:
        key = "weight-0" if m in shown_only else "signal"
        cols.append(Column(key, m + ("*" if m in shown_only else ""), [fmt(c.scores.get(m)) for c in cands], m))
        cols.append(Column("#", "#", [fmt(c.ranks.get(m)) for c in cands], m))
    cols += [Column("dim", "dim", [fmt(c.dim) for c in cands]),
             Column("bytes/vec", "bytes/vec", [fmt(c.bytes_per_vector) for c in cands]),
             Column("items/s", "items/s", [rate(c.items_per_second) for c in cands])]
    if any(c.parameters for c in cands):
        cols.append(Column("params", "params", [count(c.parameters) for c in cands]))
    if any(c.api_tokens is not None for c in cands):
        cols.append(Column("tokens", "tokens", [fmt(c.api_tokens) for c in cands]))
    cols += [Column("cached", "cached", [_cached_cell(c) for c in cands]),
             Column("status", "status", [c.status if c.ok else f"FAILED: {c.error_type}" for c in cands])]
    cols = [replace(c, cells=[cell(v, tty) for v in c.cells]) for c in cols]
    left_out: list[str] = []
    if width is not None:
        weights = (ranking.settings or {}).get("combined_weights") or {}
        cols, left_out = fit_columns(cols, width, {m: float(w or 0) for m, w in weights.items()})
    lines = table_lines(cols)
    shown_only = [m for m in shown_only if any(c.key == "weight-0" and c.metric == m for c in cols)]
    if shown_only:
        lines.append(f"* shown, not in the score (weight 0): {', '.join(shown_only)}")
    if left_out:
        lines.append(left_out_line(width, left_out))
    if ranking.ok and not ranking.decided:
        from embedselect.ranking.combine import no_clear_winner

        lines.append(f"{no_clear_winner(ranking.leaders)}; " + (ranking.next_step or "read them as equals"))
    if answers:
        a = ranking.answers
        lines.append(f"answers: the share of your {a.get('n_answered')} answered questions ({a.get('n_skipped')} "
                     "skipped) each candidate orders your way [95 % Wilson interval]")
    lines += failure_lines(ranking)
    lines[len(cands) + 2:] = [prose(line, tty) for line in lines[len(cands) + 2:]]

    def wrapped(under: list[str]) -> list[str]:  # the lines under a table wrap at words, indented under their first
        return under if width is None else [part for line in under for part in wrap_line(line, width)]

    lines[len(cands) + 2:] = wrapped(lines[len(cands) + 2:])
    if ranking.validation:
        lines += ["", *wrapped(format_validation(ranking, tty=tty))]
    if getattr(ranking, "retrieval", None):  # a table of its own: it wraps only its lines of words
        lines += ["", *format_retrieval(ranking, tty=tty, width=width)]
    timing = format_timings(getattr(ranking, "timings", None) or {})
    lines += wrapped([prose(line, tty) for line in note_lines(ranking) + ([timing] if timing else [])])
    return "\n".join(lines)


def table_lines(cols: list["Column"], indent: str = "") -> list[str]:
    """``cols`` as the CLI prints a table: a header row, a row of dashes, then one row per cell, each column as wide
    as its widest cell, two spaces between columns, each line after ``indent``."""
    widths = [c.width for c in cols]
    n = len(cols[0].cells) if cols else 0
    rows = [[c.header for c in cols], ["-" * w for w in widths], *([c.cells[i] for c in cols] for i in range(n))]
    return [indent + "  ".join(v.ljust(w) for v, w in zip(row, widths)) for row in rows]


def left_out_line(width: int | None, left_out: list[str]) -> str:
    """The line under a table :func:`fit_columns` narrowed, naming what it left out."""
    return (f"(left out to fit {width} columns: {', '.join(left_out)}; --wide, --json or --markdown FILE shows every "
            "column)")


def wrap_line(line: str, width: int) -> list[str]:
    """``line`` in lines of at most ``width`` characters (at least 40), broken between words (a word longer than
    that is cut), the continuations indented two more than the first: how every line of words the CLI prints on a
    terminal fits its width (under rank's table, ``ask --interactive``'s lines)."""
    indent = " " * (len(line) - len(line.lstrip(" ")))
    return textwrap.wrap(line, width=max(width, 40), subsequent_indent=indent + "  ", break_on_hyphens=False) or [line]


@dataclass
class Column:
    """One column of the ranking table: ``key`` is what :data:`DROP_ORDER` names (a weighted signal's value is
    ``"signal"``, a weight-0 one's ``"weight-0"``, each signal's rank ``"#"``), ``metric`` the signal it shows."""

    key: str
    header: str
    cells: list[str]
    metric: str = ""

    @property
    def width(self) -> int:
        return max(len(self.header), *(len(v) for v in self.cells)) if self.cells else len(self.header)


DROP_ORDER = ("#", "bytes/vec", "items/s", "params", "tokens", "cached", "weight-0", "dim", "status", "kind")
"""The columns a narrow terminal loses, first to last: every signal's rank column (``#``) at once, then one column
at a time, the weight-0 signals from the last. Rank, candidate, score, answers, MRR@10 and the weighted signals stay;
then the candidates' names are cut (to :data:`NAME_FLOOR`, with an ellipsis in the middle), then the weighted signals
go too, the lowest weight first."""

SEARCH_DROP_ORDER = ("prompts", "recall@1", "nDCG@10", "interval", "recall@10")
"""The columns of the search check's table (:func:`format_retrieval`) a narrow terminal loses, first to last; the
candidate and its MRR@10 (what the table follows) stay, then the names are cut as in the ranking's table."""

NAME_FLOOR = 16
"""The fewest characters a cut candidate name keeps (its ellipsis included)."""


def fit_columns(cols: list[Column], width: int, weights: Mapping[str, float],
                order: Sequence[str] = DROP_ORDER) -> tuple[list[Column], list[str]]:
    """``cols`` within ``width`` characters (two between columns) by ``order`` (the ranking table's
    :data:`DROP_ORDER`; the search check's :data:`SEARCH_DROP_ORDER`), and what was left out, in words, in the order
    it went. ``weights`` (the combined score's) order the weighted signals' columns when even those must go. A table
    that still does not fit (a terminal narrower than about 40 columns) is returned as narrow as it gets."""
    def total(cs: list[Column]) -> int:
        return sum(c.width for c in cs) + 2 * (len(cs) - 1)

    left_out: list[str] = []
    for key in order:
        while total(cols) > width and any(c.key == key for c in cols):
            if key == "#":
                cols = [c for c in cols if c.key != "#"]
                left_out.append("#")
                continue
            gone = [c for c in cols if c.key == key][-1]
            cols = [c for c in cols if c is not gone]
            left_out.append(gone.metric or gone.header)
    signals = sorted((c for c in cols if c.key == "signal"), key=lambda c: (weights.get(c.metric, 0.0), -cols.index(c)))
    at = next(i for i, c in enumerate(cols) if c.key == "candidate")
    full = cols[at]
    while total(cols) > width:
        room = width - total(cols) + full.width
        cols[at] = replace(full, cells=[cut_middle(v, max(NAME_FLOOR, room)) for v in full.cells])
        if total(cols) <= width or not signals:
            break
        gone = signals.pop(0)
        cols = [c for c in cols if c is not gone]
        left_out.append(gone.metric)
        at = next(i for i, c in enumerate(cols) if c.key == "candidate")
        cols[at] = full
    if cols[at].cells != full.cells:
        left_out.append("the candidates' full names")
    return cols, left_out


def stdout_is_terminal(stream: Any = None) -> bool:
    """Whether ``stream`` (default stdout) is a terminal: what a table printed there is cleaned for (:func:`cell`)."""
    stream = sys.stdout if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def table_width(stream: Any = None, *, wide: bool = False) -> int | None:
    """The width a ranking table printed on ``stream`` (default stdout) is fitted to (:func:`format_table`): the
    terminal's columns when it is a terminal (:func:`embedselect._util.terminal.columns`, the progress line's rule
    too); None (every column) with ``wide`` (``--wide``) or when it is a pipe or a file."""
    stream = sys.stdout if stream is None else stream
    return columns(stream) if stdout_is_terminal(stream) and not wide else None


def _cached_cell(c: Any) -> str:
    """The ``cached`` column: ``yes`` (no item embedded in this run), ``no``, or ``240/260`` when this run embedded
    only the items no earlier run of the same model had embedded and read the others from the cache; ``-`` when
    ``cached`` is None (neither embedded nor cached: precomputed vectors, a run-only variant of a model another
    variant embedded in this run, a failed candidate that got no vectors)."""
    if c.cached is None:
        return "-"
    if c.cached:
        return "yes"
    if c.stored_items and c.n:
        return f"{c.stored_items}/{c.n}"
    return "no"


def failure_lines(ranking: Any) -> list[str]:
    """A ``! NAME: why`` line per failed candidate of ``ranking``: under the table of ``rank``, under ``ask``'s
    summary."""
    return [f"! {c.name}: {c.error}" for c in ranking.failed]


def note_lines(ranking: Any, *, failures: bool = False) -> list[str]:
    """The ranking's warnings as ``note: ...`` lines (the dropped duplicates first): the end of the table, and stderr
    under ``--json``. A failed candidate's own note only with ``failures`` (``--json`` without ``--strict``): the
    table's ``!`` line, or ``--strict``'s line, says it otherwise."""
    from embedselect.data import dropped_duplicates_note

    said = set() if failures else {c.failure_note for c in ranking.failed}
    dropped = dropped_duplicates_note(ranking.dataset or {})
    return [f"note: {w}" for w in ([dropped] if dropped else []) + list(ranking.warnings) if w not in said]


def _agreement_cell(columns: dict[str, Any]) -> str:
    """A candidate's agreement with the answers, ``0.857 [0.49, 0.97]``; "-" when it has none."""
    share = columns.get("answers.agreement")
    if share is None or not math.isfinite(share):
        return "-"
    return f"{share:.3f} " + _interval(columns.get("answers.agreement_low"), columns.get("answers.agreement_high"), ".2f")


def _ends(ci: Any) -> tuple[Any, Any]:
    """(lo, hi) of an interval given as a 2-sequence, or (None, None)."""
    return (ci[0], ci[1]) if ci else (None, None)


def _interval(lo: Any, hi: Any, spec: str) -> str:
    if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)):
        return "[no interval]"
    return f"[{lo:{spec}}, {hi:{spec}}]"


def format_validation(ranking, *, tty: bool = False) -> list[str]:
    """The lines of a ranking's check against the user's labels (``Ranking.validation``): per candidate the
    held-out accuracy with its bootstrap interval and chance level, which probe produced it, each label-free
    score's rank correlations with their intervals, its top pick and wrong pairs, and the validation's warnings.
    Each line is one line, names as :func:`cell` shows them (``tty``: for a terminal)."""
    v = ranking.validation
    col = v.get("accuracy_column", "logistic_acc")
    probe = v.get("probe_settings") or {}
    table = v.get("table") or {}
    pct = f"{100 * float(v.get('level', 0.9)):g}%"
    rows = [(cell(c.name, tty), table.get(c.name, {})) for c in ranking.ok]
    chance = next((r.get("chance") for _, r in rows if r.get("chance") is not None), None)
    n_labeled = fmt(next((r.get("n_labeled") for _, r in rows), None))
    lines = [prose(line, tty) for line in [
        f"validation against your labels: held-out accuracy on {n_labeled} labelled items, "
        + f"{fmt(probe.get('n_classes'))} classes, {fmt(probe.get('n_folds'))}-fold cross-validation",
        f"  probe: {probe.get('accuracy_probe', col)}",
        f"  chance (always the most frequent class) {fmt3(chance)}",
        f"  accuracy [{pct} bootstrap interval] of each candidate:",
    ]]
    width = max((len(name) for name, _ in rows), default=0)
    for name, r in rows:
        lines.append(f"    {name.ljust(width)}  {fmt3(r.get(col))} {_interval(r.get(col + '_lo'), r.get(col + '_hi'), '.3f')}")
    return lines + [prose(line, tty) for line in _score_check_lines(ranking, v, "accuracy", "these accuracies", pct)]


def _score_check_lines(ranking, check: dict, truth: str, predicted: str, pct: str) -> list[str]:
    """Each label-free score's rank correlations with the truth (``truth``: "accuracy" or "MRR@10"; ``predicted``
    names it in the heading), its top pick and its wrong pairs, then the check's warnings: the lines that the label
    check (``Ranking.validation``) and the search check (``Ranking.retrieval``) share."""
    checks = check.get("metrics", [])
    secondary = {  # the metrics' own details only: beside them, details holds the pool's (a list of references)
        (c if c.startswith(m) else f"{m}.{c}"): m for m in ranking.metrics for c in ranking.metric_details(m).get("secondary") or []
    }
    lines = []
    if checks:
        lines.append(f"  how well each label-free score predicts {predicted} (rank correlations, {pct} bootstrap "
                     "interval over candidates):")
    for mv in checks:
        name = mv["metric"]
        if name in secondary:
            name += f" (a secondary score of {secondary[name]}, checked too; not in the combined rank)"
        elif name == "combined":
            name += " (the combined rank)"
        lines.append(
            f"    {name}: Spearman {fmt2(mv.get('spearman'))} {_interval(*_ends(mv.get('spearman_ci')), '.2f')}"
            f", Kendall {fmt2(mv.get('kendall'))} {_interval(*_ends(mv.get('kendall_ci')), '.2f')}; "
            f"top pick {mv.get('top_pick')} ({truth} {fmt3(mv.get('top_pick_accuracy'))}, regret "
            f"{fmt3(mv.get('regret'))})"
        )
        wrong = mv.get("wrong_pairs") or []
        pairs = "; ".join(
            f"{w['ranked_higher']} above {w['ranked_lower']} ({truth} {w['accuracy_diff']:.3f} lower)" for w in wrong
        )
        lines.append(f"      wrong pairs: {pairs or 'none'}")
    return lines + [f"  note: {w}" for w in check.get("warnings") or []]


def format_retrieval(ranking, *, tty: bool = False, width: int | None = None) -> list[str]:
    """The lines of a ranking's search check against the user's queries (``Ranking.retrieval``): a table of each
    candidate's MRR@10 with its bootstrap interval, nDCG@10, recall@1, recall@10 and the prompts it searched with,
    then each label-free score's rank correlations with MRR@10, its top pick and wrong pairs, and the check's warnings.
    Each line is one line, names as :func:`cell` shows them (``tty``: for a terminal). ``width`` (a terminal's
    columns) fits the table to it by :data:`SEARCH_DROP_ORDER` (with the line naming what was left out, as the
    ranking's table) and wraps the other lines at words; None (a pipe, a file, ``--wide``) prints every column."""
    from embedselect.publish.text import counted, relevant_per_query

    r = ranking.retrieval
    q = r.get("queries") or {}
    pct = f"{100 * float(r.get('level') or 0.9):g}%"
    scores = r.get("scores") or {}
    head = [f"search check against your queries: {counted(q.get('n_queries'), 'query', 'queries')} from "
            f"{q.get('source')}, "
            f"{relevant_per_query(q.get('relevant_per_query'))}; exact cosine search over the items",
            f"  each candidate's scores on them ({pct} bootstrap interval of MRR@10 over the queries):"]
    rows = [(c.name, scores[c.name]) for c in ranking.ok if c.name in scores]
    prompts = {name: ", ".join(f"{role} {p!r}" for role, p in ((r.get("prompts") or {}).get(name) or {}).items() if p)
               for name, _ in rows}
    cols = [Column("candidate", "candidate", [name for name, _ in rows]),
            Column("MRR@10", "MRR@10", [fmt3(s.get("mrr@10")) for _, s in rows]),
            Column("interval", "interval", [_interval(s.get("mrr@10_lo"), s.get("mrr@10_hi"), ".3f") for _, s in rows]),
            *(Column(key, key, [fmt3(s.get(key.lower())) for _, s in rows]) for key in ("nDCG@10", "recall@1",
                                                                                           "recall@10"))]
    if any(prompts.values()):
        cols.append(Column("prompts", "prompts", [prompts[name] or "-" for name, _ in rows]))
    cols = [replace(c, cells=[cell(v, tty) for v in c.cells]) for c in cols]
    left_out: list[str] = []
    if width is not None:
        cols, left_out = fit_columns(cols, width - 4, {}, SEARCH_DROP_ORDER)
    under = [prose(line, tty) for line in _score_check_lines(ranking, r, "MRR@10", "MRR@10", pct)]
    if left_out:
        under.insert(0, "  " + left_out_line(width, left_out))
    lines = [prose(line, tty) for line in head]
    if width is not None:
        lines = [part for line in lines for part in wrap_line(line, width)]
        under = [part for line in under for part in wrap_line(line, width)]
    return lines + table_lines(cols, "    ") + under


def fmt2(v: Any) -> str:
    """Two decimals; "undefined" for a missing or NaN correlation (tied scores, or too few candidates)."""
    return "undefined" if v is None or not math.isfinite(v) else f"{v:.2f}"


def fmt3(v: Any) -> str:
    """Three decimals (accuracies, fractions); "-" for a missing or NaN value."""
    return "-" if v is None or not math.isfinite(v) else f"{v:.3f}"


def _secs(v: Any) -> str:
    return "-" if v is None else (f"{v:.2f}s" if v < 10 else f"{v:.0f}s")


def format_timings(t: Mapping[str, Any]) -> str:
    """One footer line of a ranking's wall times per stage (see ``Ranking.timings``); empty when none."""
    parts = []
    if t.get("candidates"):
        parts.append("embed " + ", ".join(f"{n} {_secs(v)}" for n, v in t["candidates"].items()))
    if t.get("metrics"):
        parts.append(", ".join(f"{m} {_secs(v)}" for m, v in t["metrics"].items()))
    if t.get("validation") is not None:
        parts.append(f"validation {_secs(t['validation'])}")
    if t.get("retrieval") is not None:
        parts.append(f"search check {_secs(t['retrieval'])}")
    if t.get("total") is not None:
        parts.append(f"total {_secs(t['total'])}")
    return ("time: " + "; ".join(parts)) if parts else ""

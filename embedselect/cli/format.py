"""The plain text the CLI prints for a ranking: the table, the validation and search-check sections, the
timings footer, and the number formats they share."""

from __future__ import annotations

import math
from typing import Any, Mapping

def fmt(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def table_width(stream: Any = None) -> int | None:
    """The width a table printed on ``stream`` (default stdout) must fit: the terminal's columns when it is a
    terminal, else None (a pipe or a file gets every column, as written)."""
    import shutil
    import sys

    stream = sys.stdout if stream is None else stream
    try:
        if not stream.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    return shutil.get_terminal_size((100, 24)).columns or None


# Which columns a narrow terminal loses first (higher first; 0: never): the comparators' ranks and scores, the
# costs, the cached column, the combined metrics' ranks, the kind. Rank, name, score, the combined metrics and the
# status stay.
_DROP_SHOWN_RANK, _DROP_SHOWN, _DROP_COST, _DROP_CACHED, _DROP_RANK, _DROP_KIND = 7, 6, 5, 4, 3, 2


def _fit(headers: list[str], rows: list[list[str]], prio: list[int], width: int) -> tuple[list[str], list[list[str]], list[str]]:
    """Leave out columns, highest ``prio`` first and right to left, until a line fits ``width`` (or only the
    columns of priority 0 are left). Returns the headers and rows kept and the names left out."""
    keep = list(range(len(headers)))

    def line_width(cols: list[int]) -> int:
        return sum(max(len(headers[i]), *(len(r[i]) for r in rows)) for i in cols) + 2 * (len(cols) - 1)

    order = sorted((i for i in keep if prio[i]), key=lambda i: (-prio[i], -i))
    dropped: list[int] = []
    for i in order:
        if line_width(keep) <= width:
            break
        keep.remove(i)
        dropped.append(i)
    names = list(dict.fromkeys(headers[i].rstrip("*") for i in sorted(dropped)))
    return [headers[i] for i in keep], [[r[i] for i in keep] for r in rows], names


def format_table(ranking, width: int | None = None) -> str:
    """A plain-text table of a Ranking, best first. A ``kind`` column (hub, local, baseline, vectors, api, embedder:
    :func:`~embedselect._util.kinds.kind_of_model_id`) follows the candidate's name when a row is one the user
    brought (precomputed vectors, a hosted API, an embedder object), as ``params`` and ``tokens`` appear only when a
    row has them. With ``width`` (a terminal's, :func:`table_width`), names lose their terminal control characters
    before the columns are measured, and columns are left out (comparators, costs, ranks: :func:`_fit`) until the
    table fits, with a line naming them; without it (a pipe) every column is printed."""
    from embedselect.publish.text import count, rate

    from embedselect._util.kinds import BROUGHT_KINDS, kind_of_model_id

    kinds = [kind_of_model_id(c.model_id) for c in ranking.candidates]
    brought = any(k in BROUGHT_KINDS for k in kinds)  # the kind column, when a row is vectors, an API or an object
    headers = ["rank", "candidate"] + (["kind"] if brought else []) + ["score"]
    prio = [0, 0] + ([_DROP_KIND] if brought else []) + [0]
    answers = bool(getattr(ranking, "answers", None))
    if answers:
        headers.append("answers")
        prio.append(0)
    search = bool(getattr(ranking, "retrieval", None))
    if search:
        headers.append("MRR@10")  # with queries the table follows it (pipeline.queries.queries_stage)
        prio.append(0)
    shown_only = ranking.shown_only
    for m in ranking.metrics:
        headers += [m + ("*" if m in shown_only else ""), "#"]
        prio += [_DROP_SHOWN, _DROP_SHOWN_RANK] if m in shown_only else [0, _DROP_RANK]
    params = any(c.parameters for c in ranking.candidates)
    tokens = any(c.api_tokens is not None for c in ranking.candidates)
    costs = ["dim", "bytes/vec", "items/s"] + (["params"] if params else []) + (["tokens"] if tokens else [])
    headers += costs + ["cached", "status"]
    prio += [_DROP_COST] * len(costs) + [_DROP_CACHED, 0]
    if width is not None:
        from embedselect.publish.text import terminal
    rows = []
    for c, kind in zip(ranking.candidates, kinds):
        name = c.name if width is None else terminal(c.name)
        row = [fmt(c.rank), name] + ([fmt(kind)] if brought else []) + [fmt(c.combined_score)]
        if answers:
            row.append(_agreement_cell(c.columns))
        if search:
            row.append(fmt(c.columns.get("search.mrr@10")))
        for m in ranking.metrics:
            row += [fmt(c.scores.get(m)), fmt(c.ranks.get(m))]
        row += [fmt(c.dim), fmt(c.bytes_per_vector), rate(c.items_per_second)]
        row += ([count(c.parameters)] if params else []) + ([fmt(c.api_tokens)] if tokens else [])
        row += [_cached_cell(c), c.status if c.ok else f"FAILED: {c.error_type}"]
        rows.append(row)
    left_out: list[str] = []
    if width is not None and rows:
        headers, rows, left_out = _fit(headers, rows, prio, width)
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in rows]
    if left_out:
        lines.append(f"(left out to fit {width} columns: {', '.join(left_out)}; a wider terminal, --markdown or "
                     "--json shows every column)")
    if shown_only and any(h.endswith("*") for h in headers):
        lines.append(f"* shown, not in the score (weight 0): {', '.join(shown_only)}")
    if ranking.ok and not ranking.decided:
        from embedselect.ranking.combine import no_clear_winner

        lines.append(f"{no_clear_winner(ranking.leaders)}; " + (ranking.next_step or "read them as equals"))
    if answers:
        a = ranking.answers
        lines.append(f"answers: the share of your {a.get('n_answered')} answered questions ({a.get('n_skipped')} "
                     "skipped) each candidate orders your way [95 % Wilson interval]")
    for c in ranking.failed:
        lines.append(f"! {c.name}: {c.error}")
    if ranking.validation:
        lines += ["", *format_validation(ranking)]
    if getattr(ranking, "retrieval", None):
        lines += ["", *format_retrieval(ranking)]
    lines += note_lines(ranking)
    timing = format_timings(getattr(ranking, "timings", None) or {})
    if timing:
        lines.append(timing)
    return "\n".join(lines)


def _cached_cell(c: Any) -> str:
    """The ``cached`` column: ``yes`` (no item embedded in this run), ``no``, or ``240/260`` when this run embedded
    only the items no earlier run of the same model had embedded and read the others from the cache."""
    if c.cached:
        return "yes"
    if c.stored_items and c.n:
        return f"{c.stored_items}/{c.n}"
    return "no"


def note_lines(ranking: Any) -> list[str]:
    """The ranking's warnings as ``note: ...`` lines (the dropped duplicates first), without a failed candidate's
    own note, which its ``!`` line under the table already says: the end of the table, and stderr under ``--json``."""
    from embedselect.data import dropped_duplicates_note

    said = {c.failure_note for c in ranking.failed}
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


def format_validation(ranking) -> list[str]:
    """The lines of a ranking's check against the user's labels (``Ranking.validation``): per candidate the
    held-out accuracy with its bootstrap interval and chance level, which probe produced it, each label-free
    score's rank correlations with their intervals, its top pick and wrong pairs, and the validation's warnings."""
    v = ranking.validation
    col = v.get("accuracy_column", "logistic_acc")
    probe = v.get("probe_settings") or {}
    table = v.get("table") or {}
    pct = f"{100 * float(v.get('level', 0.9)):g}%"
    rows = [(c.name, table.get(c.name, {})) for c in ranking.ok]
    chance = next((r.get("chance") for _, r in rows if r.get("chance") is not None), None)
    n_labeled = fmt(next((r.get("n_labeled") for _, r in rows), None))
    lines = [
        f"validation against your labels: held-out accuracy on {n_labeled} labelled items, "
        + f"{fmt(probe.get('n_classes'))} classes, {fmt(probe.get('n_folds'))}-fold cross-validation",
        f"  probe: {probe.get('accuracy_probe', col)}",
        f"  chance (always the most frequent class) {fmt3(chance)}",
        f"  accuracy [{pct} bootstrap interval] of each candidate:",
    ]
    width = max((len(name) for name, _ in rows), default=0)
    for name, r in rows:
        lines.append(f"    {name.ljust(width)}  {fmt3(r.get(col))} {_interval(r.get(col + '_lo'), r.get(col + '_hi'), '.3f')}")
    return lines + _score_check_lines(ranking, v, "accuracy", "these accuracies", pct)


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


def format_retrieval(ranking) -> list[str]:
    """The lines of a ranking's search check against the user's queries (``Ranking.retrieval``): per candidate
    MRR@10 with its bootstrap interval, nDCG@10, recall@1 and recall@10 and the prompts it searched with, then each
    label-free score's rank correlations with MRR@10, its top pick and wrong pairs, and the check's warnings."""
    r = ranking.retrieval
    q = r.get("queries") or {}
    pct = f"{100 * float(r.get('level') or 0.9):g}%"
    scores = r.get("scores") or {}
    lines = [f"search check against your queries: {fmt(q.get('n_queries'))} queries from {q.get('source')}, "
             f"{fmt(q.get('relevant_per_query'))} relevant item(s) per query; exact cosine search over the items",
             f"  MRR@10 [{pct} bootstrap interval over the queries], nDCG@10, recall@1, recall@10 of each candidate:"]
    width = max((len(c.name) for c in ranking.ok if c.name in scores), default=0)
    for c in ranking.ok:
        s = scores.get(c.name)
        if s is None:
            continue
        prompts = (r.get("prompts") or {}).get(c.name) or {}
        used = ", ".join(f"{role} prompt {name!r}" for role, name in prompts.items() if name)
        lines.append(f"    {c.name.ljust(width)}  {fmt3(s.get('mrr@10'))} {_interval(s.get('mrr@10_lo'), s.get('mrr@10_hi'), '.3f')}"
                     f"  {fmt3(s.get('ndcg@10'))}  {fmt3(s.get('recall@1'))}  {fmt3(s.get('recall@10'))}"
                     + (f"  ({used})" if used else ""))
    return lines + _score_check_lines(ranking, r, "MRR@10", "MRR@10", pct)


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

"""Human-readable renderings of a :class:`~embedselect.ranking.result.Ranking`: a self-contained HTML report and a
Markdown leaderboard table.

Every string that can come from outside (model ids and revisions from the hub, file names, error messages,
warnings) is untrusted: the HTML report escapes all of them and the Markdown table escapes the characters
that would break out of a table cell or inject links/HTML.
"""

from __future__ import annotations

import math
import re
from typing import Any, Mapping

from embedselect.publish.text import esc as _e
from embedselect.publish.text import md as _md
from embedselect.publish.text import count as _count
from embedselect.publish.text import num as _num
from embedselect.publish.text import counted, relevant_per_query
from embedselect.publish.text import rate as _rate
from embedselect.publish.text import name_html as _name
from embedselect.publish.text import MISSING, short_revision
from embedselect.ranking.result import Ranking
from embedselect.ranking.combine import no_clear_winner


def _follows(ranking: Ranking) -> list[tuple[str, str]]:
    """What orders the table besides the score, as the CLI's table shows it beside the score: (heading, the
    candidates' column) for the answers' agreement (``rank --answers``) and MRR@10 on the queries (the table follows
    it); a row above a higher score had nothing beside it to say why."""
    return ([("answers", "answers.agreement")] if ranking.answers else []) + (
        [("MRR@10", "search.mrr@10")] if ranking.retrieval else [])


def to_markdown(ranking: Ranking) -> str:
    """A Markdown leaderboard: rank, candidate, combined score, the answers' agreement and MRR@10 on the queries
    where they order it, each metric's score and rank, dimension, bytes per vector, items per second, and the
    parameters / API tokens when any candidate has them."""
    params = any(c.parameters for c in ranking.candidates)
    tokens = any(c.api_tokens is not None for c in ranking.candidates)
    follows = _follows(ranking)
    head = ["rank", "candidate", "score", *(h for h, _ in follows), *(f"{m} (rank)" for m in ranking.metrics), "dim",
            "bytes/vec", "items/s",
            *(["params"] if params else []), *(["tokens"] if tokens else []), "revision"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in ranking.candidates:
        if not c.ok:
            continue
        cells = [_num(c.rank), _md(c.name), _num(c.combined_score)]
        cells += [_num(c.columns.get(key)) for _, key in follows]
        cells += [f"{_num(c.scores.get(m))} ({_num(c.ranks.get(m))})" for m in ranking.metrics]
        cells += [_num(c.dim), _num(c.bytes_per_vector), _rate(c.items_per_second)]
        cells += ([_count(c.parameters)] if params else []) + ([_num(c.api_tokens)] if tokens else [])
        cells += [_md(short_revision(c.revision))]
        lines.append("| " + " | ".join(cells) + " |")
    ds = ranking.dataset
    lines.append("")
    lines.append(
        f"Reference data: {_md(ds.get('source', '?'))}, {ds.get('n', '?')} {ds.get('modality', '')} "
        f"items (fingerprint {str(ds.get('fingerprint', ''))[:12]}). embedselect {ranking.versions.get('embedselect')}."
    )
    for c in ranking.failed:
        lines.append(f"- failed: {_md(c.name)} — {_md(c.error_type)}: {_md(c.error)}")
    if ranking.ok and not ranking.decided:
        lines.append(f"- {_md(no_clear_winner(ranking.leaders))}: {_md(ranking.next_step)}")
    if ranking.answers:
        lines += ["", answers_sentence(ranking), "", "| candidate | agreement | 95 % Wilson interval | contender |",
                  "|---|---|---|---|"]
        lines += [f"| {_md(name)} | {_num(share)} | [{_num(lo)}, {_num(hi)}] | {'yes' if mark else ''} |"
                  for name, share, lo, hi, mark in answers_rows(ranking)]
    if ranking.retrieval:
        lines += _retrieval_markdown(ranking.retrieval)
    for w in _notes(ranking):
        lines.append(f"- note: {_md(w)}")
    return "\n".join(lines) + "\n"


_CSS = """
:root{--fg:#1f2937;--muted:#6b7280;--line:#e5e7eb;--accent:#2563eb;--warn:#b45309}
*{box-sizing:border-box}body{font:15px/1.5 system-ui,-apple-system,Segoe UI,sans-serif;margin:0;color:var(--fg)}
main{max-width:1100px;margin:0 auto;padding:16px}h1{font-size:1.4em;margin:.2em 0}h2{font-size:1.15em;margin:1.6em 0 .4em}
.answer{border:2px solid var(--accent);border-radius:10px;padding:12px 16px;margin:12px 0;background:#eff6ff}
.answer.undecided{border-color:var(--warn);background:#fffbeb}.answer .big{font-size:1.3em;font-weight:600}
.muted{color:var(--muted)}.wrap{overflow-x:auto;-webkit-overflow-scrolling:touch}
table{border-collapse:collapse;width:100%;font-size:14px}th,td{border-bottom:1px solid var(--line);padding:6px 8px;
text-align:left;vertical-align:top}th{background:#f9fafb;white-space:nowrap}td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.failed td{color:#9ca3af}tr.failed td.why{color:var(--warn)}tr.lead td:first-child{font-weight:600}.tie{color:var(--warn);font-weight:600;white-space:nowrap}
.ci{color:var(--muted);font-size:12px;white-space:nowrap}.nb{white-space:nowrap}.rk{color:var(--muted);font-size:12px}
td.name,th.name{position:sticky;left:0;background:#fff}th.name{background:#f9fafb}.bar{background:var(--accent);height:6px;display:inline-block;border-radius:3px}
.figs{display:grid;grid-template-columns:repeat(auto-fit,minmax(320px,1fr));gap:16px}
figure{margin:0;border:1px solid var(--line);border-radius:8px;padding:8px}figure svg{width:100%;height:auto}
figure.span{grid-column:1/-1}
figcaption{font-size:13px;color:var(--muted)}.note{color:var(--warn)}code{font-size:12px}td.src{white-space:nowrap}
@media (max-width:700px){main{padding:10px}th,td{padding:5px 4px}}
"""

_CAPTIONS = {
    "task_prior_scatter": "Closed-form Task Prior statistics of each candidate's kernel under the prior.",
    "task_accuracy": "How well linear probes on each embedding solve the prior's tasks (held-out): tasks sampled from "
                     "it, or for images its clusters.",
    "sufficiency_heatmap": "How much each embedding (row) tells about each other (column); blocks are communities "
                           "when every pair was estimated. Grey cells (\"not estimated\") were not estimated: no "
                           "score reads them (towards a reference point, a copy or the candidate's own family); "
                           "--option sufficiency.pairs=all estimates every pair and its communities.",
    "score_vs_cost": "For a cost-aware choice: candidates on the blue line are not beaten on both score and cost.",
    "label_free_vs_accuracy": "Label-free score against held-out probe accuracy on your labels.",
}


_SPAN = frozenset({"score_vs_cost"})
"""Figures of several panels side by side (11 inches wide): they take a whole row of the grid; in one cell of it
their text was too small to read."""


def _figures(ranking: Ranking) -> list[str]:
    try:
        from embedselect.publish.plots import FIGURES
        import matplotlib  # noqa: F401
    except ImportError:
        return ['<p class="note">Plots need matplotlib: <code>pip install "embedselect[publish]"</code>.</p>']
    out = []
    for key, fn in FIGURES.items():
        svg = fn(ranking)
        if svg:
            span = ' class="span"' if key in _SPAN else ""
            out.append(f'<figure id="fig-{key}"{span}>{svg}<figcaption>{_e(_CAPTIONS[key])}</figcaption></figure>')
    return out


def _answer(ranking: Ranking) -> str:
    best = ranking.best
    if best is None:
        return '<div class="answer undecided"><div class="big">No candidate could be ranked.</div></div>'
    if ranking.decided:
        scores = ", ".join(f"{_e(m)} {_e(_num(best.scores.get(m)))}" for m in ranking.metrics)
        return (f'<div class="answer"><div class="muted">Most promising embedder for this data</div>'
                f'<div class="big">{_name(best.name)}</div><div class="muted">{scores} · ranked first of '
                f"{len(ranking.ok)}</div></div>")
    reasons = "; ".join(_e(r) for r in ranking.undecided_reasons)
    settle = f'<div class="muted">{_e(ranking.next_step[:1].upper() + ranking.next_step[1:])}.</div>' \
        if ranking.next_step else ""
    verdict = no_clear_winner(ranking.leaders)
    return (f'<div class="answer undecided"><div class="big">{_names_in(verdict[0].upper() + verdict[1:], ranking.leaders)}</div>'
            f'<div class="muted">{reasons}</div>{settle}</div>')


def _names_in(text: str, names: list[str]) -> str:
    """``text`` as HTML with each of ``names`` in it kept whole as :func:`~embedselect.publish.text.name_html` keeps
    it (one pass, longest name first, so a name inside a longer one is not marked twice)."""
    marked = {_e(n): _name(n) for n in names if n}
    if not marked:
        return _e(text)
    pattern = "|".join(re.escape(k) for k in sorted(marked, key=len, reverse=True))
    return re.sub(pattern, lambda m: marked[m.group()], _e(text))


def _tail(text: str, n: int = 40) -> str:
    """Long local paths shown by their last 40 characters (the model folder's name is what tells them apart; 40 keep
    the size table within a laptop's window)."""
    return text if len(text) <= n else "…" + text[-(n - 1):]


def _score_cell(c, m: str) -> str:
    """A metric's cell: the score, its rank by that metric beside it, the score's interval under them."""
    text = f'{_e(_num(c.scores.get(m)))} <span class="rk">#{_e(_num(c.ranks.get(m)))}</span>'
    ci = c.intervals.get(m)
    if ci and len(ci) == 2:
        text += f'<br><span class="ci">[{_e(_num(ci[0], 3))}, {_e(_num(ci[1], 3))}]</span>'
    return f'<td class="num">{text}</td>'


def _validation_html(v: Mapping[str, Any]) -> list[str]:
    """The "check against your labels" section: each candidate's held-out accuracy with its bootstrap interval and
    chance level, then how well each label-free score predicts the accuracies (correlations with intervals, top
    pick, regret, the pairs it orders wrongly)."""
    probe = (v.get("probe_settings") or {}).get("accuracy_probe", "")
    col = v.get("accuracy_column") or "logistic_acc"
    table = v.get("table") or {}
    level = v.get("level")
    out = [f'<h2>Check against your labels</h2><p class="muted">Accuracy: held-out probe ({_e(probe)})'
           + (f"; intervals: {_e(_num(100 * level))}% bootstrap" if level else "") + ".</p>"]
    rows = sorted(table.items(), key=lambda kv: -(kv[1].get(col) or 0.0))
    if rows:
        chance = next((r.get("chance") for _, r in rows if r.get("chance") is not None), None)
        out.append('<div class="wrap"><table><thead><tr><th>candidate</th><th>accuracy</th><th>interval</th></tr>'
                   "</thead><tbody>")
        for name, r in rows:
            lo, hi = r.get(f"{col}_lo"), r.get(f"{col}_hi")
            iv = f"[{_num(lo)}, {_num(hi)}]" if lo is not None and hi is not None else MISSING
            out.append(f"<tr><td>{_name(name)}</td><td class=\"num\">{_e(_num(r.get(col)))}</td>"
                       f"<td class=\"num\">{_e(iv)}</td></tr>")
        out.append("</tbody></table></div>")
        if chance is not None:
            out.append(f'<p class="muted">chance (always the most frequent class): {_e(_num(chance))}</p>')
    out += _check_table(v.get("metrics", []), "accuracy")
    return out


def _check_table(metrics: list[Mapping[str, Any]], truth: str) -> list[str]:
    """How well each label-free score predicts ``truth`` (the probe's accuracy, or MRR@10 on the queries): Spearman
    and Kendall with intervals, top pick, the best candidate, regret, the pairs ordered the wrong way round."""
    out = ['<div class="wrap"><table><thead><tr><th>score</th><th>Spearman</th><th>Kendall</th>'
           f"<th>top pick</th><th>best by {_e(truth)}</th><th>regret</th><th>ranked the wrong way round</th></tr>"
           "</thead><tbody>"]
    for mv in metrics:
        cells = [_num(mv.get("metric")), _with_ci(mv, "spearman"), _with_ci(mv, "kendall"), _num(mv.get("top_pick")),
                 _num(mv.get("best")), _num(mv.get("regret")), _wrong_pairs(mv, truth)]
        out.append("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in cells) + "</tr>")
    out.append("</tbody></table></div>")
    return out


def _with_ci(mv: Mapping[str, Any], k: str) -> str:
    ci = mv.get(f"{k}_ci")
    return _num(mv.get(k)) + (f" [{_num(ci[0])}, {_num(ci[1])}]" if ci else "")


def _wrong_pairs(mv: Mapping[str, Any], truth: str) -> str:
    return "; ".join(f"{p['ranked_higher']} above {p['ranked_lower']} ({truth} {_num(p['accuracy_diff'])} lower)"
                     for p in mv.get("wrong_pairs") or []) or "none"


SEARCH_SCORES = (("mrr@10", "MRR@10"), ("ndcg@10", "nDCG@10"), ("recall@1", "recall@1"), ("recall@10", "recall@10"))
"""The search check's scores (:data:`embedselect.validation.retrieval.RETRIEVAL_SCORES`) and their column titles."""


CHECK_LINE = ("How well each label-free score predicts MRR@10: rank correlations over the candidates (with bootstrap "
              "intervals), its top pick and the pairs it orders the wrong way round.")


def _score(v: Any) -> str:
    """A search score (in [0, 1]) to 3 decimals, as the CLI prints it; :data:`MISSING` when missing."""
    return f"{float(v):.3f}" if isinstance(v, (int, float)) and math.isfinite(v) else MISSING


def retrieval_rows(r: Mapping[str, Any]) -> list[tuple[str, list[tuple[float | None, float | None, float | None]]]]:
    """The search check's table: per candidate, best MRR@10 first, its (value, interval low, high) per score of
    :data:`SEARCH_SCORES`."""
    scores = r.get("scores") or {}
    rows = [(name, [(s.get(k), s.get(f"{k}_lo"), s.get(f"{k}_hi")) for k, _ in SEARCH_SCORES])
            for name, s in scores.items()]
    return sorted(rows, key=lambda row: (-(row[1][0][0] if row[1][0][0] is not None else -1.0), row[0]))


def retrieval_sentence(r: Mapping[str, Any]) -> str:
    """One line about the queries: how many, from where, relevant items per query, the intervals, the prompts used,
    and what they decided (``r["decision"]``, :func:`embedselect.pipeline.queries.queries_stage`)."""
    q = r.get("queries") or {}
    level = r.get("level")
    prompted = {n: p for n, p in (r.get("prompts") or {}).items() if p and (p.get("query") or p.get("document"))}
    text = (f"{counted(q.get('n_queries'), 'query', 'queries')} from {q.get('source', '?')} "
            f"({relevant_per_query(q.get('relevant_per_query'))}); each candidate searches "
            "the reference items by exact cosine similarity"
            + (f"; intervals: {_num(100 * level)}% bootstrap over the queries" if level else "") + ".")
    if prompted:
        text += " Prompts used: " + "; ".join(
            f"{n}: query {p.get('query') or 'none'}, documents {p.get('document') or 'none'}"
            for n, p in sorted(prompted.items())) + "."
    d = r.get("decision")
    if d and d.get("winner"):
        text += " The ranking above follows MRR@10 on these queries" + (
            f"; they decide: {d['winner']} beats the best of every other model family." if d.get("decided") else
            f"; they do not separate {', '.join(d.get('remaining') or [])} yet (add queries to settle it).")
    return text


def _retrieval_html(r: Mapping[str, Any]) -> list[str]:
    """The "check against your queries" section: each candidate's MRR@10, nDCG@10, recall@1 and recall@10 with
    bootstrap intervals, then how well each label-free score predicts MRR@10."""
    out = [f'<h2>Check against your queries</h2><p class="muted">{_e(retrieval_sentence(r))}</p>',
           '<div class="wrap"><table><thead><tr><th>candidate</th>'
           + "".join(f"<th>{_e(t)}</th>" for _, t in SEARCH_SCORES) + "</tr></thead><tbody>"]
    for name, cells in retrieval_rows(r):
        tds = "".join(
            f'<td class="num">{_e(_score(v))}'
            + (f'<br><span class="ci">[{_e(_score(lo))}, {_e(_score(hi))}]</span>' if lo is not None and hi is not None
               else "") + "</td>" for v, lo, hi in cells)
        out.append(f"<tr><td>{_name(name)}</td>{tds}</tr>")
    out.append("</tbody></table></div>")
    if r.get("metrics"):
        out.append(f'<p class="muted">{_e(CHECK_LINE)}</p>')
    out += _check_table(r.get("metrics") or [], "MRR@10")
    out += [f'<p class="note">{_e(w)}</p>' for w in r.get("warnings") or []]
    return out


def _retrieval_markdown(r: Mapping[str, Any]) -> list[str]:
    """The search check as Markdown: the sentence, the scores table with intervals, the label-free scores' check."""
    def cell(v: float | None, lo: float | None, hi: float | None) -> str:
        return _score(v) + (f" [{_score(lo)}, {_score(hi)}]" if lo is not None and hi is not None else "")

    lines = ["", "### Check against your queries", "", _md(retrieval_sentence(r)), "",
             "| candidate | " + " | ".join(t for _, t in SEARCH_SCORES) + " |", "|" + "---|" * (1 + len(SEARCH_SCORES))]
    lines += ["| " + " | ".join([_md(name), *(cell(*c) for c in cells)]) + " |" for name, cells in retrieval_rows(r)]
    metrics = r.get("metrics") or []
    if metrics:
        lines += ["", CHECK_LINE, "", "| score | Spearman | Kendall | top pick | best by MRR@10 | regret | ranked the wrong way round |",
                  "|---|---|---|---|---|---|---|"]
        lines += ["| " + " | ".join(_md(x) for x in (
            _num(mv.get("metric")), _with_ci(mv, "spearman"), _with_ci(mv, "kendall"), _num(mv.get("top_pick")),
            _num(mv.get("best")), _num(mv.get("regret")), _wrong_pairs(mv, "MRR@10"))) + " |" for mv in metrics]
    lines += [f"- note: {_md(w)}" for w in r.get("warnings") or []]
    return lines


def answers_rows(ranking: Ranking) -> list[tuple[str, float, float, float, bool]]:
    """Per scored candidate, in table order: (name, agreement with the person's answers, Wilson low, high, whether
    it is one of the contenders the answers decide between); empty without answers."""
    if not ranking.answers:
        return []
    contenders = set(ranking.answers.get("contenders") or [])
    nan = math.nan
    return [(c.name, c.columns.get("answers.agreement", nan), c.columns.get("answers.agreement_low", nan),
             c.columns.get("answers.agreement_high", nan), c.name in contenders) for c in ranking.ok]


def answers_sentence(ranking: Ranking) -> str:
    """What the person's answers decided, in one sentence (empty without answers)."""
    a = ranking.answers
    if not a:
        return ""
    head = (f"Agreement with your answers: {a.get('n_answered')} answered questions ({a.get('n_skipped')} skipped) "
            f"from {a.get('source')}; the share each candidate orders your way.")
    if a.get("decided"):
        return head + f" They separate {a.get('winner')} from the other contenders: it is the pick."
    return head + f" They do not separate the contenders ({', '.join(a.get('contenders') or [])}) yet."


def _notes(ranking: Ranking) -> list[str]:
    """The notes under a ranking: the duplicates dropped from its data (when a rule was applied), then its warnings,
    less those the search check's section already shows and a failed candidate's own note, which its ``failed``
    line (Markdown) or its row (HTML) already says (a note is said once, as under the terminal's table)."""
    from embedselect.data import dropped_duplicates_note

    dropped = dropped_duplicates_note(ranking.dataset or {})
    shown = {str(w) for w in (ranking.retrieval or {}).get("warnings") or []}
    shown |= {c.failure_note for c in ranking.failed if c.failure_note}
    return ([dropped] if dropped else []) + [w for w in ranking.warnings if str(w) not in shown]


def _ranking_table(ranking: Ranking) -> list[str]:
    """The ranking: rank, candidate, combined score (with a bar over the ranking's own range), what the table follows
    besides it (answers, MRR@10), each metric's score with its rank by that metric. A failed candidate's reason is
    the cell beside its name, where its scores would be. Sized for a laptop: a pool of 8 with 40-character names and
    the five default metrics fits a 1280-px window; what each model costs is :func:`_facts_table`."""
    undecided = set() if ranking.decided or len(ranking.leaders) < 2 else set(ranking.leaders)
    follows = _follows(ranking)
    out = ['<h2>Ranking</h2><div class="wrap"><table class="ranking"><thead><tr><th>rank</th>'
           '<th class="name">candidate</th><th>score</th>']
    out += [f"<th>{_e(head)}</th>" for head, _ in follows]
    out += [f'<th title="score, then the rank by it">{_e(m)} <span class="rk">#</span></th>' for m in ranking.metrics]
    out.append("</tr></thead><tbody>")
    # the bar spans the ranking's own range of combined scores (mean-z scores are unbounded)
    finite = [float(c.combined_score) for c in ranking.candidates
              if c.combined_score is not None and math.isfinite(float(c.combined_score))]
    lo, hi = (min(finite), max(finite)) if finite else (0.0, 1.0)
    for c in ranking.candidates:
        v = None if c.combined_score is None else float(c.combined_score)
        width = 0 if v is None or not math.isfinite(v) else (60.0 if hi == lo else 6 + 54 * (v - lo) / (hi - lo))
        tie = ' <span class="tie" title="cannot be separated from the other leaders">≈ tie</span>' if c.name in undecided else ""
        cls = "failed" if not c.ok else ("lead" if c.rank == 1 else "ok")
        row = [f'<tr class="{cls}"><td class="num">{_e(_num(c.rank))}</td><td class="name">{_name(c.name)}{tie}</td>']
        if c.ok:
            row.append(f'<td class="num">{_e(_num(c.combined_score))}<br>'
                       f'<span class="bar" style="width:{width:.0f}px"></span></td>')
            row += [f'<td class="num">{_e(_num(c.columns.get(key)))}</td>' for _, key in follows]
            row += [_score_cell(c, m) for m in ranking.metrics]
        else:  # its reason where its scores would be, beside its name: in the last column it was out of sight
            span = 1 + len(follows) + len(ranking.metrics)  # score, answers / MRR@10, each metric
            row.append(f'<td class="why" colspan="{span}">failed: {_e(c.error_type)}: {_e(c.error)}</td>')
        out.append("".join(row) + "</tr>")
    out.append("</tbody></table></div>")
    return out


def _facts_table(ranking: Ranking) -> list[str]:
    """What each candidate is and costs, failed ones too, in the ranking's order: dimension, bytes per vector, items
    per second, parameters and API tokens (when any candidate has them), model id (a long path by its end) and
    revision. A table of its own under the ranking: beside the scores it made the table wider than a laptop's
    window."""
    params = any(c.parameters for c in ranking.candidates)
    tokens = any(c.api_tokens is not None for c in ranking.candidates)
    out = ['<h2>Size, speed and source</h2><div class="wrap"><table><thead><tr><th class="name">candidate</th>'
           "<th>dim</th><th>bytes/vec</th><th>items/s</th>" + ("<th>params</th>" if params else "")
           + ("<th>tokens</th>" if tokens else "") + "<th>model</th><th>revision</th></tr></thead><tbody>"]
    for c in ranking.candidates:
        out.append("".join([
            f'<tr class="{"ok" if c.ok else "failed"}"><td class="name">{_name(c.name)}</td>',
            f'<td class="num">{_e(_num(c.dim))}</td>',
            f'<td class="num">{_e(_num(c.bytes_per_vector))}</td>',
            f'<td class="num">{_e(_rate(c.items_per_second))}</td>',
            *([f'<td class="num">{_e(_count(c.parameters))}</td>'] if params else []),
            *([f'<td class="num">{_e(_num(c.api_tokens))}</td>'] if tokens else []),
            f'<td class="src"><code>{_e(_tail(c.model_id or ""))}</code></td>',
            f'<td class="src"><code>{_e(short_revision(c.revision))}</code></td></tr>',
        ]))
    out.append("</tbody></table></div>")
    return out


def to_html(ranking: Ranking, *, title: str = "embedselect ranking", plots: bool = True) -> str:
    """One self-contained HTML page for a ranking: the answer at a glance, the table with intervals and ties
    marked, the figures (inline SVG, see :mod:`embedselect.publish.plots`), the check against labels when
    given, and notes. No scripts, no external resources; every string escaped."""
    ds = ranking.dataset
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">',
        # nothing may load or run: the page is self-contained (inline styles and SVG only)
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "img-src data:\">",
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body><main>",
        f"<h1>{_e(title)}</h1>",
        '<p class="muted">Reference data: <code>{}</code> — {} {} items, fingerprint <code>{}</code>. Created {}.</p>'.format(
            _e(ds.get("source", "?")), _e(ds.get("n", "?")), _e(ds.get("modality", "")),
            _e(str(ds.get("fingerprint", ""))[:16]), _e(ranking.created_at),
        ),
        _answer(ranking),
    ]
    out += _ranking_table(ranking)
    if ranking.answers:
        out.append(f"<h2>Your answers</h2><p>{_e(answers_sentence(ranking))}</p>")
        out.append('<div class="wrap"><table><thead><tr><th>candidate</th><th>agreement</th><th>95 % Wilson '
                   "interval</th><th>contender</th></tr></thead><tbody>")
        out += [f'<tr><td>{_name(name)}</td><td class="num">{_e(_num(share))}</td><td class="ci">[{_e(_num(lo))}, '
                f'{_e(_num(hi))}]</td><td>{"yes" if mark else ""}</td></tr>'
                for name, share, lo, hi, mark in answers_rows(ranking)]
        out.append("</tbody></table></div>")
    weights = ranking.settings.get("combined_weights") or {}
    if weights:
        how = "weighted mean z-score (0 = the pool's average)" if ranking.combine == "mean-z" else \
            "weighted mean rank (1 = first in every metric)"
        scored = {m for m in weights if any(isinstance(c.scores.get(m), (int, float)) and math.isfinite(c.scores[m])
                                            for c in ranking.candidates)}
        shown = [m for m, w in weights.items() if not w or m not in scored]
        out.append(f'<p class="muted">score: {_e(how)} of '
                   + ", ".join(f"{_e(m)} × {_e(_num(w))}" for m, w in weights.items() if w and m in scored)
                   + (f"; shown, not in the score: {_e(', '.join(shown))}" if shown else "")
                   + "; variants of one model and its copies count once as evidence about the data, and a quantised "
                     "or truncated copy of another candidate, the same model with a shorter max_length, or one its card "
                     "calls a distillation of it, is placed right below it.</p>")
    out += _facts_table(ranking)
    if plots:
        figs = _figures(ranking)
        if figs:
            out.append('<h2>Figures</h2><div class="figs">' + "".join(figs) + "</div>")
    if ranking.validation:
        out += _validation_html(ranking.validation)
    if ranking.retrieval:
        out += _retrieval_html(ranking.retrieval)
    notes = _notes(ranking)
    if notes:
        out.append("<h2>Notes</h2><ul>" + "".join(f'<li class="note">{_e(w)}</li>' for w in notes) + "</ul>")
    versions = ", ".join(f"{_e(k)} {_e(v)}" for k, v in ranking.versions.items())
    knn_device = (ranking.details.get("nn_agreement") or {}).get("knn_device")
    where = f". Nearest neighbours (FAISS) ran on: <code>{_e(knn_device)}</code>" if knn_device else ""
    out.append(f'<p class="muted"><small>{versions}. Settings: <code>{_e(ranking.settings)}</code>{where}</small></p>')
    out.append("</main></body></html>")
    return "\n".join(out)

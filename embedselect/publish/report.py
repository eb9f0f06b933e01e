"""Human-readable renderings of a :class:`~embedselect.ranking.Ranking`: a self-contained HTML report and a
Markdown leaderboard table.

Every string that can come from outside (model ids and revisions from the hub, file names, error messages,
warnings) is untrusted: the HTML report escapes all of them and the Markdown table escapes the characters
that would break out of a table cell or inject links/HTML.
"""

from __future__ import annotations

from embedselect.publish.text import esc as _e
from embedselect.publish.text import md as _md
from embedselect.publish.text import num as _num
from embedselect.ranking import Ranking


def to_markdown(ranking: Ranking) -> str:
    """A Markdown leaderboard: rank, candidate, combined score, each metric's score and rank, dimension."""
    head = ["rank", "candidate", "score", *(f"{m} (rank)" for m in ranking.metrics), "dim", "revision"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in ranking.candidates:
        if not c.ok:
            continue
        cells = [_num(c.rank), _md(c.name), _num(c.combined_score)]
        cells += [f"{_num(c.scores.get(m))} ({_num(c.ranks.get(m))})" for m in ranking.metrics]
        cells += [_num(c.dim), _md((c.revision or "")[:12])]
        lines.append("| " + " | ".join(cells) + " |")
    ds = ranking.dataset
    lines.append("")
    lines.append(
        f"Reference data: {_md(ds.get('source', '?'))}, {ds.get('n', '?')} {ds.get('modality', '')} "
        f"items (fingerprint {str(ds.get('fingerprint', ''))[:12]}). embedselect {ranking.versions.get('embedselect')}."
    )
    for c in ranking.failed:
        lines.append(f"- failed: {_md(c.name)} — {_md(c.error_type)}: {_md(c.error)}")
    for w in ranking.warnings:
        lines.append(f"- note: {_md(w)}")
    return "\n".join(lines) + "\n"


_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}th,td{border:1px solid #ccc;padding:4px 8px;text-align:left}
th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.failed td{color:#999}.bar{background:#4a7bd0;height:8px;display:inline-block}
.note{color:#8a5a00}code{font-size:12px}
"""


def to_html(ranking: Ranking, *, title: str = "embedselect ranking") -> str:
    """A self-contained HTML page (no scripts, no external resources) for a ranking."""
    ds = ranking.dataset
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        "<p>Reference data: <code>{}</code> — {} {} items, fingerprint <code>{}</code>. Created {}.</p>".format(
            _e(ds.get("source", "?")),
            _e(ds.get("n", "?")),
            _e(ds.get("modality", "")),
            _e(str(ds.get("fingerprint", ""))[:16]),
            _e(ranking.created_at),
        ),
        "<table><thead><tr><th>rank</th><th>candidate</th><th>score</th>",
    ]
    out += [f"<th>{_e(m)}</th><th>#</th>" for m in ranking.metrics]
    out.append("<th>dim</th><th>model</th><th>revision</th><th>status</th></tr></thead><tbody>")
    for c in ranking.candidates:
        width = 0 if c.combined_score is None else max(0.0, min(1.0, float(c.combined_score))) * 100
        row = [
            f'<tr class="{"ok" if c.ok else "failed"}">',
            f'<td class="num">{_e(_num(c.rank))}</td>',
            f"<td>{_e(c.name)}</td>",
            f'<td class="num">{_e(_num(c.combined_score))} <span class="bar" style="width:{width:.0f}px"></span></td>',
        ]
        for m in ranking.metrics:
            row.append(f'<td class="num">{_e(_num(c.scores.get(m)))}</td><td class="num">{_e(_num(c.ranks.get(m)))}</td>')
        status = "ok" if c.ok else f"failed: {c.error_type}: {c.error}"
        row += [
            f'<td class="num">{_e(_num(c.dim))}</td>',
            f"<td><code>{_e(c.model_id or '')}</code></td>",
            f"<td><code>{_e((c.revision or '')[:12])}</code></td>",
            f"<td>{_e(status)}</td></tr>",
        ]
        out.append("".join(row))
    out.append("</tbody></table>")
    if ranking.validation:
        out.append("<h2>Check against your labels</h2><table><thead><tr><th>metric</th><th>Spearman</th>"
                   "<th>Kendall</th><th>top pick</th><th>best by accuracy</th><th>regret</th></tr></thead><tbody>")  # fmt: skip
        for mv in ranking.validation.get("metrics", []):
            out.append(
                "<tr>"
                + "".join(
                    f"<td>{_e(_num(mv.get(k)))}</td>"
                    for k in ("metric", "spearman", "kendall", "top_pick", "best", "regret")
                )
                + "</tr>"
            )
        out.append("</tbody></table>")
    if ranking.warnings:
        out.append("<h2>Notes</h2><ul>" + "".join(f'<li class="note">{_e(w)}</li>' for w in ranking.warnings) + "</ul>")
    versions = ", ".join(f"{_e(k)} {_e(v)}" for k, v in ranking.versions.items())
    out.append(f"<p><small>{versions}. Settings: <code>{_e(ranking.settings)}</code></small></p>")
    out.append("</body></html>")
    return "\n".join(out)

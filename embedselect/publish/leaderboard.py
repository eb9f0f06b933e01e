"""Leaderboards with history: a ranking next to the previous ranking of the same reference data.

:func:`load_ranking` reads a stored ranking (by id, or the latest for a data fingerprint);
:func:`previous_ranking` finds the ranking this one follows (same data fingerprint and metrics, created
before it); :func:`leaderboard_rows` turns the pair into rows with rank and score changes, new entries marked;
:func:`to_markdown`, :func:`to_json` and :func:`to_html` render them. Nothing is recomputed: everything comes
from the stored rankings.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from embedselect.errors import ConfigError
from embedselect.publish.text import esc, md, num, short_revision
from embedselect.ranking.result import Ranking


@dataclass(frozen=True)
class Row:
    """One leaderboard line.

    Attributes:
        rank: combined rank now (1 = best); ties share a rank.
        name: candidate name (untrusted text: escape it).
        model_id / revision: provenance (revision is the pinned commit or content hash).
        score: combined score now (the ranking's scale: mean z-score across the pool by default, so it is relative to
            the candidates ranked with it).
        scores: metric name -> headline score now.
        previous_rank / previous_score: in the previous ranking; None for a new entry.
        rank_change: previous_rank - rank (positive = moved up); None for a new entry.
        score_change: score - previous_score; None for a new entry.
        new: True when the candidate (same name) was not in the previous ranking.
        revision_changed: True when it was, but with another revision.
    """

    rank: int | None
    name: str
    model_id: str | None
    revision: str | None
    score: float | None
    scores: dict[str, float]
    previous_rank: int | None
    previous_score: float | None
    rank_change: int | None
    score_change: float | None
    new: bool
    revision_changed: bool


def load_ranking(store: Any, *, ranking_id: str | None = None, fingerprint: str | None = None) -> Ranking:
    """A stored ranking: ``ranking_id`` (a unique prefix is enough), else the latest for ``fingerprint`` (a
    prefix of the data fingerprint), else the latest of all.

    Raises:
        ConfigError: no such ranking, or nothing stored yet.
    """
    if ranking_id:
        found = store.get_ranking(ranking_id)
        if found is None:
            raise ConfigError(f"no stored ranking has id {ranking_id!r}; list them with `embedselect leaderboard --list`")
        return Ranking.from_dict(found)
    latest = store.list_rankings(fingerprint=fingerprint, limit=1)
    if latest.empty:
        where = f" for data fingerprint {fingerprint!r}" if fingerprint else ""
        raise ConfigError(f"no ranking is stored{where} in {store.root}; run `embedselect rank` first")
    return Ranking.from_dict(store.get_ranking(str(latest.ranking_id.iloc[0])))


def previous_ranking(store: Any, ranking: Ranking) -> Ranking | None:
    """The newest stored ranking of the same data (fingerprint) and metrics created before ``ranking``, or None."""
    fingerprint = str(ranking.dataset.get("fingerprint", ""))
    if not fingerprint:
        return None
    rows = store.list_rankings(fingerprint=fingerprint)  # newest first
    rows = rows[(rows.fingerprint == fingerprint) & (rows.metrics == ",".join(ranking.metrics))]
    this = rows.index[rows.ranking_id == ranking.ranking_id]
    if len(this):  # stored: the ones stored before it; not stored (yet): every stored one is older
        rows = rows.loc[rows.index > this[0]]
    if rows.empty:
        return None
    return Ranking.from_dict(store.get_ranking(str(rows.ranking_id.iloc[0])))


def leaderboard_rows(ranking: Ranking, previous: Ranking | None = None) -> list[Row]:
    """Rows of ``ranking`` (its ok candidates, best first) with changes against ``previous``."""
    before = {c.name: c for c in (previous.ok if previous is not None else [])}
    rows = []
    for c in ranking.ok:
        p = before.get(c.name)
        rows.append(Row(
            rank=c.rank, name=c.name, model_id=c.model_id, revision=c.revision, score=c.combined_score,
            scores=dict(c.scores),
            previous_rank=p.rank if p else None,
            previous_score=p.combined_score if p else None,
            rank_change=(p.rank - c.rank) if p and p.rank is not None and c.rank is not None else None,
            score_change=(c.combined_score - p.combined_score)
            if p and p.combined_score is not None and c.combined_score is not None else None,
            new=p is None and previous is not None,
            revision_changed=bool(p and p.revision != c.revision),
        ))
    return rows


def _change(row: Row) -> str:
    if row.new:
        return "new"
    if row.rank_change is None:
        return ""
    if row.rank_change > 0:
        return f"▲{row.rank_change}"
    if row.rank_change < 0:
        return f"▼{-row.rank_change}"
    return "="


def _provenance(ranking: Ranking, previous: Ranking | None) -> str:
    ds = ranking.dataset
    text = (f"{ds.get('n', '?')} {ds.get('modality', '')} items, data fingerprint "
            f"{str(ds.get('fingerprint', ''))[:12]}, ranking {ranking.short_id} ({ranking.created_at})")
    if previous is not None:
        text += f"; changes against ranking {previous.short_id} ({previous.created_at})"
    return text


def _lines_under(ranking: Ranking) -> list[str]:
    """What a leaderboard says under its table (plain text): each failed candidate with its reason (the table has
    only the ranked ones), then, for an undecided ranking, no clear winner and why, and the next step."""
    lines = [f"failed: {c.name} — {c.error_type}: {c.error}" for c in ranking.failed]
    if ranking.decided:
        return lines
    lines.append(f"no clear winner: {'; '.join(ranking.undecided_reasons)}")
    return lines + ([ranking.next_step] if ranking.next_step else [])


def to_markdown(ranking: Ranking, previous: Ranking | None = None) -> str:
    """A Markdown leaderboard: rank, change, candidate, combined score and its change, each metric's score."""
    rows = leaderboard_rows(ranking, previous)
    head = ["rank", "change", "candidate", "score", "Δ score", *ranking.metrics, "revision"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [num(r.rank), _change(r), md(r.name), num(r.score),
                 "" if r.score_change is None else f"{r.score_change:+.3f}",
                 *(num(r.scores.get(m)) for m in ranking.metrics), md(short_revision(r.revision))]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", md(_provenance(ranking, previous))]
    lines += [f"- {md(line)}" for line in _lines_under(ranking)]
    return "\n".join(lines) + "\n"


def to_json(ranking: Ranking, previous: Ranking | None = None) -> str:
    """The leaderboard as JSON: ranking id, data, previous ranking id, decided/leaders and the rows."""
    payload = {
        "ranking_id": ranking.ranking_id,
        "created_at": ranking.created_at,
        "dataset": {k: ranking.dataset.get(k) for k in ("source", "n", "modality", "fingerprint")},
        "metrics": list(ranking.metrics),
        "previous_ranking_id": previous.ranking_id if previous is not None else None,
        "decided": ranking.decided,
        "leaders": list(ranking.leaders),
        "rows": [asdict(r) for r in leaderboard_rows(ranking, previous)],
    }
    return json.dumps(payload, indent=2, default=str)


def to_html_table(ranking: Ranking, previous: Ranking | None = None) -> str:
    """The leaderboard as an HTML ``<table>`` fragment (every string escaped)."""
    rows = leaderboard_rows(ranking, previous)
    head = ["rank", "change", "candidate", "score", "Δ score", *ranking.metrics, "revision"]
    out = ['<table class="leaderboard"><thead><tr>' + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr></thead><tbody>"]
    for r in rows:
        change = _change(r)
        cls = "new" if r.new else ("up" if (r.rank_change or 0) > 0 else ("down" if (r.rank_change or 0) < 0 else ""))
        cells = [num(r.rank), change, r.name, num(r.score),
                 "" if r.score_change is None else f"{r.score_change:+.3f}",
                 *(num(r.scores.get(m)) for m in ranking.metrics), short_revision(r.revision)]
        out.append(f'<tr class="{cls}">' + "".join(f"<td>{esc(v)}</td>" for v in cells) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def to_html(ranking: Ranking, previous: Ranking | None = None, *, title: str = "embedselect leaderboard") -> str:
    """A self-contained HTML page with the leaderboard (no scripts, no external resources); its failed candidates and,
    for an undecided ranking, no clear winner are said under the table, as the Markdown does."""
    css = ("body{font:15px/1.45 system-ui,sans-serif;margin:1.5em;color:#222;max-width:60em}"
           "table{border-collapse:collapse;width:100%}th,td{border-bottom:1px solid #ddd;padding:6px 8px;text-align:left}"
           "tr.up td:nth-child(2){color:#16803c}tr.down td:nth-child(2){color:#b42318}tr.new td:nth-child(2){color:#1d4ed8}"
           ".wrap{overflow-x:auto}")
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{esc(title)}</title><style>{css}</style></head><body><h1>{esc(title)}</h1>"
        f'<div class="wrap">{to_html_table(ranking, previous)}</div>'
        + "".join(f'<p class="note">{esc(line)}</p>' for line in _lines_under(ranking))
        + f"<p><small>{esc(_provenance(ranking, previous))}</small></p></body></html>"
    )

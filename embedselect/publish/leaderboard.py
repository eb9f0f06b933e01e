"""Leaderboard of a ranking with history: rank and score change against the previous ranking of the same
dataset (and candidate set, when one exists) in the store. Markdown, JSON and HTML.

Reads Rankings only (the previous one is found by :func:`embedselect.store.rankings.previous_ranking`);
never recomputes. Scores are the ranking's ``combined_score`` (higher is better, unitless).
"""

from __future__ import annotations

import html
import json
import math
from typing import Any

from embedselect.publish.report import _md, _num
from embedselect.ranking import Ranking


def leaderboard_rows(ranking: Ranking, previous: Ranking | None = None) -> list[dict[str, Any]]:
    """One dict per ranked (ok) candidate, in rank order: ``rank``, ``candidate``, ``model_id``, ``score``,
    ``metrics`` (name -> score), ``interval`` (first [low, high] found or None), ``prev_rank``, ``rank_change``
    (positive = moved up), ``score_change``, ``new`` (True when absent or failed in ``previous``).
    Without ``previous``: ``new`` is None and the changes are None."""
    prev = {c.spec or c.name: c for c in (previous.ok if previous else [])}
    rows = []
    for c in ranking.ok:
        p = prev.get(c.spec or c.name)
        row: dict[str, Any] = {
            "rank": c.rank, "candidate": c.name, "model_id": c.model_id, "score": c.combined_score,
            "metrics": dict(c.scores), "interval": next(iter(c.intervals.values()), None),
            "prev_rank": None, "rank_change": None, "score_change": None,
            "new": None if previous is None else p is None,
        }  # fmt: skip
        if p is not None:
            row["prev_rank"] = p.rank
            if p.rank is not None and c.rank is not None:
                row["rank_change"] = p.rank - c.rank
            if p.combined_score is not None and c.combined_score is not None:
                row["score_change"] = float(c.combined_score) - float(p.combined_score)
        rows.append(row)
    return rows


def _rank_change(row: dict) -> str:
    if row["new"]:
        return "new"
    d = row["rank_change"]
    if d is None:
        return "–"
    return "=" if d == 0 else (f"▲{d}" if d > 0 else f"▼{-d}")


def _score_change(row: dict) -> str:
    d = row["score_change"]
    if d is None or not math.isfinite(d):
        return "–"
    return f"{d:+.3g}"


def to_json(ranking: Ranking, previous: Ranking | None = None) -> str:
    """``{"ranking_id", "previous_ranking_id", "dataset", "metrics", "rows": [...]}`` as strict JSON."""
    from embedselect.ranking import _clean

    doc = {
        "ranking_id": ranking.ranking_id,
        "created_at": ranking.created_at,
        "previous_ranking_id": previous.ranking_id if previous else None,
        "dataset": {k: ranking.dataset.get(k) for k in ("source", "modality", "n", "fingerprint")},
        "metrics": ranking.metrics,
        "rows": leaderboard_rows(ranking, previous),
    }
    return json.dumps(_clean(doc), indent=2, allow_nan=False, ensure_ascii=False)


def to_markdown(ranking: Ranking, previous: Ranking | None = None) -> str:
    """A Markdown table: rank, Δrank, candidate, score, Δscore, each metric. Untrusted text is escaped."""
    head = ["rank", "Δ rank", "candidate", "score", "Δ score", *ranking.metrics]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in leaderboard_rows(ranking, previous):
        cells = [_num(r["rank"]), _rank_change(r), _md(r["candidate"]), _num(r["score"]), _score_change(r)]
        cells += [_num(r["metrics"].get(m)) for m in ranking.metrics]
        lines.append("| " + " | ".join(cells) + " |")
    since = f"ranking {previous.ranking_id[:12]} ({previous.created_at})" if previous else "no earlier ranking"
    lines += ["", f"Changes since {_md(since)}; fingerprint {str(ranking.dataset.get('fingerprint', ''))[:12]}."]
    return "\n".join(lines) + "\n"


def to_html(ranking: Ranking, previous: Ranking | None = None) -> str:
    """An HTML ``<table>`` fragment (class ``leaderboard``); every string is escaped."""
    e = lambda v: html.escape(str(v), quote=True)  # noqa: E731
    head = ["rank", "Δ rank", "candidate", "score", "Δ score", *ranking.metrics]
    out = ['<table class="leaderboard"><thead><tr>' + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr></thead><tbody>"]
    for r in leaderboard_rows(ranking, previous):
        cls = "new" if r["new"] else ("up" if (r["rank_change"] or 0) > 0 else ("down" if (r["rank_change"] or 0) < 0 else ""))
        cells = [_num(r["rank"]), _rank_change(r), r["candidate"], _num(r["score"]), _score_change(r)]
        cells += [_num(r["metrics"].get(m)) for m in ranking.metrics]
        out.append(f'<tr class="{cls}">' + "".join(f"<td>{e(c)}</td>" for c in cells) + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)

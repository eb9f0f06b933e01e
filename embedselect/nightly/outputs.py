"""The night's published outputs, replaced atomically.

The output path (``output:`` in the config, e.g. ``./site``) is a symbolic link to a complete version folder
``.<name>.versions/<run_id>/``. A night writes its new version folder entirely (files fsync'd), then swaps the
link with one ``rename`` — readers see the old site or the new one, never a mix or a half-written file. The two
newest versions are kept. An existing real folder at the output path (from before) is moved into the versions
folder once, the first time.

:func:`write_site` is the one place that calls the report writers: switching to ``embedselect.publish`` is one
edit there.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

KEEP_VERSIONS = 2


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def _short(rev: str | None) -> str:
    """A 40-hex commit sha shortened to 10 characters; other revisions (builtin versions) as they are."""
    rev = rev or ""
    return rev[:10] if len(rev) == 40 and all(c in "0123456789abcdef" for c in rev) else rev


def _leaderboard_md(rows: list[dict[str, Any]], summary: dict[str, Any]) -> str:
    def change(r):
        if r["prev_rank"] is None:
            return "new"
        d = r["delta"]
        return "=" if d == 0 else (f"▲{d}" if d > 0 else f"▼{-d}")

    def cell(v: Any) -> str:  # hub text is untrusted: no markdown/HTML structure from it
        return str(v).replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;").replace("\n", " ")

    lines = [
        f"# embedselect nightly leaderboard ({summary['started_at'][:10]})",
        "",
        "| rank | change | model | revision | score |",
        "|---:|:---:|---|---|---:|",
    ]
    for r in rows:
        score = "-" if r["combined_score"] is None else f"{r['combined_score']:.3f}"
        lines.append(f"| {r['rank']} | {change(r)} | {cell(r['name'])} | {cell(_short(r['revision']))} | {score} |")
    return "\n".join(lines) + "\n"


def write_site(folder: Path, ranking: Any, leaderboard: list[dict[str, Any]], summary: dict[str, Any]) -> None:
    """Write every output file of a night into ``folder`` (a fresh version folder).

    Files: ``leaderboard.json`` / ``leaderboard.md`` (rank, change vs the previous night), ``ranking.json`` (the
    full :class:`~embedselect.ranking.Ranking`), ``report.html`` / ``report.md``, ``badges/leader.json`` (a
    shields.io endpoint badge naming the leader), ``badges/<candidate>.svg|.json`` + ``badges/badges.md`` (one
    badge per ranked candidate, :func:`embedselect.publish.write_badges`) and ``run.json`` (the run summary).
    """
    from embedselect.publish import report, write_badges

    _write(folder / "leaderboard.json", json.dumps({"night": summary["started_at"], "run_id": summary["run_id"],
                                                   "rows": leaderboard}, indent=2, default=str))  # fmt: skip
    _write(folder / "leaderboard.md", _leaderboard_md(leaderboard, summary))
    _write(folder / "ranking.json", ranking.to_json())
    _write(folder / "report.html", report.to_html(ranking, title="embedselect nightly ranking"))
    _write(folder / "report.md", report.to_markdown(ranking))
    leader = leaderboard[0]["name"] if leaderboard else "none"
    _write(folder / "badges" / "leader.json", json.dumps(
        {"schemaVersion": 1, "label": "best embedder", "message": leader, "color": "blue"}))  # fmt: skip
    write_badges(ranking, folder / "badges", dataset=Path(str(ranking.dataset.get("source", "data"))).name)
    _write(folder / "run.json", json.dumps(summary, indent=2, default=str))


def publish(output: Path, run_id: str, ranking: Any, leaderboard: list[dict[str, Any]],
            summary: dict[str, Any]) -> Path:
    """Write the night's outputs into a new version folder and atomically point ``output`` at it.

    Returns:
        the version folder now published.
    """
    output = Path(output)
    versions = output.parent / f".{output.name}.versions"
    versions.mkdir(parents=True, exist_ok=True)
    final = versions / run_id
    tmp = versions / f".{run_id}.partial"
    if tmp.exists():
        shutil.rmtree(tmp)
    write_site(tmp, ranking, leaderboard, summary)
    os.replace(tmp, final)
    if output.exists() and not output.is_symlink():  # a real folder from before: move it aside once
        os.replace(output, versions / f"legacy-{run_id}")
    link = output.parent / f".{output.name}.link-{run_id}"
    if link.is_symlink() or link.exists():
        link.unlink()
    os.symlink(os.path.relpath(final, output.parent), link)
    os.replace(link, output)  # the atomic swap
    _prune(versions, keep=final)
    return final


def _prune(versions: Path, *, keep: Path) -> None:
    """Remove all but the newest :data:`KEEP_VERSIONS` version folders (and stale partial ones)."""
    dirs = sorted((d for d in versions.iterdir() if d.is_dir()), key=lambda d: d.stat().st_mtime, reverse=True)
    kept = 0
    for d in dirs:
        if d == keep or (not d.name.startswith(".") and kept < KEEP_VERSIONS - 1 and d != keep):
            if d != keep:
                kept += 1
            continue
        shutil.rmtree(d, ignore_errors=True)

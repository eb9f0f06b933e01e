"""The night's published outputs: checked before any work, replaced atomically, never a user's folder.

The output path (``output:`` in the config, e.g. ``./site``) is a symbolic link to a complete version folder
``.<name>.versions/<run_id>/``. A night writes its new version folder entirely (files fsync'd), then swaps the
link with one ``rename`` — readers see the old site or the new one, never a mix or a half-written file. The two
newest versions are kept. Every folder the night creates carries :data:`embedselect._fs.guard.MARKER`; the night
takes over only a missing or empty ``output``, or its own link, and refuses anything else (exit 2) before any
work (:func:`check_outputs`): see docs/nightly.md, "What a night may create, replace and delete".

:func:`write_site` is the one place that calls the report writers: switching to ``embedselect.publish`` is one
edit there.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
from pathlib import Path
from typing import Any

from embedselect._fs import guard as fsguard
from embedselect.errors import ConfigError

log = logging.getLogger(__name__)

KEEP_VERSIONS = 2
_KINDS = ("nightly-version",)  # the marker kind of a site the night wrote: the only folders it takes over
_OURS = "a site published by embedselect nightly"
RUN_ID_RE = re.compile(r"^\d{8}T\d{6}Z-[0-9a-f]{6}$")
"""A night's run id, the name of its version folder."""


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fsguard.write_text(path, text)


def _short(rev: str | None) -> str:
    """A hex revision (a hub commit) shortened to 10 characters; other revisions (builtin versions) as they are
    (:func:`~embedselect.publish.text.short_revision`)."""
    from embedselect.publish.text import short_revision

    return short_revision(rev, 10)


def _leaderboard_md(rows: list[dict[str, Any]], summary: dict[str, Any]) -> str:
    from embedselect.publish.text import md  # hub text is untrusted: the one sanitiser of every published format

    def change(r):  # a model ranked at a new revision (why "updated") says so beside its move
        if r["prev_rank"] is None:
            return "new"
        d = r["delta"]
        moved = "=" if d == 0 else (f"▲{d}" if d > 0 else f"▼{-d}")
        return moved + (" new revision" if r.get("why") == "updated" else "")

    lines = [f"# embedselect nightly leaderboard ({md(summary['started_at'][:10])})", ""]
    if summary.get("decided") is False:
        from embedselect.ranking.combine import no_clear_winner

        said = md(no_clear_winner(summary.get("leaders") or []))
        lines += [said[:1].upper() + said[1:] + " (report.md says why).", ""]
    lines += [
        "| rank | change | model | revision | score |",
        "|---:|:---:|---|---|---:|",
    ]
    for r in rows:
        score = "-" if r["combined_score"] is None else f"{r['combined_score']:.3f}"
        lines.append(f"| {r['rank']} | {change(r)} | {md(r['name'])} | {md(_short(r['revision']))} | {score} |")
    return "\n".join(lines + _lines_under(summary)) + "\n"


def _lines_under(summary: dict[str, Any]) -> list[str]:
    """What the Markdown leaderboard says under its table: the previous night's candidates it does not hold (with
    their rank then and why), then tonight's failed candidates with their reason (the table holds the ranked ones
    only)."""
    from embedselect.publish.text import md

    lines: list[str] = []
    gone = summary.get("not_ranked") or []
    if gone:
        lines += ["", "Ranked the previous night, not in tonight's table:", ""]
        lines += [f"- {md(g['name'])} (#{g['prev_rank']} the previous night): {md(g['why'])}" for g in gone]
    failed = summary.get("failed") or []
    if failed:
        lines += ["", "Failed tonight:", ""]
        lines += [f"- {md(f['name'])}: {md(f['error_type'])}: {md(f['reason'])}"
                  + (" (a passing hub fault: tried again the next night)" if f.get("transient") else "")
                  for f in failed]
    return lines


def leader_badge(leaderboard: list[dict[str, Any]], summary: dict[str, Any]) -> dict[str, Any]:
    """The shields.io endpoint document of ``badges/leader.json``: the night's first model, or, when the ranking
    named no clear winner (``summary["decided"]`` False), every leader as tied (as the per-candidate badges say
    ``tied #1``), in grey."""
    from embedselect.publish.text import clean

    if not leaderboard:
        return {"schemaVersion": 1, "label": "best embedder", "message": "none", "color": "lightgrey"}
    if summary.get("decided") is False:
        leaders = [clean(n) for n in summary.get("leaders") or [leaderboard[0]["name"]]]
        message = ("no clear winner: " if len(leaders) > 1 else "unconfirmed: ") + ", ".join(leaders)
        return {"schemaVersion": 1, "label": "best embedder", "message": message, "color": "lightgrey"}
    return {"schemaVersion": 1, "label": "best embedder", "message": clean(leaderboard[0]["name"]), "color": "blue"}


def write_site(folder: Path, ranking: Any, leaderboard: list[dict[str, Any]], summary: dict[str, Any],
               previous: Path | None = None) -> None:
    """Write every output file of a night into ``folder`` (a fresh version folder).

    Files: ``leaderboard.json`` / ``leaderboard.md`` (rank, change vs the previous night; the previous night's
    candidates not ranked tonight and why, tonight's failed ones and why), ``ranking.json`` (the
    full :class:`~embedselect.ranking.result.Ranking`), ``report.html`` / ``report.md``, ``badges/leader.json`` (a
    shields.io endpoint badge naming the leader, or the leaders when no winner is clear: :func:`leader_badge`), ``badges/<candidate>.svg|.json`` + ``badges/badges.md`` (one
    badge per ranked candidate, :func:`embedselect.publish.write_badges`; the badges of ``previous``, the site
    published before, that tonight's ranking does not hold are carried forward: :func:`_carry_badges`) and
    ``run.json`` (the run summary).
    """
    from embedselect.publish import report, write_badges

    _write(folder / "leaderboard.json", json.dumps({
        "night": summary["started_at"], "run_id": summary["run_id"], "rows": leaderboard,
        "not_ranked": summary.get("not_ranked") or [],
        "failed": [{k: f[k] for k in ("name", "revision", "error_type", "reason")} for f in summary.get("failed") or []],
    }, indent=2, default=str))
    _write(folder / "leaderboard.md", _leaderboard_md(leaderboard, summary))
    _write(folder / "ranking.json", ranking.to_json())
    _write(folder / "report.html", report.to_html(ranking, title="embedselect nightly ranking"))
    _write(folder / "report.md", report.to_markdown(ranking))
    _write(folder / "badges" / "leader.json", json.dumps(leader_badge(leaderboard, summary)))
    write_badges(ranking, folder / "badges", dataset=Path(str(ranking.dataset.get("source", "data"))).name)
    if previous is not None:
        _carry_badges(folder / "badges", previous)
    _write(folder / "run.json", json.dumps(summary, indent=2, default=str))


def _carry_badges(badges: Path, previous: Path) -> None:
    """A badge URL published once keeps working: every badge of the previous site (``previous``) that tonight's
    ``badges`` folder lacks (its model was not ranked tonight: unchanged outside ``keep_top``, failed, left, no longer
    pinned, gone from the crawl) is written into it. A model the previous night ranked gets its place then and that
    night's date, in grey (:func:`embedselect.publish.badges.carried_badge`); one carried already is copied as it
    was. Only files :func:`~embedselect.publish.badges.is_badge_file` knows as embedselect's, never through a link."""
    from embedselect.publish.badges import carried_badge, is_badge_file
    from embedselect.publish.text import safe_filename

    old = previous / "badges"
    if old.is_symlink() or not old.is_dir():
        return
    try:  # the models the previous night ranked, by badge file stem, and its date
        board = json.loads((previous / "leaderboard.json").read_text(encoding="utf-8"))
        night = str(board["night"])[:10]
        ranked = {safe_filename(str(r["name"])): str(r["name"]) for r in board["rows"]}
    except (OSError, ValueError, KeyError, TypeError):
        night, ranked = "", {}
    for doc in sorted(old.glob("*.json")):
        svg = doc.with_suffix(".svg")
        if (badges / doc.name).exists() or doc.is_symlink() or svg.is_symlink() or not (
                is_badge_file(doc) and is_badge_file(svg)):
            continue
        if doc.stem in ranked:
            b = carried_badge(ranked[doc.stem], json.loads(doc.read_text(encoding="utf-8")), night)
            texts = {svg.name: b.svg(), doc.name: json.dumps(b.endpoint()) + "\n"}
        else:
            texts = {svg.name: svg.read_text(encoding="utf-8"), doc.name: doc.read_text(encoding="utf-8")}
        for name, text in texts.items():
            _write(badges / name, text)


def versions_folder(output: Path) -> Path:
    """``<parent>/.<name>.versions``: the folder of the published versions of ``output``."""
    output = Path(output)
    return output.parent / f".{output.name}.versions"


def _ours_by_name(entry: Path) -> bool:
    """A name the nightly job gives inside its versions folder."""
    n = entry.name
    return n == fsguard.MARKER or bool(RUN_ID_RE.match(n)) or fsguard.temp_parts(n) is not None


def _check_versions(versions: Path) -> None:
    """The versions folder is ours: missing, carrying the marker, or (a night killed between creating and marking
    it) holding only names the nightly job gives."""
    if versions.is_symlink() or (versions.exists() and not versions.is_dir()):
        raise ConfigError(f"output: {versions} is not a folder of embedselect's; it was left as it is: remove it or "
                          "choose another output")
    if not versions.exists() or fsguard.is_marked(versions):
        return
    strange = sorted(e.name for e in versions.iterdir() if not _ours_by_name(e))
    if strange:
        raise ConfigError(f"output: {versions} holds files embedselect did not create ({', '.join(strange[:5])}); it "
                          "was left as it is: move them away or choose another output")


def check_outputs(output: Path, *, cache: Path | None, data: Path | None, config_dir: Path | None,
                  writable: bool = True) -> Path:
    """Check, before any work, that a night may publish at ``output``: not empty / ``.`` / ``/`` / home, not equal
    to or containing the cache, the data or the configuration's folder, not inside the cache (nor inside a data
    *folder*), writable, and missing, empty or already the tool's. Returns ``output`` absolute.

    Raises:
        ConfigError (exit 2): naming the folder and what to do; nothing is moved or deleted.
    """
    data_folder = data if data is not None and Path(data).is_dir() else None
    out = fsguard.check_output_target(
        output, what="output", writable=writable, replaced=[versions_folder(Path(os.path.abspath(output)))],
        protected={"folder of the data file": Path(data).parent if data is not None else None,
                   "configuration's folder": config_dir},
        inside_forbidden={"cache": cache, "data folder": data_folder},
    )
    if writable:
        fsguard.check_takeover(out, versions=versions_folder(out), what="output", kinds=_KINDS, ours=_OURS)
        _check_versions(versions_folder(out))
    return out


def publish(output: Path, run_id: str, ranking: Any, leaderboard: list[dict[str, Any]],
            summary: dict[str, Any]) -> Path:
    """Write the night's outputs into a new version folder and atomically point ``output`` at it.

    Returns:
        the version folder now published.

    Raises:
        ConfigError: ``output`` (or its versions folder) is not the tool's; nothing was moved or deleted.
    """
    output = Path(os.path.abspath(output))
    versions = versions_folder(output)
    fsguard.check_takeover(output, versions=versions, what="output", kinds=_KINDS, ours=_OURS)  # again: the folder may have changed overnight
    _check_versions(versions)
    if not versions.exists():
        versions.mkdir(parents=True)
    if not fsguard.is_marked(versions):
        fsguard.mark_owned(versions, "nightly-versions", inventory=False)  # a container: never removed
    fsguard.sweep_leftovers(output.parent, output.name, kinds=("link",))
    for e in versions.iterdir():
        m = fsguard.dead_temp(e.name)
        if m and m["kind"] == "partial" and e.is_dir() and not e.is_symlink():
            if not fsguard.is_marked(e) or fsguard.is_owned(e):  # a dead run's half-written site (marked last)
                shutil.rmtree(e, ignore_errors=True)
    final = versions / run_id
    tmp = versions / fsguard.temp_name(run_id, "partial")
    tmp.mkdir()
    try:
        write_site(tmp, ranking, leaderboard, summary, previous=output if output.is_dir() else None)
        fsguard.mark_owned(tmp, "nightly-version")  # last: it lists every file written, a version is complete
        os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)  # ours, never published
        raise
    if output.is_dir() and not output.is_symlink():  # an empty folder, or one of ours (checked above)
        if fsguard.is_owned(output, _KINDS):
            os.replace(output, versions / fsguard.temp_name(output.name, "old"))
        else:
            output.rmdir()  # empty: nothing of anyone's is lost
    link = output.parent / fsguard.temp_name(output.name, "link")
    os.symlink(os.path.relpath(final, output.parent), link)
    try:
        os.replace(link, output)  # the atomic swap
    except BaseException:
        link.unlink(missing_ok=True)
        raise
    _prune(versions, keep=final)
    return final


def _live_temp(name: str) -> bool:
    """A partial version folder of a run that may still be going (another host's, or a live process's)."""
    m = fsguard.temp_parts(name)
    return m is not None and m["kind"] == "partial" and fsguard.dead_temp(name) is None


def _prune(versions: Path, *, keep: Path) -> list[Path]:
    """Remove all but the newest :data:`KEEP_VERSIONS` version folders: only folders of the tool's (a run id as
    name, or the marker) that hold exactly what the tool wrote there (:func:`embedselect._fs.guard.remove_owned`): a
    version a user added a file to (``site/CNAME`` lands in the current version) is kept, with a warning. Returns
    the folders kept."""
    ours = [d for d in versions.iterdir() if d.is_dir() and not d.is_symlink() and d != keep
            and (RUN_ID_RE.match(d.name) or (fsguard.is_marked(d) and not _live_temp(d.name)))]
    ours.sort(key=lambda d: d.stat().st_mtime, reverse=True)
    kept = []
    for d in ours[KEEP_VERSIONS - 1:]:
        if not fsguard.remove_owned(d, kinds=_KINDS):
            kept.append(d)
            log.warning("output: %s holds files embedselect did not write (%s); it was kept, not pruned: move them "
                        "away and the next night prunes it", d, ", ".join(fsguard.foreign(d)[:5]))
    return kept

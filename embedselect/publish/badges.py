"""Badges for ranked candidates: a self-contained SVG (renders offline), a shields.io endpoint JSON and the
Markdown to paste into a model card.

The SVG comes from `anybadge <https://github.com/jongracecox/anybadge>`_: pure Python with no dependencies of
its own, renders offline (no request to a badge service), escapes label and value text, and draws the familiar
flat shields.io style. The endpoint JSON follows shields.io's schema (``schemaVersion`` 1), for users who
prefer the live shields.io badge pointing at a published file.

File names come from :func:`~embedselect.publish.text.safe_filename`, never from hub text directly.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from embedselect._fs import guard as fsguard
from embedselect.publish.text import clean, md, safe_filename
from embedselect.ranking.result import CandidateResult, Ranking

LABEL = "embedselect"

# by rank, first to last, shields.io's palette
_COLOURS = ("brightgreen", "green", "yellowgreen", "yellow", "orange")
_HEX = {"brightgreen": "#4c1", "green": "#97ca00", "yellowgreen": "#a4a61d", "yellow": "#dfb317",
        "orange": "#fe7d37", "lightgrey": "#9f9f9f"}


@dataclass(frozen=True)
class Badge:
    """A badge for one candidate.

    Attributes:
        candidate: candidate name (untrusted text).
        message: the badge's right-hand text, e.g. ``#2 of 14 · my-data``.
        color: shields.io colour name (by rank: brightgreen for the first, orange for the last).
        stem: safe file stem for this candidate (``<stem>.svg``, ``<stem>.json``).
    """

    candidate: str
    message: str
    color: str
    stem: str

    def svg(self) -> str:
        """The badge as a standalone SVG document."""
        import anybadge

        return anybadge.Badge(label=LABEL, value=self.message, default_color=_HEX[self.color]).badge_svg_text

    def endpoint(self) -> dict[str, Any]:
        """shields.io endpoint JSON (https://shields.io/badges/endpoint-badge), schemaVersion 1."""
        return {"schemaVersion": 1, "label": LABEL, "message": self.message, "color": self.color}

    def markdown(self, base_url: str | None = None) -> str:
        """Markdown to paste: the SVG file next to the card, or ``base_url/<stem>.svg`` when given."""
        src = f"{base_url.rstrip('/')}/{self.stem}.svg" if base_url else f"{self.stem}.svg"
        alt = self.message.replace("[", "(").replace("]", ")")
        return f"![{LABEL}: {alt}]({src})"


def _colour(rank: int | None, total: int) -> str:
    if rank is None or total <= 0:
        return "lightgrey"
    frac = 0.0 if total == 1 else (rank - 1) / (total - 1)  # 0 = first, 1 = last
    return _COLOURS[min(len(_COLOURS) - 1, int(frac * (len(_COLOURS) - 1) + 1e-9))]


def badge_for(ranking: Ranking, candidate: CandidateResult | str, *, dataset: str | None = None) -> Badge:
    """The badge of one ranked candidate: ``#rank of N`` (``tied #1`` for every leader when the lead is undecided:
    the leaders cannot be told apart, so none is second or third) and the data set's name (default: the reference
    data's file name)."""
    c = ranking[candidate] if isinstance(candidate, str) else candidate
    total = len(ranking.ok)
    label = clean(dataset or Path(str(ranking.dataset.get("source", "data"))).name or "data")
    tied = tied_leader(ranking, c)
    return Badge(candidate=c.name, message=clean(f"{place(ranking, c)} · {label}"),
                 color=_colour(1 if tied else c.rank if c.ok else None, total), stem=safe_filename(c.name))


def carried_badge(candidate: str, previous: dict[str, Any], night: str) -> Badge:
    """The badge a site keeps for a model its newest ranking does not hold, so that a badge URL published once keeps
    working: ``previous`` is the model's last badge (its endpoint document), ``night`` the date it was ranked; the
    badge keeps its place then and names that date in place of the data set (``#3 of 6 · YYYY-MM-DD``), in grey."""
    place = str(previous.get("message", "")).split(" · ", 1)[0]
    return Badge(candidate=candidate, message=clean(f"{place} · {night}"), color="lightgrey",
                 stem=safe_filename(candidate))


def tied_leader(ranking: Ranking, c: CandidateResult) -> bool:
    """``c`` is one of the leaders of an undecided ranking: published as ``tied #1``, whatever its row."""
    return c.ok and c.rank is not None and not ranking.decided and c.name in ranking.leaders


def place(ranking: Ranking, c: CandidateResult) -> str:
    """Where ``c`` stands, as its badge and its model card say it: ``#2 of 5``, ``tied #1 of 5`` for a leader of an
    undecided ranking, ``failed``."""
    if not c.ok or c.rank is None:
        return "failed"
    return f"tied #1 of {len(ranking.ok)}" if tied_leader(ranking, c) else f"#{c.rank} of {len(ranking.ok)}"


def _write(path: Path, text: str) -> None:
    fsguard.write_text(path, text)  # atomic; a new file follows the umask, an existing one keeps its mode


_SNIPPET_RE = re.compile(r"^- .*: !\[" + LABEL + r": .*\]\(.*\)$")


def is_badge_file(path: Path) -> bool:
    """Whether ``path`` is a file :func:`write_badges` wrote (by its content: an SVG labelled ``embedselect``, an
    endpoint JSON with that label, or a ``badges.md`` of snippets only): the only files it replaces in a folder."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, ValueError):
        return False
    if path.suffix == ".svg":
        head = text.lstrip().removeprefix('<?xml version="1.0" encoding="UTF-8"?>').lstrip()
        return head.startswith("<svg") and f">{LABEL}<" in text and text.rstrip().endswith("</svg>")
    if path.suffix == ".json":
        try:
            d = json.loads(text)
        except ValueError:
            return False
        return isinstance(d, dict) and set(d) == {"schemaVersion", "label", "message", "color"} and d["label"] == LABEL
    lines = [line for line in text.splitlines() if line.strip()]
    return path.name == "badges.md" and all(_SNIPPET_RE.match(line) for line in lines)


def write_badges(ranking: Ranking, folder: str | Path, *, dataset: str | None = None,
                 base_url: str | None = None) -> dict[str, dict[str, str]]:
    """Write ``<stem>.svg`` and ``<stem>.json`` (endpoint) for every ranked candidate into ``folder`` and
    ``badges.md`` with the Markdown snippets. Returns candidate name -> {"svg", "json", "markdown"}.

    Raises:
        ConfigError: one of these files exists in ``folder`` and was not written by embedselect
            (:func:`is_badge_file`), or is a link: nothing is written (:func:`embedselect._fs.guard.check_replaceable`).
    """
    out = Path(folder)
    written: dict[str, dict[str, str]] = {}
    files: dict[Path, str] = {}
    lines = []
    for c in ranking.ok:
        b = badge_for(ranking, c, dataset=dataset)
        files[out / f"{b.stem}.svg"] = b.svg()
        files[out / f"{b.stem}.json"] = json.dumps(b.endpoint()) + "\n"
        snippet = b.markdown(base_url)
        written[c.name] = {"svg": str(out / f"{b.stem}.svg"), "json": str(out / f"{b.stem}.json"), "markdown": snippet}
        lines.append(f"- {md(c.name)}: {snippet}")
    files[out / "badges.md"] = "\n".join(lines) + "\n"
    fsguard.check_replaceable(files, ours=is_badge_file, what="--out")
    out.mkdir(parents=True, exist_ok=True)
    for path, text in files.items():
        _write(path, text)
    return written

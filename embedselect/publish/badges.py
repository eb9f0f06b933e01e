"""Per-candidate badges for a ranking: a self-contained SVG (rendered offline by ``anybadge``), a shields.io
endpoint JSON (schemaVersion 1) and the Markdown snippet to paste into a model card.

Why anybadge: it is a small, maintained, pure-Python renderer of the familiar flat badge with no network
access and no dependencies; it XML-escapes label and value. Text from the hub (model ids, dataset sources)
is still treated as untrusted: file names are derived by :func:`safe_filename`, never taken from it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from embedselect.errors import ConfigError
from embedselect.ranking import CandidateResult, Ranking

LABEL = "embedselect"
# Colour scale by relative rank (0 = best, 1 = worst), shields.io named-colour hex values.
_SCALE = [("brightgreen", "#4c1"), ("green", "#97ca00"), ("yellowgreen", "#a4a61d"), ("yellow", "#dfb317"),
          ("orange", "#fe7d37")]  # fmt: skip


def _colour(rank: int | None, n: int) -> tuple[str, str]:
    """(shields.io colour name, hex) for ``rank`` of ``n`` (grey for an unranked candidate)."""
    if rank is None or n <= 0:
        return "lightgrey", "#9f9f9f"
    rel = 0.0 if n == 1 else (rank - 1) / (n - 1)
    return _SCALE[min(len(_SCALE) - 1, int(rel * len(_SCALE)))]


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_filename(name: str, *, suffix: str = "") -> str:
    """A file name (no directory part) derived from any model id or candidate name.

    ASCII letters, digits, ``.``, ``_``, ``-`` are kept (after NFKD folding); everything else, including ``/``
    and ``..``, becomes ``_``. An 8-hex digest of the original name is appended, so two ids that fold to the
    same text (``a/b`` and ``a_b``) never share a file. Never empty, never starts with ``.``, at most ~100 chars.
    """
    folded = unicodedata.normalize("NFKD", str(name)).encode("ascii", "ignore").decode("ascii")
    stem = _UNSAFE.sub("_", folded).strip("._-")[:80] or "candidate"
    digest = hashlib.sha256(str(name).encode("utf-8")).hexdigest()[:8]
    return f"{stem}-{digest}{suffix}"


@dataclass
class Badge:
    """One candidate's badge. ``svg``: the SVG text; ``endpoint``: shields.io endpoint JSON (dict);
    ``markdown``: snippet that shows the SVG (``image_url`` if given, else the relative file name)."""

    candidate: str
    rank: int | None
    n: int
    message: str
    colour: str
    svg: str
    endpoint: dict
    filename: str

    def markdown(self, image_url: str | None = None) -> str:
        alt = f"{LABEL}: {self.message}".replace("[", "(").replace("]", ")")
        return f"![{alt}]({image_url or self.filename + '.svg'})"


def _dataset_label(ranking: Ranking) -> str:
    ds = ranking.dataset
    src = str(ds.get("source") or "")
    name = Path(src).name if src else ""
    return name or str(ds.get("fingerprint", ""))[:12] or "your data"


def badge_for(ranking: Ranking, candidate: CandidateResult | str, *, dataset_label: str | None = None) -> Badge:
    """The badge of one candidate: ``embedselect | #2 of 14 · <dataset>``, coloured by relative rank."""
    c = ranking[candidate] if isinstance(candidate, str) else candidate
    n = len(ranking.ok)
    label = dataset_label or _dataset_label(ranking)
    label = " ".join(label.split())[:40]
    if c.ok and c.rank is not None:
        message = f"#{c.rank} of {n} · {label}"
    else:
        message = f"failed · {label}"
    name, hexv = _colour(c.rank if c.ok else None, n)
    import anybadge

    svg = anybadge.Badge(LABEL, message, default_color=hexv).badge_svg_text
    endpoint = {"schemaVersion": 1, "label": LABEL, "message": message, "color": name}
    return Badge(c.name, c.rank if c.ok else None, n, message, name, svg, endpoint, safe_filename(c.name))


def badges(ranking: Ranking, *, dataset_label: str | None = None) -> list[Badge]:
    """Badges of every candidate (ranked ones first, in rank order)."""
    return [badge_for(ranking, c, dataset_label=dataset_label) for c in ranking.candidates]


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_badges(
    ranking: Ranking, out_dir: str | Path, *, dataset_label: str | None = None, base_url: str | None = None
) -> list[dict]:
    """Write ``<safe>.svg`` and ``<safe>.json`` (endpoint) per candidate into ``out_dir`` and an
    ``index.json`` mapping candidate -> files, message and Markdown snippet. Returns the index entries.

    ``base_url``: where the files will be served; used in the Markdown snippets (shields.io endpoint form).
    """
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"badge output {out} exists and is not a directory; give a directory")
    out.mkdir(parents=True, exist_ok=True)
    index = []
    for b in badges(ranking, dataset_label=dataset_label):
        svg_path, json_path = out / f"{b.filename}.svg", out / f"{b.filename}.json"
        # Both paths are built from safe_filename only; assert they stay inside out_dir.
        assert svg_path.resolve().parent == out.resolve()
        _atomic_write(svg_path, b.svg)
        _atomic_write(json_path, json.dumps(b.endpoint, ensure_ascii=False) + "\n")
        image = f"{base_url.rstrip('/')}/{svg_path.name}" if base_url else svg_path.name
        entry = {
            "candidate": b.candidate, "rank": b.rank, "of": b.n, "message": b.message, "color": b.colour,
            "svg": svg_path.name, "endpoint": json_path.name, "markdown": b.markdown(image),
        }  # fmt: skip
        if base_url:
            from urllib.parse import quote

            entry["shields_markdown"] = (
                f"![{LABEL}](https://img.shields.io/endpoint?url={quote(base_url.rstrip('/') + '/' + json_path.name, safe='')})"
            )
        index.append(entry)
    _atomic_write(out / "index.json", json.dumps(index, indent=2, ensure_ascii=False) + "\n")
    return index

"""Product docstrings say what the code does now and cite documentation by section name: no dated section numbers
(the dated record is docs/archive/benchmarks-diary.md, which the package never cites), and every cited page and
section exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "embedselect"
CITATION = re.compile(r'docs/([\w/.-]+\.md)(?:,\s*\(?"([^"]+)")?')


def _sources() -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in sorted(PKG.rglob("*.py"))}


def _headings(page: Path) -> list[str]:
    return [ln.lstrip("#").strip() for ln in page.read_text(encoding="utf-8").splitlines() if ln.startswith("#")]


def _bad_citations(sources: dict[str, str]) -> list[str]:
    bad = []
    for path, text in sources.items():
        for m in re.finditer(r"§\s?\d|\b20\d\d-\d\d-\d\d\b|benchmarks-diary", text):
            bad.append(f"{path}: {text[max(0, m.start() - 30):m.end() + 10]!r} (a dated section or story)")
        for m in CITATION.finditer(text):
            page, section = ROOT / "docs" / m.group(1), m.group(2)
            if not page.is_file():
                bad.append(f"{path}: docs/{m.group(1)} does not exist")
            elif section is not None:
                name = " ".join(section.split())
                if not any(h.startswith(name) for h in _headings(page)):
                    bad.append(f"{path}: docs/{m.group(1)} has no section {name!r}")
    return bad


def test_product_docstrings_cite_existing_sections_and_no_dated_story():
    bad = _bad_citations(_sources())
    assert not bad, "\n".join(bad)


def test_the_check_catches_a_dated_section_and_a_missing_one():
    bad = _bad_citations({"x.py": 'chosen in docs/benchmarks.md §4o; see docs/validity.md, "No such\n    section".'})
    assert any("dated" in b for b in bad) and any("no section 'No such section'" in b for b in bad)


def test_the_method_pages_say_what_the_code_does_now():
    """docs/task_prior.md and docs/sufficiency.md give the method and its current behaviour; the dated story (what a
    default was before, since when, which issue changed it) is in docs/archive/, which they link."""
    for page in ("task_prior.md", "sufficiency.md"):
        text = (ROOT / "docs" / page).read_text(encoding="utf-8")
        dated = re.findall(r"\b20\d\d-\d\d-\d\d\b|\b(?:since|until|before) 20\d\d|in progress|\(issue \d+|; issue \d+", text)
        assert not dated, (page, dated)
        history = ROOT / "docs" / "archive" / page.replace(".md", "-history.md")
        assert history.is_file() and f"archive/{history.name}" in text, page


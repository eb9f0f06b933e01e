"""The HTML report's layout in a real headless browser (Debian's chromium) at a laptop's 1280 px: the ranking table
fits its page, and a candidate's name breaks only where it must.

The page forbids scripts (its Content-Security-Policy); the test removes that line and adds one script that measures
the laid-out page and writes the measures into the DOM, which chromium dumps."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from embedselect.publish.report import to_html
from embedselect.ranking.result import CandidateResult, Ranking

pytestmark = pytest.mark.slow

METRICS = ["task_prior", "sufficiency", "nn_agreement", "rankme", "modularity"]
NAMES = ["paraphrase-multilingual-mpnet-base-v0", "paraphrase-multilingual-mpnet-base-v1",
         "sentence-transformers/paraphrase-multilingual-mpnet-base-v2", "tfidf-svd-sixty-four-dimensions-baseline",
         "tfidf-svd", "random-projection-32-dimensions-seed-two", "random-projection-64-dimensions-seed-one"]

_MEASURE = """<script>
addEventListener('load', () => {
  const out = {};
  const table = document.querySelector('table.ranking') || document.querySelector('table');
  out.table = table.scrollWidth; out.box = table.parentElement.clientWidth; out.page = document.documentElement.clientWidth;
  out.tables = [...document.querySelectorAll('.wrap > table')].map(t => [t.scrollWidth, t.parentElement.clientWidth]);
  // the lines each name takes (its cell up to a tie mark)
  out.names = [...document.querySelectorAll('td.name')].map(td => {
    const r = document.createRange(); r.selectNodeContents(td);
    const tie = td.querySelector('.tie'); if (tie) r.setEndBefore(tie);
    const tops = new Set([...r.getClientRects()].filter(x => x.width > 0).map(x => Math.round(x.top)));
    return [r.toString().trim(), tops.size];
  });
  const pre = document.createElement('pre'); pre.id = 'measures'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def _ranking() -> Ranking:
    """A pool of 8 as a laptop sees it: the five default metrics, long names and model ids (40+ characters),
    parameter counts, and one candidate that failed."""
    cands = []
    for i, n in enumerate(NAMES):
        cands.append(CandidateResult(
            name=n, spec=n, model_id=f"/home/someone/models/sentence-transformers-{n}", revision="a" * 40,
            n=240, dim=64, seconds=1.0 + i, parameters=28_700 if i < 3 else None, items_per_second=37.1 * (i + 1),
            bytes_per_vector=256, scores={m: 0.8827 - 0.01 * i for m in METRICS},
            ranks={m: i + 1 for m in METRICS}, combined_score=0.9 - 0.1 * i, rank=i + 1))
    cands.append(CandidateResult(name="multilingual-e5-large-instruct-broken", spec="broken", status="failed",
                                 model_id="/home/someone/models/intfloat-multilingual-e5-large-instruct-broken",
                                 parameters=20_200, error_type="ModelLoadError",
                                 error="16 weight tensor(s) of the model are not in its checkpoint"))
    return Ranking(candidates=cands, metrics=METRICS, combine="mean-rank",
                   dataset={"source": "texts.csv", "n": 240, "modality": "text", "fingerprint": "f" * 64},
                   settings={"seed": 0}, versions={"embedselect": "0"}, ranking_id="r" * 32, created_at="2026-11-29",
                   decided=False, leaders=NAMES[:2], undecided_reasons=["the signals disagree"])


def _measure(html: str, tmp_path, width: int = 1280) -> dict:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    assert exe, "the browser tests need Debian's chromium: apt-get install chromium (scripts/setup.sh dev does it)"
    page = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html).replace("</body>", _MEASURE + "</body>")
    path = tmp_path / "report.html"
    path.write_text(page, encoding="utf-8")
    proc = subprocess.run(
        [exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", f"--user-data-dir={tmp_path / 'ud'}",
         f"--window-size={width},900", "--virtual-time-budget=3000", "--dump-dom", path.as_uri()],
        capture_output=True, text=True, timeout=120)
    found = re.search(r'<pre id="measures">(.*?)</pre>', proc.stdout, re.S)
    assert found, proc.stderr[-2000:]
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))


def test_the_ranking_table_fits_a_laptops_window(tmp_path):
    """At 1280 px the table was 1.5 times its page's width: params, model and status were out of sight until one
    scrolled the table sideways. The ranking shows its scores; what each model is and costs is a table of its own."""
    m = _measure(to_html(_ranking(), plots=False), tmp_path)
    assert m["table"] <= m["box"] <= m["page"], m
    assert len(m["tables"]) == 2 and all(width <= box for width, box in m["tables"]), m  # the size table too
    assert len(m["names"]) == 16  # the ranking and the size table


def test_a_name_breaks_only_after_a_slash(tmp_path):
    """Names wrapped at every hyphen ("paraphrase-" / "multilingual-" / "mpnet-" / "base-v0", four lines a row); a
    name is one line, or breaks after its ``/`` (org/ then model), and the table still fits the page."""
    m = _measure(to_html(_ranking(), plots=False), tmp_path)
    lines = dict(m["names"])
    assert set(lines) == {*NAMES, "multilingual-e5-large-instruct-broken"}, lines
    assert all(n == 1 for name, n in lines.items() if "/" not in name), lines
    assert lines["sentence-transformers/paraphrase-multilingual-mpnet-base-v2"] <= 2, lines
    assert m["table"] <= m["box"], m
    # on a phone the table scrolls inside its box (the name column stays at its left), and names stay whole
    narrow = _measure(to_html(_ranking(), plots=False), tmp_path, width=400)
    assert all(n == 1 for name, n in narrow["names"] if "/" not in name), narrow

"""The HTML report in a real headless browser (Debian's chromium): every figure renders, the page makes no
network request and logs no console error, and a hostile candidate name shows as text."""

from __future__ import annotations

import http.server
import re
import shutil
import subprocess
import threading

import numpy as np
import pytest

from embedselect.publish.report import to_html
from embedselect.ranking.result import CandidateResult, Ranking

pytestmark = pytest.mark.slow
EVIL = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def _chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    assert exe, "the browser tests need Debian's chromium: apt-get install chromium (scripts/setup.sh dev does it)"
    return exe


def _ranking() -> Ranking:
    names = [EVIL, "org/mpnet", "org/minilm", "tfidf-svd"]
    rng = np.random.default_rng(0)
    cands = []
    for i, n in enumerate(names):
        cols = {"task_prior_mean": 60.0 - 10 * i, "task_prior_var": 0.01 * (i + 1),
                "task_prior.probe_acc_mean": 0.8 - 0.05 * i, "task_prior.probe_acc_std": 0.05,
                "task_prior.probe_acc_p05": 0.7 - 0.05 * i, "labels.logistic_acc": 0.9 - 0.1 * i}
        cands.append(CandidateResult(name=n, spec=n, model_id=f"org/{i}", revision="a" * 40, n=200, dim=64 * (i + 1),
                                     seconds=1.0 + i, scores={"task_prior": 0.8 - 0.1 * i, "sufficiency": 0.1 - 0.02 * i},
                                     ranks={"task_prior": i + 1, "sufficiency": i + 1}, columns=cols,
                                     combined_score=1 - i / 3, rank=i + 1,
                                     intervals={"task_prior": [0.7 - 0.1 * i, 0.9 - 0.1 * i]}))
    matrix = {a: {b: float(rng.uniform(0, 0.05)) for b in names if b != a} for a in names}
    return Ranking(candidates=cands, metrics=["task_prior", "sufficiency"], combine="mean-rank",
                   dataset={"source": EVIL, "n": 200, "modality": "text", "fingerprint": "f" * 64},
                   settings={"seed": 0}, versions={"embedselect": "0"}, ranking_id="r" * 32, created_at="2026-11-23",
                   details={"sufficiency": {"matrix": matrix, "communities": [names[:2], names[2:]]}},
                   validation={"accuracy_column": "logistic_acc", "metrics": []}, warnings=[EVIL])


class _Recorder(http.server.BaseHTTPRequestHandler):
    pages: dict[str, bytes] = {}
    seen: list[tuple[str, str, str]] = []  # (host, path, referer)

    def do_GET(self):  # noqa: N802 - http.server's name
        self.seen.append((self.headers.get("Host", ""), self.path, self.headers.get("Referer", "")))
        body = self.pages.get(self.path, b"")
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def _open(html: str, tmp_path) -> tuple[str, str, list[tuple[str, str, str]]]:
    """Load ``html`` from a loopback server in headless chromium with every host name resolved to that server:
    returns (DOM after load, the browser's stderr, the requests the server saw)."""
    _Recorder.pages = {"/report.html": html.encode("utf-8")}
    _Recorder.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    try:
        proc = subprocess.run(
            [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'ud'}",
             f"--host-resolver-rules=MAP * 127.0.0.1:{port}", "--enable-logging=stderr", "--v=0",
             "--virtual-time-budget=3000", "--dump-dom", f"http://127.0.0.1:{port}/report.html"],
            capture_output=True, text=True, timeout=120,
        )
    finally:
        server.shutdown()
    return proc.stdout, proc.stderr, list(_Recorder.seen)


def _page_requests(seen):
    """Requests the page made (they carry its origin as Referer; the browser's own background requests do not)."""
    return [s for s in seen if s[1] != "/report.html" and s[2].startswith("http://127.0.0.1:")]


def test_report_renders_every_figure_offline_with_hostile_names_as_text(tmp_path):
    html = to_html(_ranking())
    dom, log, seen = _open(html, tmp_path)
    figures = re.findall(r'<figure id="fig-([a-z_]+)"[^>]*><svg', dom)  # a figure may span the grid (class)
    assert sorted(figures) == sorted(["task_prior_scatter", "task_accuracy", "sufficiency_heatmap", "score_vs_cost",
                                      "label_free_vs_accuracy"])
    assert "<script" not in dom.lower() and "onerror" not in re.sub(r"&lt;.*?&gt;", "", dom)
    assert "&lt;script&gt;alert(\"x\")&lt;/script&gt;" in dom  # shown as text
    assert not re.findall(r"CONSOLE[:(]\d+", log), log[-2000:]
    assert _page_requests(seen) == []  # the page asked for nothing beyond itself
    assert [s for s in seen if s[1] == "/report.html"]


def test_the_browser_check_sees_a_request_and_a_console_error_when_there_is_one(tmp_path):
    """The control for the test above: a page that loads an image from a host and logs an error is caught."""
    page = ('<!DOCTYPE html><html><body><img src="http://cdn.example.invalid/x.png">'
            "<script>console.error('boom')</script></body></html>")
    _, log, seen = _open(page, tmp_path)
    assert [s for s in _page_requests(seen) if s[1] == "/x.png"]
    assert re.findall(r"CONSOLE[:(]\d+", log)

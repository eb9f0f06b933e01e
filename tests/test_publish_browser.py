"""The HTML report in a real headless browser (Debian's chromium): renders, no console errors, no network
request (every request would go through a recording proxy), and a hostile candidate name shows as text."""

from __future__ import annotations

import shutil
import socket
import subprocess
import threading
from html.parser import HTMLParser

import pytest

from embedselect.publish.report import to_html
from tests.test_publish_badges_leaderboard import _ranking

EVIL = "<script>alert(1)</script>"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (.ci/run installs it: apt-get install chromium)"),
]


class _Proxy:
    """A loopback TCP listener used as the browser's proxy: records every connection attempt, answers none."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.sock.settimeout(0.2)
        self.hits: list[bytes] = []
        self._stop = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            conn.settimeout(1)
            try:
                self.hits.append(conn.recv(512))
            except OSError:
                self.hits.append(b"")
            conn.close()

    def close(self):
        self._stop = True
        self.thread.join()
        self.sock.close()


class _Dom(HTMLParser):
    def __init__(self):
        super().__init__()
        self.scripts = 0
        self.imgs: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.scripts += tag == "script"
        if tag == "img":
            self.imgs.append(dict(attrs).get("src", ""))

    def handle_data(self, data):
        self.text.append(data)


# The browser's own background traffic (clock sync, component updates) is not the page's; everything else is.
_BROWSER_OWN = (b"clients2.google.com", b"accounts.google.com", b"update.googleapis.com", b"edgedl.me.gvt1.com", b"redirector.gvt1.com")


def _page_requests(hits: list[bytes]) -> list[bytes]:
    return [h for h in hits if not any(host in h.split(b"\r\n", 1)[0] for host in _BROWSER_OWN)]


def _run(page, tmp_path):
    proxy = _Proxy()
    try:
        proc = subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'prof'}",
             f"--proxy-server=http://127.0.0.1:{proxy.sock.getsockname()[1]}", "--proxy-bypass-list=<-loopback>",
             "--enable-logging=stderr", "--v=0", "--virtual-time-budget=2000", "--dump-dom", page.as_uri()],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    finally:
        proxy.close()
    return proc, _page_requests(proxy.hits)


def test_network_detector_sees_a_page_request(tmp_path):
    page = tmp_path / "cdn.html"
    page.write_text('<!DOCTYPE html><img src="http://cdn.example.test/x.png"><p>x</p>')
    _, requests = _run(page, tmp_path)
    assert any(b"cdn.example.test" in h for h in requests)


def test_report_renders_in_chromium_safely(tmp_path):
    r = _ranking([EVIL, "org/m2", "m3"], [0.9, 0.5, 0.1], "aaaa1111", failed=["broken"])
    page = tmp_path / "report.html"
    page.write_text(to_html(r), encoding="utf-8")
    proc, requests = _run(page, tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = _Dom()
    dom.feed(proc.stdout)
    text = "".join(dom.text)
    assert EVIL in text  # the hostile name is shown as text ...
    assert dom.scripts == 0  # ... and never became a script element
    assert "org/m2" in text and "broken" in text
    # every plot the ranking has data for is in the rendered page, inline (fixture: score + cost plots)
    assert len(dom.imgs) >= 2 and all(s.startswith("data:image/png;base64,") for s in dom.imgs)
    console = [line for line in proc.stderr.splitlines() if "CONSOLE" in line]
    assert console == []
    assert requests == []  # the page made no network request

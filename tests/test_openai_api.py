"""Hosted embedding APIs (issue 44, item 3): a candidate ``NAME=openai:MODEL?base_url=...`` against a fake
OpenAI-compatible server on 127.0.0.1 (never the network): ranked in one pool with a baseline by select() and by the
CLI, and every fault of an untrusted server (429 with Retry-After, 500s, cut-off JSON, wrong width, reordered and
broken ``index`` fields, a slow server, a key echoed in an error body, a token budget) a typed error that names the
candidate and never holds the key."""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

import embedselect
from embedselect.cli import main
from embedselect.data import sample_path
from embedselect.errors import (
    CandidateSpecError,
    EmbeddingAPIBudgetError,
    EmbeddingAPIError,
    EmbeddingAPIResponseError,
    EmbeddingAPITimeoutError,
)
from embedselect.models.backends import openai_api
from embedselect.models.backends.openai_api import MAX_ERROR_BODY, ApiEmbedder
from embedselect.models.candidates import parse_candidates
from embedselect.ranking.result import Ranking
from embedselect.store import Store

SAMPLE = sample_path("texts")
WIDTH = 16
KEY = "sk-test-SECRET-0123456789abcdef"

pytestmark = pytest.mark.usefixtures("one_thread")


def fake_vector(text: str, width: int = WIDTH) -> list[float]:
    """The fake model: the sum of a seeded random vector per word (so similar texts are near)."""
    out = np.zeros(width)
    for w in text.lower().split():
        seed = int.from_bytes(hashlib.sha256(w.encode()).digest()[:4], "little")
        out += np.random.default_rng(seed).normal(size=width)
    return [float(v) for v in out]


class FakeEmbeddings(ThreadingHTTPServer):
    """``POST /v1/embeddings`` as OpenAI answers it; :attr:`faults` is a list of what the next requests get
    (one entry used per request; an entry with ``"forever": True`` stays): ``{"status": 429, "headers": {...},
    "body": ...}``, ``{"truncate": True}``, ``{"width": 5}``, ``{"reverse": True}`` (the rows in reverse order, each
    with its true index), ``{"index": [...]}`` (these index values), ``{"delay": s}``. Every request's JSON
    body and Authorization header are kept in :attr:`requests`."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.faults: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.in_flight = self.most_in_flight = 0

    def handle_error(self, request: Any, client_address: Any) -> None:  # a client that left (the time-out test)
        pass

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def next_fault(self) -> dict[str, Any]:
        with self.lock:
            if not self.faults:
                return {}
            return self.faults[0] if self.faults[0].get("forever") else self.faults.pop(0)


class _Handler(BaseHTTPRequestHandler):
    server: FakeEmbeddings

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        with self.server.lock:
            self.server.requests.append({"body": body, "auth": self.headers.get("Authorization"),
                                         "path": self.path})
        fault = self.server.next_fault()
        # a request is in flight from its arrival until its answer is ready: counted down *before* the answer is
        # written, since a client that has read the answer may send its next request before this thread runs again
        with self.server.lock:
            self.server.in_flight += 1
            self.server.most_in_flight = max(self.server.most_in_flight, self.server.in_flight)
        try:
            answer = self._answer(body, fault)
        finally:
            with self.server.lock:
                self.server.in_flight -= 1
        self._send(*answer)

    def _answer(self, body: dict[str, Any], fault: dict[str, Any]) -> tuple[int, bytes, dict[str, str]]:
        """(status, body, headers) of the answer to ``body`` under ``fault``, after the fault's delay."""
        if self.path != "/v1/embeddings":
            return 404, b'{"error": "no such route"}', {}
        if "delay" in fault:
            time.sleep(fault["delay"])
        if "status" in fault:
            return fault["status"], fault.get("body", b'{"error": {"message": "busy"}}'), fault.get("headers", {})
        texts = body["input"]
        width = fault.get("width", body.get("dimensions", WIDTH))
        rows = [{"object": "embedding", "index": i, "embedding": fake_vector(t, width)} for i, t in enumerate(texts)]
        if fault.get("reverse"):
            rows = rows[::-1]
        if "index" in fault:
            for row, idx in zip(rows, fault["index"]):
                row["index"] = idx
        tokens = sum(len(t.split()) for t in texts)
        usage = {} if fault.get("no_usage") else {"usage": {"prompt_tokens": tokens, "total_tokens": tokens}}
        raw = json.dumps({"object": "list", "data": rows, "model": body["model"], **usage}).encode()
        if fault.get("truncate"):
            raw = raw[: len(raw) // 2]
        return 200, raw, {}

    def _send(self, status: int, raw: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(raw)


@pytest.fixture
def server():
    srv = FakeEmbeddings()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    return KEY


@pytest.fixture
def waits(monkeypatch):
    """The back-off's waits, recorded instead of slept."""
    seen: list[float] = []
    monkeypatch.setattr(openai_api, "_sleep", seen.append)
    return seen


def _embedder(server: FakeEmbeddings, **options: Any) -> ApiEmbedder:
    return ApiEmbedder("fake-embed", name="api", options={"base_url": server.url, **options})


TEXTS = [f"text number {i} about {'cats' if i % 2 else 'dogs'}" for i in range(10)]
EXPECTED = np.asarray([fake_vector(t) for t in TEXTS], dtype=np.float32)


# --- a normal run -------------------------------------------------------------------------------------------------
def test_select_ranks_an_api_candidate_in_one_pool_with_a_baseline(server, key, cache_dir, caplog):
    spec = f"api=openai:fake-embed?base_url={server.url}&batch_size=64&concurrency=2"
    with caplog.at_level(logging.DEBUG):
        r = embedselect.select(SAMPLE, [spec, "tfidf-svd"], column="text", metrics=["task_prior"])
    assert {c.name for c in r} == {"api", "tfidf-svd"} and all(c.ok for c in r), [c.failure_note for c in r]
    api = r["api"]
    assert (api.n, api.dim, api.model_id, api.backend) == (240, WIDTH, f"openai:{server.url.split('/')[2]}/fake-embed",
                                                          "openai")
    assert len(server.requests) == 4 and {len(q["body"]["input"]) for q in server.requests} == {64, 48}
    assert {q["auth"] for q in server.requests} == {f"Bearer {KEY}"}
    sent = sum(len(q["body"]["input"]) for q in server.requests)
    assert sent == 240 and api.api_tokens == sum(len(t.split()) for q in server.requests for t in q["body"]["input"])
    assert api.cache_scope == "run" and api.revision is None and r["tfidf-svd"].api_tokens is None
    assert json.loads(r.to_json())["candidates"][[c["name"] for c in json.loads(r.to_json())["candidates"]].index(
        "api")]["api_tokens"] == api.api_tokens
    assert any("kept for this run only" in m for m in caplog.messages)
    assert r.to_pandas().loc["api", "api_tokens"] == api.api_tokens and api.bytes_per_vector == 4 * WIDTH
    from embedselect.cli.format import format_table

    header, _, *rows = format_table(r).splitlines()
    assert "tokens" in header.split() and str(api.api_tokens) in next(x for x in rows if x.split()[1] == "api")
    assert KEY not in r.to_json() and not any(KEY in m for m in caplog.messages)
    assert not any(m.startswith("openai:") for m in Store.open(cache_dir).list_runs()["model_id"])


def test_with_a_revision_the_vectors_are_cached_and_never_paid_for_twice(server, key, cache_dir):
    spec = f"api=openai:fake-embed?base_url={server.url}&dimensions=8&revision=2026-11"
    r = embedselect.select(SAMPLE, [spec, "tfidf-svd"], column="text", metrics=["task_prior"])
    assert r["api"].ok and r["api"].dim == 8 and r["api"].cache_scope == "cache" and r["api"].api_tokens > 0
    assert {q["body"]["dimensions"] for q in server.requests} == {8}
    n_requests = len(server.requests)
    # the same model, dimensions and host under another key variable and batch size: the stored vectors
    again = f"api=openai:fake-embed?base_url={server.url}&dimensions=8&revision=2026-11&batch_size=7&key_env=OTHER"
    r2 = embedselect.select(SAMPLE, [again, "tfidf-svd"], column="text", metrics=["task_prior"])
    assert r2["api"].cached and r2["api"].api_tokens == 0 and len(server.requests) == n_requests
    np.testing.assert_array_equal(r2["api"].scores["task_prior"], r["api"].scores["task_prior"])


def test_cli_ranks_an_api_candidate_with_a_baseline(server, key, tmp_path, capsys):
    code = main(["rank", str(SAMPLE), "-c", "text", "-m", f"api=openai:fake-embed?base_url={server.url},tfidf-svd",
                 "--metrics", "task_prior", "--json", "-q", "--cache-dir", str(tmp_path / "c")])
    assert code == 0
    r = Ranking.from_json(capsys.readouterr().out)
    assert {c.name for c in r} == {"api", "tfidf-svd"} and all(c.ok for c in r)
    assert r["api"].api_tokens and r["api"].dim == WIDTH
    # the table: a kind column says which row is the hosted API
    assert main(["rank", str(SAMPLE), "-c", "text", "-m", f"api=openai:fake-embed?base_url={server.url},tfidf-svd",
                 "--metrics", "task_prior", "-q", "--cache-dir", str(tmp_path / "c")]) == 0
    header, _, *rows = capsys.readouterr().out.splitlines()
    assert header.split()[2] == "kind" and {ln.split()[1]: ln.split()[2] for ln in rows[:2]} == \
        {"api": "api", "tfidf-svd": "baseline"}, rows


def test_an_index_of_an_api_needs_its_revision_and_says_so_before_any_call(server, key, tmp_path, capsys):
    """`embedselect index` of a hosted API without ?revision= is a usage error naming the fix, before any request (it
    was 'unexpected AssertionError', exit 1, after the items were paid for); with a revision the index is written."""
    spec = f"api=openai:fake-embed?base_url={server.url}"
    argv = ["index", str(SAMPLE), "-c", "text", "--cache-dir", str(tmp_path / "c")]
    assert main([*argv, "--model", spec, "--out", str(tmp_path / "idx")]) == 2
    err = capsys.readouterr().err
    assert "?revision=" in err and "AssertionError" not in err, err
    assert server.requests == [] and not (tmp_path / "idx").exists()
    assert main([*argv, "--model", spec + "&revision=v1", "--out", str(tmp_path / "idx")]) == 0
    assert (tmp_path / "idx" / "manifest.json").is_file()


def test_rows_come_back_in_index_order_whatever_order_the_server_sends(server, key):
    server.faults = [{"reverse": True, "forever": True}]
    out = _embedder(server, batch_size=4).embed(TEXTS)
    np.testing.assert_array_equal(out, EXPECTED)
    assert sorted(len(q["body"]["input"]) for q in server.requests) == [2, 4, 4]  # concurrent: any order


def test_concurrency_is_bounded(server, key):
    server.faults = [{"delay": 0.2, "forever": True}]
    np.testing.assert_array_equal(_embedder(server, batch_size=1, concurrency=3).embed(TEXTS), EXPECTED)
    assert len(server.requests) == 10 and server.most_in_flight == 3


def test_batches_follow_the_token_estimate_and_run_concurrently(server, key):
    emb = _embedder(server, max_batch_tokens=30, concurrency=3)
    out = emb.embed(TEXTS)
    np.testing.assert_array_equal(out, EXPECTED)
    for q in server.requests:
        assert sum(openai_api.estimate_tokens(t) for t in q["body"]["input"]) <= 30
    assert len(server.requests) > 1 and emb.tokens_used == sum(len(t.split()) for t in TEXTS)


# --- faults -------------------------------------------------------------------------------------------------------
@pytest.mark.fault
def test_a_429_is_retried_after_its_retry_after(server, key, waits):
    server.faults = [{"status": 429, "headers": {"Retry-After": "7"}}, {"status": 429, "headers": {}}]
    out = _embedder(server).embed(TEXTS)
    np.testing.assert_array_equal(out, EXPECTED)
    assert waits == [7.0, 1.0]  # the server's Retry-After, then the back-off's second step (0.5 s, 1 s, ...)
    assert len(server.requests) == 3


@pytest.mark.fault
def test_a_500_is_retried_then_succeeds(server, key, waits):
    server.faults = [{"status": 500}, {"status": 503}]
    np.testing.assert_array_equal(_embedder(server).embed(TEXTS), EXPECTED)
    assert waits == [0.5, 1.0] and len(server.requests) == 3


@pytest.mark.fault
def test_a_500_forever_is_a_typed_error_after_the_bounded_tries(server, key, waits):
    server.faults = [{"status": 500, "forever": True}]
    with pytest.raises(EmbeddingAPIError, match=r"HTTP 500 after 4 tries") as info:
        _embedder(server, max_retries=3).embed(TEXTS)
    assert info.value.status == 500 and "'api'" in str(info.value)
    assert len(server.requests) == 4 and waits == [0.5, 1.0, 2.0]


@pytest.mark.fault
def test_a_400_is_not_retried(server, key, waits):
    server.faults = [{"status": 400, "body": b'{"error": {"message": "model not found"}}'}]
    with pytest.raises(EmbeddingAPIError, match="HTTP 400: .*model not found"):
        _embedder(server).embed(TEXTS)
    assert len(server.requests) == 1 and waits == []


@pytest.mark.fault
@pytest.mark.parametrize("fault, needle", [
    ({"truncate": True}, "not valid JSON"),
    ({"width": 5}, "5 wide, not the \\?dimensions=16"),
    ({"index": [0, 1, 1, 3, 4, 5, 6, 7, 8, 9]}, "do not cover 0..9 exactly once"),
    ({"index": [0, 1, 2, 3, 4, 5, 6, 7, 8, 10]}, "do not cover 0..9 exactly once"),
    ({"status": 200, "body": b'{"data": "none"}'}, "no 'data' list"),
    ({"status": 200, "body": b" " * (10 * 256 * 1024 + 2**20 + 1)}, "answer is over"),
    ({"status": 200, "body": b'{"data": [{"index": 0, "embedding": [1.0, "x"]}]}'}, "1 vectors for 10 inputs"),
    ({"status": 200, "body": json.dumps({"data": [{"index": i, "embedding": [1e300 if i == 3 else 1.0] * WIDTH}
                                                  for i in range(10)]}).encode()},
     r"1 of 10 row\(s\) hold values too large for float32 \(the largest seen 1e\+300"),
    ({"status": 200, "body": json.dumps({"data": [{"index": i, "embedding": [float("nan") if i < 2 else 1.0] * WIDTH}
                                                  for i in range(10)]}).encode()},
     r"2 of 10 row\(s\) hold non-finite values \(NaN or inf\)"),
])
def test_an_answer_that_cannot_be_used_is_a_typed_error_naming_the_candidate(server, key, fault, needle):
    server.faults = [fault]
    with pytest.raises(EmbeddingAPIResponseError, match=needle) as info:
        _embedder(server, dimensions=WIDTH).embed(TEXTS)
    assert "candidate 'api'" in str(info.value) and KEY not in str(info.value)


@pytest.mark.fault
def test_widths_that_differ_between_requests_are_refused(server, key):
    server.faults = [{}, {"width": 5}]
    with pytest.raises(EmbeddingAPIResponseError, match="different widths"):
        _embedder(server, batch_size=5, concurrency=1).embed(TEXTS)


@pytest.mark.fault
def test_a_slow_server_is_a_time_out_error(server, key, waits):
    server.faults = [{"delay": 3.0}]
    t0 = time.monotonic()
    with pytest.raises(EmbeddingAPITimeoutError, match=r"did not answer within 0.5 s"):
        _embedder(server, timeout=0.5).embed(TEXTS)
    assert time.monotonic() - t0 < 2.5 and len(server.requests) == 1 and waits == []


@pytest.mark.fault
def test_the_token_budget_stops_before_it_is_exceeded(server, key):
    first = sum(openai_api.estimate_tokens(t) for t in TEXTS[:4])
    budget = first + 5  # the first batch of 4 texts fits; the tokens it used and the second's estimate do not
    emb = _embedder(server, batch_size=4, concurrency=1, max_tokens_total=budget)
    with pytest.raises(EmbeddingAPIBudgetError, match=rf"max_tokens_total={budget}") as info:
        emb.embed(TEXTS)
    assert len(server.requests) == 1 and emb.tokens_used <= budget and "'api'" in str(info.value)


@pytest.mark.fault
def test_without_usage_in_the_answers_the_budget_counts_the_estimates(server, key):
    server.faults = [{"no_usage": True, "forever": True}]
    first = sum(openai_api.estimate_tokens(t) for t in TEXTS[:4])
    emb = _embedder(server, batch_size=4, concurrency=1, max_tokens_total=first + 5)
    with pytest.raises(EmbeddingAPIBudgetError):
        emb.embed(TEXTS)
    assert len(server.requests) == 1 and emb.tokens_used == first


@pytest.mark.fault
def test_no_key_is_a_typed_error_naming_the_variable(server, monkeypatch):
    monkeypatch.delenv("MY_KEY", raising=False)
    with pytest.raises(EmbeddingAPIError, match="set the environment variable MY_KEY"):
        _embedder(server, key_env="MY_KEY").embed(TEXTS)
    assert server.requests == []


@pytest.mark.fault
@pytest.mark.parametrize("spec, needle", [
    ("openai:m?dimension=8", "unknown option"),
    ("openai:m?dimensions=0", "above 0"),
    ("openai:m?max_retries=-1", "0 or more"),
    ("openai:m?timeout=nan", "above 0"),
    ("openai:m?key_env=sk-abc123", "name an environment variable"),
    ("openai:m?base_url=ftp://x", "http"),
    ("openai:", "openai:MODEL"),
    ("openai:m?backend=timm", "no backend"),
])
def test_api_specs_that_cannot_work_are_refused_at_once(spec, needle):
    with pytest.raises(CandidateSpecError, match=needle):
        parse_candidates(spec)


@pytest.mark.fault
def test_a_key_echoed_in_an_error_body_is_in_no_error_file_or_log_line(server, key, tmp_path, caplog, capsys,
                                                                       waits):
    echo = json.dumps({"error": {"message": f"Incorrect API key provided: {KEY}. You can find your key at ..."}})
    server.faults = [{"status": 401, "body": echo.encode(), "forever": True}]
    out, cache, md = tmp_path / "ranking.json", tmp_path / "c", tmp_path / "ranking.md"
    with caplog.at_level(logging.DEBUG):
        code = main(["rank", str(SAMPLE), "-c", "text", "-m", f"api=openai:fake-embed?base_url={server.url},tfidf-svd",
                     "--metrics", "task_prior", "--out", str(out), "--markdown", str(md), "--cache-dir", str(cache),
                     "-q"])
    streams = capsys.readouterr()
    assert code == 0  # the API candidate failed, the baseline was ranked
    assert server.requests and all(q["auth"] == f"Bearer {KEY}" for q in server.requests)
    r = Ranking.from_json(out.read_text())
    assert r["api"].error_type == "EmbeddingAPIError" and "HTTP 401" in r["api"].error and "***" in r["api"].error
    # 1. no error text: the failure, the warnings, stdout and stderr
    assert KEY not in r["api"].error and KEY not in streams.out + streams.err
    # 2. no file the run wrote: the cache (store database, vectors) and the output
    written = [p for p in [*cache.rglob("*"), out, md] if p.is_file()]
    assert md in written and out in written and not [p for p in written if KEY.encode() in p.read_bytes()]
    assert "HTTP 401" in md.read_text()  # the failure is reported, redacted
    # 3. no log line
    assert caplog.records and not [m for m in caplog.messages if KEY in m]
    assert not [rec for rec in caplog.records if KEY in rec.getMessage()]


@pytest.mark.fault
def test_a_key_given_as_key_env_is_in_no_file_log_line_or_message(server, tmp_path, caplog, capsys, monkeypatch):
    """?key_env= holding the key itself (it names no variable): it was in the spec of the JSON, the reports and the
    cache, and in the "set the environment variable <key>" error on stderr, in the log and the failure records."""
    pasted = "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0"
    monkeypatch.delenv(pasted, raising=False)
    out, cache, md, html = tmp_path / "r.json", tmp_path / "c", tmp_path / "r.md", tmp_path / "r.html"
    with caplog.at_level(logging.DEBUG):
        code = main(["rank", str(SAMPLE), "-c", "text", "-m",
                     f"api=openai:fake-embed?base_url={server.url}&key_env={pasted},tfidf-svd", "--metrics",
                     "task_prior", "--out", str(out), "--markdown", str(md), "--html", str(html), "--cache-dir",
                     str(cache)])
    streams = capsys.readouterr()
    assert code == 0 and server.requests == []
    r = Ranking.from_json(out.read_text())
    assert "the environment variable ?key_env= names is not set" in r["api"].error and "key_env=***" in r["api"].spec
    assert "is not set" in streams.out + streams.err and pasted not in streams.out + streams.err
    written = [p for p in [*cache.rglob("*"), out, md, html] if p.is_file()]
    assert out in written and html in written and not [p for p in written if pasted.encode() in p.read_bytes()]
    assert caplog.records and not [m for m in caplog.messages if pasted in m]
    # a variable's name that is not set: not in the spec either, but named by the error (a typo to fix)
    (c,) = parse_candidates(f"openai:fake-embed?key_env=MY_TYPO_KEY&base_url={server.url}")
    assert "MY_TYPO_KEY" not in c.spec and "key_env=***" in c.spec
    with pytest.raises(EmbeddingAPIError, match="set the environment variable MY_TYPO_KEY"):
        _embedder(server, key_env="MY_TYPO_KEY").embed(TEXTS)
    monkeypatch.setenv("MY_SET_KEY", KEY)  # a set variable's name is shown as written
    (c,) = parse_candidates(f"openai:fake-embed?key_env=MY_SET_KEY&base_url={server.url}")
    assert "key_env=MY_SET_KEY" in c.spec


def test_the_key_is_not_in_the_embedder_repr_or_settings(server, key):
    emb = _embedder(server)
    emb.embed(TEXTS[:2])
    assert KEY not in repr(emb) and KEY not in json.dumps(emb.settings()) and KEY not in repr(vars(emb))


def test_the_api_candidate_is_named_without_its_call_settings(server):
    (c,) = parse_candidates(f"openai:text-embedding-3-small?base_url={server.url}&dimensions=256&key_env=K")
    assert c.kind == "api" and c.name == "openai:text-embedding-3-small?dimensions=256" and c.revision is None
    (d,) = parse_candidates("e=openai:text-embedding-3-small?revision=v1")
    assert d.name == "e" and d.revision == "v1" and "revision" not in d.options


def test_a_variant_of_an_api_model_is_computed_from_its_vectors_not_paid_for_again(server, key, cache_dir):
    url = f"base_url={server.url}&batch_size=120"
    r = embedselect.select(SAMPLE, [f"api=openai:fake-embed?{url}", f"api8=openai:fake-embed?{url}&truncate_dim=8",
                                    "tfidf-svd"], column="text", metrics=["task_prior"])
    assert all(c.ok for c in r), [c.failure_note for c in r]
    assert len(server.requests) == 2 and r["api8"].dim == 8 and r["api8"].api_tokens == 0 and r["api"].api_tokens
    assert ("api8", "api") in {(p["copy"], p["parent"]) for p in r.details["copies"]["pairs"]}
    assert r["api8"].rank > r["api"].rank


def test_variants_of_an_api_model_with_a_revision_are_one_stored_run(server, key, cache_dir):
    """The model and its ?truncate_dim= variants under a revision: one set of requests and one stored run (an API is
    known by host, model and revision, not by the candidate's name), which a later run of a variant alone reads."""
    url = f"base_url={server.url}&batch_size=120&revision=r1"
    specs = [f"api=openai:fake-embed?{url}", f"api4=openai:fake-embed?{url}&truncate_dim=4",
             f"api8=openai:fake-embed?{url}&truncate_dim=8"]
    r = embedselect.select(SAMPLE, [*specs, "tfidf-svd"], column="text", metrics=["task_prior"])
    assert all(c.ok for c in r), [c.failure_note for c in r]
    assert len(server.requests) == 2 and (r["api4"].dim, r["api8"].dim) == (4, 8)
    runs = Store.open(cache_dir).list_runs()
    assert list(runs[runs["model_id"].str.startswith("openai:")]["model_id"]) == [r["api"].model_id]
    r2 = embedselect.select(SAMPLE, [specs[2].replace("api8=", "small="), "tfidf-svd"], column="text",
                            metrics=["task_prior"])
    assert r2["small"].cached and r2["small"].dim == 8 and len(server.requests) == 2


def test_a_run_only_variant_that_embedded_nothing_is_not_called_uncached(server, key, tmp_path, capsys):
    """A ?truncate_dim= variant of an API model without a revision takes the vectors the other variant embedded in
    this run: nothing embedded, nothing read from the cache. rank's table said "no" and its JSON false for it, embed
    "240 embedded in 0.0s"; they now say "-", null and where the vectors came from, as for precomputed vectors."""
    url = f"base_url={server.url}&batch_size=120"
    argv = [str(SAMPLE), "-c", "text", "-m", f"api=openai:fake-embed?{url},api8=openai:fake-embed?{url}&truncate_dim=8",
            "--cache-dir", str(tmp_path / "c"), "-q"]
    assert main(["rank", *argv, "--metrics", "task_prior"]) == 0
    header, _, *rows = capsys.readouterr().out.splitlines()
    cells = {row.split()[1]: row.split()[header.split().index("cached")] for row in rows[:2]}
    assert cells == {"api": "no", "api8": "-"}, (header, rows)
    assert main(["rank", *argv, "--metrics", "task_prior", "--json"]) == 0
    r = Ranking.from_json(capsys.readouterr().out)
    assert (r["api"].cached, r["api8"].cached) == (False, None)
    assert (r["api8"].embedded_items, r["api8"].stored_items) == (0, 0)
    assert main(["embed", *argv]) == 0
    first, variant = capsys.readouterr().out.splitlines()
    assert first.startswith("api: ok (240x16, 240 embedded in ")
    assert variant == "api8: ok (240x8, computed from the vectors another variant embedded in this run)"
    assert main(["embed", *argv, "--json"]) == 0
    assert {row["name"]: row["cached"] for row in json.loads(capsys.readouterr().out)} == {"api": False, "api8": None}



@pytest.mark.fault
@pytest.mark.parametrize("before", [MAX_ERROR_BODY - 12, MAX_ERROR_BODY - 4])
def test_a_key_cut_by_the_quoted_part_of_an_error_body_leaves_no_piece_of_it(server, key, waits, before):
    # the server echoes the key where the quote of its body ends: a piece of the key was quoted, unredacted
    body = ("x" * before + f" {KEY} " + "y" * 40).encode()
    server.faults = [{"status": 401, "body": body, "forever": True}]
    with pytest.raises(EmbeddingAPIError, match="HTTP 401") as ei:
        _embedder(server).embed(TEXTS[:2])
    message = str(ei.value)
    assert not [KEY[:i] for i in range(6, len(KEY) + 1) if KEY[:i] in message], message[-80:]

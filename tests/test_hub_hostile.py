"""Issue 47, a hostile hub: a listing whose ``Link: next`` never ends, a hub that trickles bytes, a next link to
another origin (the token must not follow it), an agent registry of the wrong shape. Each case against the loopback
hub (tests/hubserver.py); each bounded by a pytest time-out so that a hang fails instead of blocking the run."""

from __future__ import annotations

import argparse
import json
import time

import pytest
import yaml

from embedselect.errors import HubError
from embedselect.models import hub as H
from testkit.hubserver import FakeHub

TOKEN = "hf_" + "Q" * 34


@pytest.fixture
def retry():
    return H.RetryPolicy(max_retries=0, base_wait=0.01, max_wait=0.05, timeout=2.0, sleep=lambda s: None)


def _publish(hub, n: int = 3) -> None:
    for i in range(n):
        hub.publish(f"acme/m{i}", files={"config.json": b"{}"}, library_name="sentence-transformers",
                    pipeline_tag="sentence-similarity", trending_score=float(10 - i))


def _crawl_parser():
    from embedselect.cli import hub as cli_hub

    p = argparse.ArgumentParser(prog="embedselect")
    cli_hub.register(p.add_subparsers(dest="command", required=True))
    return p


# --- 4: a next link that loops -------------------------------------------------------------------------------
@pytest.mark.fault
@pytest.mark.timeout(30)
def test_a_listing_whose_next_link_repeats_an_empty_page_ends(hub, retry):
    hub.listing_link = lambda cursor, size: f"{hub.url}/api/models?cursor=0"
    res = H.crawl(limit=5, retry=retry)
    assert res.models == () and not res.complete
    assert [e.kind for e in res.errors] == ["loop"] and res.pages <= 2
    assert len(hub.requests_to(r"^/api/models$")) == res.pages


@pytest.mark.fault
@pytest.mark.timeout(30)
def test_a_listing_that_loops_over_filtered_pages_ends_at_the_repeat(hub, retry):
    _publish(hub)
    hub.page_size = 1
    hub.listing_link = lambda cursor, size: f"{hub.url}/api/models?cursor={(cursor + size) % 3}"
    res = H.crawl(limit=5, max_params=1, retry=retry)  # every model dropped client-side: pages never fill
    assert res.models == () and [e.kind for e in res.errors] == ["loop"]
    assert res.pages == 4 and len(hub.requests_to(r"^/api/models$")) == 4  # the 5th would repeat the 2nd


@pytest.mark.fault
@pytest.mark.timeout(60)
def test_crawl_cli_stops_at_max_pages_on_a_listing_without_end(hub, tmp_path, capsys):
    _publish(hub)
    hub.page_size = 1
    hub.listing_link = lambda cursor, size: f"{hub.url}/api/models?cursor={cursor + size}"  # new URL every page
    p = _crawl_parser()
    args = p.parse_args(["crawl", "--limit", "5", "--max-params", "1", "--cache-dir", str(tmp_path / "c")])
    assert args.func(args) == 5  # no model, and the crawl says why it stopped
    assert len(hub.requests_to(r"^/api/models$")) == 50
    assert "stopped after 50 pages (max_pages)" in capsys.readouterr().err
    args = p.parse_args(["crawl", "--limit", "5", "--max-pages", "4", "--cache-dir", str(tmp_path / "c"), "--json"])
    hub.requests.clear()
    assert args.func(args) == 0  # 3 models listed; the 4-page cap ended the endless listing
    out = json.loads(capsys.readouterr().out)
    assert len(out["models"]) == 3 and out["pages"] == 4 and [e["kind"] for e in out["errors"]] == ["max_pages"]
    assert len(hub.requests_to(r"^/api/models$")) == 4


@pytest.mark.fault
@pytest.mark.timeout(120)
def test_a_night_with_a_15_s_budget_stops_crawling_and_releases_the_lock(hub, tmp_path, monkeypatch):
    import filelock
    import pandas as pd

    from embedselect.nightly import load_config, run_night
    from embedselect.nightly import run as nightly_run

    _publish(hub)
    hub.page_size = 1
    hub.listing_link = lambda cursor, size: f"{hub.url}/api/models?cursor={cursor + size}"
    pd.DataFrame({"text": [f"text number {i} about {w}" for i in range(20) for w in ("cats", "dogs")]}).to_csv(
        tmp_path / "texts.csv", index=False)
    cfg = {"data": {"path": "texts.csv", "column": "text"}, "crawl": {"limit": 5, "max_params": 1, "max_pages": 10_000},
           "pinned": ["tfidf-svd?dim=4"], "output": "./site", "cache": "./cache", "metrics": ["task_prior"],
           "budget_minutes": 0.25}
    (tmp_path / "nightly.yaml").write_text(yaml.safe_dump(cfg))
    t = [0.0]

    def clock():  # every reading of the budget's clock is one second later: 15 s are spent after ~15 readings
        t[0] += 1.0
        return t[0]

    monkeypatch.setattr(nightly_run, "_clock", clock)
    try:
        summary = run_night(load_config(tmp_path / "nightly.yaml"))
        errors = summary["crawl"]["errors"]
    except Exception as exc:  # noqa: BLE001 - a night that ranked nothing may end in a typed error
        assert type(exc).__module__ == "embedselect.errors", exc
        errors = None
    pages = len(hub.requests_to(r"^/api/models$"))
    assert 1 <= pages <= 15, pages
    if errors is not None:
        assert any("time budget is spent" in e for e in errors)
    lock = filelock.FileLock(str(tmp_path / "cache" / "nightly.lock"))
    lock.acquire(timeout=0)  # the night let go of its lock
    lock.release()


# --- 5: a hub that trickles -----------------------------------------------------------------------------------
@pytest.mark.fault
@pytest.mark.timeout(40)
def test_a_trickling_listing_page_fails_by_its_deadline(hub):
    _publish(hub, 1)
    hub.add_fault(r"^/api/models\?", "trickle", delay=0.05, times=-1)  # a byte every 50 ms: each read is quick
    retry = H.RetryPolicy(max_retries=0, timeout=1.5, sleep=lambda s: None)
    t0 = time.monotonic()
    res = H.crawl(limit=5, retry=retry)
    took = time.monotonic() - t0
    assert res.models == () and [e.kind for e in res.errors] == ["timeout"]
    assert took < 6.0, took  # the whole answer (~1 kB, ~50 s at this rate) was cut off at its deadline


@pytest.mark.fault
@pytest.mark.timeout(60)
def test_fetching_a_model_from_a_trickling_hub_is_a_hub_error_by_the_deadline(hub):
    hub.publish("acme/slow", files={"config.json": b"{}", "model.safetensors": b"x" * 64},
                library_name="sentence-transformers")
    hub.add_fault(r"^/api/models/acme/slow", "trickle", delay=0.05, times=-1)
    retry = H.RetryPolicy(max_retries=1, base_wait=0.01, timeout=1.5, sleep=lambda s: None)
    t0 = time.monotonic()
    with pytest.raises(HubError, match="did not answer in time"):
        H.fetch_model("acme/slow", retry=retry)
    assert time.monotonic() - t0 < 10.0


# --- 6: the token and another origin ------------------------------------------------------------------------
@pytest.mark.fault
@pytest.mark.timeout(30)
def test_a_next_link_to_another_origin_never_receives_the_token(hub, retry):
    other = FakeHub().start()
    try:
        _publish(hub, 2)
        _publish(other, 2)
        hub.page_size = 1
        hub.listing_link = lambda cursor, size: f"{other.url}/api/models?cursor={cursor + size}"
        res = H.crawl(limit=5, token=TOKEN, retry=retry)
        with other.lock:
            auth = [r["headers"].get("authorization") for r in other.requests]
        assert auth == [], auth  # not followed at all
        assert [m.repo_id for m in res.models] == ["acme/m0"] and [e.kind for e in res.errors] == ["origin"]
        assert TOKEN not in json.dumps(res.to_dict())
        assert hub.requests_to(r"^/api/models$")[0]["headers"]["authorization"] == f"Bearer {TOKEN}"
    finally:
        other.stop()


# --- 15: an agent registry of the wrong shape ----------------------------------------------------------------
@pytest.mark.fault
def test_an_agent_registry_that_is_a_list_is_a_hub_error(hub, retry, monkeypatch):
    import os

    from huggingface_hub import constants
    from huggingface_hub.utils import _detect_agent

    monkeypatch.setattr(constants, "HF_HUB_DISABLE_TELEMETRY", False)
    monkeypatch.setattr(_detect_agent, "_registry", None)
    if os.path.exists(constants.AGENT_HARNESSES_PATH):
        os.remove(constants.AGENT_HARNESSES_PATH)
    hub.agent_registry = ["not", "a", "mapping"]
    _publish(hub, 1)
    try:
        with pytest.raises(HubError, match="agent-harnesses"):
            H.crawl(limit=5, retry=retry)
    finally:
        if os.path.exists(constants.AGENT_HARNESSES_PATH):
            os.remove(constants.AGENT_HARNESSES_PATH)


@pytest.mark.fault
@pytest.mark.parametrize("repo_id", ["evil/\x1b[31mred\x1b[0m", "evil/x|y<b>", "evil/" + "n" * 100, "evil/-dash"])
def test_a_listed_id_the_hub_would_not_accept_is_a_permanent_candidate_error(hub, retry, tmp_path, repo_id):
    """A crawled id with an escape sequence or markup was fetched and failed as a HubError (``transient``), so each
    night planned it again; it is a CandidateError before any request, with its escapes shown as ``\\x1b``."""
    from embedselect.errors import CandidateError
    from testkit import tinymodels as tm

    hub.publish(repo_id, tm.make_tiny_sentence_transformer(tmp_path / "st"), library_name="sentence-transformers")
    with pytest.raises(CandidateError, match="is not a hub model id") as ei:
        H.fetch_model(repo_id, retry=retry)
    assert not isinstance(ei.value, HubError) and "\x1b" not in str(ei.value)
    assert hub.requests_to("/api/models/evil") == []



@pytest.mark.fault
def test_hub_ls_leaves_out_crawled_ids_the_hub_would_not_accept_and_counts_them(hub, tmp_path, capsys):
    """`hub ls` listed a crawled id that is no hub model id (markup, an escape sequence) like any candidate; it is
    left out by default with a count on stderr (also with --json, whose stdout stays JSON); --all lists it; --limit
    counts the ids listed."""
    _publish(hub, 3)
    for i, bad in enumerate(["evil/x|y<b>", "evil/\x1b[31mred\x1b[0m"]):
        hub.publish(bad, files={"config.json": b"{}"}, library_name="sentence-transformers",
                    pipeline_tag="sentence-similarity", trending_score=20.0 - i)
    p, cache = _crawl_parser(), ["--cache-dir", str(tmp_path / "c")]
    args = p.parse_args(["crawl", "--limit", "10", *cache, "-q"])
    assert args.func(args) == 0
    capsys.readouterr()

    def ls(*extra: str) -> tuple[list[str], str]:
        args = p.parse_args(["hub", "ls", *cache, "--json", *extra])
        assert args.func(args) == 0
        out = capsys.readouterr()
        return [r["repo_id"] for r in json.loads(out.out)], out.err

    ids, err = ls()
    assert ids == ["acme/m0", "acme/m1", "acme/m2"]
    assert err == ("embedselect: 2 crawled id(s) left out: failed validation, not a hub model id (e.g. "
                   "'evil/x|y<b>'); --all shows them\n")
    assert ls("--limit", "2")[0] == ["acme/m0", "acme/m1"]
    ids, err = ls("--all")
    assert ids == ["evil/x|y<b>", "evil/\x1b[31mred\x1b[0m", "acme/m0", "acme/m1", "acme/m2"] and err == ""
    args = p.parse_args(["hub", "ls", *cache])  # the table: the valid ids only
    assert args.func(args) == 0
    assert [ln.split()[0] for ln in capsys.readouterr().out.splitlines()[1:]] == ["acme/m0", "acme/m1", "acme/m2"]

@pytest.mark.fault
def test_a_line_break_in_a_models_hub_metadata_never_adds_a_row_to_the_hub_tables(hub, tmp_path, capsys, monkeypatch):
    """A license tag or library name from the hub with a line break printed a second line in `crawl`'s and `hub ls`'s
    tables that read as a model of its own (on a terminal too: the terminal's cleaning keeps line breaks)."""
    forged = "evil/forged  sentence-transformers  text  1000000000"
    hub.publish("acme/ok", files={"config.json": b"{}"}, library_name="sentence-transformers",
                pipeline_tag="sentence-similarity", trending_score=5.0, license=f"mit\n{forged}")
    hub.publish("acme/lib", files={"config.json": b"{}"}, library_name=f"timm\r\n{forged}",
                pipeline_tag="image-feature-extraction", trending_score=4.0)
    p, cache = _crawl_parser(), ["--cache-dir", str(tmp_path / "c")]
    for tty in (False, True):
        monkeypatch.setattr("sys.stdout.isatty", lambda: tty, raising=False)
        for argv in (["crawl", "--limit", "10", *cache], ["hub", "ls", *cache]):
            args = p.parse_args(argv)
            assert args.func(args) == 0
            lines = capsys.readouterr().out.splitlines()
            rows = lines[lines.index(next(ln for ln in lines if ln.startswith("repo_id"))) + 1:]
            assert sorted(ln.split()[0] for ln in rows) == ["acme/lib", "acme/ok"], (argv, tty, lines)
            assert "evil/forged" in "\n".join(rows)  # the text is shown, on its model's line


@pytest.mark.fault
def test_a_crawl_warning_about_a_malformed_listing_item_carries_no_escape_sequence(hub, tmp_path, capsys):
    """A listing item the crawl cannot use is named in a warning on stderr by its id, which comes from the hub: an id
    with an escape sequence (a window title, a cleared screen) or a bidi override was written to stderr as it was."""
    _publish(hub, 2)
    bad = "evil/\x1b]0;pwned\x07x\x1b[2J\u202etxt"
    hub.publish(bad, files={"config.json": b"{}"}, library_name="sentence-transformers",
                pipeline_tag="sentence-similarity", trending_score=20.0)
    hub.repos[bad].extra = {"sha": "not-a-sha"}
    p = _crawl_parser()
    args = p.parse_args(["crawl", "--limit", "10", "--cache-dir", str(tmp_path / "c"), "-q"])
    assert args.func(args) == 0
    err = capsys.readouterr().err
    assert "page 1 (item)" in err and "evil/" in err and "not a 40-hex commit id" in err, err
    assert not [ch for ch in err if ch in "\x1b\x07\u202e"], repr(err)


@pytest.mark.fault
def test_crawls_table_leaves_out_crawled_ids_the_hub_would_not_accept_and_counts_them(hub, tmp_path, capsys):
    """`crawl`'s own table, and its --json, listed a crawled id that is no hub model id like any candidate (`hub ls`
    left it out); both follow hub ls's rule: left out with a count on stderr, --all lists it. The crawl records
    every model (hub ls --all shows them)."""
    _publish(hub, 3)
    for i, bad in enumerate(["evil/x|y<b>", "evil/\x1b[31mred\x1b[0m"]):
        hub.publish(bad, files={"config.json": b"{}"}, library_name="sentence-transformers",
                    pipeline_tag="sentence-similarity", trending_score=20.0 - i)
    p = _crawl_parser()

    def crawl(*extra: str) -> tuple[str, str]:
        args = p.parse_args(["crawl", "--limit", "10", "--cache-dir", str(tmp_path / "c"), *extra])
        assert args.func(args) == 0
        out = capsys.readouterr()
        return out.out, out.err

    out, err = crawl()
    assert [ln.split()[0] for ln in out.splitlines()[1:]] == ["acme/m0", "acme/m1", "acme/m2"]
    assert err.splitlines() == ["embedselect: 2 crawled id(s) left out: failed validation, not a hub model id (e.g. "
                                "'evil/x|y<b>'); --all shows them", "5 models from 1 page(s), recorded as crawl 1"]
    out, err = crawl("--all")
    assert [ln.split()[0] for ln in out.splitlines()[1:]] == ["evil/x|y<b>", "evil/\x1b[31mred\x1b[0m", "acme/m0",
                                                              "acme/m1", "acme/m2"]
    assert "left out" not in err
    out, err = crawl("--json")
    assert [m["repo_id"] for m in json.loads(out)["models"]] == ["acme/m0", "acme/m1", "acme/m2"]
    assert "embedselect: 2 crawled id(s) left out" in err
    out, err = crawl("--json", "--all")
    assert len(json.loads(out)["models"]) == 5 and "left out" not in err


@pytest.mark.fault
def test_the_hub_table_on_a_terminal_is_aligned_without_escapes_and_says_which_repos_are_gated():
    from embedselect.cli.hub import _table

    rows = [{"repo_id": "evil/\x1b[31mred\x1b[0m", "gated": False}, {"repo_id": "acme/a-longer-name", "gated": "manual"},
            {"repo_id": "acme/b", "gated": True}]
    shown = _table(rows, ["repo_id", "gated"], terminal=True).splitlines()
    assert "\x1b" not in "".join(shown)
    assert len({ln.index(v) for ln, v in zip(shown[1:], ["no", "manual", "yes"])}) == 1  # one column
    assert "\x1b[31m" in _table(rows, ["repo_id", "gated"], terminal=False)  # a pipe gets the bytes as they are


# --- credentials in HF_ENDPOINT --------------------------------------------------------------------------------
SECRET = "s3cret-pass"


@pytest.fixture
def endpoint_with_credentials(hub, monkeypatch):
    """HF_ENDPOINT as ``http://user:SECRET@127.0.0.1:PORT`` (the fake hub's own address, userinfo added)."""
    from huggingface_hub import constants

    url = hub.url.replace("://", f"://someone:{SECRET}@", 1)
    monkeypatch.setattr(constants, "ENDPOINT", url)
    return url


def test_redact_hides_a_urls_userinfo():
    assert H.redact(f"at https://someone:{SECRET}@hub.example/api and http://tok@h:8080/x") == \
        "at https://***@hub.example/api and http://***@h:8080/x"
    assert H.redact("mail someone@example.org, https://hub.example/a@b") == \
        "mail someone@example.org, https://hub.example/a@b"  # no userinfo: an address, an @ in a path


@pytest.mark.fault
@pytest.mark.timeout(30)
def test_credentials_in_hf_endpoint_are_never_printed_or_stored(hub, endpoint_with_credentials, retry):
    """``HF_ENDPOINT=https://user:secret@host``: the crawl's "not the hub http://someone:s3cret-pass@..." and a
    fetch's "was not found on the hub (http://someone:s3cret-pass@...)" and "cannot reach the hub at ..." said the
    password; they say ``http://***@host``, by the one redaction rule."""
    from huggingface_hub.errors import RepositoryNotFoundError

    from embedselect.models.hub.http import map_error

    host = hub.url.split("://", 1)[1]
    other = FakeHub().start()
    try:
        _publish(hub, 2)
        hub.page_size = 1
        hub.listing_link = lambda cursor, size: f"{other.url}/api/models?cursor={cursor + size}"
        res = H.crawl(limit=5, token=TOKEN, retry=retry)
    finally:
        other.stop()
    assert [e.kind for e in res.errors] == ["origin"]
    assert f"not the hub http://***@{host};" in res.errors[0].message
    assert SECRET not in json.dumps(res.to_dict())
    import httpx2

    response = httpx2.Response(404, request=httpx2.Request("GET", f"{endpoint_with_credentials}/api/models/acme/x"))
    for exc in (RepositoryNotFoundError("404", response=response), httpx2.ConnectError("refused")):
        message = str(map_error(exc, "acme/x", None, None))
        assert SECRET not in message and f"http://***@{host}" in message, message


def _embed_through_a_flaky_hub(hub, tmp_path, *flags: str):
    """``embedselect embed`` of a model whose ``modules.json`` the hub answers with 503 three times, in a process of
    its own (the logging set-up of ``main`` is what is tested; pytest's own handlers would hide it in-process)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from testkit import tinymodels as tm

    hub.publish("acme/flaky", tm.make_tiny_sentence_transformer(tmp_path / "st", seed=0),
                library_name="sentence-transformers", pipeline_tag="sentence-similarity")
    hub.add_fault(r"^/acme/flaky/resolve/[0-9a-f]+/modules\.json$", status=503, method="HEAD", times=3)
    (tmp_path / "texts.csv").write_text("text\n" + "".join(f"item {i} of the set\n" for i in range(12)))
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root), "HF_ENDPOINT": hub.url, "TQDM_DISABLE": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "embedselect.cli", "embed", str(tmp_path / "texts.csv"), "-c", "text",
         "-m", "acme/flaky", "--cache-dir", str(tmp_path / "cache"), *flags],
        capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=170)
    assert done.returncode == 0, done.stderr
    return done


@pytest.mark.fault
@pytest.mark.timeout(180)
def test_a_request_the_hub_client_retries_is_said_once_on_stderr(hub, tmp_path):
    """huggingface_hub gives its logger a stderr handler of its own at import, and its records also reached the root
    logger's handler: every warning it logs (a request it retries) was printed twice, once bare and once as
    ``WARNING huggingface_hub.utils._http: ...``. At the default verbosity each is one line, in embedselect's
    format (at a terminal they say why the run waits)."""
    done = _embed_through_a_flaky_hub(hub, tmp_path)
    said = [line for line in done.stderr.splitlines() if "HTTP Error 503" in line or "Retrying in" in line]
    assert said, done.stderr  # the client retried (and said so)
    # each line once, in embedselect's format: no bare copy of it from the library's own handler
    assert all(line.startswith("WARNING huggingface_hub.") for line in said), done.stderr
    errors, retries = (sum(what in line for line in said) for what in ("HTTP Error 503", "Retrying in"))
    assert errors == retries, done.stderr  # one line per failed attempt, one per retry


@pytest.mark.fault
@pytest.mark.timeout(180)
def test_quiet_leaves_out_the_hub_clients_retry_lines(hub, tmp_path):
    """``--quiet`` (a night's cron mail): the library's line per failed attempt and per retry is left out (one
    unreachable model mailed ~22 of them beside its one ``failed`` line); a request that succeeded on a retry says
    nothing at all, and one that outlived them is the command's own failure line."""
    done = _embed_through_a_flaky_hub(hub, tmp_path, "-q")
    assert len(hub.requests_to(r"^/acme/flaky/resolve/[0-9a-f]+/modules\.json$", "HEAD")) == 4  # it did retry
    assert done.stderr == "", done.stderr


@pytest.mark.fault
@pytest.mark.timeout(60)
def test_a_hub_answering_503_to_every_retry_is_said_as_such_not_as_a_lost_connection(hub, tmp_path, monkeypatch):
    """huggingface_hub turns a file's metadata request that outlived its retries into LocalEntryNotFoundError, whose
    text tells the user to check their Internet connection: the HubError quoted it, though the hub did answer (503).
    It now says what the hub answered, and that it is a passing fault on the hub's side."""
    import huggingface_hub.utils._http as hf_http

    from testkit import tinymodels as tm

    monkeypatch.setattr(hf_http.time, "sleep", lambda s: None)  # huggingface_hub's own backoff, not timed here
    hub.publish("acme/down", tm.make_tiny_sentence_transformer(tmp_path / "st", seed=0),
                library_name="sentence-transformers", pipeline_tag="sentence-similarity")
    hub.add_fault(r"^/acme/down/resolve/", status=503, method="HEAD", times=-1)
    with pytest.raises(HubError) as ei:
        H.fetch_model("acme/down", retry=H.RetryPolicy(max_retries=0, sleep=lambda s: None))
    said = str(ei.value)
    assert ei.value.status_code == 503 and "503 Service Unavailable" in said, said
    assert "a passing fault on the hub's side" in said, said
    assert "Internet" not in said and "check your connection" not in said.lower() and "not cached" not in said, said

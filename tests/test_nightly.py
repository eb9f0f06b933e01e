"""The nightly job against the loopback hub: two nights, failures, budget, lock, atomic outputs, config errors."""

from __future__ import annotations

import json

import pytest
import yaml

from embedselect.errors import EXIT_CODES, ConfigError, NightlyEmptyError, NightlyLockedError
from embedselect.nightly import load_config, run_night
from embedselect.nightly import run as nightly_run
from embedselect.store import Store
from testkit import tinymodels as tm

TEXTS = [f"the {a} {b} sat on the {c} at night" for a in ("cat", "dog", "man", "child", "woman")
         for b in ("red", "blue", "green", "big", "small", "old") for c in ("mat", "tree", "house", "car")]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny-nightly")
    return {i: tm.make_tiny_sentence_transformer(root / f"st{i}", seed=i) for i in range(6)}


def write_config(tmp_path, **over):
    import pandas as pd

    pd.DataFrame({"text": TEXTS}).to_csv(tmp_path / "texts.csv", index=False)
    cfg = {
        "data": {"path": "texts.csv", "column": "text", "max_items": 2000},
        "crawl": {"library": "sentence-transformers", "sort": "trending", "limit": 50},
        "keep_top": 5,
        "pinned": ["tfidf-svd"],
        "output": "./site",
        "budget_minutes": 60,
        "cache": "./cache",
        "metrics": ["task_prior"],
    }
    cfg.update(over)
    (tmp_path / "nightly.yaml").write_text(yaml.safe_dump(cfg))
    return tmp_path / "nightly.yaml"


def publish_st(hub, repo, path, trending):
    return hub.publish(repo, path, library_name="sentence-transformers", pipeline_tag="sentence-similarity",
                       trending_score=trending)


def test_two_nights_embed_only_the_new_and_updated_models(hub, tiny, tmp_path, monkeypatch):
    monkeypatch.chdir("/")  # paths in the config are relative to its folder, not the working directory
    for i, name in enumerate(["a", "b", "c"]):
        publish_st(hub, f"acme/{name}", tiny[i], 10 - i)
    conf = load_config(write_config(tmp_path))

    first = run_night(conf)
    assert first["status"] == "ok"
    assert sorted(first["embedded"]["names"]) == ["acme/a", "acme/b", "acme/c", "tfidf-svd"]
    assert first["reused"]["count"] == 0 and first["failed"] == [] and first["left"] == []
    assert sorted(first["candidates"]["new"]) == ["acme/a", "acme/b", "acme/c"]
    assert set(first["stages"]) >= {"data", "crawl", "plan", "embed", "rank", "publish"}
    site = tmp_path / "site"
    assert site.is_symlink()
    v1 = site.resolve()
    board1 = json.loads((site / "leaderboard.json").read_text())["rows"]
    assert len(board1) == 4 and board1[0]["rank"] == 1
    assert all(r["prev_rank"] is None and r["delta"] is None for r in board1)
    assert json.loads((site / "run.json").read_text())["run_id"] == first["run_id"]

    # night 2: one new trending model and one updated revision; count the forward passes
    new_sha = publish_st(hub, "acme/b", tiny[3], 9)
    publish_st(hub, "acme/d", tiny[4], 20)
    import embedselect.models.backends.loader as loader

    loaded = []
    real = loader.load_embedder

    def counting(rc, **kw):
        loaded.append(rc.model_id)
        return real(rc, **kw)

    monkeypatch.setattr(loader, "load_embedder", counting)
    second = run_night(conf)
    assert sorted(loaded) == ["acme/b", "acme/d"]  # forward passes: only the new and the updated model
    assert sorted(second["embedded"]["names"]) == ["acme/b", "acme/d"]
    assert sorted(second["reused"]["names"]) == ["acme/a", "acme/c", "tfidf-svd"]
    assert second["candidates"]["new"] == ["acme/d"] and second["candidates"]["updated"] == ["acme/b"]
    assert sorted(second["candidates"]["top"]) == ["acme/a", "acme/c"]
    board2 = json.loads((site / "leaderboard.json").read_text())["rows"]
    prev = {r["name"]: r["rank"] for r in board1}
    ranks = [r["rank"] for r in board2]
    assert len(ranks) == 5 and ranks[0] == 1 and ranks == sorted(ranks)  # ties share a rank
    for r in board2:
        assert r["prev_rank"] == prev.get(r["name"])
        assert r["delta"] == (None if r["name"] == "acme/d" else prev[r["name"]] - r["rank"])
    assert {r["name"]: r["revision"] for r in board2}["acme/b"] == new_sha
    # ranks follow the combined score
    scores = [r["combined_score"] for r in board2]
    assert scores == sorted(scores, reverse=True)
    # the site now points at a new complete version; the previous one is still on disk, nothing partial left
    assert site.resolve() != v1 and (site / "report.html").is_file() and (site / "badges" / "leader.json").is_file()
    svgs = sorted(p.name for p in (site / "badges").glob("*.svg"))  # one badge per ranked candidate
    assert len(svgs) == len(board2) and "#1 of" in (site / "badges" / "badges.md").read_text()
    versions = tmp_path / ".site.versions"
    assert not [p for p in versions.iterdir() if p.name.startswith(".") and p.name != ".embedselect-owned"]
    # the history is in the store, queryable by SQL
    store = Store.open(tmp_path / "cache")
    hist = store.query_df("SELECT run_id, name, rank, delta FROM nightly_results ORDER BY run_id, rank")
    assert len(hist) == 9 and hist.run_id.nunique() == 2
    # night 3: nothing new -> only the leaders and the pinned baseline, all reused
    third = run_night(conf)
    assert third["embedded"]["count"] == 0 and third["candidates"]["new"] == [] == third["candidates"]["updated"]


@pytest.mark.fault
def test_failing_model_is_recorded_and_skipped_and_outputs_stay_atomic(hub, tiny, tmp_path):
    publish_st(hub, "acme/good", tiny[0], 5)
    publish_st(hub, "acme/good2", tiny[1], 4)
    bad = tmp_path / "bad"
    tm.make_tiny_sentence_transformer(bad, seed=2)
    (bad / "model.safetensors").write_bytes(b"not a safetensors file")
    publish_st(hub, "acme/broken", bad, 9)
    conf = load_config(write_config(tmp_path))
    s = run_night(conf)
    assert s["status"] == "partial" and s["ranked"] == 3
    (f,) = s["failed"]
    assert f["name"] == "acme/broken" and f["reason"]
    store = Store.open(tmp_path / "cache")
    assert "acme/broken" in store.query_df("SELECT model_id FROM failures").model_id.tolist()
    # the next night does not retry it at the same revision
    old = (tmp_path / "site").resolve()
    # a publish that dies half-way leaves the published site untouched
    from embedselect.nightly import outputs

    def boom(*a, **k):
        raise OSError("disk full")

    import unittest.mock as mock

    with mock.patch.object(outputs, "_leaderboard_md", boom), pytest.raises(OSError):
        run_night(conf)
    assert (tmp_path / "site").resolve() == old
    assert json.loads((tmp_path / "site" / "run.json").read_text())["run_id"] == s["run_id"]
    s2 = run_night(conf)
    assert "acme/broken" in [x["name"] for x in s2["candidates"]["skipped"]] and s2["failed"] == []


@pytest.mark.fault
def test_budget_exhaustion_finishes_cleanly_and_the_next_night_continues(hub, tiny, tmp_path, monkeypatch):
    for i in range(3):
        publish_st(hub, f"acme/m{i}", tiny[i], 10 - i)
    conf = load_config(write_config(tmp_path, pinned=[], budget_minutes=10))
    t = [0.0]

    def clock():  # every model takes "5 minutes": the budget (80 % of 10 min for embedding) allows two
        return t[0]

    from embedselect.nightly.executors import local

    real = local.LocalExecutor.embed

    def slow_embed(self, ref, cands, *, store, job, should_stop, on_done=None):
        def stop():
            r = should_stop()
            t[0] += 300.0
            return r
        return real(self, ref, cands, store=store, job=job, should_stop=stop, on_done=on_done)

    monkeypatch.setattr(nightly_run, "_clock", clock)
    monkeypatch.setattr(local.LocalExecutor, "embed", slow_embed)
    s = run_night(conf)
    assert s["budget"]["exhausted"] and s["embedded"]["count"] == 2
    assert [x["reason"] for x in s["left"]] == ["budget"] and s["status"] == "partial"
    left = s["left"][0]["name"]
    monkeypatch.setattr(local.LocalExecutor, "embed", real)
    t[0] = 0.0
    s2 = run_night(conf)
    assert s2["embedded"]["names"] == [left] and s2["ranked"] == 3


@pytest.mark.fault
def test_lock_contention_exits_at_once(hub, tmp_path, capsys):
    import filelock

    from embedselect.cli import main

    path = write_config(tmp_path)
    (tmp_path / "cache").mkdir()
    with filelock.FileLock(str(tmp_path / "cache" / "nightly.lock")):
        with pytest.raises(NightlyLockedError):
            run_night(load_config(path))
        assert main(["nightly", "--config", str(path)]) == 9
    assert "another nightly run holds" in capsys.readouterr().err


@pytest.mark.fault
def test_empty_night_exits_nonzero_and_keeps_outputs(hub, tmp_path, capsys):
    from embedselect.cli import main

    path = write_config(tmp_path, pinned=[])
    with pytest.raises(NightlyEmptyError) as e:
        run_night(load_config(path))
    assert e.value.exit_code == 10 and not (tmp_path / "site").exists()
    assert main(["nightly", "--config", str(path), "--json"]) == 10
    out = capsys.readouterr()
    s = json.loads(out.out)
    assert s["status"] == "empty" and s["ranked"] == 0 and "ranked no candidate" in out.err
    assert (tmp_path / "cache" / "nightly" / "runs" / f"{s['run_id']}.json").is_file()



@pytest.mark.fault
def test_a_failed_model_is_said_once_by_the_summary_and_with_quiet_on_stderr(tmp_path, capsys, monkeypatch):
    """The night's summary names a failed model once (the run's WARNING log line said it a second time); with
    --quiet, which prints no summary, it is one warning line on stderr, so that a cron log still has it."""
    import embedselect.nightly as nightly
    from embedselect.cli import main

    failed = {"name": "acme/pickled", "model_id": "acme/pickled", "revision": "a" * 40, "why": "new",
              "error_type": "UnsafeModelError", "reason": "acme/pickled ships only pickle weights", "transient": False}
    summary = {"run_id": "20260101T000000Z-abcdef", "status": "partial", "decided": True, "leader": "tfidf-svd",
               "leaders": ["tfidf-svd"], "ranked": 1, "embedded": {"count": 1, "names": ["tfidf-svd"]},
               "reused": {"count": 0, "names": []}, "failed": [failed], "left": [],
               "pairs": {"computed": 0, "reused": 0, "total": 0}, "wall_seconds": 1.0, "stages": {"rank": 1.0},
               "output": str(tmp_path / "site")}
    monkeypatch.setattr(nightly, "load_config", lambda path: None)
    monkeypatch.setattr(nightly, "run_night", lambda cfg, dry_run=False, progress=False: summary)
    assert main(["nightly", "--config", str(write_config(tmp_path))]) == 0
    out = capsys.readouterr()
    assert (out.out + out.err).count("only pickle weights") == 1 and "failed acme/pickled: " in out.out
    assert main(["nightly", "--config", str(write_config(tmp_path)), "--quiet"]) == 0
    out = capsys.readouterr()
    assert out.out == "" and out.err == ("embedselect: warning: failed acme/pickled: UnsafeModelError: acme/pickled "
                                         "ships only pickle weights\n")

def test_dry_run_plans_without_writing(hub, tiny, tmp_path, capsys):
    from embedselect.cli import main

    publish_st(hub, "acme/a", tiny[0], 3)
    path = write_config(tmp_path)
    assert main(["nightly", "--config", str(path), "--dry-run", "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["status"] == "dry-run"
    assert sorted(s["plan"]["to_embed"]) == ["acme/a", "tfidf-svd"]
    assert s["would_compute"]["forward_passes"] == 2
    assert not (tmp_path / "site").exists()
    store = Store.open(tmp_path / "cache")
    assert store.query_df("SELECT count(*) AS n FROM embedding_runs").n[0] == 0


@pytest.mark.parametrize("patch, message", [
    ({"crawl": {"limit": 0}}, "crawl.limit"),
    ({"crawl": {"sortt": "trending"}}, "crawl.sortt: unknown key"),
    ({"budget_minutes": -1}, "budget_minutes"),
    ({"keep_top": "many"}, "keep_top"),
    ({"colour": "red"}, "colour: unknown key"),
    ({"metrics": ["nope"]}, "metrics: unknown metric"),
    ({"metrics": []}, "metrics: choose at least one metric"),
    ({"executor": {"kind": "slurm"}}, "executor.kind"),
])
@pytest.mark.fault
def test_config_errors_name_the_key(tmp_path, patch, message):
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        load_config(write_config(tmp_path, **patch))


@pytest.mark.fault
def test_a_config_with_two_problems_is_one_cli_line_that_keeps_them_apart(tmp_path, capsys):
    """The CLI prints an error on one line (its newlines collapsed): the problems of a configuration are separated by
    '; ' there, so the key of the second is not read as part of the first's message."""
    from embedselect.cli import main

    path = write_config(tmp_path, crawl={"sortt": "trending"}, budget_minutes=-1)
    assert main(["nightly", "--config", str(path)]) == EXIT_CODES["usage"]
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert ("crawl.sortt: unknown key; budget_minutes: Input should be greater than 0 (got -1)" in err), err


@pytest.mark.fault
def test_the_old_store_key_is_a_config_error_saying_to_rename_it_to_cache(tmp_path):
    """The cache folder's key is ``cache:`` (the word the CLI and the environment use: ``--cache-dir``,
    ``EMBEDSELECT_CACHE_DIR``); a configuration still naming it ``store:`` is refused with what to rename."""
    with pytest.raises(ConfigError, match=r"(?s)invalid nightly configuration.*store: this key is now called cache "
                                          r"\(the same folder: './old'\); rename store: to cache:"):
        load_config(write_config(tmp_path, store="./old"))
    cfg = load_config(write_config(tmp_path, cache="./night-cache"))
    assert cfg.cache_path == tmp_path / "night-cache" and cfg.runtime().cache_dir == tmp_path / "night-cache"


def test_minimal_config_from_the_issue_validates(tmp_path):
    (tmp_path / "n.yaml").write_text(
        "data: {path: texts.csv, column: text, max_items: 2000}\n"
        "crawl: {library: sentence-transformers, sort: trending, limit: 50}\n"
        "keep_top: 5\npinned: [tfidf-svd]\noutput: ./site\nbudget_minutes: 60\n"
    )
    c = load_config(tmp_path / "n.yaml")
    assert c.output_path == tmp_path / "site" and c.data_path == tmp_path / "texts.csv" and c.pinned == ("tfidf-svd",)
    with pytest.raises(ConfigError, match="data: required key is missing"):
        (tmp_path / "m.yaml").write_text("output: x\n")
        load_config(tmp_path / "m.yaml")


@pytest.mark.fault
def test_model_past_its_time_limit_is_skipped(hub, tiny, tmp_path, monkeypatch):
    import time

    import embedselect.models.backends.loader as loader

    publish_st(hub, "acme/fast", tiny[0], 5)
    publish_st(hub, "acme/slow", tiny[1], 4)
    real = loader.load_embedder

    def load(rc, **kw):
        if rc.model_id == "acme/slow":
            time.sleep(120)
        return real(rc, **kw)

    monkeypatch.setattr(loader, "load_embedder", load)
    conf = load_config(write_config(tmp_path, model_timeout_minutes=0.25))  # 15 s
    t0 = time.monotonic()
    s = run_night(conf)
    assert time.monotonic() - t0 < 100
    (f,) = s["failed"]
    assert f["name"] == "acme/slow" and f["error_type"] == "ModelTimeoutError" and "limit" in f["reason"]
    assert s["ranked"] == 2 and s["status"] == "partial"


@pytest.mark.fault
def test_a_junk_hub_listing_is_reported_and_the_night_ranks_what_it_knows(hub, tiny, tmp_path, capsys, caplog):
    """Issue 14 (fault suite, nightly): the hub's model listing answers with junk (not JSON) on every retry: the night
    says so (a warning, and the summary's crawl is incomplete with the reason), and ranks the models it already
    knows instead of failing or publishing an empty board. Issue 45: such a night is ``degraded`` (exit 12), not
    ``ok`` with exit 0, so that a scheduler alerts on it; the site is still published."""
    from embedselect.cli import main

    publish_st(hub, "acme/a", tiny[0], 10)
    path = write_config(tmp_path)
    run_night(load_config(path))
    capsys.readouterr()
    hub.add_fault(r"^/api/models\?", "malformed", times=-1)
    code = main(["nightly", "--config", str(path), "--json"])
    out = capsys.readouterr()
    assert code == EXIT_CODES["degraded"] == 12, out.err
    summary = json.loads(out.out)
    assert summary["status"] == "degraded" and "nightly degraded: the crawl failed" in out.err
    assert summary["degraded"] and all(d.startswith("the crawl failed") for d in summary["degraded"])
    assert summary["crawl"]["complete"] is False
    assert any("not valid JSON" in e for e in summary["crawl"]["errors"]), summary["crawl"]
    assert "crawl: page 1 failed" in caplog.text and "Traceback" not in out.err
    names = {r["name"] for r in json.loads((tmp_path / "site" / "leaderboard.json").read_text())["rows"]}
    assert {"acme/a", "tfidf-svd"} <= names


@pytest.mark.fault
def test_the_leaderboard_says_which_of_last_nights_models_are_not_ranked_tonight_and_why(hub, tiny, tmp_path):
    """The trending list changes between two nights: one model drops off it, one gets a broken new revision, one is
    unchanged (and not among the previous top, keep_top 0). Tonight's table holds none of them; leaderboard.md,
    leaderboard.json and run.json say each with its rank the previous night and why (they vanished without a word:
    the baseline read as having climbed ▲3 past them), and the failed one with its reason."""
    for i, name in enumerate(["a", "b", "c"]):
        publish_st(hub, f"acme/{name}", tiny[i], 10 - i)
    conf = load_config(write_config(tmp_path, keep_top=0))
    first = run_night(conf)
    assert first["status"] == "ok" and first["not_ranked"] == []
    site = tmp_path / "site"
    board1 = {r["name"]: r["rank"] for r in json.loads((site / "leaderboard.json").read_text())["rows"]}
    assert len(board1) == 4

    with hub.lock:  # acme/c is no longer listed
        del hub.repos["acme/c"]
    bad = tmp_path / "bad"
    tm.make_tiny_sentence_transformer(bad, seed=5)
    (bad / "model.safetensors").write_bytes(b"not a safetensors file")
    publish_st(hub, "acme/b", bad, 9)  # a new revision that cannot be loaded
    second = run_night(conf)
    assert [r["name"] for r in json.loads((site / "leaderboard.json").read_text())["rows"]] == ["tfidf-svd"]
    why = {g["name"]: (g["prev_rank"], g["why"]) for g in second["not_ranked"]}
    assert why == {
        "acme/a": (board1["acme/a"], "unchanged, and outside the previous night's top 0 (keep_top): not ranked again"),
        "acme/b": (board1["acme/b"], "failed tonight"),
        "acme/c": (board1["acme/c"], "no longer in the crawl"),
    }
    board = json.loads((site / "leaderboard.json").read_text())
    assert board["not_ranked"] == second["not_ranked"]
    assert [(f["name"], f["error_type"]) for f in board["failed"]] == [("acme/b", "ModelLoadError")]
    text = (site / "leaderboard.md").read_text()
    for name, (rank, said) in why.items():
        assert f"- {name} (#{rank} the previous night): {said}" in text.replace("\\", ""), text
    assert "- acme/b: ModelLoadError: " in text and "tried again the next night" not in text, text
    assert json.loads((site / "run.json").read_text())["not_ranked"] == second["not_ranked"]


def test_the_markdown_leaderboard_marks_a_model_ranked_at_a_new_revision():
    """A model ranked tonight at a new revision (``why: updated``) has its change marked as such: it read ``=`` when it
    kept its rank, as if nothing had changed, though its new weights were embedded and ranked."""
    from embedselect.nightly.outputs import _leaderboard_md

    rows = [{"rank": 1, "name": "acme/a", "revision": "a" * 40, "why": "top", "prev_rank": 1, "delta": 0,
             "combined_score": 1.0},
            {"rank": 2, "name": "acme/b", "revision": "b" * 40, "why": "updated", "prev_rank": 2, "delta": 0,
             "combined_score": 0.5},
            {"rank": 3, "name": "acme/c", "revision": "c" * 40, "why": "updated", "prev_rank": 1, "delta": -2,
             "combined_score": 0.0}]
    text = _leaderboard_md(rows, {"started_at": "2026-11-29T03:17:00+00:00", "decided": True})
    assert "| 1 | = | acme/a |" in text
    assert "| 2 | = new revision | acme/b |" in text and "| 3 | ▼2 new revision | acme/c |" in text, text


def test_the_markdown_leaderboard_says_which_failed_model_is_tried_again_the_next_night():
    from embedselect.nightly.outputs import _lines_under

    failed = [{"name": "acme/l", "error_type": "HubError", "reason": "503 after retries", "transient": True},
              {"name": "acme/g", "error_type": "ModelLoadError", "reason": "bad header", "transient": False}]
    lines = _lines_under({"failed": failed})
    assert "- acme/l: HubError: 503 after retries (a passing hub fault: tried again the next night)" in lines
    assert "- acme/g: ModelLoadError: bad header" in lines


def test_a_badge_published_once_stays_when_its_model_is_not_ranked_again(hub, tiny, tmp_path):
    """A README links to ``site/badges/<stem>.svg``: the night its model is not ranked (unchanged outside keep_top, or
    gone from the crawl) the site kept no badge for it and the README showed a broken image. Its last place is carried
    forward, grey, with the night it was ranked; from night to night as it was; a fresh badge once it is ranked again."""
    from embedselect.publish.badges import LABEL
    from embedselect.publish.text import safe_filename

    for i, name in enumerate(["a", "b"]):
        publish_st(hub, f"acme/{name}", tiny[i], 10 - i)
    conf = load_config(write_config(tmp_path, keep_top=0))
    first = run_night(conf)
    badges = tmp_path / "site" / "badges"
    then = {n: json.loads((badges / f"{safe_filename(n)}.json").read_text())["message"] for n in ("acme/a", "acme/b")}
    with hub.lock:  # acme/b leaves the trending list; acme/a stays, unchanged (keep_top 0: not ranked again)
        del hub.repos["acme/b"]
    for night in (2, 3):
        s = run_night(conf)
        assert [r["name"] for r in json.loads((tmp_path / "site" / "leaderboard.json").read_text())["rows"]] == [
            "tfidf-svd"], night
        for name in ("acme/a", "acme/b"):
            doc = json.loads((badges / f"{safe_filename(name)}.json").read_text())
            place = then[name].split(" · ")[0]
            assert doc == {"schemaVersion": 1, "label": LABEL, "message": f"{place} · {first['started_at'][:10]}",
                           "color": "lightgrey"}, (night, name)
            svg = (badges / f"{safe_filename(name)}.svg").read_text()
            assert f"{place} · {first['started_at'][:10]}" in svg and "#9f9f9f" in svg, (night, name)
        assert s["status"] == "ok"
    publish_st(hub, "acme/a", tiny[2], 10)  # a new revision: ranked again, a fresh badge
    run_night(conf)
    fresh = json.loads((badges / f"{safe_filename('acme/a')}.json").read_text())
    assert fresh["color"] != "lightgrey" and fresh["message"].endswith("texts.csv"), fresh

"""Crawl → the hub models table against the fake hub (testkit/hubserver.py): listing, filters, pagination, faults, history."""

from __future__ import annotations

import argparse
import json
import struct

import pytest

from embedselect.models import hub as H
from embedselect.errors import ConfigError, HubError
from embedselect.store import Store
from embedselect.store import hub_models


def _safetensors(n_params: int) -> bytes:
    """A valid safetensors file with one float32 tensor of ``n_params`` values (zeros)."""
    header = json.dumps({"w": {"dtype": "F32", "shape": [n_params], "data_offsets": [0, 4 * n_params]}}).encode()
    header += b" " * (-len(header) % 8)
    return struct.pack("<Q", len(header)) + header + bytes(4 * n_params)


@pytest.fixture
def sleeps():
    return []


@pytest.fixture
def retry(sleeps):
    return H.RetryPolicy(max_retries=2, base_wait=0.01, max_wait=0.05, timeout=2.0, sleep=sleeps.append)


def _publish_pool(hub):
    """Six listed models with distinct popularity numbers."""
    specs = [
        # id, library, pipeline, params, downloads, likes, trending, license, gated, created
        ("acme/st-small", "sentence-transformers", "sentence-similarity", 1000, 500, 5, 9.0, "apache-2.0", False, "2024-03-01"),
        ("acme/st-big", "sentence-transformers", "sentence-similarity", 9000, 900, 1, 3.0, "mit", False, "2024-01-01"),
        ("beta/st-gated", "sentence-transformers", "feature-extraction", 2000, 50, 50, 7.0, "apache-2.0", "manual", "2024-02-01"),
        ("beta/st-cc", "sentence-transformers", "sentence-similarity", 3000, 10, 2, 1.0, "cc-by-nc-4.0", False, "2024-05-01"),
        ("acme/vit-t", "timm", "image-feature-extraction", 4000, 700, 3, 5.0, "apache-2.0", False, "2024-04-01"),
        ("acme/nosize", "sentence-transformers", "sentence-similarity", None, 5, 0, 0.5, "apache-2.0", False, "2024-06-01"),
    ]
    for rid, lib, pipe, n, dl, likes, tr, lic, gated, created in specs:
        files = {"config.json": b"{}"}
        if n is not None:
            files["model.safetensors"] = _safetensors(n)
        hub.publish(
            rid, files=files, library_name=lib, pipeline_tag=pipe, downloads=dl, likes=likes, trending_score=tr,
            license=lic, gated=gated, created_at=f"{created}T00:00:00.000Z", last_modified=f"{created}T12:00:00.000Z",
        )


# --- listing --------------------------------------------------------------------------------------------
def test_crawl_uses_expand_and_link_pagination_without_per_model_requests(hub, retry):
    _publish_pool(hub)
    hub.page_size = 2
    res = H.crawl(library="sentence-transformers", sort="downloads", limit=4, retry=retry)
    assert [m.repo_id for m in res.models] == ["acme/st-big", "acme/st-small", "beta/st-gated", "beta/st-cc"]
    assert res.complete and res.errors == () and res.pages == 2
    listing = hub.requests_to(r"^/api/models$")
    assert len(listing) == 2  # 4 models, pages of 2: two requests, no third page
    assert set(H.EXPAND_FIELDS) <= set(listing[0]["query"]["expand"])
    assert listing[0]["query"]["sort"] == ["downloads"] and listing[0]["query"]["filter"] == ["sentence-transformers"]
    assert hub.requests_to(r"^/api/models/") == []  # no per-model info request
    big = res.models[0]
    assert big.num_params == 9000 and big.license == "mit" and big.modality == "text"
    assert big.sha == hub.repos["acme/st-big"].main and len(big.sha) == 40
    assert big.downloads == 900 and big.likes == 1 and big.trending_score == 3.0
    assert big.created_at.year == 2024 and big.last_modified is not None
    gated = next(m for m in res.models if m.repo_id == "beta/st-gated")
    assert gated.gated and gated.gated_mode == "manual"
    df = res.to_dataframe()
    assert list(df["repo_id"]) == [m.repo_id for m in res.models] and "num_params" in df.columns


@pytest.mark.parametrize(
    "sort,first", [("trending", "acme/st-small"), ("likes", "beta/st-gated"), ("recency", "acme/nosize")]
)
def test_crawl_sorts(hub, retry, sort, first):
    _publish_pool(hub)
    res = H.crawl(sort=sort, limit=10, retry=retry)
    assert res.models[0].repo_id == first
    assert len(res.models) == 6


def test_crawl_filters(hub, retry):
    _publish_pool(hub)
    ids = lambda r: sorted(m.repo_id for m in r.models)  # noqa: E731
    assert ids(H.crawl(library="timm", retry=retry)) == ["acme/vit-t"]
    assert ids(H.crawl(pipeline_tag="feature-extraction", retry=retry)) == ["beta/st-gated"]
    assert ids(H.crawl(author="beta", retry=retry)) == ["beta/st-cc", "beta/st-gated"]
    assert ids(H.crawl(search="VIT", retry=retry)) == ["acme/vit-t"]
    assert ids(H.crawl(tags=["license:mit"], retry=retry)) == ["acme/st-big"]
    assert "beta/st-gated" not in ids(H.crawl(include_gated=False, retry=retry))
    assert hub.requests_to(r"^/api/models$")[-1]["query"]["gated"] == ["false"]
    # size bounds: models with no reported size are dropped when a bound is given
    assert ids(H.crawl(min_params=2000, max_params=4000, retry=retry)) == ["acme/vit-t", "beta/st-cc", "beta/st-gated"]
    assert ids(H.crawl(licenses=["apache-2.0"], library="sentence-transformers", retry=retry)) == [
        "acme/nosize", "acme/st-small", "beta/st-gated",
    ]
    # client-side filters keep paging until `limit` models pass
    hub.page_size = 1
    res = H.crawl(licenses=["mit", "cc-by-nc-4.0"], sort="downloads", limit=2, retry=retry)
    assert [m.repo_id for m in res.models] == ["acme/st-big", "beta/st-cc"]
    assert res.pages == 5  # downloads order: st-big, vit-t, st-small, st-gated, st-cc


def test_crawl_rejects_bad_arguments(hub):
    with pytest.raises(ConfigError, match="sort"):
        H.crawl(sort="popularity")
    with pytest.raises(ConfigError, match="limit"):
        H.crawl(limit=0)
    with pytest.raises(ConfigError, match="larger"):
        H.crawl(min_params=10, max_params=5)
    assert hub.requests == []


def test_crawl_offline_raises_hub_error(hub, monkeypatch):
    import huggingface_hub.constants as c

    monkeypatch.setattr(c, "HF_HUB_OFFLINE", True)
    with pytest.raises(HubError, match="HF_HUB_OFFLINE"):
        H.crawl(limit=5)
    assert hub.requests == []


# --- faults ---------------------------------------------------------------------------------------------
def test_crawl_retries_429_honouring_retry_after_and_5xx_with_backoff(hub, retry, sleeps):
    _publish_pool(hub)
    hub.page_size = 2
    hub.add_fault(r"cursor=2", status=429, headers={"Retry-After": "3"})
    hub.add_fault(r"cursor=4", status=503)
    res = H.crawl(sort="downloads", limit=10, retry=retry)
    assert res.complete and len(res.models) == 6
    assert sleeps == [3.0, 0.01]  # Retry-After seconds, then the first backoff step
    assert len(hub.requests_to(r"^/api/models$")) == 5  # 3 pages + 2 retries


def test_crawl_page_failing_after_retries_is_recorded_not_raised(hub, retry, sleeps):
    _publish_pool(hub)
    hub.page_size = 2
    hub.add_fault(r"cursor=2", status=502, times=-1)
    res = H.crawl(sort="downloads", limit=10, retry=retry)
    assert [m.repo_id for m in res.models] == ["acme/st-big", "acme/vit-t"]  # page 1 kept
    assert not res.complete and len(res.errors) == 1
    err = res.errors[0]
    assert err.page == 2 and err.kind == "http" and "502" in err.message
    assert sleeps == [0.01, 0.02]  # exponential backoff, max_retries=2


def test_crawl_malformed_page_is_skipped_via_its_link(hub, retry):
    _publish_pool(hub)
    hub.page_size = 2
    hub.add_fault(r"cursor=2", "malformed", times=-1)
    res = H.crawl(sort="downloads", limit=10, retry=retry)
    assert [e.kind for e in res.errors] == ["malformed"]
    assert [m.repo_id for m in res.models] == ["acme/st-big", "acme/vit-t", "beta/st-cc", "acme/nosize"]


def test_crawl_malformed_item_is_reported_and_the_rest_kept(hub, retry):
    _publish_pool(hub)
    hub.repos["acme/st-big"].extra = {"safetensors": {"oops": 1}}
    hub.repos["acme/vit-t"].extra = {"sha": "not-a-sha"}
    res = H.crawl(sort="downloads", limit=10, retry=retry)
    assert sorted(e.kind for e in res.errors) == ["item", "item"]
    assert len(res.models) == 4 and "acme/st-big" not in {m.repo_id for m in res.models}


def test_crawl_timeout_is_retried_then_reported(hub, sleeps):
    _publish_pool(hub)
    retry = H.RetryPolicy(max_retries=1, base_wait=0.01, timeout=0.3, sleep=sleeps.append)
    hub.add_fault(r"^/api/models\?", "delay", delay=1.0)  # first attempt times out, retry succeeds
    assert len(H.crawl(limit=10, retry=retry).models) == 6
    hub.add_fault(r"^/api/models\?", "delay", delay=1.0, times=-1)
    res = H.crawl(limit=10, retry=retry)
    assert res.models == () and [e.kind for e in res.errors] == ["timeout"]


def test_crawl_bad_request_is_a_page_error(hub, retry, sleeps):
    hub.add_fault(r"^/api/models\?", status=400)
    res = H.crawl(limit=3, retry=retry)
    assert res.models == () and res.errors[0].kind == "http" and sleeps == []  # 4xx: not retried


# --- the hub models table ------------------------------------------------------------------------------------------
def test_the_hub_models_upsert_keeps_history_and_first_seen(hub, retry, tmp_path):
    store = Store.open(tmp_path / "cache")
    _publish_pool(hub)
    first = H.crawl(limit=10, retry=retry)
    assert hub_models.record_crawl(store, first) == 1
    hub.set_stats("acme/st-small", downloads=800, trending_score=20.0)
    hub.publish("gamma/new-model", files={"model.safetensors": _safetensors(10)}, library_name="sentence-transformers",
                pipeline_tag="sentence-similarity", trending_score=2.0)
    second = H.crawl(limit=10, retry=retry)
    assert hub_models.record_crawl(store, second) == 2

    hist = hub_models.history(store, "acme/st-small")
    assert list(hist["crawl_id"]) == [1, 2]
    assert list(hist["downloads"]) == [500, 800] and list(hist["trending_score"]) == [9.0, 20.0]
    df = hub_models.candidates(store, include_refused=True)
    assert len(df) == 7
    row = df.set_index("repo_id").loc["acme/st-small"]
    assert row["first_seen_crawl"] == 1 and row["last_seen_crawl"] == 2 and row["downloads"] == 800
    assert df.iloc[0]["repo_id"] == "acme/st-small"  # most trending first
    new = hub_models.candidates(store, new_since_last_crawl=True)
    assert list(new["repo_id"]) == ["gamma/new-model"]
    crawls = store.query_df("SELECT crawl_id, n_models, complete FROM hub_crawls ORDER BY crawl_id")
    assert list(crawls["n_models"]) == [6, 7] and crawls["complete"].all()


def test_candidates_filters(hub, retry, tmp_path):
    store = Store.open(tmp_path / "cache")
    _publish_pool(hub)
    hub_models.record_crawl(store, H.crawl(limit=10, retry=retry))
    ids = lambda df: sorted(df["repo_id"])  # noqa: E731
    assert ids(hub_models.candidates(store, modality="image")) == ["acme/vit-t"]
    assert ids(hub_models.candidates(store, max_params=2000)) == ["acme/st-small", "beta/st-gated"]
    assert ids(hub_models.candidates(store, licenses=["mit"])) == ["acme/st-big"]
    assert "beta/st-gated" not in ids(hub_models.candidates(store, exclude_gated=True))
    assert len(hub_models.candidates(store, limit=2)) == 2
    with pytest.raises(ConfigError):
        hub_models.candidates(store, modality="audio")


def test_record_crawl_is_all_or_nothing(hub, retry, tmp_path):
    store = Store.open(tmp_path / "cache")
    _publish_pool(hub)
    good = H.crawl(limit=10, retry=retry)
    hub_models.record_crawl(store, good)
    import dataclasses

    broken = dataclasses.replace(good, models=good.models + (good.models[0],))  # duplicate → PK violation mid-way
    with pytest.raises(Exception):
        hub_models.record_crawl(store, broken)
    assert store.query_df("SELECT count(*) AS n FROM hub_crawls")["n"][0] == 1
    assert store.query_df("SELECT count(*) AS n FROM hub_snapshots")["n"][0] == 6
    assert store.query_df("SELECT max(last_seen_crawl) AS c FROM hub_models")["c"][0] == 1


def test_hub_text_is_bound_not_interpolated(hub, retry, tmp_path):
    store = Store.open(tmp_path / "cache")
    evil = "acme/x'); DROP TABLE hub_models; --"
    hub.publish(evil, files={"config.json": b"{}"}, library_name="sentence-transformers", tags=["it's"])
    hub_models.record_crawl(store, H.crawl(limit=5, retry=retry))
    df = hub_models.candidates(store)
    assert list(df["repo_id"]) == [evil] and "it's" in list(df["tags"][0])


def test_refusals_are_recorded_scrubbed_and_hide_candidates(hub, retry, tmp_path, monkeypatch):
    store = Store.open(tmp_path / "cache")
    _publish_pool(hub)
    hub_models.record_crawl(store, H.crawl(limit=10, retry=retry))
    sha = hub.repos["acme/st-big"].main
    monkeypatch.setenv("HF_TOKEN", "hf_SecretSecret123")
    hub_models.record_refusal(store, "acme/st-big", sha, "too_large", "too big; token hf_SecretSecret123 was used")
    assert "acme/st-big" not in set(hub_models.candidates(store)["repo_id"])
    refused = hub_models.candidates(store, include_refused=True).set_index("repo_id")
    assert refused.loc["acme/st-big", "refusal_reason"] == "too_large"
    msg = hub_models.refusals(store)["message"][0]
    assert "hf_SecretSecret123" not in msg and "***" in msg
    with pytest.raises(ConfigError, match="reason"):
        hub_models.record_refusal(store, "acme/st-big", sha, "because", "x")
    # a new commit of the model is a new candidate again
    hub.publish("acme/st-big", files={"config.json": b"{}", "model.safetensors": _safetensors(9000)})
    hub_models.record_crawl(store, H.crawl(limit=10, retry=retry))
    assert "acme/st-big" in set(hub_models.candidates(store)["repo_id"])


# --- CLI ------------------------------------------------------------------------------------------------
def _parser():
    from embedselect.cli import hub as cli_hub

    p = argparse.ArgumentParser(prog="embedselect")
    cli_hub.register(p.add_subparsers(dest="command", required=True))
    return p


def test_cli_crawl_and_hub_ls(hub, tmp_path, capsys):
    _publish_pool(hub)
    p = _parser()
    args = p.parse_args(["crawl", "--library", "sentence-transformers", "--sort", "downloads", "--limit", "3",
                         "--max-params", "10k", "--cache-dir", str(tmp_path / "c"), "--json"])
    assert args.func(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert [m["repo_id"] for m in out["models"]] == ["acme/st-big", "acme/st-small", "beta/st-gated"]
    assert out["crawl_id"] == 1
    args = p.parse_args(["hub", "ls", "--cache-dir", str(tmp_path / "c"), "--json", "--exclude-gated"])
    assert args.func(args) == 0
    rows = json.loads(capsys.readouterr().out)
    assert sorted(r["repo_id"] for r in rows) == ["acme/st-big", "acme/st-small"]


def test_cli_crawl_exit_code_when_every_page_fails(hub, tmp_path, capsys, monkeypatch):
    hub.add_fault(r"^/api/models\?", status=404, times=-1)
    p = _parser()
    args = p.parse_args(["crawl", "--cache-dir", str(tmp_path / "c")])
    assert args.func(args) == 5
    assert "page 1" in capsys.readouterr().err


def test_parse_count():
    from embedselect.cli.hub import parse_count

    assert parse_count("110M") == 110_000_000 and parse_count("1.5B") == 1_500_000_000 and parse_count("42") == 42
    with pytest.raises(argparse.ArgumentTypeError):
        parse_count("lots")

"""A night with pinned candidates the user brings, whose vectors no cache holds across runs: precomputed vectors
(``NAME=vectors:PATH``) and a hosted API without ``?revision=`` (against the fake OpenAI server on 127.0.0.1). The
executor hands their vectors on in memory (:func:`embedselect.nightly.executors.base.hand_on`); the rank stage read
every candidate back from the cache by run key, so each night failed them with "no longer in the cache"."""

from __future__ import annotations

import numpy as np
import pytest

from embedselect.nightly import load_config, run_night
from tests.test_nightly import TEXTS, write_config
from tests.test_openai_api import KEY, FakeEmbeddings


@pytest.fixture
def server(monkeypatch):
    import threading

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    srv = FakeEmbeddings()
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.mark.fault
def test_pinned_precomputed_vectors_and_an_unpinned_api_are_ranked_every_night(hub, server, tmp_path):
    vectors = np.random.default_rng(0).normal(size=(len(TEXTS), 8)).astype("float32")
    np.save(tmp_path / "v.npy", vectors)
    api = f"api=openai:fake-embed?base_url={server.url}"
    conf = load_config(write_config(tmp_path, pinned=["tfidf-svd", "random-projection",
                                                      f"mine=vectors:{tmp_path / 'v.npy'}", api]))
    for night in (1, 2):
        summary = run_night(conf)
        assert summary["failed"] == [] and summary["status"] == "ok", summary["failed"]
        assert summary["ranked"] == 4
        # the API's vectors are kept for one run only: embedded (paid for) every night; the given vectors neither
        assert summary["embedded"]["names"] == (["tfidf-svd", "random-projection", "api"] if night == 1 else ["api"])
        assert summary["reused"]["names"] == ([] if night == 1 else ["tfidf-svd", "random-projection"])
        assert len(server.requests) > 0 and sum(len(q["body"]["input"]) for q in server.requests) == len(TEXTS) * night
    from embedselect.ranking.result import Ranking

    ranking = Ranking.from_json((tmp_path / "site" / "ranking.json").read_text())
    assert ranking["mine"].ok and (ranking["mine"].n, ranking["mine"].dim) == (len(TEXTS), 8)
    assert ranking["mine"].cache_scope == "input" and ranking["api"].cache_scope == "run"


@pytest.mark.fault
def test_brought_vectors_among_the_leaders_are_not_planned_as_a_hub_model_once_unpinned(hub, tmp_path):
    np.save(tmp_path / "v.npy", np.random.default_rng(0).normal(size=(len(TEXTS), 8)).astype("float32"))
    first = run_night(load_config(write_config(tmp_path, pinned=["tfidf-svd", "random-projection",
                                                                 f"mine=vectors:{tmp_path / 'v.npy'}"])))
    assert first["status"] == "ok" and first["ranked"] == 3  # mine is within keep_top (5)
    second = run_night(load_config(write_config(tmp_path, pinned=["tfidf-svd", "random-projection"])))
    assert second["status"] == "ok" and second["failed"] == [], second["failed"]
    assert second["candidates"]["top"] == [] and second["ranked"] == 2


@pytest.mark.fault
def test_pinned_relative_paths_are_read_from_the_configurations_folder(hub, tmp_path, monkeypatch):
    """docs/nightly.md: relative paths are relative to the configuration file's folder. A pinned vectors file or
    local folder was read from the working folder: run from elsewhere, the night failed them."""
    from testkit import tinymodels as tm

    np.save(tmp_path / "v.npy", np.random.default_rng(0).normal(size=(len(TEXTS), 8)).astype("float32"))
    tm.make_tiny_sentence_transformer(tmp_path / "models" / "tiny")
    conf = load_config(write_config(tmp_path, pinned=["tfidf-svd", "mine=vectors:v.npy", "models/tiny",
                                                      "other=./models/tiny?normalize=false"]))
    monkeypatch.chdir(tmp_path.parent)
    summary = run_night(conf)
    assert summary["failed"] == [] and summary["status"] == "ok", summary["failed"]
    assert sorted(summary["candidates"]["pinned"]) == ["mine", "other", "tfidf-svd", "tiny"]


@pytest.mark.fault
@pytest.mark.parametrize("bad, says", [
    ("mine=vectors:missing.npy", "vectors file '{dir}/missing.npy' of candidate 'mine' does not exist"),
    ("local:./nowhere", "local model directory '{dir}/nowhere' does not exist"),
    ("tfidf-svg", "cannot understand candidate 'tfidf-svg' (did you mean the baseline 'tfidf-svd'?)"),
    ("=x", "bad candidate '=x': write NAME=SPEC"),
])
def test_a_pinned_candidate_that_cannot_be_parsed_or_found_is_a_config_error_before_any_crawl(hub, tmp_path,
                                                                                             capsys, bad, says):
    """A missing vectors file or local folder (read from the configuration's folder), a malformed spec: exit 2 when
    the configuration is read, naming the entry, and the hub is not asked anything. The night crawled the hub first
    and failed it when it planned (CandidateSpecError, exit 4). A hub id is not looked up then (no network)."""
    from embedselect.cli import main

    path = write_config(tmp_path, pinned=["tfidf-svd", "org/not-looked-up@abc123", bad])
    assert main(["nightly", "--config", str(path), "-q"]) == 2
    err = capsys.readouterr().err
    assert f"pinned[2]: {says.format(dir=tmp_path)}" in err, err
    assert hub.requests == []



@pytest.mark.fault
@pytest.mark.parametrize("images, pinned, says", [
    (True, "tfidf-svd", "baseline 'tfidf-svd' embeds text only, not image"),
    (False, "pixel-pca", "baseline 'pixel-pca' embeds image only, not text"),
])
def test_a_pinned_baseline_of_the_other_modality_is_a_config_error_before_any_crawl(hub, tmp_path, capsys, images,
                                                                                    pinned, says):
    """``tfidf-svd`` pinned for a folder of images (``pixel-pca`` for a text file): exit 2 when the configuration is
    read, naming the entry; the hub is not asked anything. It was caught only when the night planned, after the
    crawl. The data's modality is read from its path as the loader reads it (a folder: images)."""
    from embedselect.cli import main

    over = {"data": {"path": "photos"}, "metrics": ["alpha_req"]} if images else {}
    if images:
        from PIL import Image

        (tmp_path / "photos").mkdir()
        for i in range(12):
            Image.new("RGB", (8, 8), (20 * i, 0, 0)).save(tmp_path / "photos" / f"{i}.png")
    path = write_config(tmp_path, pinned=["random-projection", pinned], **over)
    assert main(["nightly", "--config", str(path), "-q"]) == 2
    err = capsys.readouterr().err
    assert f"pinned[1]: {says}" in err, err
    assert hub.requests == []

def test_spec_against_makes_only_relative_paths_absolute(tmp_path):
    from embedselect.models.candidates.spec import spec_against

    (tmp_path / "models" / "m").mkdir(parents=True)
    b = str(tmp_path)
    assert spec_against("mine=vectors:v.npy", b) == f"mine=vectors:{tmp_path / 'v.npy'}"
    assert spec_against("local:models/m?pooling=cls", b) == f"local:{tmp_path / 'models' / 'm'}?pooling=cls"
    assert spec_against("x=./models/m?normalize=false", b) == f"x={tmp_path / 'models' / 'm'}?normalize=false"
    assert spec_against("models/m", b) == str(tmp_path / "models" / "m")
    assert spec_against("../elsewhere", b) == str(tmp_path.parent / "elsewhere")
    for kept in ("tfidf-svd", "org/name@abc123", "sentence-transformers/all-MiniLM-L6-v2", "/abs/m",
                 "mine=vectors:/abs/v.npy", "api=openai:text-embedding-3-small?dimensions=8", "catalog:text",
                 "~/m"):
        assert spec_against(kept, b) == kept

"""Use the winner: index + search round trip on a tiny model, manifest checks, `--model best`, the CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from embedselect.errors import ConfigError, IndexMismatchError, SearchIndexError
from embedselect.config import RankConfig
from embedselect.search import SearchIndex, build_index, search
from testkit.tinymodels import make_tiny_sentence_transformer

TEXTS = [
    "the cat sat on the mat",
    "a dog barked at the mailman",
    "stock prices fell sharply on monday",
    "the recipe needs two cups of flour",
    "rain is expected for the weekend",
    "the striker scored a late goal",
    "central banks raised interest rates",
    "bake the bread for forty minutes",
    "thunderstorms moved across the valley",
    "the goalkeeper saved a penalty",
    "my cat sleeps all day",
    "markets rallied after the report",
]


@pytest.fixture(scope="module")
def tiny_st(tmp_path_factory):
    return make_tiny_sentence_transformer(tmp_path_factory.mktemp("models") / "tiny-st")


def test_index_search_round_trip_on_a_tiny_model(tmp_path, cache_dir, tiny_st, one_thread):
    out = tmp_path / "idx"
    idx = build_index(TEXTS, str(tiny_st), out=out)
    m = idx.manifest
    assert (out / "manifest.json").is_file() and (out / "index.faiss").is_file() and (out / "rows.jsonl").is_file()
    assert m.n == len(TEXTS) and m.dim == 32 and m.metric == "cosine" and m.exact
    assert m.model_id == f"local:{tiny_st}" and len(m.revision) == 64 and m.modality == "text"
    on_disk = json.loads((out / "manifest.json").read_text())
    assert on_disk["fingerprint"] == m.fingerprint and set(on_disk["files"]) == {"index.faiss", "rows.jsonl"}
    # every item finds itself first, with cosine similarity 1 (query embedded in-process, index from the cache)
    hits = search(out, TEXTS, k=3)
    assert [h[0].row for h in hits] == list(range(len(TEXTS)))
    assert all(abs(h[0].score - 1.0) < 1e-4 for h in hits)
    assert hits[0][0].item == TEXTS[0] and hits[0][0].id == idx.ids[0]
    assert all(h[0].score >= h[1].score >= h[2].score for h in hits)
    # the query vectors are the cached vectors of the same texts (same model, same revision)
    loaded = SearchIndex.load(out)
    q = loaded.embed_queries(TEXTS[:2])
    from embedselect.store import Store

    cached = Store.open(cache_dir).load_vectors(m.run_key)
    np.testing.assert_allclose(q, cached[:2], atol=1e-5)


def test_build_reads_cached_vectors_without_a_forward_pass(tmp_path, cache_dir, tiny_st, monkeypatch, one_thread):
    build_index(TEXTS, str(tiny_st), out=tmp_path / "a")

    def no_model(*a, **k):
        raise AssertionError("the model was loaded although its vectors are cached")

    monkeypatch.setattr("embedselect.models.backends.loader.load_embedder", no_model)
    idx = build_index(TEXTS, str(tiny_st), out=tmp_path / "b")
    assert idx.manifest.run_key == SearchIndex.load(tmp_path / "a").manifest.run_key


def test_manifest_mismatches_are_refused(tmp_path, cache_dir, tiny_st, one_thread):
    out = tmp_path / "idx"
    build_index(TEXTS, str(tiny_st), out=out)
    SearchIndex.load(out, model=str(tiny_st), data=TEXTS)  # the right model and data pass
    with pytest.raises(IndexMismatchError, match="was built with .* not 'random-projection'"):
        SearchIndex.load(out, model="random-projection")
    with pytest.raises(IndexMismatchError, match="reference data changed"):
        SearchIndex.load(out, data=TEXTS[:-1] + ["a changed last item"])
    # overwrite protection, and a folder that is not an index
    with pytest.raises(ConfigError, match="already holds an index"):
        build_index(TEXTS, str(tiny_st), out=out)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "keep.txt").write_text("mine")
    with pytest.raises(ConfigError, match="not an embedselect index"):
        build_index(TEXTS, str(tiny_st), out=tmp_path / "other")
    assert (tmp_path / "other" / "keep.txt").read_text() == "mine"
    with pytest.raises(SearchIndexError, match="not an embedselect index"):
        SearchIndex.load(tmp_path / "other")
    # an edited rows file is caught by its checksum
    rows = out / "rows.jsonl"
    rows.write_text(rows.read_text().replace("cat", "cow"))
    with pytest.raises(IndexMismatchError, match="checksum"):
        SearchIndex.load(out)


def test_search_refuses_a_model_whose_files_changed(tmp_path, cache_dir, one_thread):
    model = make_tiny_sentence_transformer(tmp_path / "m")
    out = tmp_path / "idx"
    build_index(TEXTS, str(model), out=out)
    (model / "README.md").write_text("edited after indexing\n")  # new bytes -> new local revision
    with pytest.raises(IndexMismatchError, match="model changed"):
        search(out, "a cat")


def test_model_best_uses_the_top_of_the_stored_ranking(tmp_path, cache_dir, one_thread):
    from embedselect import select
    from embedselect.data import sample_path

    data = sample_path("texts")
    with pytest.raises(ConfigError, match="no ranking of these data"):
        build_index(data, "best", config=RankConfig(column="text"), out=tmp_path / "none")
    ranking = select(data, ["tfidf-svd", "random-projection"], column="text", metrics=["task_prior"], seed=3)
    idx = build_index(data, "best", config=RankConfig(column="text"), out=tmp_path / "best")
    top = ranking.candidates[0]
    assert idx.manifest.name == top.name and idx.manifest.run_key == top.run_key and idx.manifest.seed == 3
    # the fitted baseline's fit is saved with the index (same seed): queries land on themselves
    first = idx.items[:5]
    assert [h[0].row for h in idx.search(first, k=1)] == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("modality", ["text", "image"])
def test_fitted_baselines_are_saved_with_the_index_and_never_refit(tmp_path, cache_dir, monkeypatch, modality):
    from PIL import Image

    from embedselect.models.backends.baselines import PixelPCAEmbedder, TfidfSvdEmbedder, make_baseline
    from embedselect.store import Store

    if modality == "text":
        data, spec, cls, queries = TEXTS, "tfidf-svd?dim=6", TfidfSvdEmbedder, ["a cat on a mat", "rates and banks"]
        options = {"dim": 6}
    else:
        rng = np.random.default_rng(0)
        (tmp_path / "imgs").mkdir()
        for i in range(10):
            Image.fromarray(rng.integers(0, 255, (12, 12, 3), dtype=np.uint8)).save(tmp_path / "imgs" / f"{i}.png")
        data, spec, cls, options = tmp_path / "imgs", "pixel-pca?dim=4&size=8", PixelPCAEmbedder, {"dim": 4, "size": 8}
        queries = [str(tmp_path / "imgs" / "3.png")]
        Image.fromarray(rng.integers(0, 255, (12, 12, 3), dtype=np.uint8)).save(tmp_path / "query.png")
        queries.append(str(tmp_path / "query.png"))
    out = tmp_path / "idx"
    idx = build_index(data, spec, out=out, config=RankConfig(seed=2))
    assert "baseline.npz" in idx.manifest.files and (out / "baseline.npz").is_file()
    items = list(idx.items) if modality == "text" else [Path(p) for p in idx.items]
    before = make_baseline(cls.backend, modality=modality, options=options, seed=2, fit_items=items)
    expected = before.embed(queries if modality == "text" else [Path(q) for q in queries])

    def refit(*a, **k):
        raise AssertionError("the baseline was fitted again when searching")

    monkeypatch.setattr(cls, "_fit", refit)
    loaded = SearchIndex.load(out)
    np.testing.assert_array_equal(loaded.embed_queries(queries), expected)  # bit for bit, no refit
    cached = Store.open(cache_dir).load_vectors(idx.manifest.run_key)
    probe, row = ([TEXTS[0]], 0) if modality == "text" else (queries[:1], 3)  # an indexed item as the query
    np.testing.assert_array_equal(loaded.embed_queries(probe), cached[[row]])
    assert loaded.search(probe, k=1)[0][0].row == row
    # an index without its fit (format 1) is refused with what to do, not refitted
    manifest = json.loads((out / "manifest.json").read_text())
    del manifest["files"]["baseline.npz"]
    (out / "manifest.json").write_text(json.dumps(manifest))
    (out / "baseline.npz").unlink()
    with pytest.raises(SearchIndexError, match="not its fit .*--overwrite"):
        SearchIndex.load(out).embed_queries(queries)


def test_cli_index_and_search(tmp_path, cache_dir, tiny_st, capsys, one_thread):
    from embedselect.cli import main

    data = tmp_path / "d.txt"
    data.write_text("\n".join(TEXTS) + "\n")
    out = tmp_path / "idx"
    assert main(["index", str(data), "--model", str(tiny_st), "--out", str(out), "-q"]) == 0
    assert "12 items" in capsys.readouterr().out
    assert main(["search", str(out), TEXTS[3], "-k", "2", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["results"][0]["hits"][0]["item"] == TEXTS[3] and len(res["results"][0]["hits"]) == 2
    assert main(["search", str(out), TEXTS[3], "-k", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()  # per query: its line, a header row (it had none), a row a hit
    assert lines[0] == f"query: {TEXTS[3]}" and lines[1].split() == ["rank", "score", "id", "text"] and len(lines) == 4
    rows = [re.split(r" {2,}", ln.strip(), maxsplit=3) for ln in lines[2:]]  # a pipe splits at two spaces or more
    assert [r[0] for r in rows] == ["1", "2"] and rows[0][2:] == ["4", TEXTS[3]], rows
    assert lines[1].index("score") == lines[2].index(rows[0][1]) and lines[1].index("text") == lines[2].index(TEXTS[3])
    assert main(["search", str(out), "x", "--model", "tfidf-svd"]) == 6  # store-class exit code
    assert "was built with" in capsys.readouterr().err
    assert main(["search", str(tmp_path / "missing"), "x"]) == 6


def test_neighbours_view_and_cli_with_duplicates(tmp_path, cache_dir, tiny_st, capsys, one_thread):
    from embedselect.cli import main
    from embedselect.search import neighbours_view

    texts = TEXTS + [TEXTS[0], TEXTS[5], "<script>alert(1)</script> the cat"]
    data = tmp_path / "d.txt"
    data.write_text("\n".join(texts) + "\n")
    with pytest.raises(TypeError):  # one way to name the items: their ids (it also took 0-based rows, ids winning)
        neighbours_view(str(data), ["random-projection"], rows=[0, 14])
    view = neighbours_view(str(data), [str(tiny_st), "random-projection"], ids=[1, 15], k=3,
                           near_duplicate_threshold=0.999)
    assert len(view.names) == 2 and view.rows == [0, 14]
    for nm in view.names:
        first = view.neighbours[nm][0]
        assert len(first) == 3 and all(j != 0 for j, _ in first)  # never the item itself
        assert first[0][0] == 12 and abs(first[0][1] - 1.0) < 1e-5  # its exact copy is nearest
        # the near-duplicates: rows 12 and 13 copy rows 0 and 5, under every candidate
        nd = view.near_duplicates[nm]
        assert nd["n_drop"] == 2 and [0, 12] in nd["groups"] and [5, 13] in nd["groups"]
    assert view.agreement.matrix.shape == (2, 2) and view.knn_communities
    html = view.to_html()
    assert "<script>" not in html and "&lt;script&gt;" in html
    # the CLI: JSON, and a deduplicated copy of the data to rank again
    out = tmp_path / "dedup.csv"
    assert main(["neighbours", str(data), "-m", f"{tiny_st},random-projection", "--rows", "1", "-k", "2",
                 "--near-duplicates", "0.999", "--write-deduped", str(out), "--json", "-q"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["candidates"] == view.names
    assert payload["sample"][0]["neighbours"][view.names[0]][0]["row"] == 12
    import pandas as pd

    kept = pd.read_csv(out)
    assert len(kept) == len(texts) - 2 and kept["text"].tolist() == texts[:12] + [texts[14]]
    assert main(["neighbours", str(data), "-m", "random-projection", "--write-deduped", str(out)]) == 2


def test_printed_items_carry_no_terminal_escapes():
    from types import SimpleNamespace

    from embedselect.cli.search import hit_lines

    hit = SimpleNamespace(rank=1, score=0.5, id="7", item="evil\x1b[2Jtext\x07 and\nmore")
    assert hit_lines("q", [hit], 80, True)[-1].endswith("  evil[2Jtext and more")  # a terminal: no escape
    assert hit_lines("q", [hit], None, False)[-1].endswith("  evil\x1b[2Jtext\x07 and more")  # a pipe: one line


@pytest.mark.fault
def test_search_hits_fit_the_terminal_and_a_pipe_gets_whole_texts(tmp_path, cache_dir, capsys, monkeypatch):
    """At 60 columns each hit's row was over 100 characters (its text cut at 100 whatever the width) and the
    terminal broke it over lines. On a terminal each hit is one line within the width, its text cut with an
    ellipsis (a multi-line item on one line); a pipe gets every text whole, on one line."""
    import csv
    import sys

    from embedselect.cli import main

    long = "the striker scored a late goal " * 6 + "in the rain"
    data = tmp_path / "d.csv"
    with data.open("w", newline="") as f:
        csv.writer(f).writerows([["text"], *([t] for t in TEXTS), ["the goalkeeper\nsaved a penalty\nin the rain"],
                                 [long]])
    out = tmp_path / "idx"
    assert main(["index", str(data), "-c", "text", "--model", "tfidf-svd", "--out", str(out), "-q"]) == 0
    capsys.readouterr()
    query = "which striker scored a late goal or saved a penalty in the rain this weekend"
    assert main(["search", str(out), query, "-k", "3"]) == 0
    piped = capsys.readouterr().out.splitlines()
    assert piped[0] == f"query: {query}" and len(piped) == 5
    assert f"  {long}" in piped[2] + piped[3] + piped[4] and "  the goalkeeper saved a penalty in the rain" in "".join(
        piped[2:])
    monkeypatch.setenv("COLUMNS", "60")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    assert main(["search", str(out), query, "-k", "3"]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert max(len(ln) for ln in shown) <= 59, "\n".join(shown)
    assert " ".join(" ".join(ln.strip() for ln in shown[:2]).split()) == f"query: {query}"  # wrapped at words
    assert shown[2].split() == ["rank", "score", "id", "text"] and len(shown) == 6
    rows = shown[3:]
    assert all(re.match(r"  [123]  ", ln) for ln in rows), rows
    cut = [ln for ln in rows if ln.endswith("…")]
    assert cut and all(len(ln) == 59 for ln in cut), rows
    assert any("the goalkeeper saved a pen" in ln for ln in rows), rows


@pytest.mark.fault
def test_neighbours_rows_are_the_ids_the_outputs_show(tmp_path, cache_dir, capsys):
    """``--rows`` took 0-based positions while every output names items by their 1-based ids (``item 153 (row
    152)``; ``--rows 240`` of 240 items was "outside the data"): it takes the ids, and names the bad ones."""
    from embedselect.cli import main

    data = tmp_path / "d.txt"
    data.write_text("\n".join(TEXTS) + "\n")
    n = len(TEXTS)
    assert main(["neighbours", str(data), "-m", "random-projection", "--rows", f"1,{n}", "-k", "1", "-q"]) == 0
    out = capsys.readouterr().out
    assert f"item 1: {TEXTS[0][:20]}" in out and f"item {n}: {TEXTS[-1][:20]}" in out and "(row" not in out
    assert main(["neighbours", str(data), "-m", "random-projection", "--rows", f"0,{n + 1}", "-q"]) == 2
    err = capsys.readouterr().err
    assert f"--rows: 0, {n + 1} are not the id of an item" in err and "1-based row numbers" in err


@pytest.mark.fault
def test_model_best_never_indexes_a_baseline_the_ranking_calls_no_pick_and_says_when_it_did_not_decide(caplog):
    """`index --model best` indexed tfidf-svd, first in an undecided ranking whose notes said "tfidf-svd, a reference
    point (a built-in baseline), is first: ... it is not a pick; st0 is the first model", and said nothing."""
    from embedselect.search.build import _top_of

    ranking = {
        "dataset": {"modality": "text"}, "settings": {"seed": 2}, "decided": False, "leaders": ["tfidf-svd", "acme/m"],
        "candidates": [
            {"name": "tfidf-svd", "spec": "tfidf-svd", "model_id": "baseline:tfidf-svd", "rank": 1, "status": "ok"},
            {"name": "acme/m", "spec": "acme/m", "model_id": "acme/m", "revision": "a" * 40, "rank": 2, "status": "ok"},
        ],
    }
    with caplog.at_level("WARNING", logger="embedselect.search"):
        cand, seed = _top_of(ranking)
    assert cand.name == "acme/m" and cand.revision == "a" * 40 and seed == 2
    said = caplog.text
    assert "tfidf-svd is first in the ranking of these data, but it is a built-in baseline" in said
    assert "indexing the first candidate that is neither untrained nor a baseline, acme/m" in said
    assert "named no clear winner (leaders: tfidf-svd, acme/m)" in said
    # a ranking of baselines only still gives its first row, and a decided ranking no warning
    caplog.clear()
    only = dict(ranking, decided=True, candidates=ranking["candidates"][:1])
    with caplog.at_level("WARNING", logger="embedselect.search"):
        assert _top_of(only)[0].name == "tfidf-svd"
    assert caplog.text == ""


@pytest.mark.fault
def test_model_best_never_indexes_a_checkpoint_the_ranking_notes_as_untrained(caplog):
    """`index --model best` took the first row that was not a baseline, and indexed a checkpoint the ranking's
    ``untrained-checkpoint`` note names (rule 8 of decide(): random vectors, not a pick), below a baseline or first."""
    from embedselect.search.build import _top_of

    def row(name, rank, model_id=None):
        return {"name": name, "spec": name, "model_id": model_id or name, "rank": rank, "status": "ok"}

    note = {"code": "untrained-checkpoint", "message": "acme/fresh looks untrained", "candidates": ["acme/fresh"]}
    ranking = {"dataset": {"modality": "text"}, "settings": {"seed": 0}, "decided": False, "warnings": [note],
               "leaders": ["tfidf-svd", "acme/m"],
               "candidates": [row("tfidf-svd", 1, "baseline:tfidf-svd"), row("acme/fresh", 2), row("acme/m", 3)]}
    with caplog.at_level("WARNING", logger="embedselect.search"):
        assert _top_of(ranking)[0].name == "acme/m"
    first = dict(ranking, leaders=["acme/fresh", "acme/m"], candidates=[row("acme/fresh", 1), row("acme/m", 2)])
    caplog.clear()
    with caplog.at_level("WARNING", logger="embedselect.search"):
        assert _top_of(first)[0].name == "acme/m"
    assert "acme/fresh is first in the ranking of these data, but it looks like an untrained checkpoint" in caplog.text


@pytest.mark.fault
def test_a_query_that_embeds_to_zeros_is_said_to_have_arbitrary_hits(tmp_path, cache_dir, caplog):
    """`search` under tfidf-svd with words the items never use printed the first rows with score 0.0000 as if
    they were the nearest."""
    from embedselect.search import build_index

    idx = build_index(TEXTS, "tfidf-svd?dim=6", out=tmp_path / "idx")
    with caplog.at_level("WARNING", logger="embedselect.search"):
        idx.search(["zzyzx quux", "the cat on the mat"], k=2)
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and "'zzyzx quux' embeds to a zero vector" in said[0] and "arbitrary" in said[0]

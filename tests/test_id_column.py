"""``id_column=`` / ``--id-column``: a table's own id column gives the items their ids, in every format, in the load
report, in ``ask``'s questions, ``rank --answers``, ``validate --queries`` and ``search``; bad id columns are typed
errors naming the rows; the cache never hands ids of one load to another."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import embedselect
from embedselect.cli import main
from embedselect.data import ReferenceData, sample_path
from embedselect.errors import (
    ColumnNotFoundError,
    ConfigError,
    DecodeError,
    IdColumnError,
    IndexMismatchError,
)

POOL = ["tfidf-svd", "random-projection"]
N = 240


def doc_ids(n: int = N) -> list[str]:
    """Ids that are not row numbers and not in row order: D000..D239 shuffled by a step coprime with 240."""
    return [f"D{(i * 37) % n:03d}" for i in range(n)]


@pytest.fixture(scope="module")
def docs(tmp_path_factory) -> Path:
    """The bundled sample with a ``doc_id`` column first: doc_id, text, label."""
    frame = pd.read_csv(sample_path("texts"))
    frame.insert(0, "doc_id", doc_ids(len(frame)))
    path = tmp_path_factory.mktemp("idcol") / "docs.csv"
    frame.to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def ranked(tmp_path_factory, docs):
    """A cache holding a cheap stored ranking (alpha_req) of ``docs`` under POOL (ask reads its contenders)."""
    cache = tmp_path_factory.mktemp("idcol-cache") / "cache"
    r = embedselect.select(docs, POOL, column="text", id_column="doc_id", metrics=["alpha_req"], cache_dir=cache)
    assert r.dataset["id_column"] == "doc_id"
    return cache


# --- loading -----------------------------------------------------------------------------------------------------
TABLE = pd.DataFrame({"sku": [17, 4, 99], "text": ["red car", "blue sky", "big dog"], "label": [1, 0, 1]})


def _write(frame: pd.DataFrame, path: Path) -> Path:
    fmt = path.suffix
    if fmt == ".csv":
        frame.to_csv(path, index=False)
    elif fmt == ".tsv":
        frame.to_csv(path, index=False, sep="\t")
    elif fmt == ".parquet":
        frame.to_parquet(path)
    elif fmt == ".jsonl":
        frame.to_json(path, orient="records", lines=True)
    else:
        path.write_text(json.dumps(frame.to_dict(orient="records")))
    return path


@pytest.mark.parametrize("fmt", [".csv", ".tsv", ".parquet", ".jsonl", ".json", "frame"])
def test_every_table_format_gives_the_id_columns_values(tmp_path, fmt):
    data = TABLE if fmt == "frame" else _write(TABLE, tmp_path / f"t{fmt}")
    ref = ReferenceData.load(data, column="text", id_column="sku", label_column="label")
    assert ref.ids == ("17", "4", "99") and ref.items == ("red car", "blue sky", "big dog")
    assert ref.id_column == "sku" and ref.to_dict()["id_column"] == "sku"
    assert ref.labels.tolist() == [1, 0, 1]
    # the text column is found without --column: the id column is not a text column to choose from
    assert ReferenceData.load(data, id_column="sku", label_column="label").items == ref.items
    # the fingerprint is of the texts: the same with or without the id column
    assert ReferenceData.load(data, column="text").fingerprint == ref.fingerprint


def test_whole_numbers_are_ids_without_a_decimal_point(tmp_path):
    frame = pd.DataFrame({"sku": [17.0, 4.0, 99.0], "text": ["red car", "blue sky", "big dog"]})  # floats, as pandas
    assert ReferenceData.load(frame, id_column="sku").ids == ("17", "4", "99")  # stores an int column with gaps
    path = tmp_path / "t.jsonl"
    path.write_text('{"sku": 17.0, "text": "a"}\n{"sku": " A-1 ", "text": "b"}\n')
    assert ReferenceData.load(path, id_column="sku").ids == ("17", "A-1")  # text stripped of spaces


def test_skipped_rows_are_named_by_their_ids_and_decode_errors_by_their_rows(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes(b"doc_id,text\nA7,red car\nB2,\nC9,big \xff dog\n,\nD1,blue sky\n")
    ref = ReferenceData.load(path, id_column="doc_id", on_error="skip")
    assert ref.ids == ("A7", "D1") and ref.source_positions() == [0, 4]
    # a skipped row is named by its id, or by its row when it has none (row 4 is empty, id and all)
    assert [e["id"] for e in ref.report.skipped_examples] == ["B2", "C9", "row 4"]
    with pytest.raises(DecodeError, match=r"1 of 5 rows could not be decoded as UTF-8 \(row 3\)"):
        ReferenceData.load(path, id_column="doc_id")


def test_source_rows_still_serve_precomputed_vectors_when_ids_are_not_row_numbers(tmp_path):
    from embedselect.models.backends.custom import precomputed_vectors

    texts = [f"text number {i}" for i in range(30)]
    frame = pd.DataFrame({"n": [1000 - i for i in range(30)], "text": texts})
    frame.loc[5, "text"] = ""  # skipped: the items are no longer the rows one to one
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    ref = ReferenceData.load(path, id_column="n", max_items=20, seed=1)
    full = np.arange(30, dtype=np.float32)[:, None] * np.ones((1, 4), dtype=np.float32)  # row r: all r
    out = precomputed_vectors(full, name="v", ids=ref.ids, positions=ref.source_positions(), n_source=30)
    np.testing.assert_array_equal(out[:, 0], [1000 - int(i) for i in ref.ids])
    assert all(ref.items[k] == texts[int(out[k, 0])] for k in range(len(ref)))
    dropped = ref.drop_duplicates("exact")
    assert dropped.source_positions() == ref.source_positions() and dropped.id_column == "n"


# --- bad id columns ----------------------------------------------------------------------------------------------
BAD = {
    "missing column": (dict(id_column="doc"), ColumnNotFoundError, r"id column 'doc' is not in .*Did you mean 'doc_id'"),
    "empty id": (dict(id_column="doc_id", rows=[["A1", "x y"], ["", "z w"]]), IdColumnError,
                 r"row 2 of .* has no id: its 'doc_id' cell is empty"),
    "duplicate ids": (dict(id_column="doc_id", rows=[["A1", "a"], ["B", "b"], ["A1", "c"], ["B", "d"], ["C", "e"]]),
                      IdColumnError, r"2 id\(s\) on more than one row: 'A1' \(rows 1, 3\); 'B' \(rows 2, 4\)"),
    "the text column": (dict(id_column="text", column="text"), ConfigError, "is also the text column"),
    "the label column": (dict(id_column="label", label_column="label"), ConfigError, "is also the label column"),
}


@pytest.mark.fault
@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_id_column_is_a_typed_error_naming_what_to_fix(tmp_path, case):
    kw, err, match = BAD[case]
    kw = dict(kw)
    rows = kw.pop("rows", [["A1", "red car"], ["B2", "blue sky"]])
    kw.setdefault("column", "text")
    path = tmp_path / "t.csv"
    pd.DataFrame([r + ["x"] for r in rows], columns=["doc_id", "text", "label"]).to_csv(path, index=False)
    with pytest.raises(err, match=match):
        ReferenceData.load(path, **kw)


@pytest.mark.fault
def test_a_number_that_is_not_whole_is_refused():
    frame = pd.DataFrame({"score": [1.0, 2.5], "text": ["a b", "c d"]})
    with pytest.raises(IdColumnError, match=r"row 1 of .*: its id \(column 'score'\) is 2.5, a number that is not whole"):
        ReferenceData.load(frame, id_column="score")


@pytest.mark.fault
def test_data_without_columns_refuses_an_id_column(tmp_path):
    txt = tmp_path / "t.txt"
    txt.write_text("one\ntwo\n")
    with pytest.raises(ConfigError, match="plain-text file and has no id column"):
        ReferenceData.load(txt, id_column="id")
    folder = tmp_path / "images"
    folder.mkdir()
    with pytest.raises(ConfigError, match="folder of images: their ids are the files' paths"):
        ReferenceData.load(folder, id_column="id")
    with pytest.raises(ConfigError, match="id_column='id' does not apply to a list of texts"):
        ReferenceData.load(["one", "two"], id_column="id")
    strings = tmp_path / "t.json"
    strings.write_text('["one", "two"]')
    with pytest.raises(ColumnNotFoundError, match="plain JSON values, not objects, so it has no column 'id'"):
        ReferenceData.load(strings, id_column="id")
    loaded = ReferenceData.load(["one", "two"])
    with pytest.raises(ConfigError, match="id_column='id' cannot apply to a ReferenceData"):
        embedselect.select(loaded, POOL, id_column="id", metrics=["alpha_req"], save=False)


@pytest.mark.fault
def test_the_cli_exits_as_for_other_data_errors(tmp_path, docs, cache_dir, capsys):
    argv = ["embed", str(docs), "-c", "text", "-m", "random-projection", "-q", "--cache-dir", str(cache_dir)]
    assert main([*argv, "--id-column", "doc"]) == 3
    assert "Did you mean 'doc_id'" in capsys.readouterr().err
    assert main([*argv, "--id-column", "label"]) == 3  # the sample's labels repeat: not ids
    assert "on more than one row" in capsys.readouterr().err
    assert main([*argv, "--id-column", "text"]) == 2
    assert "is also the text column" in capsys.readouterr().err


# --- the cache and the search index ------------------------------------------------------------------------------
def test_the_cache_keeps_vectors_by_text_and_an_index_never_names_another_loads_ids(tmp_path, docs, cache_dir):
    from embedselect.search import SearchIndex, build_index

    plain = embedselect.embed(docs, ["tfidf-svd"], column="text", keep_vectors=True)[0]
    ided = embedselect.embed(docs, ["tfidf-svd"], column="text", id_column="doc_id", keep_vectors=True)[0]
    assert plain.result.embedded_items == N and ided.result.embedded_items == 0  # the same texts: read back
    np.testing.assert_array_equal(np.asarray(plain.vectors), np.asarray(ided.vectors))
    from embedselect.config import RankConfig

    by_row = build_index(docs, "tfidf-svd", out=tmp_path / "by-row", config=RankConfig(column="text"))
    by_id = build_index(docs, "tfidf-svd", out=tmp_path / "by-id", config=RankConfig(column="text",
                                                                                         id_column="doc_id"))
    assert by_row.manifest.fingerprint == by_id.manifest.fingerprint  # the items are the same
    assert by_row.ids[:3] == ["1", "2", "3"] and by_id.ids == doc_ids()
    text = pd.read_csv(docs)["text"].tolist()
    [hits] = by_id.search([text[7]], k=1)
    assert (hits[0].id, hits[0].item) == (doc_ids()[7], text[7])
    # checked against the data, an index answers with the ids of the load it was built from, or refuses
    SearchIndex.load(tmp_path / "by-id", data=docs, column="text", id_column="doc_id")
    with pytest.raises(IndexMismatchError, match=r"other item ids \(item 1: '1' in the index, 'D000' in the data"):
        SearchIndex.load(tmp_path / "by-row", data=docs, column="text", id_column="doc_id")
    with pytest.raises(IndexMismatchError, match="rebuild it with `embedselect index ... --id-column NAME"):
        SearchIndex.load(tmp_path / "by-id", data=docs, column="text")


@pytest.mark.fault
def test_search_cli_prints_the_id_columns_values(tmp_path, docs, cache_dir, capsys):
    out = tmp_path / "idx"
    assert main(["index", str(docs), "-c", "text", "--id-column", "doc_id", "--model", "tfidf-svd", "--out", str(out),
                 "-q"]) == 0
    capsys.readouterr()
    text = pd.read_csv(docs)["text"].tolist()
    argv = ["search", str(out), text[9], "-k", "1", "--json"]
    assert main([*argv, "--data", str(docs), "-c", "text", "--id-column", "doc_id"]) == 0
    hit = json.loads(capsys.readouterr().out)["results"][0]["hits"][0]
    assert (hit["id"], hit["item"]) == (doc_ids()[9], text[9])
    assert main([*argv, "--data", str(docs), "-c", "text"]) == 6  # other ids: refused, as another model is
    assert "other item ids" in capsys.readouterr().err
    assert main([*argv, "--id-column", "doc_id"]) == 2
    assert "give the data (--data)" in capsys.readouterr().err


# --- ask, rank --answers and validate --queries end to end -------------------------------------------------------
def _label_answers(rows: list[dict], labels: dict[str, str]) -> None:
    """The simulated person: the option sharing the anchor's label; skip when both or neither do."""
    for r in rows:
        a, b = labels[r["a_id"]] == labels[r["anchor_id"]], labels[r["b_id"]] == labels[r["anchor_id"]]
        r["answer"] = "a" if a and not b else "b" if b and not a else "skip"


def test_ask_writes_the_id_columns_values_and_rank_matches_answers_by_them(tmp_path, docs, ranked, capsys):
    out = tmp_path / "questions.csv"
    common = ["-c", "text", "-m", ",".join(POOL), "--cache-dir", str(ranked), "-q"]
    assert main(["ask", str(docs), "--id-column", "doc_id", *common, "-n", "12", "--out", str(out)]) == 0
    capsys.readouterr()
    with open(out, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    frame = pd.read_csv(docs)
    text = dict(zip(frame["doc_id"], frame["text"]))
    assert len(rows) == 12
    for r in rows:  # every id is a doc_id, naming the text shown beside it
        assert all(text[r[f"{c}_id"]] == r[c] for c in ("anchor", "a", "b")), r
    _label_answers(rows, dict(zip(frame["doc_id"], frame["label"].astype(str))))
    with open(out, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    # the same documents in another order: the answers still match by id
    shuffled = tmp_path / "shuffled.csv"
    frame.iloc[::-1].to_csv(shuffled, index=False)
    rank = ["--metrics", "alpha_req", "--answers", str(out), "--json", *common]
    assert main(["rank", str(shuffled), "--id-column", "doc_id", *rank]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["answers"]["n_answered"] == sum(r["answer"] in ("a", "b") for r in rows) > 0
    # without the id column the ids are row numbers: the answers' ids are unknown (exit 3, the row named)
    assert main(["rank", str(docs), *rank]) == 3
    assert "row 1: anchor_id 'D" in capsys.readouterr().err


def test_validate_queries_names_relevant_items_by_the_id_column(tmp_path, docs, ranked, capsys):
    frame = pd.read_csv(docs)
    picks = [0, 3, 50, 101, 177, 239]
    queries = tmp_path / "queries.csv"
    pd.DataFrame({"query": frame["text"].iloc[picks], "relevant": frame["doc_id"].iloc[picks]}).to_csv(queries,
                                                                                                         index=False)
    argv = ["validate", str(docs), "-c", "text", "--id-column", "doc_id", "-m", ",".join(POOL), "--metrics",
            "alpha_req", "--cache-dir", str(ranked), "-q"]
    assert main([*argv, "--queries", str(queries), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["retrieval"]["queries"]["n_queries"] == len(picks)
    assert got["retrieval"]["scores"]["tfidf-svd"]["mrr@10"] == 1.0  # each query is its document's own text
    bad = tmp_path / "bad.csv"
    bad.write_text("query,relevant\nfine,D000\nlost,17\n")
    assert main([*argv, "--queries", str(bad)]) == 3
    err = capsys.readouterr().err
    assert "row 2: '17' is neither an id" in err and "the values of its id column 'doc_id'" in err


def test_the_load_report_of_a_ranking_names_skipped_rows_by_id(tmp_path, docs, ranked):
    frame = pd.read_csv(docs)
    frame.loc[4, "text"] = "   "
    path = tmp_path / "gap.csv"
    frame.to_csv(path, index=False)
    r = embedselect.select(path, POOL, column="text", id_column="doc_id", metrics=["alpha_req"], cache_dir=ranked,
                           save=False)
    assert r.dataset["report"]["skipped_examples"] == [{"id": doc_ids()[4], "reason": "empty or whitespace-only"}]

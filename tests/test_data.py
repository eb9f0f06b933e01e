"""Tests of embedselect.data: loaders, validation errors, fingerprint, sampling, the bundled sample."""

from __future__ import annotations

import gzip
import json
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from embedselect.data import LoadReport, ReferenceData, sample_path
from embedselect.errors import (
    ColumnNotFoundError,
    ConfigError,
    DataError,
    DataFileNotFoundError,
    DecodeError,
    EmptyDataError,
    TooFewItemsError,
    UnsupportedFormatError,
)

TEXTS = [
    "The match ended in a draw.",
    "Whisk the eggs, then add flour.",  # comma: exercises CSV quoting
    'She said "hello" twice.',  # quotes
    "Café prices rose by 5 %",  # non-ASCII
    "Rates were cut again.",
]
LABELS = ["sports", "cooking", "misc", "finance", "finance"]


def write_all_formats(folder: Path, texts=TEXTS, labels=LABELS) -> dict[str, Path]:
    frame = pd.DataFrame({"text": texts, "label": labels})
    out = {
        "csv": folder / "d.csv",
        "tsv": folder / "d.tsv",
        "jsonl": folder / "d.jsonl",
        "json": folder / "d.json",
        "parquet": folder / "d.parquet",
        "csv.gz": folder / "d.csv.gz",
    }
    frame.to_csv(out["csv"], index=False)
    frame.to_csv(out["tsv"], index=False, sep="\t")
    out["jsonl"].write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in frame.to_dict("records")),
                            encoding="utf-8")
    out["json"].write_text(json.dumps(frame.to_dict("records")), encoding="utf-8")
    frame.to_parquet(out["parquet"])
    out["csv.gz"].write_bytes(gzip.compress(out["csv"].read_bytes()))
    return out


def make_images(folder: Path, n: int = 6) -> list[Path]:
    """n small distinct images in two class sub-folders, mixed formats."""
    paths = []
    for i in range(n):
        sub = folder / ("cats" if i % 2 else "dogs")
        sub.mkdir(parents=True, exist_ok=True)
        ext = [".png", ".jpg", ".webp"][i % 3]
        img = Image.new("RGB" if i % 4 else "L", (8 + i, 6), color=(i * 30) if i % 4 == 0 else (i * 30, 10, 200))
        p = sub / f"img{i}{ext}"
        img.save(p)
        paths.append(p)
    return paths


# ------------------------------------------------------------------ formats
def test_every_format_loads_the_same_items_labels_and_fingerprint(tmp_path):
    files = write_all_formats(tmp_path)
    loaded = {k: ReferenceData.from_file(p, column="text", label_column="label") for k, p in files.items()}
    for k, d in loaded.items():
        assert d.modality == "text"
        assert d.items == tuple(TEXTS), k
        assert d.labels.tolist() == LABELS, k
        assert d.ids == ("1", "2", "3", "4", "5"), k
    assert len({d.fingerprint for d in loaded.values()}) == 1
    # The same texts in memory and as a plain-text file give the same fingerprint.
    (tmp_path / "d.txt").write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    txt = ReferenceData.from_file(tmp_path / "d.txt")
    assert txt.items == tuple(TEXTS) and txt.labels is None
    assert txt.fingerprint == loaded["csv"].fingerprint == ReferenceData.from_texts(TEXTS).fingerprint


def test_column_autodetected_when_single_text_column_and_format_override(tmp_path):
    pd.DataFrame({"id": [1, 2, 3], "body": ["a b", "c d", "e f"], "score": [0.5, 0.1, 0.3]}).to_csv(
        tmp_path / "x.csv", index=False)
    d = ReferenceData.from_file(tmp_path / "x.csv")
    assert d.items == ("a b", "c d", "e f")
    shutil.copy(tmp_path / "x.csv", tmp_path / "x.data")
    assert ReferenceData.from_file(tmp_path / "x.data", format="csv").items == d.items


@pytest.mark.fault
def test_bom_and_crlf_are_accepted(tmp_path):
    (tmp_path / "b.csv").write_bytes(b"\xef\xbb\xbftext\r\nfirst row\r\nsecond row\r\n")
    (tmp_path / "b.txt").write_bytes(b"\xef\xbb\xbffirst row\r\nsecond row\r\n")
    (tmp_path / "b.jsonl").write_bytes(b'\xef\xbb\xbf{"text": "first row"}\r\n{"text": "second row"}\r\n')
    for name in ("b.csv", "b.txt", "b.jsonl"):
        assert ReferenceData.from_file(tmp_path / name).items == ("first row", "second row"), name


def test_missing_labels_keep_item_with_none_and_int_labels_stay_int(tmp_path):
    (tmp_path / "m.csv").write_text("text,label\nalpha,1\nbeta,\ngamma,3\n", encoding="utf-8")
    d = ReferenceData.from_file(tmp_path / "m.csv", label_column="label")
    assert d.items == ("alpha", "beta", "gamma")
    assert d.labels.dtype == object and d.labels.tolist() == [1, None, 3]
    full = ReferenceData.from_file(tmp_path / "m.csv", label_column="label", on_error="skip")
    assert full.labels[0] == 1
    (tmp_path / "i.csv").write_text("text,label\nalpha,1\nbeta,2\n", encoding="utf-8")
    d2 = ReferenceData.from_file(tmp_path / "i.csv", label_column="label")
    assert d2.labels.dtype == np.int64 and d2.labels.tolist() == [1, 2]
    with pytest.raises(ValueError):
        d2.labels[0] = 5  # read-only
    pd.DataFrame({"text": ["a", "b", "c"], "label": [1, None, 3]}).to_parquet(tmp_path / "m.parquet")
    p = ReferenceData.from_file(tmp_path / "m.parquet", label_column="label")
    assert p.labels.tolist() == [1, None, 3]


# ------------------------------------------------------------------ bad input
@pytest.mark.fault
def test_missing_file_suggests_close_name(tmp_path):
    (tmp_path / "texts.csv").write_text("text\na\n", encoding="utf-8")
    with pytest.raises(DataFileNotFoundError, match="does not exist.*texts.csv"):
        ReferenceData.from_file(tmp_path / "text.csv")
    with pytest.raises(DataFileNotFoundError):
        ReferenceData.load(str(tmp_path / "nope" / "x.csv"))
    with pytest.raises(DataFileNotFoundError):
        ReferenceData.from_images(tmp_path / "no-such-folder")


@pytest.mark.fault
def test_missing_column_lists_columns_and_suggests(tmp_path):
    pd.DataFrame({"id": [1, 2], "sentence": ["a b", "c d"]}).to_csv(tmp_path / "c.csv", index=False)
    with pytest.raises(ColumnNotFoundError) as e:
        ReferenceData.from_file(tmp_path / "c.csv", column="text")
    msg = str(e.value)
    assert "'id'" in msg and "'sentence'" in msg and "column='sentence'" in msg
    with pytest.raises(ColumnNotFoundError, match="Did you mean 'sentence'"):
        ReferenceData.from_file(tmp_path / "c.csv", column="sentense")
    with pytest.raises(ColumnNotFoundError, match="label column 'lbl'"):
        ReferenceData.from_file(tmp_path / "c.csv", label_column="lbl")
    # JSONL as well.
    (tmp_path / "c.jsonl").write_text('{"body": "x"}\n{"body": "y"}\n', encoding="utf-8")
    with pytest.raises(ColumnNotFoundError, match="'body'"):
        ReferenceData.from_file(tmp_path / "c.jsonl", column="text")


@pytest.mark.fault
def test_several_text_columns_ask_to_choose(tmp_path):
    pd.DataFrame({"title": ["a", "b"], "body": ["long text", "more text"]}).to_csv(tmp_path / "t.csv", index=False)
    with pytest.raises(ColumnNotFoundError, match="several text columns.*--column"):
        ReferenceData.from_file(tmp_path / "t.csv")
    # Naming the label column removes the ambiguity.
    assert ReferenceData.from_file(tmp_path / "t.csv", label_column="title").items == ("long text", "more text")


@pytest.mark.fault
def test_empty_data_errors(tmp_path):
    (tmp_path / "header.csv").write_text("text,label\n", encoding="utf-8")
    (tmp_path / "zero.csv").write_bytes(b"")
    (tmp_path / "blank.txt").write_text("\n   \n\t\n", encoding="utf-8")
    (tmp_path / "blank.jsonl").write_text('{"text": "  "}\n{"text": null}\n', encoding="utf-8")
    for name in ("header.csv", "zero.csv", "blank.txt", "blank.jsonl"):
        with pytest.raises(EmptyDataError):
            ReferenceData.from_file(tmp_path / name)
    with pytest.raises(EmptyDataError, match="3 empty"):
        ReferenceData.from_file(tmp_path / "blank.txt")
    (tmp_path / "imgs").mkdir()
    (tmp_path / "imgs" / "notes.md").write_text("x")
    with pytest.raises(EmptyDataError, match="no image files"):
        ReferenceData.from_images(tmp_path / "imgs")
    with pytest.raises(EmptyDataError):
        ReferenceData.load([])


@pytest.mark.fault
def test_empty_texts_are_skipped_and_counted(tmp_path):
    (tmp_path / "e.txt").write_text("one\n\n  \ntwo\n", encoding="utf-8")
    d = ReferenceData.from_file(tmp_path / "e.txt")
    assert d.items == ("one", "two") and d.ids == ("1", "4")
    assert d.report.n_total == 4 and d.report.n_skipped_empty == 2 and d.report.n_used == 2
    assert [e["id"] for e in d.report.skipped_examples] == ["2", "3"]


@pytest.mark.fault
def test_too_few_items_names_purpose_and_fix():
    d = ReferenceData.from_texts([f"text {i}" for i in range(10)])
    d.require(10, purpose="ok")  # enough: no error
    with pytest.raises(TooFewItemsError) as e:
        d.require(64, purpose="the task_prior metric")
    assert e.value.needed == 64 and e.value.got == 10
    assert "task_prior" in str(e.value) and "64" in str(e.value) and "add at least 54" in str(e.value)
    s = ReferenceData.from_texts([f"text {i}" for i in range(10)], max_items=5)
    with pytest.raises(TooFewItemsError, match="max-items"):
        s.require(8, purpose="probes")


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "txt"])
@pytest.mark.fault
def test_undecodable_text_rows_fail_or_skip(tmp_path, fmt):
    good = [f"row number {i}".encode() for i in range(1, 8)]
    rows = list(good)
    rows[2] = b"bad \xff\xfe bytes"  # row 3
    rows[5] = b"also \xc3 bad"  # row 6 (truncated multibyte)
    if fmt == "csv":
        body = b"text,label\n" + b"".join(r + b"," + str(i + 1).encode() + b"\n" for i, r in enumerate(rows))
    elif fmt == "jsonl":
        body = b"".join(b'{"text": "' + r + b'", "label": ' + str(i + 1).encode() + b"}\n" for i, r in enumerate(rows))
    else:
        body = b"\n".join(rows) + b"\n"
    path = tmp_path / f"u.{fmt}"
    path.write_bytes(body)
    kw = {} if fmt == "txt" else {"column": "text", "label_column": "label"}
    with pytest.raises(DecodeError) as e:
        ReferenceData.from_file(path, **kw)
    msg = str(e.value)
    assert "2 of 7 rows could not be decoded as UTF-8 (rows 3, 6)" in msg and "on_error='skip'" in msg
    d = ReferenceData.from_file(path, on_error="skip", **kw)
    assert len(d) == 5 and d.report.n_skipped_undecodable == 2 and d.report.n_total == 7
    assert d.ids == ("1", "2", "4", "5", "7")
    assert d.items == tuple(good[int(i) - 1].decode() for i in d.ids)
    assert [e["id"] for e in d.report.skipped_examples] == ["3", "6"]
    if fmt != "txt":
        assert d.labels.tolist() == [1, 2, 4, 5, 7]


@pytest.mark.fault
def test_invalid_json_lines_and_undecodable_unused_columns(tmp_path):
    p = tmp_path / "j.jsonl"
    p.write_bytes(b'{"text": "fine", "other": "x\xff"}\n{"text": broken\n{"text": "ok"}\n')
    with pytest.raises(DecodeError, match=r"1 of 3 rows are not valid JSON \(row 2"):
        ReferenceData.from_file(p, column="text")
    d = ReferenceData.from_file(p, column="text", on_error="skip")
    # Bad bytes in a column that is not used do not drop the row.
    assert d.items == ("fine", "ok") and d.report.n_skipped_undecodable == 1


@pytest.mark.fault
def test_from_texts_bytes_and_surrogates():
    with pytest.raises(DecodeError, match="1 of 3 rows"):
        ReferenceData.from_texts(["a", b"\xff", "c"])
    d = ReferenceData.from_texts(["a", "bad \udcff", b"caf\xc3\xa9"], labels=[0, 1, 2], on_error="skip")
    assert d.items == ("a", "café") and d.labels.tolist() == [0, 2] and d.ids == ("0", "2")


@pytest.mark.fault
def test_broken_images_fail_or_skip(tmp_path):
    paths = make_images(tmp_path / "imgs", n=6)
    (tmp_path / "imgs" / "dogs" / "broken.jpg").write_bytes(b"not an image at all")
    truncated = paths[0].read_bytes()[:40]
    (tmp_path / "imgs" / "cats" / "trunc.png").write_bytes(truncated)
    with pytest.raises(DecodeError) as e:
        ReferenceData.from_images(tmp_path / "imgs")
    assert "2 of 8 images could not be decoded" in str(e.value)
    assert "cats/trunc.png" in str(e.value) and "dogs/broken.jpg" in str(e.value)
    d = ReferenceData.from_images(tmp_path / "imgs", on_error="skip", labels="folder")
    assert len(d) == 6 and d.report.n_skipped_undecodable == 2 and d.report.n_total == 8
    assert all(p.is_absolute() for p in d.items)
    assert d.labels.tolist() == [i.split("/")[0] for i in d.ids]
    assert "dogs/broken.jpg" not in d.ids
    imgs = d.load_images([0, 5])
    assert [im.mode for im in imgs] == ["RGB", "RGB"]
    assert imgs[0].size == Image.open(d.items[0]).size
    with pytest.raises(ConfigError):
        ReferenceData.from_texts(["x"]).load_images([0])


@pytest.mark.fault
def test_unsupported_formats(tmp_path):
    (tmp_path / "d.xlsx").write_bytes(b"PK")
    (tmp_path / "noext").write_text("x")
    (tmp_path / "one.png").write_bytes(b"x")
    with pytest.raises(UnsupportedFormatError, match=r"\.xlsx"):
        ReferenceData.from_file(tmp_path / "d.xlsx")
    with pytest.raises(UnsupportedFormatError, match="format="):
        ReferenceData.from_file(tmp_path / "noext")
    with pytest.raises(UnsupportedFormatError, match="single image"):
        ReferenceData.from_file(tmp_path / "one.png")
    with pytest.raises(UnsupportedFormatError, match="unknown format"):
        ReferenceData.from_file(tmp_path / "noext", format="xls")
    with pytest.raises(UnsupportedFormatError, match="folder"):
        ReferenceData.from_file(tmp_path)


@pytest.mark.fault
def test_bad_arguments_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="on_error"):
        ReferenceData.from_texts(["a"], on_error="ignore")
    with pytest.raises(ConfigError, match="max_items"):
        ReferenceData.from_texts(["a"], max_items=0)
    with pytest.raises(ConfigError, match="labels has 1"):
        ReferenceData.from_texts(["a", "b"], labels=[1])
    (tmp_path / "a.txt").write_text("a\n")
    with pytest.raises(ConfigError, match="no columns"):
        ReferenceData.from_file(tmp_path / "a.txt", column="text")
    # All data errors share a base class the CLI maps to one exit code.
    assert issubclass(DecodeError, DataError) and DataError.exit_code == 3


# ------------------------------------------------------------------ fingerprint
def test_fingerprint_stability_and_sensitivity(tmp_path):
    texts = [f"sentence number {i}" for i in range(30)]
    a = ReferenceData.from_texts(texts)
    assert a.fingerprint == ReferenceData.from_texts(list(texts)).fingerprint
    assert len(a.fingerprint) == 64 and int(a.fingerprint, 16) >= 0
    changed = list(texts)
    changed[17] = changed[17].replace("7", "8")
    assert ReferenceData.from_texts(changed).fingerprint != a.fingerprint
    assert ReferenceData.from_texts(texts[::-1]).fingerprint != a.fingerprint  # order matters
    # Labels are not part of the fingerprint.
    assert ReferenceData.from_texts(texts, labels=list(range(30))).fingerprint == a.fingerprint
    # Sampling settings count only when sampling happens.
    assert ReferenceData.from_texts(texts, max_items=1000, seed=5).fingerprint == a.fingerprint
    assert ReferenceData.from_texts(texts, max_items=30, seed=9).fingerprint == a.fingerprint
    s1 = ReferenceData.from_texts(texts, max_items=10, seed=1)
    assert s1.fingerprint == ReferenceData.from_texts(texts, max_items=10, seed=1).fingerprint
    s2 = ReferenceData.from_texts(texts, max_items=10, seed=2)
    assert s1.fingerprint != s2.fingerprint
    # Same chosen items but different settings -> still different (settings are recorded).
    same_items = ReferenceData.from_texts(list(s1.items))
    assert same_items.items == s1.items and same_items.fingerprint != s1.fingerprint
    # Modality is part of it: text vs image can never collide; source path is not.
    (tmp_path / "x.txt").write_text("\n".join(texts), encoding="utf-8")
    assert ReferenceData.from_file(tmp_path / "x.txt").fingerprint == a.fingerprint


def test_image_fingerprint_follows_bytes_not_location(tmp_path):
    make_images(tmp_path / "a" / "imgs", n=5)
    d1 = ReferenceData.from_images(tmp_path / "a" / "imgs")
    shutil.move(str(tmp_path / "a" / "imgs"), str(tmp_path / "moved"))
    d2 = ReferenceData.from_images(tmp_path / "moved")
    assert d1.fingerprint == d2.fingerprint and d1.ids == d2.ids and d1.items != d2.items
    # One changed pixel -> different fingerprint.
    p = tmp_path / "moved" / "dogs" / "img0.png"
    im = Image.open(p).convert("RGB")
    im.putpixel((0, 0), (255, 0, 0))
    im.save(p)
    assert ReferenceData.from_images(tmp_path / "moved").fingerprint != d1.fingerprint
    assert d1.modality == "image"


@pytest.mark.fault
def test_links_that_lead_out_of_an_image_folder_are_not_followed(tmp_path, caplog):
    """A link in the folder to an image elsewhere (another user's file, a secret) was read as one of the folder's
    images; a link to a folder elsewhere was not walked already. A link to an image inside the folder is kept (it is
    one of the folder's images); paths with spaces are read as they are."""
    make_images(tmp_path / "my photos", n=4)
    outside = tmp_path / "elsewhere"
    make_images(outside, n=2)
    (tmp_path / "my photos" / "cats" / "link to secret.png").symlink_to(outside / "dogs" / "img0.png")
    (tmp_path / "my photos" / "dir link").symlink_to(outside)
    (tmp_path / "my photos" / "dogs" / "same.png").symlink_to(tmp_path / "my photos" / "dogs" / "img0.png")
    with caplog.at_level("WARNING", logger="embedselect.data"):
        d = ReferenceData.load(tmp_path / "my photos")
    assert list(d.ids) == ["cats/img1.jpg", "cats/img3.png", "dogs/img0.png", "dogs/img2.webp", "dogs/same.png"]
    assert "1 link(s) in" in caplog.text and "cats/link to secret.png" in caplog.text


# ------------------------------------------------------------------ sampling, labels, dedupe
def test_seeded_sampling_is_reproducible_and_order_preserving():
    texts = [f"t{i}" for i in range(100)]
    a = ReferenceData.from_texts(texts, max_items=20, seed=7)
    b = ReferenceData.from_texts(texts, max_items=20, seed=7)
    c = ReferenceData.from_texts(texts, max_items=20, seed=8)
    assert a.items == b.items and len(a) == 20 and len(set(a.items)) == 20
    assert a.items != c.items
    idx = [int(i) for i in a.ids]
    assert idx == sorted(idx)
    assert a.items == tuple(texts[i] for i in idx)
    assert a.report.sampled and a.report.n_total == 100 and a.report.n_used == 20
    assert not ReferenceData.from_texts(texts, max_items=100).report.sampled
    # Matches numpy's seeded choice without replacement, sorted.
    expected = np.sort(np.random.default_rng(7).choice(100, size=20, replace=False))
    assert idx == expected.tolist()


def test_labels_stay_aligned_after_skip_and_sample(tmp_path):
    lines = []
    for i in range(1, 61):
        if i % 7 == 0:
            lines.append(b'{"text": "bad \xff %d", "label": %d}' % (i, i))
        elif i % 11 == 0:
            lines.append(b'{"text": "   ", "label": %d}' % i)
        else:
            lines.append(b'{"text": "item %d", "label": %d}' % (i, i))
    (tmp_path / "l.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    d = ReferenceData.from_file(tmp_path / "l.jsonl", label_column="label", on_error="skip", max_items=15, seed=3)
    assert len(d) == 15 and d.report.sampled
    assert d.report.n_skipped_undecodable == 8 and d.report.n_skipped_empty == 5
    for text, label, id_ in zip(d.items, d.labels, d.ids):
        assert text == f"item {label}" and id_ == str(label)


def test_dedupe_counts_and_removes():
    texts = ["a", "b", "a", "c", "b", "a"]
    d = ReferenceData.from_texts(texts, labels=[1, 2, 3, 4, 5, 6])
    assert len(d) == 6 and d.report.n_duplicates == 3 and not d.report.deduped
    e = ReferenceData.from_texts(texts, labels=[1, 2, 3, 4, 5, 6], dedupe=True)
    assert e.items == ("a", "b", "c") and e.labels.tolist() == [1, 2, 4] and e.report.n_duplicates == 3


def test_image_duplicates_by_bytes(tmp_path):
    paths = make_images(tmp_path / "imgs", n=3)
    shutil.copy(paths[0], tmp_path / "imgs" / "zz_copy.png")
    d = ReferenceData.from_images(tmp_path / "imgs", dedupe=True)
    assert len(d) == 3 and d.report.n_duplicates == 1 and "zz_copy.png" not in d.ids


def test_drop_exact_duplicates_equals_dedupe_at_load_and_keeps_labels():
    texts = ["a", "b", "a", "c", "b", "a"]
    d = ReferenceData.from_texts(texts, labels=[1, 2, 3, 4, 5, 6])
    e = d.drop_duplicates("exact")
    assert e.items == ("a", "b", "c") and e.ids == ("0", "1", "3") and e.labels.tolist() == [1, 2, 4]
    assert e.report.n_dropped_duplicates == 3 and e.report.duplicates_dropped == "exact" and e.report.n_used == 3
    # the fingerprint covers the rows that remain: the same as loading with dedupe=True, not the full data's
    at_load = ReferenceData.from_texts(texts, labels=[1, 2, 3, 4, 5, 6], dedupe=True)
    assert e.fingerprint == at_load.fingerprint != d.fingerprint
    assert at_load.report.n_dropped_duplicates == 3 and at_load.report.duplicates_dropped == "exact"
    assert e.to_dict()["report"]["n_dropped_duplicates"] == 3
    # nothing to drop: the same items and fingerprint
    u = ReferenceData.from_texts(["x", "y"]).drop_duplicates("exact")
    assert u.report.n_dropped_duplicates == 0 and u.fingerprint == ReferenceData.from_texts(["x", "y"]).fingerprint


def test_drop_near_duplicate_texts():
    base = [f"sentence number {w} about topic {t}" for w, t in zip(
        ["one", "two", "three", "four", "five", "six", "seven", "eight"],
        ["cooking", "finance", "sports", "travel", "health", "music", "tools", "birds"])]
    texts = base + ["Sentence number one, about topic COOKING!", "sentence number two about topic finance",
                    "???", "???"]
    d = ReferenceData.from_texts(texts)
    e = d.drop_duplicates("near")
    # case / punctuation / whitespace variants and an exact copy of a token-less text go; related but different
    # sentences (sharing most words with each other) stay
    assert e.items == tuple(base) + ("???",)
    assert e.report.n_dropped_duplicates == 3 and e.report.duplicates_dropped == "near"
    assert e.report.near_duplicate_threshold == 0.95
    assert e.fingerprint == ReferenceData.from_texts(list(base) + ["???"]).fingerprint
    # a lower threshold also links the template sentences (they share 6 of their 11 word 1-2-grams: cosine 0.55)
    assert len(d.drop_duplicates("near", threshold=0.5)) < len(e)
    assert d.drop_duplicates("near", seed=1).items == e.items  # the projection's seed only proposes pairs


def test_drop_near_duplicate_images(tmp_path):
    rng = np.random.default_rng(0)
    folder = tmp_path / "imgs"
    folder.mkdir()
    pics = [rng.integers(0, 255, size=(24, 24, 3), dtype=np.uint8) for _ in range(4)]
    for i, a in enumerate(pics):
        Image.fromarray(a).save(folder / f"p{i}.png")
    # a brighter copy of p0 (same pixel correlation) and a re-encoded, slightly noisy copy of p1
    Image.fromarray(np.clip(pics[0].astype(int) + 20, 0, 255).astype(np.uint8)).save(folder / "q0.png")
    noisy = np.clip(pics[1].astype(int) + rng.integers(-3, 4, size=pics[1].shape), 0, 255).astype(np.uint8)
    Image.fromarray(noisy).save(folder / "q1.png")
    d = ReferenceData.from_images(folder)
    e = d.drop_duplicates("near")
    assert e.ids == ("p0.png", "p1.png", "p2.png", "p3.png") and e.report.n_dropped_duplicates == 2
    assert d.drop_duplicates("exact").ids == d.ids


def test_drop_duplicates_bad_arguments():
    d = ReferenceData.from_texts(["a", "b"])
    with pytest.raises(ConfigError, match="'exact', 'near'"):
        d.drop_duplicates("fuzzy")
    with pytest.raises(ConfigError, match=r"\(0, 1\]"):
        d.drop_duplicates("near", threshold=0)


# ------------------------------------------------------------------ dispatcher, summary, sample
def test_load_dispatches_on_type(tmp_path):
    files = write_all_formats(tmp_path)
    make_images(tmp_path / "imgs", n=4)
    d = ReferenceData.load(str(files["csv"]), column="text", label_column=None, max_items=None, seed=0)
    assert d.items == tuple(TEXTS)
    assert ReferenceData.load(d) is d
    assert ReferenceData.load(TEXTS).fingerprint == d.fingerprint
    assert ReferenceData.load(pd.Series(TEXTS)).fingerprint == d.fingerprint
    assert ReferenceData.load(np.array(TEXTS)).fingerprint == d.fingerprint
    frame = pd.DataFrame({"text": TEXTS, "label": LABELS})
    f = ReferenceData.load(frame, column="text", label_column="label", max_items=3, seed=1)
    assert len(f) == 3 and f.labels.tolist() == [LABELS[int(i)] for i in f.ids]
    assert f.items == tuple(TEXTS[int(i)] for i in f.ids)
    g = ReferenceData.load(frame[["text"]], labels=np.arange(5), on_error="skip")
    assert g.labels.tolist() == [0, 1, 2, 3, 4] and g.items == tuple(TEXTS)
    img = ReferenceData.load(tmp_path / "imgs", column=None, max_items=2)
    assert img.modality == "image" and len(img) == 2
    listed = ReferenceData.load(sorted((tmp_path / "imgs").rglob("*.png")))
    assert listed.modality == "image" and all(i.endswith(".png") for i in listed.ids)
    with pytest.raises(ConfigError, match="column='text' does not apply"):
        ReferenceData.load(TEXTS, column="text")
    with pytest.raises(ConfigError, match="cannot use an object"):
        ReferenceData.load(42)
    with pytest.raises(ConfigError, match="only texts"):
        ReferenceData.load(["a", Path("b.png")])


def test_to_dict_is_json_serialisable(tmp_path):
    (tmp_path / "e.txt").write_text("one\n\ntwo\nthree\n", encoding="utf-8")
    d = ReferenceData.from_file(tmp_path / "e.txt", max_items=2, seed=4)
    info = json.loads(json.dumps(d.to_dict()))
    assert info["n"] == 2 and info["modality"] == "text" and info["fingerprint"] == d.fingerprint
    assert info["report"]["n_skipped_empty"] == 1 and info["report"]["sampled"] is True
    assert info["sampling"] == {"max_items": 2, "seed": 4}
    assert isinstance(d.report, LoadReport)


def test_bundled_sample():
    path = sample_path()
    assert path.name == "texts.csv" and path.is_file()
    d = ReferenceData.from_file(path, column="text", label_column="label")
    assert len(d) == 240 and d.report.n_duplicates == 0
    counts = Counter(d.labels.tolist())
    assert set(counts) == {"sports", "cooking", "finance", "technology", "health", "travel"}
    assert set(counts.values()) == {40}
    assert max(len(t.split()) for t in d.items) <= 30
    assert (path.parent / "README.md").read_text().count("Apache-2.0") >= 1
    with pytest.raises(ConfigError, match="available: texts"):
        sample_path("images")


@pytest.mark.fault
def test_broken_whole_files_are_decode_errors(tmp_path):
    (tmp_path / "b.parquet").write_bytes(b"PAR1 not really")
    (tmp_path / "b.csv.gz").write_bytes(b"not gzip")
    (tmp_path / "b.json").write_bytes(b'[{"text": "caf\xe9"}]')
    (tmp_path / "c.json").write_text('[{"text": "a"},', encoding="utf-8")
    (tmp_path / "b.csv").write_text('text,label\n"unterminated,1\n', encoding="utf-8")
    for name, pattern in [("b.parquet", "Parquet"), ("b.csv.gz", "gzip"), ("b.json", "UTF-8"),
                          ("c.json", "not valid JSON"), ("b.csv", "could not be parsed as CSV")]:
        with pytest.raises(DecodeError, match=pattern):
            ReferenceData.from_file(tmp_path / name)
    # A JSON object of column lists works like a list of records.
    (tmp_path / "cols.json").write_text(json.dumps({"text": ["x", "y"], "label": [0, 1]}), encoding="utf-8")
    d = ReferenceData.from_file(tmp_path / "cols.json", label_column="label")
    assert d.items == ("x", "y") and d.labels.tolist() == [0, 1]


def test_dropped_duplicates_note_says_the_rule_and_the_counts():
    from embedselect.data import dropped_duplicates_note

    d = ReferenceData.from_texts(["alpha beta gamma", "delta epsilon", "alpha beta gamma", "ALPHA BETA GAMMA!",
                                  "zeta eta theta"])
    assert dropped_duplicates_note(d.to_dict()) is None  # no rule applied
    assert dropped_duplicates_note(d.drop_duplicates("exact").to_dict()) == (
        "1 exact duplicate dropped before ranking (rule 'exact': the same item); the scores use the 4 items left")
    near = dropped_duplicates_note(d.drop_duplicates("near").to_dict())
    assert near.startswith("2 near duplicates dropped") and "cosine similarity >= 0.95" in near
    assert near.endswith("the 3 items left")
    assert dropped_duplicates_note(ReferenceData.from_texts(["x", "y"]).drop_duplicates("exact").to_dict()) == (
        "no duplicates found (rule 'exact': the same item); the scores use all 2 items")


def test_the_data_package_keeps_its_public_names_and_small_modules():
    """embedselect.data is a package of focused modules (issue 22 item 4): the names importers use stay importable
    from the package, and each module says what it owns and stays under 500 lines."""
    import ast

    import embedselect.data as data
    from embedselect.data import duplicates, loaders, reference, samples
    from embedselect.data import load_report as report

    for name in ("ReferenceData", "LoadReport", "sample_path", "dropped_duplicates_note", "duplicate_mask",
                 "IMAGE_SUFFIXES", "TEXT_FORMATS", "DUPLICATE_RULES", "NEAR_DUPLICATE_THRESHOLD", "OnError"):
        assert name in data.__all__ and hasattr(data, name), name
    assert data.ReferenceData is reference.ReferenceData and data.LoadReport is report.LoadReport
    assert data.sample_path is samples.sample_path and data.duplicate_mask is duplicates.duplicate_mask
    for mod in (data, duplicates, loaders, reference, report, samples):
        text = Path(mod.__file__).read_text(encoding="utf-8")
        assert len(text.splitlines()) <= 500, mod.__name__
        assert (ast.get_docstring(ast.parse(text)) or "").strip(), mod.__name__
    assert sample_path("texts").parent.name == "samples" and sample_path("texts").is_file()


@pytest.mark.fault
def test_too_few_items_for_a_metric_says_how_to_leave_it_out(cache_dir):
    """New-user audit: 'sufficiency needs at least 50 items ... or choose settings of the metric that need fewer items'
    named no setting that would do (a metric's minimum is its spec's) and not how to rank without it."""
    import embedselect

    texts = [f"text number {i} about item {i % 7}" for i in range(30)]
    with pytest.raises(TooFewItemsError) as e:
        embedselect.select(texts, "tfidf-svd", save=False)
    msg = str(e.value)
    assert "the sufficiency metric needs at least 50 items" in msg and "add at least 20 more items" in msg
    assert "or leave sufficiency out: --metrics task_prior,nn_agreement,rankme,modularity" in msg, msg
    assert "settings of the metric" not in msg
    with pytest.raises(TooFewItemsError) as e:  # 15 items: task_prior (20) and modularity (20) do not fit either
        embedselect.select(texts[:15], "tfidf-svd", save=False)
    assert "or leave sufficiency, task_prior and modularity out: --metrics nn_agreement,rankme" in str(e.value)
    with pytest.raises(TooFewItemsError) as e:  # none asked for fits: the metrics that do
        embedselect.select(texts[:15], "tfidf-svd", metrics=["task_prior"], save=False)
    assert "or rank with metrics that need at most 15 items: --metrics rankme,alpha_req,uniformity,nn_agreement" \
        in str(e.value)
    embedselect.select(texts, "tfidf-svd,random-projection", metrics=["task_prior", "nn_agreement"], save=False)

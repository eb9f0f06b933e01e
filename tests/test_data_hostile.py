"""Issue 47, hostile data files: a file name with a byte that is not UTF-8 (the dataset's source is stored with a
``\\xNN`` escape), a JSON document or JSONL line nested 200 000 deep, and a JSONL number of 100 001 digits (a typed
DecodeError naming the line; skipped and counted with ``--on-error skip``)."""

from __future__ import annotations

import json
import os

import pytest

from embedselect.cli import main
from embedselect.data import ReferenceData
from embedselect.errors import DataError, DecodeError
from embedselect.store import Store

TEXTS = [f"item number {i} about the {w}" for i in range(15) for w in ("cat", "dog")]


@pytest.mark.fault
def test_a_data_file_whose_name_is_not_utf8_is_embedded_and_recorded(tmp_path, capsys):
    name = os.fsencode(tmp_path) + b"/caf\xe9.csv"
    with open(name, "wb") as fh:
        fh.write(b"text\n" + "".join(t + "\n" for t in TEXTS).encode())
    path = os.fsdecode(name)
    ref = ReferenceData.load(path, column="text")
    assert ref.source.endswith("caf\\xe9.csv")
    json.dumps(ref.to_dict(), ensure_ascii=False).encode("utf-8")  # storable and printable as UTF-8
    cache = tmp_path / "cache"
    code = main(["embed", path, "-c", "text", "-m", "random-projection?dim=8", "--cache-dir", str(cache)])
    err = capsys.readouterr().err
    assert code == 0, err
    sources = Store.open(cache).query_df("SELECT source FROM datasets")["source"].tolist()
    assert sources == [ref.source]


def _deep(n: int) -> str:
    return "[" * n + "]" * n


@pytest.mark.fault
def test_a_json_document_nested_200000_deep_is_a_decode_error(tmp_path):
    p = tmp_path / "deep.json"
    p.write_text(_deep(200_000))
    for on_error in ("fail", "skip"):
        with pytest.raises(DecodeError, match="not valid JSON: nested too deeply"):
            ReferenceData.load(p, column="text", on_error=on_error)


def _jsonl(tmp_path, bad: dict[int, str]):
    lines = [json.dumps({"text": t}) for t in TEXTS]
    for i, line in bad.items():
        lines[i] = line
    p = tmp_path / "data.jsonl"
    p.write_text("\n".join(lines) + "\n")
    return p


@pytest.mark.fault
def test_jsonl_lines_nested_too_deep_or_with_a_100001_digit_number(tmp_path, capsys):
    p = _jsonl(tmp_path, {4: '{"text": ' + _deep(200_000) + "}", 8: '{"text": "x", "n": ' + "7" * 100_001 + "}"})
    with pytest.raises(DataError, match=r"rows 5, 9; first: invalid JSON on line 5: nested too deeply") as err:
        ReferenceData.load(p, column="text")
    assert isinstance(err.value, DecodeError)
    ref = ReferenceData.load(p, column="text", on_error="skip")
    assert len(ref) == len(TEXTS) - 2 and ref.report.n_skipped_undecodable == 2
    reasons = " ".join(e["reason"] for e in ref.report.skipped_examples)
    assert "line 5: nested too deeply" in reasons and "line 9: a number of more than" in reasons
    code = main(["embed", str(p), "-c", "text", "-m", "random-projection?dim=8", "--cache-dir", str(tmp_path / "c")])
    out = capsys.readouterr()
    assert code == 3 and "Traceback" not in out.err and "line 5" in out.err


@pytest.mark.fault
def test_a_large_image_is_read_without_pils_warning_and_one_too_large_is_named_in_words(tmp_path, capsys,
                                                                                      monkeypatch):
    """An image over PIL's warning limit (a 12000 x 12000 photo, 144 million pixels) is read without PIL's
    'DecompressionBombWarning: ... could be decompression bomb DOS attack' (printed with PIL's file and line, naming
    no image, once for each reader of it: three times in one rank); one over the refusal limit is named with its size
    in words (it said "not a readable image (Image size (400000000 pixels) exceeds limit of ...)"). The limits are
    made small here, as if the images were that large."""
    import warnings

    from PIL import Image

    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1000)
    photos = tmp_path / "photos"
    photos.mkdir()
    for i in range(4):
        Image.new("RGB", (8, 8), (60 * i, 20, 0)).save(photos / f"ok{i}.png")
    Image.new("RGB", (40, 40), (0, 90, 0)).save(photos / "large.png")  # 1600 pixels: over 1000, under twice it
    Image.new("RGB", (50, 50), (0, 0, 90)).save(photos / "huge.png")  # 2500: refused
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with pytest.raises(DecodeError) as info:
            ReferenceData.load(photos)
        ref = ReferenceData.load(photos, on_error="skip")
        code = main(["embed", str(photos), "-m", "random-projection?dim=4", "--on-error", "skip", "--cache-dir",
                     str(tmp_path / "cache")])
    assert code == 0, capsys.readouterr().err
    assert not [w for w in seen if issubclass(w.category, Image.DecompressionBombWarning)], [str(w) for w in seen]
    said = ("huge.png: too large to decode: 2500 pixels, over the limit of 2000 pixels for one image (a guard "
            "against decompression bombs); shrink it")
    assert said in str(info.value) and "large.png" not in str(info.value).replace("huge.png", "")
    assert len(ref) == 5 and [e["reason"] for e in ref.report.skipped_examples] == [said.split(": ", 1)[1]]


@pytest.mark.fault
def test_a_16_bit_greyscale_png_is_seen_by_its_scale_not_clipped_to_white(tmp_path):
    """A 16-bit greyscale PNG (PIL's mode I;16) was made RGB by PIL's conversion, which clips every value over 255:
    99.6 % of a noise image's pixels came out white, for every candidate. It is now scaled to 8 bits (the top 8 of its
    16), by the backends' reading (load_image) and the reference data's (load_images) alike; an 8-bit image is as
    it was."""
    import numpy as np
    from PIL import Image

    from embedselect.models.backends.base import load_image

    photos = tmp_path / "photos"
    photos.mkdir()
    ramp = np.tile(np.linspace(0, 65535, 64).astype(np.uint16), (16, 1))
    Image.fromarray(ramp).save(photos / "deep.png")
    assert Image.open(photos / "deep.png").mode.startswith("I")
    eight = np.tile(np.arange(64, dtype=np.uint8) * 4, (16, 1))
    Image.fromarray(eight).save(photos / "plain.png")
    ref = ReferenceData.load(photos)
    by_id = dict(zip(ref.ids, ref.load_images()))
    for seen in (np.asarray(load_image(photos / "deep.png", "RGB")), np.asarray(by_id["deep.png"])):
        assert seen.shape == (16, 64, 3) and (seen[..., 0] == (ramp >> 8)).all()
        assert (seen == 255).mean() < 0.05
    assert (np.asarray(load_image(photos / "plain.png", "RGB"))[..., 1] == eight).all()
    assert (np.asarray(load_image(photos / "deep.png", "L")) == (ramp >> 8)).all()

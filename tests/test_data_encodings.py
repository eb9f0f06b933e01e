"""Text data files in UTF-16 / UTF-32 (as Excel's "Unicode text" and Windows tools save them) are read as the same
items as their UTF-8 copy; a wide file that does not decode says to save it as UTF-8 (issue 20: the message was
"'utf-8' codec can't encode ... surrogates not allowed")."""

from __future__ import annotations

import codecs
import json

import pytest

from embedselect.data import ReferenceData
from embedselect.errors import DecodeError

ROWS = ["café au lait", "naïve résumé", "日本語のテキスト", "emoji 🙂 row", "plain ascii text"]
FORMS = {
    "utf-8-sig": lambda t: codecs.BOM_UTF8 + t.encode("utf-8"),
    "utf-16": lambda t: t.encode("utf-16"),  # with the platform's byte-order mark
    "utf-16-le-bom": lambda t: codecs.BOM_UTF16_LE + t.encode("utf-16-le"),
    "utf-16-be-bom": lambda t: codecs.BOM_UTF16_BE + t.encode("utf-16-be"),
    "utf-32": lambda t: t.encode("utf-32"),
    "utf-32-be-bom": lambda t: codecs.BOM_UTF32_BE + t.encode("utf-32-be"),
    "utf-16-le-no-bom": lambda t: t.encode("utf-16-le"),
}
TEXTS = {
    "csv": "id,text\n" + "".join(f'{i},"{r}"\n' for i, r in enumerate(ROWS)),
    "txt": "".join(r + "\n" for r in ROWS),
    "jsonl": "".join(json.dumps({"text": r}, ensure_ascii=False) + "\n" for r in ROWS),
}


@pytest.mark.fault
@pytest.mark.parametrize("fmt", list(TEXTS))
@pytest.mark.parametrize("form", list(FORMS))
def test_wide_unicode_files_read_as_their_utf8_copy(tmp_path, form, fmt):
    plain = tmp_path / f"plain.{fmt}"
    plain.write_bytes(TEXTS[fmt].encode("utf-8"))
    wide = tmp_path / f"wide.{fmt}"
    wide.write_bytes(FORMS[form](TEXTS[fmt]))
    kw = {} if fmt == "txt" else {"column": "text"}
    a, b = ReferenceData.from_file(plain, **kw), ReferenceData.from_file(wide, **kw)
    assert list(b.items) == list(a.items) == ROWS
    assert b.fingerprint == a.fingerprint


@pytest.mark.fault
def test_a_broken_wide_file_says_to_save_it_as_utf8(tmp_path):
    broken = tmp_path / "broken.csv"
    broken.write_bytes(TEXTS["csv"].encode("utf-16")[:-1])  # an odd number of bytes: not UTF-16
    with pytest.raises(DecodeError, match=r"broken.csv is UTF-16 .*save it as UTF-8"):
        ReferenceData.from_file(broken, column="text")
    binary = tmp_path / "binary.csv"
    binary.write_bytes(b"PK\x03\x04\x00\x00\x00\x00" * 500)  # binary: half of it NUL bytes
    with pytest.raises(DecodeError, match="NUL bytes.*save it as UTF-8"):
        ReferenceData.from_file(binary, column="text")

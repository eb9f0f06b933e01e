"""Reading reference data: file formats, decoding, column choice, labels and the fingerprint — the parsing rules
:class:`embedselect.data.ReferenceData` applies. Pure functions over bytes and values; no state."""

from __future__ import annotations

import codecs
import gzip
import hashlib
import io
import json
import sys
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from embedselect._util.arrays import is_missing
from embedselect._util.images import open_image, too_large
from embedselect._util.suggest import close_match
from embedselect.errors import (
    ColumnNotFoundError,
    ConfigError,
    DataError,
    DecodeError,
    EmptyDataError,
    UnsupportedFormatError,
)

IMAGE_SUFFIXES: tuple[str, ...] = (".jpg", ".jpeg", ".png", ".webp")
"""Image file suffixes picked up from a folder (case-insensitive)."""

TEXT_FORMATS: dict[str, str] = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".txt": "txt",
    ".text": "txt",
}
"""File suffix -> format name for :meth:`ReferenceData.from_file` (``.gz`` allowed except for Parquet)."""

MAX_IDS_IN_MESSAGE = 8
FINGERPRINT_VERSION = b"embedselect-reference-data-v1"

# Reason categories of skipped/undecodable items -> phrase used in DecodeError messages.
REASON_PHRASES = {
    "utf8": "could not be decoded as UTF-8",
    "json": "are not valid JSON",
    "type": "do not hold a text value",
    "image": "could not be decoded as images",
    "fields": "have more fields than the header",
}


class ImageInvalid(Exception):
    """PIL could not decode an image (wraps PIL's various error types)."""


@dataclass(frozen=True)
class BadItem:
    """A raw row that already failed to parse (e.g. invalid JSON line)."""

    category: str
    reason: str


def decode_image(data: bytes) -> Any:
    """Fully decode image bytes with PIL (:func:`embedselect._util.images.open_image`); return the loaded image.
    Raises ImageInvalid."""
    from PIL import Image

    try:
        return open_image(io.BytesIO(data))
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError) as exc:
        large = too_large(exc)
        if large is not None:
            raise ImageInvalid(large) from exc
        # PIL names the in-memory buffer ("cannot identify image file <_io.BytesIO object at 0x...>"): say "file"
        why = re.sub(r"\s*<_io\.BytesIO object at 0x[0-9a-fA-F]+>", "", str(exc)).strip() or type(exc).__name__
        raise ImageInvalid(f"not a readable image ({why})") from exc


def to_text(v: Any) -> tuple[str | None, tuple[str, str] | None]:
    """Raw cell -> (text or None for missing, problem (category, reason) or None)."""
    if isinstance(v, BadItem):
        return None, (v.category, v.reason)
    if is_missing(v):
        return None, None
    if isinstance(v, (bytes, bytearray)):
        try:
            return bytes(v).decode("utf-8"), None
        except UnicodeDecodeError as exc:
            return None, ("utf8", f"invalid UTF-8 at byte {exc.start}")
    if isinstance(v, str):
        try:
            v.encode("utf-8")  # lone surrogates = undecodable bytes read with surrogateescape
        except UnicodeEncodeError as exc:
            return None, ("utf8", f"invalid UTF-8 at character {exc.start}")
        return v, None
    if isinstance(v, (bool, np.bool_)):
        return None, ("type", f"a boolean ({v}), not text")
    if isinstance(v, (int, float, np.integer, np.floating)):
        return str(v), None
    return None, ("type", f"a {type(v).__name__}, not text")


def column_values(c: str, frame: Any, dicts: list[dict] | None) -> list[Any]:
    return frame[c].tolist() if frame is not None else [d.get(c) for d in dicts or []]


def present_values(values: list[Any]) -> list[Any]:
    """Values that are neither missing, blank strings nor rows that failed to parse (:class:`BadItem`)."""
    return [
        v for v in values
        if not is_missing(v) and not isinstance(v, BadItem) and not (isinstance(v, str) and not v.strip())
    ]


def read_ragged_csv(raw: bytes, *, sep: str, label_column: str | None):
    """Parse a CSV/TSV whose rows do not all have the header's number of fields (what pandas' fast parser refuses),
    with the :mod:`csv` module's dialect of pandas' defaults: a row with more fields than the header gets a
    :class:`BadItem` (category ``"fields"``) in every column but the label column, so that it is reported by its
    data row number, or skipped with ``on_error='skip'``; a shorter row is padded with missing values (as pandas
    does). Blank lines are skipped without a row number, as pandas does.

    Returns:
        A ``pandas.DataFrame`` (dtype object), one row per data row, or None when the header has duplicate names
        (then the caller reports pandas' own error).
    """
    import csv

    import pandas as pd

    text = raw.decode("utf-8-sig", errors="surrogateescape")
    rows = [r for r in csv.reader(io.StringIO(text, newline=""), delimiter=sep) if r]
    if not rows or len(set(rows[0])) != len(rows[0]):
        return None
    header, width = rows[0], len(rows[0])
    out: list[list[Any]] = []
    for r in rows[1:]:
        if len(r) > width:
            bad = BadItem("fields", f"{len(r)} fields, the header has {width}")
            out.append([None if c == label_column else bad for c in header])
        else:
            out.append(r + [None] * (width - len(r)))
    return pd.DataFrame(out, columns=header, dtype=object)


def is_textlike(values: list[Any]) -> bool:
    """A column is text-like when its non-missing values are strings/bytes that are not all numbers."""
    present = present_values(values)
    if not present or not all(isinstance(v, (str, bytes)) for v in present):
        return False
    return not all(isinstance(v, str) and NUMBER_RE.fullmatch(v.strip()) for v in present)


NUMBER_RE = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
INT_RE = re.compile(r"[+-]?\d+")


def _is_number(v: Any) -> bool:
    if isinstance(v, (bool, np.bool_)):
        return False
    if isinstance(v, (int, float, np.integer, np.floating)):
        return True
    return isinstance(v, str) and NUMBER_RE.fullmatch(v.strip()) is not None


def check_text_column(column: str, values: list[Any], source: str, textlike: list[str]) -> None:
    """Refuse a text column that holds only numbers (an id or a score column given as ``column``): embedding
    "17" and "42" ranks models on nothing the user cares about.

    Raises:
        DataError: every present value of ``column`` is a number or a numeric string; the message names the
            text-like columns to choose from.
    """
    present = present_values(values)
    if present and all(_is_number(v) for v in present):
        shown = ", ".join(str(v) for v in present[:3])
        others = f"; text columns: {', '.join(map(repr, textlike))}" if textlike else ""
        raise DataError(
            f"column {column!r} holds only numbers (e.g. {shown}), not text ({source}); choose the text column "
            f"with column=... / --column{others}"
        )


def choose_column(columns: list[str], textlike: list[str], source: str, frame: Any,
                   dicts: list[dict] | None = None) -> str:
    if len(textlike) == 1:
        return textlike[0]
    if not columns:
        raise EmptyDataError(f"{source} has no columns; add a header row and a text column")
    if not textlike:
        if not any(present_values(column_values(c, frame, dicts)) for c in columns):
            raise EmptyDataError(f"{source} has no rows with content (columns: {', '.join(map(repr, columns))}); "
                                 "add non-empty rows")
        raise ColumnNotFoundError(
            f"{source} has no text column (columns: {', '.join(map(repr, columns))}); pass the column to use "
            "with column=... / --column"
        )

    def mean_len(c: str) -> float:
        vals = column_values(c, frame, dicts)
        lens = [len(v) for v in vals if isinstance(v, (str, bytes))]
        return float(np.mean(lens)) if lens else 0.0

    desc = ", ".join(f"{c!r} (mean {mean_len(c):.0f} chars)" for c in textlike)
    raise ColumnNotFoundError(
        f"{source} has several text columns: {desc}; choose one with column=... / --column "
        f"(and the label column, if any, with label_column=... / --labels)"
    )


def missing_column_message(what: str, name: str, columns: list[str], source: str, textlike: list[str]) -> str:
    msg = f"{what} {name!r} is not in {source}; available columns: {', '.join(map(repr, columns)) or 'none'}."
    near = close_match(name, columns)
    if near:
        msg += f" Did you mean {near!r}?"
    elif len(textlike) == 1 and what == "column":
        msg += f" The only text column is {textlike[0]!r}: pass column={textlike[0]!r} / --column {textlike[0]}."
    return msg


def parse_untyped_labels(labels: list[Any]) -> list[Any]:
    """CSV/TSV labels are all strings: '' -> None; all-integer strings -> int."""
    out = [None if (is_missing(v) or (isinstance(v, str) and not v.strip())) else v for v in labels]
    present = [v for v in out if v is not None]
    if present and all(isinstance(v, str) and INT_RE.fullmatch(v.strip()) for v in present):
        out = [None if v is None else int(v) for v in out]
    return out


def labels_array(labels: list[Any] | None) -> np.ndarray | None:
    """Labels -> read-only (n,) array: int64 if all are integers, else object (str/int/None)."""
    if labels is None:
        return None
    norm: list[Any] = []
    for v in labels:
        if is_missing(v):
            norm.append(None)
        elif isinstance(v, (np.generic,)):
            v = v.item()
            norm.append(int(v) if isinstance(v, float) and v.is_integer() else v)
        elif isinstance(v, float) and v.is_integer():
            norm.append(int(v))
        else:
            norm.append(v)
    if norm and all(isinstance(v, int) and not isinstance(v, bool) for v in norm):
        arr = np.asarray(norm, dtype=np.int64)
    else:
        arr = np.empty(len(norm), dtype=object)
        arr[:] = norm
    arr.setflags(write=False)
    return arr


def fingerprint(modality: str, digests: list[bytes], settings: dict[str, Any]) -> str:
    """sha256 over version tag, modality, length-prefixed item bytes, and sampling settings (if sampled)."""
    h = hashlib.sha256()
    h.update(FINGERPRINT_VERSION + b"\0" + modality.encode() + b"\0")
    h.update(len(digests).to_bytes(8, "little"))
    for d in digests:
        h.update(len(d).to_bytes(8, "little"))
        h.update(d)
    if settings:
        h.update(b"\0sampling\0" + json.dumps(settings, sort_keys=True).encode())
    return h.hexdigest()


def decode_message(n_total: int, bad: list[tuple[str, str, str]], *, unit: str) -> str:
    """E.g. '3 of 120 rows could not be decoded as UTF-8 (rows 4, 17, 51); pass on_error=...'."""
    groups: dict[str, list[tuple[str, str]]] = {}
    for i, cat, reason in bad:
        groups.setdefault(cat, []).append((i, reason))
    parts = []
    for cat, entries in groups.items():
        entries.sort(key=lambda e: id_key(e[0]))
        shown = [e[0] for e in entries[:MAX_IDS_IN_MESSAGE]]
        more = f", ... {len(entries) - len(shown)} more" if len(entries) > len(shown) else ""
        label = ("row" if unit == "rows" else "file") + ("s" if len(entries) > 1 else "")
        detail = f"{label} {', '.join(shown)}{more}"
        if cat in ("image", "json", "type", "fields"):
            detail += f"; first: {entries[0][1] if unit == 'rows' else ': '.join(entries[0])}"
        phrase = REASON_PHRASES.get(cat, "could not be decoded")
        if unit == "images" and cat == "image":
            phrase = "could not be decoded"
        parts.append(f"{len(entries)} of {n_total} {unit} {phrase} ({detail})")
    return "; ".join(parts) + "; pass on_error='skip' / --on-error skip to drop them"


def id_key(i: str) -> tuple[int, Any]:
    return (0, int(i)) if i.isdigit() else (1, i)


def parse_json(text: str) -> Any:
    """``json.loads(text)``, where JSON that Python cannot hold is a :class:`json.JSONDecodeError` as any invalid JSON:
    nesting deeper than the interpreter's recursion limit (``RecursionError``), an integer of more digits than
    ``sys.get_int_max_str_digits()`` allows (``ValueError``)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply to be read (arrays or objects inside each other)", text, 0) from None
    except ValueError:  # int() refuses more than sys.get_int_max_str_digits() digits
        raise json.JSONDecodeError(f"a number of more than {sys.get_int_max_str_digits()} digits, too long to be read",
                                   text, 0) from None


def read_jsonl(raw: bytes) -> tuple[list[tuple[str, Any]], list[tuple[str, str, str]]]:
    """Parse JSON lines (:func:`parse_json`). Returns ((line number, value) for good lines, (line number, category,
    reason) for bad)."""
    lines = raw.splitlines()
    if lines and lines[0].startswith(b"\xef\xbb\xbf"):
        lines[0] = lines[0][3:]
    records: list[tuple[str, Any]] = []
    bad: list[tuple[str, str, str]] = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            records.append((str(n), None))  # a blank line counts as an empty row
            continue
        # surrogateescape: invalid bytes survive inside string values and are reported per row later, so bad
        # bytes in a column that is not used do not drop the row.
        text = line.decode("utf-8", errors="surrogateescape")
        try:
            records.append((str(n), parse_json(text)))
        except json.JSONDecodeError as exc:
            bad.append((str(n), "json", f"invalid JSON on line {n}: {exc.msg} (column {exc.colno})"))
    return records, bad


def read_bytes(path: Path, gz: bool) -> bytes:
    """The bytes of the text data file ``path`` (gunzipped with ``gz``) as UTF-8: a UTF-16 or UTF-32 file is
    re-encoded (:func:`as_utf8`)."""
    try:
        if gz:
            with gzip.open(path, "rb") as f:
                return as_utf8(f.read(), path)
        return as_utf8(path.read_bytes(), path)
    except (gzip.BadGzipFile, EOFError) as exc:
        raise DecodeError(f"{path} is not a valid gzip file ({exc}); re-compress it or drop the .gz suffix") from exc
    except OSError as exc:
        raise DataError(f"cannot read {path}: {exc}; check the file's permissions") from exc


_WIDE_BOMS = (  # longest first: the UTF-32 LE mark begins with the UTF-16 LE one
    (codecs.BOM_UTF32_LE, "utf-32-le", "UTF-32"),
    (codecs.BOM_UTF32_BE, "utf-32-be", "UTF-32"),
    (codecs.BOM_UTF16_LE, "utf-16-le", "UTF-16"),
    (codecs.BOM_UTF16_BE, "utf-16-be", "UTF-16"),
)


def as_utf8(raw: bytes, path: Path | str) -> bytes:
    """``raw`` as UTF-8 bytes: a file that starts with a UTF-16 / UTF-32 byte-order mark (as Excel's "Unicode text"
    and Windows tools save) is decoded with it and re-encoded, without the mark; a file without a mark whose first
    bytes alternate with NULs (UTF-16 without a mark) is decoded as UTF-16 when that is clean. Anything else
    (UTF-8, with or without its mark) is returned as it is.

    Raises:
        DecodeError: a wide (UTF-16/32) file that does not decode; the message says to save it as UTF-8.
    """
    for bom, codec, name in _WIDE_BOMS:
        if raw.startswith(bom):
            try:
                return raw[len(bom):].decode(codec).encode("utf-8")
            except UnicodeDecodeError as exc:
                raise DecodeError(f"{path} is {name} (it starts with a {name} byte-order mark) but does not decode as "
                                  f"{name} ({exc.reason} at byte {exc.start}); save it as UTF-8") from None
    head = raw[:4096]
    if len(head) >= 4 and head.count(0) * 4 >= len(head):  # many NULs: UTF-16 without a mark (or not text at all)
        codec = "utf-16-le" if head[1::2].count(0) > head[0::2].count(0) else "utf-16-be"
        try:
            text = raw.decode(codec)
        except UnicodeError:
            text = "\0"
        if "\0" in text:
            raise DecodeError(f"{path} holds NUL bytes: it is not UTF-8 text (UTF-16/UTF-32 without a byte-order mark, "
                              "or a binary file); save it as UTF-8 text")
        return text.encode("utf-8")
    return raw


def detect_format(path: Path, fmt: str | None) -> tuple[str, bool]:
    suffixes = [s.lower() for s in path.suffixes]
    gz = bool(suffixes) and suffixes[-1] == ".gz"
    known = ", ".join(sorted(set(TEXT_FORMATS.values())))
    if fmt is not None:
        if fmt not in set(TEXT_FORMATS.values()):
            raise UnsupportedFormatError(f"unknown format {fmt!r}; use one of {known}")
    else:
        suffix = suffixes[-2] if gz and len(suffixes) >= 2 else (suffixes[-1] if suffixes and not gz else "")
        if suffix in IMAGE_SUFFIXES:
            raise UnsupportedFormatError(
                f"{str(path)!r} is a single image; pass the folder that holds the images (or a list of image paths)"
            )
        if suffix not in TEXT_FORMATS:
            raise UnsupportedFormatError(
                f"cannot tell the format of {str(path)!r} from its suffix {suffix or '(none)'!r}; supported suffixes: "
                f"{', '.join(TEXT_FORMATS)} (optionally + .gz), image folders; rename the file with one of them, or pass format= to ReferenceData.from_file ({known})"
            )
        fmt = TEXT_FORMATS[suffix]
    if gz and fmt == "parquet":
        raise UnsupportedFormatError(f"{str(path)!r}: Parquet files are compressed internally; do not gzip them")
    return fmt, gz


def check_common(max_items: int | None, seed: int, on_error: str) -> None:
    if on_error not in ("fail", "skip"):
        raise ConfigError(f"on_error must be 'fail' or 'skip'; got {on_error!r}")
    if max_items is not None and (isinstance(max_items, bool) or not isinstance(max_items, (int, np.integer))
                                  or max_items < 1):
        raise ConfigError(f"max_items must be a positive integer or None; got {max_items!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ConfigError(f"seed must be a non-negative integer; got {seed!r}")


def frame_options(*, max_items: Any = None, seed: Any = 0, on_error: Any = "fail", dedupe: Any = False) -> None:
    """Signature of the options :meth:`ReferenceData.load` accepts for a DataFrame (besides the columns)."""


def only(kw: Mapping[str, Any], fn: Any, what: str) -> dict[str, Any]:
    """Keep the keyword arguments ``fn`` accepts; drop inapplicable ones that are None; refuse the rest."""
    import inspect

    accepted = set(inspect.signature(fn).parameters)
    out, refused = {}, []
    for k, v in kw.items():
        if k in accepted:
            out[k] = v
        elif v is not None and not (k == "recursive" and v is True) and not (k == "dedupe" and v is False):
            refused.append(f"{k}={v!r}")
    if refused:
        raise ConfigError(f"{', '.join(refused)} does not apply to {what}; drop it")
    return out

"""Escaping and number formatting shared by every published format (HTML, Markdown, badges, model cards).

Everything that can come from outside (model ids and revisions from the hub, file names, error messages,
warnings) is untrusted: HTML gets :func:`esc`, a Markdown table cell gets :func:`md`, a file name gets
:func:`safe_filename`, any other published text (badge messages, card metadata, JSON messages) gets :func:`clean`,
and what the CLI writes for a person at a terminal gets :func:`terminal`.
All of them go through :func:`clean` first: control characters and bidirectional / invisible format characters
(U+202E RIGHT-TO-LEFT OVERRIDE and kin, which can make a published name read as another) never reach a reader.
"""

from __future__ import annotations

import hashlib
import html
import math
import re
import unicodedata
from typing import Any

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+!|])")
_UNSAFE_FILE_CHARS = re.compile(r"[^A-Za-z0-9._-]+")


def clean(v: Any) -> str:
    """``v`` as text without control characters (line breaks and tabs become spaces) and without Unicode format
    characters (category Cf: bidirectional overrides and isolates U+202A-U+202E, U+2066-U+2069, marks U+200E/F,
    U+061C, zero-width characters, ...). The one sanitiser of untrusted text for every published format."""
    out = []
    for ch in str(v):
        cat = unicodedata.category(ch)
        if ch in "\t\n\r\v\f\x85\u2028\u2029":
            out.append(" ")
        elif cat not in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"):
            out.append(ch)
    return "".join(out)


_BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def terminal(text: str) -> str:
    """``text`` for a terminal: without control characters other than newline and tab (an ESC sequence in a model
    name or a data item could move the cursor, retitle the window or hide what follows) and without bidirectional
    controls (which make a name read as another). Other format characters stay (the zero-width joiner of an emoji
    sequence), unlike :func:`clean`, since a person reads the exact data here."""
    return "".join(ch for ch in text if ch in "\n\t" or (unicodedata.category(ch) != "Cc" and ch not in _BIDI_CONTROLS))


def one_line(text: Any) -> str:
    """``text`` as one line: line breaks (``\\r`` too), tabs and runs of white space as one space. The line half of
    :func:`terminal_line`, alone where the other characters are kept as they are (a table's cell on a pipe) and in
    a Markdown cell (:func:`md`)."""
    return " ".join(str(text).split())


def terminal_line(text: Any) -> str:
    """``text`` as one line for a person at a terminal: :func:`terminal`, then :func:`one_line`. The one rule for a
    line on stderr that may quote untrusted text (a hub model's id or error, a file name, a failure's reason): the
    CLI's warnings and notes, every log record's message and the one-line error, so that a name holding a line
    break cannot print a line of its own that reads as another log line; and for each cell of a table the CLI
    prints on a terminal (``cli.format.cell``)."""
    return one_line(terminal(str(text)))


MISSING = "-"
"""The one placeholder of a missing value in a published table (Markdown, HTML), as in the CLI's tables."""

_HEX = re.compile(r"[0-9a-f]+")


def short_revision(rev: str | None, width: int = 12) -> str:
    """A revision for a table: a hex hash (a hub commit, the sha256 of a model folder or a vectors file) cut to its
    first ``width`` characters; any other revision (``builtin-0.1.0-v2``, a user's ``v3``) whole, so that a name is
    never cut to a misleading ``builtin-0.1.``. ``""`` for None."""
    rev = rev or ""
    return rev[:width] if len(rev) > width and _HEX.fullmatch(rev) else rev


def num(v: Any, digits: int = 4) -> str:
    """A number for display: ``digits`` significant digits; :data:`MISSING` for None, NaN or infinity."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return MISSING
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    return str(v)


def counted(n: Any, one: str, many: str) -> str:
    """``n`` and the noun that agrees with it: "1 query", "5 queries"; a missing count reads "? queries"."""
    if n is None:
        return f"? {many}"
    return f"{n} {one if n == 1 else many}"


def relevant_per_query(v: Any) -> str:
    """How many relevant items a search check's queries name, in words: "1 relevant item per query" when each names
    one, "1.111 relevant items per query on average" otherwise (``v``: the mean, :func:`num`'s digits)."""
    if isinstance(v, (int, float)) and v == 1:
        return "1 relevant item per query"
    return f"{num(v)} relevant items per query on average"


def rate(v: Any) -> str:
    """A rate (items per second) to 3 significant digits without an exponent (``1234.5`` -> ``1230``);
    :data:`MISSING` when missing or not finite."""
    if v is None or not isinstance(v, (int, float)) or not math.isfinite(v):
        return MISSING
    return f"{float(f'{v:.3g}'):g}"


def count(v: Any) -> str:
    """A parameter count as ``22.7M`` / ``1.1B`` / ``830k``; :data:`MISSING` when missing or 0."""
    if not v:
        return MISSING
    for size, unit in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if v >= size:
            return f"{v / size:.3g}{unit}"
    return str(v)


def esc(v: Any) -> str:
    """``v`` as HTML text (quotes escaped too, so it is safe inside attributes)."""
    return html.escape(clean(v), quote=True)


def name_html(v: Any) -> str:
    """A model or candidate name as HTML text that a browser breaks only after a ``/`` (``org/`` then ``model``), never
    at a hyphen inside it (``random-`` / ``projection``): each ``/``-ended piece is a ``<span class="nb">`` (the
    page's CSS keeps it on one line) with a ``<wbr>`` between pieces. Escaped as :func:`esc`."""
    pieces = re.findall(r"[^/]*/|[^/]+", clean(v))
    return "<wbr>".join(f'<span class="nb">{html.escape(p, quote=True)}</span>' for p in pieces)


def md(v: Any) -> str:
    """Escape text for a Markdown table cell (no HTML, no links, no cell breaks, one line)."""
    return _MD_SPECIAL.sub(r"\\\1", one_line(clean(v)))


def safe_filename(name: str, *, max_len: int = 80) -> str:
    """A file name for an untrusted candidate name or model id: ASCII letters, digits, ``.``, ``_`` and ``-``
    only, never starting with a dot, plus a short hash of the original so that two names that clean to the same
    text (``a/b`` and ``a_b``) never share a file. Never a path: no separator, no ``..``."""
    text = unicodedata.normalize("NFKD", str(name)).encode("ascii", "ignore").decode("ascii")
    stem = _UNSAFE_FILE_CHARS.sub("_", text).strip("._-")[:max_len] or "candidate"
    digest = hashlib.sha256(str(name).encode("utf-8")).hexdigest()[:8]
    return f"{stem}-{digest}"

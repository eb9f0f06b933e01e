"""The retrieval sets of software documentation (benchmarks/sets/retrieval_docs.py), on synthetic texts and tool
output; malformed output and a tool that cannot run named."""

import pytest

from benchmarks.sets.reading import module_docstrings
from benchmarks.sets.retrieval_docs import load_duckdb_functions, load_library_docstrings, load_matplotlib_rcparams, load_mypy_error_codes, load_pandas_options, load_pytest_options, load_python_docstrings, load_ruff_rules
from embedselect.errors import DataError


RULE = {"name": "unused-import", "code": "F401",
        "explanation": "## What it does\nChecks for unused imports, as in [`os`](https://x/os).\n\n"
                       "## Why is this bad?\nUnused imports add a performance overhead at runtime, and risk "
                       "creating import cycles.\n\n## Example\n```python\nimport os\n```\n"
                       "## Options\n- lint.ignore-init-module-imports\n"}


def test_ruff_rules_pair_a_rules_name_with_what_it_does_and_why():
    short = {"name": "too-short", "explanation": "## What it does\nChecks a thing.\n"}
    docs, queries, rel = load_ruff_rules([RULE, short])
    assert queries == ["unused import"] and rel == [[0]]  # an explanation under 10 words left out
    assert docs == ["Checks for unused imports, as in os. Unused imports add a performance overhead at runtime, and "
                    "risk creating import cycles."]  # links, code, the example and the options out


@pytest.mark.fault
@pytest.mark.parametrize("rules", [{"name": "x"}, [{"name": "x"}], [{"name": 3, "explanation": "y"}]])
def test_ruff_rules_name_output_that_is_not_a_list_of_rules(rules):
    with pytest.raises(DataError, match="ruff's rule"):
        load_ruff_rules(rules)


def test_python_docstrings_pair_a_summary_with_the_rest():
    rest = " ".join(f"r{i}" for i in range(200))
    docs, queries, rel = load_python_docstrings([
        f"Return the sum of\n  two numbers.\n\n{rest}",
        "Too short.\n\nThe summary above has fewer than three words, so this is left out of it.",
        "A summary whose rest is short.\n\nOnly five words here.",
        "A summary with no rest at all."])
    assert queries == ["Return the sum of two numbers."] and rel == [[0]]
    assert docs == [" ".join(rest.split()[:150])]


def test_library_docstrings_pair_a_summary_with_the_rest_before_the_examples():
    rest = " ".join(f"r{i}" for i in range(200))
    docs, queries, rel = load_library_docstrings("scipy", [
        "Compute the spanning\n  tree of a graph.\n\nParameters\n----------\nG : graph\n    The graph to span and "
        "then some more words.\n\nExamples\n--------\n>>> span(G)\nTree",
        f"Return the sum of two numbers.\n\n{rest}",
        "Integrate a function numerically.\n\nA short rest.\n>>> quad(f, 0, 1)\n(0.5, 0.0) and many more words "
        "after the example that are not kept at all",
        "Too short.\n\nThe summary above has fewer than three words, so this is left out of it."])
    assert queries == ["Compute the spanning tree of a graph.", "Return the sum of two numbers."]
    assert docs == ["Parameters G : graph The graph to span and then some more words.",
                    " ".join(rest.split()[:150])]  # underlines and the examples out; the third's rest too short
    assert rel == [[0], [1]]


@pytest.mark.fault
def test_library_docstrings_name_a_module_that_cannot_be_imported():
    with pytest.raises(DataError, match="cannot read the docstrings of yaml: .*No module named 'yaml'"):
        module_docstrings(["yaml"])  # the standard library alone (python -I -S): no site packages
    with pytest.raises(DataError, match="package 'no_such_library_xyz' is not installed"):
        load_library_docstrings("no_such_library_xyz")


RCPARAMS = """## a header comment
#axes.titlesize:     large   # font size of the axes title
#legend.fancybox:      True     # if True, use a rounded box for the
                                # legend background, else a rectangle
#figure.dpi: 100  # dpi
#figure.edgecolor: white  # figure edge color
#lines.color: C0  # has no colour of its own
#lines.linestyle: -
                  # not a continuation: the setting has no comment
#axes.edgecolor: black  # figure edge color
"""


def test_matplotlib_rcparams_pair_a_settings_name_with_its_comment(tmp_path):
    p = tmp_path / "matplotlibrc"
    p.write_text(RCPARAMS, "utf-8")
    docs, queries, rel = load_matplotlib_rcparams(p)
    assert docs == ["font size of the axes title", "if True, use a rounded box for the legend background, else a "
                    "rectangle", "figure edge color", "has no colour of its own"]
    assert queries == ["axes titlesize", "legend fancybox", "figure edgecolor", "lines color", "axes edgecolor"]
    assert rel == [[0], [1], [2], [3], [2]]  # comments under 3 words and settings without one out


@pytest.mark.fault
def test_matplotlib_rcparams_name_a_file_without_settings(tmp_path):
    p = tmp_path / "matplotlibrc"
    p.write_text("## only comments\nbackend: Agg\n", "utf-8")
    with pytest.raises(DataError, match="matplotlibrc: no commented setting"):
        load_matplotlib_rcparams(p)


PANDAS_OPTIONS = """compute.use_bottleneck : bool
    Use the bottleneck library to accelerate if it is installed,
    the default is True
    [default: True] [currently: False]
display.max_rows : int
    If max_rows is exceeded, switch to truncate view.
    [default: 60] [currently: 60]
io.excel.xls.reader : string
    Deprecated.
    [default: ] [currently: ]
"""


def test_pandas_options_pair_an_options_name_with_its_description():
    docs, queries, rel = load_pandas_options(PANDAS_OPTIONS)
    assert queries == ["compute use bottleneck", "display max rows"]
    assert docs == ["Use the bottleneck library to accelerate if it is installed, the default is True",
                    "If max_rows is exceeded, switch to truncate view."]  # the default / current line out
    assert rel == [[0], [1]]  # a description under 3 words out


@pytest.mark.fault
@pytest.mark.parametrize("text", ["", "Some text\n  without options\n"])
def test_pandas_options_name_a_description_without_options(text):
    with pytest.raises(DataError, match="pandas' options: no line 'name : type'"):
        load_pandas_options(text)


def test_mypy_error_codes_pair_a_code_with_its_description():
    docs, queries, rel = load_mypy_error_codes([("attr-defined", "Check that attribute exists"),
                                                    ("misc", "Miscellaneous"), ("union-attr", "Check that "
                                                                                "attribute exists  in each union")])
    assert queries == ["attr defined", "union attr"]
    assert docs == ["Check that attribute exists", "Check that attribute exists in each union"]
    assert rel == [[0], [1]]


@pytest.mark.fault
@pytest.mark.parametrize("codes", [["attr-defined"], [("a", "b", "c")], [("a", 3)]])
def test_mypy_error_codes_name_a_code_that_is_not_a_pair(codes):
    with pytest.raises(DataError, match="mypy's error code 0: expected a .code, description. pair"):
        load_mypy_error_codes(codes)


PYTEST_HELP = """usage: python -m pytest [options] [file_or_dir] [file_or_dir] [...]

positional arguments:
  file_or_dir           the files or folders to run

general:
  -k EXPRESSION         Only run tests matching the given keyword expression,
                        e.g. -k 'test_method or test_other'.
  -x, --exitfirst       Exit instantly on first error or failed test
  --lf, --last-failed   Rerun only the tests that failed at the last run (or all
                        if none failed)
  --fixtures, --funcargs
                        Show available fixtures, sorted by plugin appearance
  --maxfail=num         Exit after first num failures or errors
  --trace               Break

[pytest] configuration options in the first pytest.ini|tox.ini|setup.cfg file found:

  log_cli (bool):       Enable log display during test run
  tmp_path_retention_policy ('all' | 'failed' | 'none'):
                        Controls which directories created by the `tmp_path`
                        fixture are kept around

Environment variables:
  PYTEST_ADDOPTS           Extra command line options
"""


def test_pytest_options_pair_an_options_long_name_with_its_help():
    docs, queries, rel = load_pytest_options(PYTEST_HELP)
    assert queries == ["exitfirst", "last failed", "fixtures", "maxfail", "log cli", "tmp path retention policy"]
    assert docs == ["Exit instantly on first error or failed test",
                    "Rerun only the tests that failed at the last run (or all if none failed)",
                    "Show available fixtures, sorted by plugin appearance", "Exit after first num failures or errors",
                    "Enable log display during test run",
                    "Controls which directories created by the `tmp_path` fixture are kept around"]
    assert rel == [[i] for i in range(6)]  # no long name, help under 3 words, positionals, environment: out


@pytest.mark.fault
def test_pytest_options_name_a_help_without_options():
    with pytest.raises(DataError, match="pytest's help lists no option"):
        load_pytest_options("usage: pytest\n\npositional arguments:\n  file_or_dir   the files to run\n")


def test_duckdb_functions_pair_a_functions_name_with_its_description():
    docs, queries, rel = load_duckdb_functions([
        ("array_length", "Returns the length of the `list`."), ("len", "Returns the length of the `list`."),
        ("len", "Returns the length of the string."), ("->>", "Extracts a value as text from JSON"),
        ("__internal_compress", "Compresses a value for storage"), ("pi", "Returns pi.")])
    assert docs == ["Returns the length of the list.", "Returns the length of the string."]  # backticks out
    assert queries == ["array length", "len"]  # operators, internal names, descriptions under 3 words out
    assert rel == [[0], [0, 1]]  # aliases find one description, a name with two descriptions both


@pytest.mark.fault
@pytest.mark.parametrize("rows", [["len"], [("len", None)], [("a", "b", "c")]])
def test_duckdb_functions_name_a_row_that_is_not_a_pair(rows):
    with pytest.raises(DataError, match="duckdb's function 0: expected a .name, description. pair"):
        load_duckdb_functions(rows)

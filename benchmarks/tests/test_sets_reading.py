"""What the sets' loaders share (benchmarks/sets/reading.py): the docstrings of modules read in a fresh interpreter,
and that interpreter's environment and failures."""

import pytest

from benchmarks.sets.reading import fresh_python, module_docstrings
from embedselect.errors import DataError


def test_python_docstrings_read_public_functions_classes_and_methods():
    import inspect
    import textwrap

    got = module_docstrings(["textwrap"])
    assert inspect.getdoc(textwrap.dedent) in got and inspect.getdoc(textwrap.TextWrapper.wrap) in got
    assert inspect.getdoc(textwrap.TextWrapper._split) not in got  # private methods out
    assert len(got) == len(set(got))


def test_python_docstrings_do_not_follow_what_this_process_patched(monkeypatch):
    import textwrap

    monkeypatch.setattr(textwrap, "shorten", lambda *a: None)  # a patch here (as an imported package might make)
    monkeypatch.setattr(textwrap.TextWrapper, "__doc__", "Patched here only.")
    got = module_docstrings(["textwrap"])
    assert "Patched here only." not in got and any(d.startswith("Collapse and truncate") for d in got)


def test_library_docstrings_read_a_subpackage_under_its_top_level_package():
    import inspect
    from email.mime.text import MIMEText

    assert inspect.getdoc(MIMEText) in module_docstrings(["email.mime.text"])  # defined in email.mime.text
    import yaml  # an installed package (the dev extra's PyYAML): read with the site packages, not without

    assert inspect.getdoc(yaml.safe_load) in module_docstrings(["yaml"], site=True)


def test_a_fresh_interpreter_gets_the_environment_asked_for(monkeypatch):
    monkeypatch.setenv("ES_TEST_KEPT", "kept")
    monkeypatch.setenv("ES_TEST_DROPPED", "here only")
    out = fresh_python("import os; print(os.environ.get('ES_TEST_KEPT'), os.environ.get('ES_TEST_DROPPED'), "
                           "os.environ.get('ES_TEST_SET'), os.listdir('.'))",
                           env={"ES_TEST_DROPPED": None, "ES_TEST_SET": "set"}, what="x")
    assert out.split() == ["kept", "None", "set", "[]"]  # and an empty working folder


@pytest.mark.fault
def test_a_fresh_interpreter_that_fails_is_named():
    with pytest.raises(DataError, match="cannot read duckdb's functions: ModuleNotFoundError: No module named "
                                           "'no_such_module_xyz'"):
        fresh_python("import no_such_module_xyz", what="duckdb's functions")

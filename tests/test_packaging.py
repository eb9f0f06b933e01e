"""What embedselect imports is what it declares, and the installed versions satisfy the declared floors."""

from __future__ import annotations

import ast
import importlib.metadata as md
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]


def _declared() -> tuple[dict[str, Requirement], dict[str, Requirement]]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    core = {canonicalize_name(r.name): r for r in map(Requirement, project["dependencies"])}
    extras = {
        canonicalize_name(r.name): r
        for reqs in project.get("optional-dependencies", {}).values()
        for r in map(Requirement, reqs)
    }
    return core, extras


def _third_party_imports() -> dict[str, set[str]]:
    """top-level module name -> the embedselect files that import it."""
    found: dict[str, set[str]] = {}
    for path in (REPO / "embedselect").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top != "embedselect" and top not in sys.stdlib_module_names:
                    found.setdefault(top, set()).add(str(path.relative_to(REPO)))
    return found


def test_every_imported_package_is_declared():
    core, extras = _declared()
    declared = set(core) | set(extras)
    dists = md.packages_distributions()
    missing = {}
    for module, files in sorted(_third_party_imports().items()):
        names = {canonicalize_name(d) for d in dists.get(module, [])}
        if not names & declared:
            missing[module] = (sorted(names), sorted(files))
    assert not missing, f"imported but not declared in pyproject.toml (module: distributions, files): {missing}"


def test_installed_versions_satisfy_the_declared_core_floors():
    core, _ = _declared()
    bad = {}
    for name, req in core.items():
        try:
            version = md.version(name)
        except md.PackageNotFoundError:
            bad[name] = "not installed"
            continue
        if version not in req.specifier and version.split("+")[0] not in req.specifier:
            bad[name] = f"{version} not in {req.specifier}"
    assert not bad, f"declared floors the test environment does not meet: {bad}"


def test_every_error_class_is_in_embedselect_errors_and_the_categories_at_the_top():
    """Every error embedselect raises is importable from ``embedselect.errors`` and listed in its ``__all__``; the
    package's top level holds the base class and the category bases (one per exit code), not the leaves."""
    import inspect

    import embedselect
    from embedselect import errors

    defined = {n for n, c in vars(errors).items() if inspect.isclass(c) and issubclass(c, errors.EmbedselectError)}
    assert "ModelFileError" in defined and len(defined) > 20
    assert defined - set(errors.__all__) == set(), "error classes missing from embedselect.errors.__all__"
    at_top = {n for n in embedselect.__all__ if n in defined}
    assert at_top == {"EmbedselectError", "DataError", "ConfigError", "CandidateError", "HubError", "CacheError",
                      "MetricError"}
    assert all(getattr(embedselect, n) is getattr(errors, n) for n in at_top)
    assert {getattr(errors, n).exit_code for n in at_top - {"EmbedselectError"}} == {2, 3, 4, 5, 6, 7}


def test_lazy_exports_are_visible_to_type_checkers():
    """The ``if TYPE_CHECKING:`` imports of embedselect/__init__.py name exactly what ``__getattr__`` serves lazily,
    each from the module ``_LAZY`` says, are listed in ``__all__``, and every name resolves at run time."""
    import importlib

    import embedselect

    tree = ast.parse((REPO / "embedselect" / "__init__.py").read_text(encoding="utf-8"))
    typed: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.module, "only 'from X import Y' under TYPE_CHECKING"
                typed.update({a.asname or a.name: imp.module for a in imp.names})
    assert typed == embedselect._LAZY
    assert set(typed) <= set(embedselect.__all__) and len(set(embedselect.__all__)) == len(embedselect.__all__)
    for name, module in typed.items():
        assert getattr(embedselect, name) is getattr(importlib.import_module(module), name)

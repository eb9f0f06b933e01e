"""The layers of DESIGN.md hold: imports go downward only, no two modules import each other, and no module
reaches into another module's private names."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "embedselect"

# Every top-level module or package of embedselect ("part") -> the parts it may import (a part always may import
# itself). The layers of DESIGN.md, lowest first; test_every_part_has_a_rule fails for a new part without a rule.
_LOW = {"errors", "version", "_util", "_fs"}
MAY_IMPORT: dict[str, set[str]] = {
    # leaves: the errors, the version, the run configuration's types, small shared rules
    "errors": set(),
    "version": set(),
    "_util": {"errors"},  # kinds, arrays (the one (n, d) validator), redaction, progress, compat
    "_fs": {"errors"},  # the one guard every writer of published files goes through, and its read side
    "config": {"errors", "_util", "metrics"},  # RankConfig / Runtime / LoadPolicy: validated once (metric names
    # against the registry), built by the CLI, select() and the nightly
    # pure array code and what is built on it
    "nn": _LOW,  # FAISS k-NN primitives and where FAISS runs
    "metrics": _LOW | {"nn"},
    "ranking": _LOW | {"metrics"},  # the result type, combining ranks, the bootstrap
    "validation": _LOW | {"nn", "metrics", "ranking"},  # held-out probes, retrieval scores and the check against them
    # data, models, the cache: side by side, none imports another
    "data": _LOW | {"nn"},
    "models": _LOW | {"config"},  # candidates, backends, hub, load policy, model-folder layout
    "store": _LOW | {"models"},
    "publish": _LOW | {"ranking", "data"},  # reads Rankings (and the data's notes), never recomputes
    # the orchestration: knows every part below it
    "pipeline": _LOW | {"config", "nn", "models", "data", "store", "metrics", "ranking", "validation"},
    "search": _LOW | {"config", "pipeline", "nn", "models", "data", "metrics", "ranking", "store"},
    "nightly": _LOW | {"config", "pipeline", "models", "data", "metrics", "publish", "ranking", "store"},
    # what reads finished results and hands them to other tools (MLflow): optional extras, imported when used
    "integrations": _LOW | {"ranking", "publish"},
    "cli": {"*"},
    "__main__": {"cli"},
    "": {"*"},  # embedselect/__init__.py: the package facade
}
"""The top level holds the facade, ``config``, ``errors`` and ``version`` (and ``__main__``); every other module
lives in the package of its concern (test_no_loose_top_level_module)."""
TOP_LEVEL_MODULES = {"__init__", "__main__", "config", "errors", "version"}

# Temporary, documented exceptions to the rules above: "importer module -> imported module[.name]" -> why it is
# still there. Delete an entry when the branch that removes the import lands (the test fails on a stale entry).
EXCEPTIONS: dict[str, str] = {}


def _modules() -> dict[str, tuple[Path, ast.Module]]:
    return dict(_parsed())


@functools.cache
def _parsed() -> dict[str, tuple[Path, ast.Module]]:
    """Every module of the package, parsed once per test session."""
    out = {}
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG.parent).with_suffix("")
        name = ".".join(rel.parts).removesuffix(".__init__")
        out[name] = (path, ast.parse(path.read_text(encoding="utf-8")))
    return out


def _type_checking_only(tree: ast.Module) -> set[int]:
    """ids of the import nodes under ``if TYPE_CHECKING:`` (annotations only: no runtime dependency)."""
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", None)) == "TYPE_CHECKING":
            skip |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return skip


def _imports(tree: ast.Module) -> list[tuple[str, list[str]]]:
    found = []
    skip = _type_checking_only(tree)
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "embedselect":
            found += [(f"embedselect.{a.name}", []) for a in node.names]  # `from embedselect import fsguard`
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module.startswith("embedselect"):
            found.append((node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            found += [(a.name, []) for a in node.names if a.name.startswith("embedselect")]
    return found


def _part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _top_level_parts() -> set[str]:
    return {p.stem if p.is_file() else p.name for p in PKG.iterdir()
            if (p.suffix == ".py" and p.stem != "__init__") or (p.is_dir() and (p / "__init__.py").is_file())} | {""}


def test_every_part_has_a_rule():
    missing = sorted(_top_level_parts() - set(MAY_IMPORT))
    assert not missing, f"top-level modules without a layer rule in MAY_IMPORT: {missing}"


def _arrows() -> list[str]:
    """Every "importer -> target" arrow between two parts that the rules do not allow."""
    bad = []
    for name, (_, tree) in _modules().items():
        allowed = MAY_IMPORT.get(_part(name), set())
        for target, _names in _imports(tree):
            tpart = _part(target)
            if tpart != _part(name) and "*" not in allowed and tpart not in allowed:
                bad.append(f"{name} -> {target}")
    return sorted(set(bad))


def _internal_names() -> dict[str, set[str]]:
    """module -> its functions and classes whose docstring starts with "Internal" (not for other modules)."""
    out: dict[str, set[str]] = {}
    for name, (_, tree) in _modules().items():
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                doc = ast.get_docstring(node) or ""
                if doc.startswith("Internal"):
                    out.setdefault(name, set()).add(node.name)
    return out


def _internal_uses() -> list[str]:
    internal = _internal_names()
    bad = []
    for name, (_, tree) in _modules().items():
        for target, names in _imports(tree):
            if target != name:
                bad += [f"{name} -> {target}.{n}" for n in names if n in internal.get(target, set())]
    return sorted(set(bad))


def test_imports_go_downward_only():
    bad = [a for a in _arrows() if a not in EXCEPTIONS]
    assert not bad, "imports against the layers: " + ", ".join(bad)


def test_internal_functions_are_not_used_outside_their_module():
    bad = [a for a in _internal_uses() if a not in EXCEPTIONS]
    assert not bad, "internal names used outside their module: " + ", ".join(bad)


def test_every_exception_to_the_layers_is_still_needed():
    stale = sorted(set(EXCEPTIONS) - set(_arrows()) - set(_internal_uses()))
    assert not stale, f"EXCEPTIONS entries whose import is gone (delete them): {stale}"


def test_the_layer_test_catches_an_upward_import(monkeypatch):
    """The rules bite: a metrics module importing the store, or a new part without a rule, is reported."""
    mods = _modules()
    tree = ast.parse("from embedselect.store import Store\n")
    monkeypatch.setitem(globals(), "_modules", lambda: {**mods, "embedselect.metrics.fake": (PKG, tree)})
    assert "embedselect.metrics.fake -> embedselect.store" in _arrows()
    monkeypatch.setitem(MAY_IMPORT, "store", MAY_IMPORT["store"])
    monkeypatch.delitem(MAY_IMPORT, "store")
    with pytest.raises(AssertionError, match="store"):
        test_every_part_has_a_rule()


def test_no_two_modules_import_each_other():
    mods = _modules()
    deps = {name: {t for t, _ in _imports(tree)} for name, (_, tree) in mods.items()}
    loops = sorted({tuple(sorted((a, b))) for a, ds in deps.items() for b in ds if b in deps and a in deps[b] and a != b})
    assert not loops, f"modules importing each other: {loops}"


MAX_FUNCTION_LINES = 120
"""A function over 120 lines is a sign two steps share it."""
def test_no_function_over_120_lines():
    big = []
    for name, (_path, tree) in _modules().items():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    big.append(f"function {name}.{node.name}: {length} lines")
    assert not big, "split these by step: " + "; ".join(sorted(big))


def test_no_loose_top_level_module():
    loose = sorted(p.stem for p in PKG.glob("*.py") if p.stem not in TOP_LEVEL_MODULES)
    assert not loose, f"top-level modules beside the facade (move each into the package of its concern): {loose}"


# The checkout's top-level folders -> the folders (of these) their Python files may import. The product imports
# none of them; tests/ and benchmarks/ share fixtures through testkit/ and never import each other; lab/ (exploratory
# scripts, never collected by pytest) may import anything, nothing imports it.
ROOT = PKG.parent
REPO_MAY_IMPORT: dict[str, set[str]] = {
    "embedselect": set(),
    "scripts": {"embedselect"},
    "testkit": {"embedselect"},
    "tests": {"embedselect", "testkit", "scripts"},
    "benchmarks": {"embedselect", "testkit", "scripts"},
    "lab": {"embedselect", "testkit", "benchmarks"},
}


def _repo_arrows(folder: str) -> list[str]:
    bad = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            for top in {n.split(".")[0] for n in names}:
                if top in REPO_MAY_IMPORT and top != folder and top not in REPO_MAY_IMPORT[folder]:
                    bad.append(f"{path.relative_to(ROOT)} imports {top}")
    return bad


@pytest.mark.parametrize("folder", sorted(REPO_MAY_IMPORT))
def test_the_checkouts_folders_import_only_what_they_may(folder):
    assert (ROOT / folder).is_dir()
    assert not _repo_arrows(folder), _repo_arrows(folder)


def test_no_folder_edits_sys_path_or_carries_formatter_markers():
    """Benchmarks and tests import each other's code as packages (``python -m benchmarks.X``), never by editing
    ``sys.path``; no formatter-skip comments (no formatter is configured)."""
    needles = ("sys.path." + "insert(", "sys.path." + "append(", "# fmt: " + "skip")  # split: this file is scanned too
    bad = [f"{p.relative_to(ROOT)}:{i}" for folder in REPO_MAY_IMPORT for p in sorted((ROOT / folder).rglob("*.py"))
           for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if any(n in line for n in needles)]
    assert not bad, bad


def test_the_folder_rule_catches_a_test_importing_a_benchmark(monkeypatch):
    monkeypatch.setitem(REPO_MAY_IMPORT, "tests", {"embedselect"})  # as if testkit were a benchmark module
    assert any(a.endswith("imports testkit") for a in _repo_arrows("tests"))


def test_no_module_imports_another_modules_private_names():
    bad = []
    for name, (_, tree) in _modules().items():
        for target, names in _imports(tree):
            if target == name:
                continue
            bad += [f"{name} imports {target}.{n}" for n in names if n.startswith("_") and not n.startswith("__")]
    assert not bad, "private names used across modules: " + ", ".join(sorted(bad))


def test_baseline_registry_is_the_one_backends_implement():
    from embedselect.models.backends.baselines import BASELINE_CLASSES
    from embedselect._util.kinds import BASELINES

    assert set(BASELINE_CLASSES) == set(BASELINES)


def test_one_metric_spec_feeds_select_the_bootstrap_and_the_cache():
    from embedselect.errors import ConfigError, UnknownMetricError
    from embedselect.metrics import base
    from embedselect.metrics.sufficiency.score import MIN_ITEMS as SUFF_MIN

    assert base.get_spec("sufficiency").min_items == base.MIN_ITEMS["sufficiency"] == SUFF_MIN
    assert base.get_spec("sufficiency").resample == "half" and base.get_spec("task_prior").resample == "bootstrap"
    assert base.spec_of(base.get_metric("task_prior")) is base.get_spec("task_prior")
    a, b = base.get_spec("task_prior").code_version(), base.get_spec("sufficiency").code_version()
    assert len(a) == 64 and a != b  # each metric versioned by its own code
    with pytest.raises(UnknownMetricError):
        base.get_spec("nope")
    with pytest.raises(ConfigError, match="registered already"):
        base.register_metric(base.MetricSpec("task_prior", "x:y"))
    with pytest.raises(ConfigError, match="resample"):
        base.register_metric(base.MetricSpec("new_metric", "x:y", resample="jackknife"))


def test_a_registered_metric_runs_through_select(tmp_path, cache_dir, monkeypatch):
    """The extension point: a metric registered with register_metric() is ranked, cached and bootstrapped."""
    import numpy as np

    import embedselect
    from embedselect.data import sample_path
    from embedselect.metrics import base

    def dims(ctx):
        return base.MetricResult("dims", {k: float(np.shape(v)[1]) for k, v in ctx.embeddings.items()})

    monkeypatch.setattr(base, "_SPECS", dict(base._SPECS))
    base.register_metric(base.MetricSpec("dims", dims, min_items=5, description="embedding width"))
    r = embedselect.select(sample_path("texts"), "tfidf-svd,random-projection", column="text", metrics=["dims"],
                           seed=0, bootstrap=3)
    assert r.best.name == "random-projection" and r["random-projection"].scores["dims"] == 256.0
    assert "dims" in (r.uncertainty or {})


def test_a_metrics_code_version_hashes_what_computes_it_not_the_registrys_weights():
    """Changing a default weight (how scores are combined) keeps every cached metric result; changing the pool rules
    every metric applies (metrics/pool.py) recomputes them all."""
    import dataclasses

    from embedselect.metrics.base import _SHARED_CODE, get_spec

    spec = get_spec("nn_agreement")
    assert dataclasses.replace(spec, weight=spec.weight + 1.0).code_version() == spec.code_version()
    assert "embedselect.metrics.pool" in _SHARED_CODE and "embedselect.metrics.base" not in _SHARED_CODE


@pytest.mark.parametrize("metric", ["task_prior", "sufficiency"])
def test_a_metrics_code_version_covers_every_module_of_its_package(metric):
    """Every module of the metric's own package is in its code list (so editing any of them recomputes its cached
    results), and so is every embedselect.metrics module its package imports, except the registry (base)."""
    import ast
    import importlib
    import pkgutil

    from embedselect.metrics.base import _SHARED_CODE, get_spec

    spec = get_spec(metric)
    package = importlib.import_module(f"embedselect.metrics.{metric}")
    own = {m.name for m in pkgutil.walk_packages(package.__path__, prefix=package.__name__ + ".")}
    assert own and own <= set(spec.code), sorted(own - set(spec.code))
    imported = set()
    for name in own:
        tree = ast.parse(Path(importlib.import_module(name).__file__).read_text())
        imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module
                     and n.module.startswith("embedselect.metrics.") and not n.module.startswith(package.__name__)}
    missing = imported - set(spec.code) - set(_SHARED_CODE) - {"embedselect.metrics.base"}
    assert not missing, sorted(missing)


def test_the_option_names_module_is_in_no_metrics_code_version():
    """Naming a metric's options (for the check before a run) changes nothing it computes: the module that names
    them is in no metric's code version, so editing it keeps every cached metric result (it was once in
    sufficiency's, and every cached sufficiency result read as stale)."""
    from embedselect.metrics.base import _SHARED_CODE, available_metrics, get_spec

    assert "embedselect.metrics.option_names" not in _SHARED_CODE
    for m in available_metrics():
        assert "embedselect.metrics.option_names" not in get_spec(m).code, m
    assert str(get_spec("sufficiency").options).startswith("embedselect.metrics.option_names:")

"""The layers of DESIGN.md hold: imports go downward only, no two modules import each other, and no module
reaches into another module's private names."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "embedselect"

# part -> parts it must never import (directly, at any depth of the module)
FORBIDDEN = {
    "metrics": {"backends", "store", "hub", "api", "candidates", "cli", "publish", "nightly", "executors", "search"},
    "backends": {"metrics", "store", "hub", "api", "candidates", "cli", "publish", "nightly", "executors"},
    "store": {"hub", "api", "candidates", "backends", "metrics", "cli", "publish", "nightly", "executors"},
    "candidates": {"backends", "api", "cli", "store", "metrics", "publish", "nightly"},
    "kinds": {"*"},
    "redaction": {"*"},
    "errors": {"*"},
    "layout": {"*"},
    "fsguard": {"*"},
    "version": {"*"},
}
# part -> the only parts it may import although FORBIDDEN bans all ("*")
ALLOWED = {"layout": {"errors"}, "fsguard": {"errors"}}


def _modules() -> dict[str, tuple[Path, ast.Module]]:
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
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module.startswith("embedselect"):
            found.append((node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            found += [(a.name, []) for a in node.names if a.name.startswith("embedselect")]
    return found


def _part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_imports_go_downward_only():
    bad = []
    for name, (_, tree) in _modules().items():
        banned = FORBIDDEN.get(_part(name), set())
        for target, _names in _imports(tree):
            tpart = _part(target)
            allowed = ALLOWED.get(_part(name), set())
            if tpart and tpart != _part(name) and tpart not in allowed and ("*" in banned or tpart in banned):
                bad.append(f"{name} -> {target}")
    assert not bad, "imports against the layers: " + ", ".join(sorted(bad))


def test_no_two_modules_import_each_other():
    mods = _modules()
    deps = {name: {t for t, _ in _imports(tree)} for name, (_, tree) in mods.items()}
    loops = sorted({tuple(sorted((a, b))) for a, ds in deps.items() for b in ds if b in deps and a in deps[b] and a != b})
    assert not loops, f"modules importing each other: {loops}"


def test_no_module_imports_another_modules_private_names():
    bad = []
    for name, (_, tree) in _modules().items():
        for target, names in _imports(tree):
            if target == name:
                continue
            bad += [f"{name} imports {target}.{n}" for n in names if n.startswith("_") and not n.startswith("__")]
    assert not bad, "private names used across modules: " + ", ".join(sorted(bad))


def test_baseline_registry_is_the_one_backends_implement():
    from embedselect.backends.baselines import BASELINE_CLASSES
    from embedselect.kinds import BASELINES

    assert set(BASELINE_CLASSES) == set(BASELINES)


def test_one_metric_spec_feeds_select_the_bootstrap_and_the_cache():
    from embedselect.errors import ConfigError, UnknownMetricError
    from embedselect.metrics import base
    from embedselect.metrics.sufficiency import MIN_ITEMS as SUFF_MIN

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
                           seed=0, bootstrap=3)  # fmt: skip
    assert r.best.name == "random-projection" and r["random-projection"].scores["dims"] == 256.0
    assert "dims" in (r.uncertainty or {})

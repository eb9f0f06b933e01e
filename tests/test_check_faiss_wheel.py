"""scripts/check_faiss_wheel.py reads GPU architectures from ELF fat binaries: checked on synthetic libraries
built here (an ELF64 file with a .nv_fatbin section holding hand-made fat binaries), no download."""

from __future__ import annotations

import importlib.util
import sys
import zipfile
from pathlib import Path

import pytest

from testkit.elf import elf as _elf, fatbin as _fatbin

ROOT = Path(__file__).resolve().parents[1]


def _checker():
    spec = importlib.util.spec_from_file_location("check_faiss_wheel", ROOT / "scripts" / "check_faiss_wheel.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up while the class is built
    spec.loader.exec_module(mod)
    return mod


def _wheel(path: Path, libs: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in libs.items():
            zf.writestr(name, data)
        zf.writestr("faiss-0.0.dist-info/METADATA", "Name: faiss\n")
    return path


def test_archs_are_read_from_every_fat_binary_of_the_nv_fatbin_section(tmp_path):
    chk = _checker()
    # two fat binaries with padding between them: sm_70 + sm_80 SASS; sm_86 SASS + ptx_90
    blob = _fatbin([(2, 70), (2, 80)]) + b"\0" * 8 + _fatbin([(2, 86), (1, 90)])
    so = tmp_path / "libfaiss.so"
    so.write_bytes(_elf({".text": b"\x90" * 40, ".nv_fatbin": blob}))
    (lib,) = chk.scan(so)
    assert [[e.label for e in fb] for fb in lib.fatbins] == [["sm_70", "sm_80"], ["sm_86", "ptx_90"]]
    assert lib.archs() == ["sm_70", "sm_80", "sm_86", "ptx_90"]
    assert lib.missing(90) == 1  # the first one has no sm_9x SASS and no PTX: CUDA error 209 on an H100
    assert lib.missing(86) == 0 and lib.missing(89) == 0  # sm_80/sm_86 SASS runs on 8.6 and 8.9


def test_sass_runs_within_its_major_and_ptx_on_anything_newer():
    chk = _checker()
    e = chk.Entry
    assert chk.runs_on(e("sass", 90), 90) and not chk.runs_on(e("sass", 80), 90)
    assert chk.runs_on(e("sass", 80), 86) and not chk.runs_on(e("sass", 86), 80)
    assert not chk.runs_on(e("sass", 90), 100)
    assert chk.runs_on(e("ptx", 90), 100) and chk.runs_on(e("ptx", 75), 90) and not chk.runs_on(e("ptx", 100), 90)


@pytest.mark.parametrize("fatbins, code", [
    ([[(2, 70), (2, 80)], [(2, 90)]], 1),          # one compilation unit without sm_90 code
    ([[(2, 80), (2, 90)], [(2, 75), (1, 90)]], 0),  # SASS in one, PTX that JITs in the other
    ([], 1),                                        # no GPU code at all (a CPU build)
])
def test_a_wheel_passes_only_when_every_fat_binary_runs_on_sm_90(tmp_path, capsys, fatbins, code):
    chk = _checker()
    sections = {".text": b"\x90" * 16}
    if fatbins:
        sections[".nv_fatbin"] = b"".join(_fatbin(fb) for fb in fatbins)
    whl = _wheel(tmp_path / "faiss_x-1.0-py3-none-any.whl",
                 {"faiss/libfaiss.so": _elf(sections), "faiss/_swigfaiss.so": _elf({".text": b"\0" * 8}),
                  "faiss/__init__.py": b""})
    assert chk.main([str(whl)]) == code
    out = capsys.readouterr().out
    assert ("runs on sm_90: yes" in out) == (code == 0)
    if fatbins:
        assert "faiss/libfaiss.so" in out and "_swigfaiss" not in out  # only libraries with GPU code are listed


def test_a_missing_file_is_a_usage_error(tmp_path, capsys):
    assert _checker().main([str(tmp_path / "nope.whl")]) == 2
    assert "no such file" in capsys.readouterr().err

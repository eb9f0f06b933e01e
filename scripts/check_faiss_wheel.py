#!/usr/bin/env python3
"""Which GPU architectures a FAISS wheel's shared libraries carry code for, without cuobjdump.

    python scripts/check_faiss_wheel.py WHEEL_OR_NAME [--arch 90] [--json]

WHEEL_OR_NAME is a ``.whl`` file, an unpacked folder, a single ``.so``, or a requirement (``faiss-gpu==1.15.1``),
which is fetched with ``pip download --no-deps --only-binary=:all:`` for CPython 3.11 on manylinux x86_64.

How: every ELF shared library in the wheel is read section by section; the ``.nv_fatbin`` section (and
``__nv_relfatbin``) holds one or more CUDA fat binaries, one per compilation unit. Each starts with a 16-byte
header (magic ``0xBA55ED50``, version, header size, payload size) followed by entries, each with a 64-byte
header whose ``kind`` says SASS (2, a cubin) or PTX (1) and whose ``arch`` field is the SM number (90 = sm_90).

A GPU of compute capability X.Y runs a fat binary when it holds SASS for the same major with minor <= Y, or
PTX for any arch <= XY (the driver compiles it at load time). The check passes when, in every library, every
fat binary holds such an entry for ``--arch`` (default 90, an H100): a compilation unit without one is exactly
what fails at run time with "CUDA error 209: no kernel image is available for execution on the device".

Exit status: 0 every fat binary can run on the arch; 1 some cannot (or the wheel has no GPU code at all);
2 bad input (no such file, a download that failed).
"""

from __future__ import annotations

import argparse
import json
import struct
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

FATBIN_MAGIC = 0xBA55ED50
FATBIN_SECTIONS = (".nv_fatbin", "__nv_relfatbin")
KIND_PTX, KIND_SASS = 1, 2
_FAT_HEADER = struct.Struct("<IHHQ")  # magic, version, header size, payload size
_ENTRY_HEADER = struct.Struct("<HHIQIIHHIIIQQQ")
"""64 bytes: kind, ?, header size, payload size, compressed size, ?, minor, major, arch, name offset, name length,
flags, 0, uncompressed size (the layout libcuda reads; cuobjdump -lelf -lptx lists the same kind and arch)."""


@dataclass(frozen=True)
class Entry:
    """One fat-binary entry: ``kind`` "sass" or "ptx", ``arch`` the SM number (e.g. 90)."""

    kind: str
    arch: int

    @property
    def label(self) -> str:
        return f"{'sm' if self.kind == 'sass' else 'ptx'}_{self.arch}"


@dataclass
class Library:
    """The fat binaries of one shared library: a list of entry lists, one per fat binary."""

    path: str
    fatbins: list[list[Entry]] = field(default_factory=list)

    def archs(self) -> list[str]:
        labels = {e.label for fb in self.fatbins for e in fb}
        return sorted(labels, key=lambda s: (int(s.split("_")[1]), s))

    def missing(self, arch: int) -> int:
        """How many fat binaries hold nothing that a GPU of SM number ``arch`` can run."""
        return sum(1 for fb in self.fatbins if not any(runs_on(e, arch) for e in fb))


def runs_on(entry: Entry, arch: int) -> bool:
    """Whether ``entry`` runs on a GPU of SM number ``arch`` (SASS: same major, minor <= ; PTX: arch <=)."""
    if entry.kind == "ptx":
        return entry.arch <= arch
    return entry.arch // 10 == arch // 10 and entry.arch % 10 <= arch % 10


def elf_sections(data: bytes) -> dict[str, bytes]:
    """Section name -> contents of a little-endian ELF64 file (empty dict for anything else)."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return {}
    e_shoff, = struct.unpack_from("<Q", data, 0x28)
    e_shentsize, e_shnum, e_shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    if not e_shoff or not e_shnum:
        return {}
    heads = []
    for i in range(e_shnum):
        off = e_shoff + i * e_shentsize
        name, stype, _flags, _addr, offset, size = struct.unpack_from("<IIQQQQ", data, off)
        heads.append((name, stype, offset, size))
    _, _, str_off, str_size = heads[e_shstrndx]
    strtab = data[str_off:str_off + str_size]
    out = {}
    for name, stype, offset, size in heads:
        end = strtab.find(b"\0", name)
        label = strtab[name:end].decode("ascii", "replace")
        out[label] = b"" if stype == 8 else data[offset:offset + size]  # SHT_NOBITS holds no bytes
    return out


def parse_fatbins(blob: bytes) -> list[list[Entry]]:
    """The fat binaries in a ``.nv_fatbin`` section: each a list of :class:`Entry`.

    Fat binaries follow each other, each aligned to 8 bytes; bytes that do not start with the magic are skipped
    8 at a time (padding between them).
    """
    out: list[list[Entry]] = []
    pos = 0
    while pos + _FAT_HEADER.size <= len(blob):
        magic, _version, hsize, size = _FAT_HEADER.unpack_from(blob, pos)
        if magic != FATBIN_MAGIC:
            pos += 8
            continue
        entries = []
        epos, end = pos + hsize, min(len(blob), pos + hsize + size)
        while epos + _ENTRY_HEADER.size <= end:
            f = _ENTRY_HEADER.unpack_from(blob, epos)
            kind, ehsize, esize, arch = f[0], f[2], f[3], f[8]
            if ehsize < _ENTRY_HEADER.size or kind not in (KIND_PTX, KIND_SASS):
                break
            entries.append(Entry("ptx" if kind == KIND_PTX else "sass", int(arch)))
            epos += ehsize + esize
        out.append(entries)
        pos = max(pos + 8, (end + 7) // 8 * 8)
    return out


def scan_library(path: Path, label: str | None = None) -> Library:
    data = path.read_bytes()
    sections = elf_sections(data)
    lib = Library(label or str(path))
    for name in FATBIN_SECTIONS:
        if sections.get(name):
            lib.fatbins.extend(parse_fatbins(sections[name]))
    return lib


def _is_library(name: str) -> bool:
    base = Path(name).name
    return base.endswith(".so") or ".so." in base


def scan(target: Path) -> list[Library]:
    """Every shared library in a wheel, a folder or a single file."""
    if target.is_file() and target.suffix == ".whl":
        libs = []
        with zipfile.ZipFile(target) as zf, tempfile.TemporaryDirectory() as tmp:
            for info in zf.infolist():
                if _is_library(info.filename):
                    p = Path(zf.extract(info, tmp))
                    libs.append(scan_library(p, info.filename))
                    p.unlink()
        return libs
    if target.is_dir():
        return [scan_library(p, str(p.relative_to(target))) for p in sorted(target.rglob("*"))
                if p.is_file() and _is_library(p.name)]
    return [scan_library(target)]


def download(requirement: str, dest: Path) -> Path:
    """``pip download`` one wheel (no dependencies) for CPython 3.11 / manylinux x86_64; its path."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version", "3.11",
           "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_17_x86_64", "-d", str(dest), requirement]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wheels = sorted(dest.glob("*.whl"))
    if proc.returncode != 0 or not wheels:
        raise SystemExit(f"check_faiss_wheel: pip download {requirement} failed:\n{proc.stderr[-2000:]}")
    return wheels[0]


def report(libs: list[Library], arch: int) -> tuple[bool, list[dict]]:
    rows = [{"library": lib.path, "fatbins": len(lib.fatbins), "archs": lib.archs(),
             "fatbins_without_code_for_arch": lib.missing(arch)} for lib in libs if lib.fatbins]
    ok = bool(rows) and all(r["fatbins_without_code_for_arch"] == 0 for r in rows)
    return ok, rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("target", help="a .whl, an unpacked folder, a .so, or a requirement such as faiss-gpu==1.15.1")
    ap.add_argument("--arch", type=int, default=90, help="SM number the code must run on (default 90: H100)")
    ap.add_argument("--json", action="store_true", help="print JSON instead of text")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="check-faiss-") as tmp:
        path = Path(a.target)
        if not path.exists():
            if a.target.endswith((".whl", ".so")) or "/" in a.target:
                print(f"check_faiss_wheel: no such file {a.target}", file=sys.stderr)
                return 2
            path = download(a.target, Path(tmp))
        ok, rows = report(scan(path), a.arch)
        name = path.name
    if a.json:
        print(json.dumps({"wheel": name, "arch": a.arch, "ok": ok, "libraries": rows}, indent=2))
    else:
        print(f"{name}: GPU code per shared library (runs on sm_{a.arch}: {'yes' if ok else 'NO'})")
        for r in rows:
            print(f"  {r['library']}: {r['fatbins']} fat binaries; {' '.join(r['archs'])}"
                  + (f"; {r['fatbins_without_code_for_arch']} without code for sm_{a.arch}"
                     if r["fatbins_without_code_for_arch"] else ""))
        if not rows:
            print("  no CUDA fat binaries in any shared library (a CPU-only build?)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

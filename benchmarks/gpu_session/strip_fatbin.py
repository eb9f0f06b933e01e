#!/usr/bin/env python3
"""Zero every fat-binary payload of a shared library except one architecture's SASS, for transport only.

    python -m benchmarks.gpu_session.strip_fatbin LIB.so OUT.so [--arch 90]     # from the checkout's root

The headers stay, so the CUDA driver still finds the entries; it loads the SASS of the GPU's own architecture and
never reads the zeroed ones (a fat binary with no SASS for ``--arch`` keeps its PTX). faiss-gpu 1.15.1's libfaiss.so
(199 MB, sm_70 … sm_90 + PTX) shrinks to 21 MB compressed: what fits a lent GPU machine's 64 MiB transfer. A library
stripped so runs only on that architecture; never install it anywhere else.
"""

from __future__ import annotations

import argparse
import struct
import sys
from pathlib import Path

from scripts.check_faiss_wheel import _ENTRY_HEADER, _FAT_HEADER, FATBIN_MAGIC, FATBIN_SECTIONS, KIND_PTX, KIND_SASS


def section_offsets(data: bytes) -> dict[str, tuple[int, int]]:
    """Section name -> (file offset, size) of a little-endian ELF64 file."""
    e_shoff, = struct.unpack_from("<Q", data, 0x28)
    e_shentsize, e_shnum, e_shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    heads = [struct.unpack_from("<IIQQQQ", data, e_shoff + i * e_shentsize) for i in range(e_shnum)]
    _, _, _, _, str_off, str_size = heads[e_shstrndx]
    strtab = data[str_off:str_off + str_size]
    return {strtab[h[0]:strtab.find(b"\0", h[0])].decode("ascii", "replace"): (h[4], h[5]) for h in heads}


def strip(data: bytearray, arch: int) -> tuple[int, int, int]:
    """Zero, in place, every entry payload but ``arch``'s SASS; returns (fat binaries, bytes kept, bytes zeroed)."""
    fatbins = kept = zeroed = 0
    for name, (offset, size) in section_offsets(bytes(data)).items():
        if name not in FATBIN_SECTIONS:
            continue
        pos, stop = offset, offset + size
        while pos + _FAT_HEADER.size <= stop:
            magic, _version, hsize, fsize = _FAT_HEADER.unpack_from(data, pos)
            if magic != FATBIN_MAGIC:
                pos += 8
                continue
            fatbins += 1
            epos, end = pos + hsize, min(stop, pos + hsize + fsize)
            entries = []
            while epos + _ENTRY_HEADER.size <= end:
                f = _ENTRY_HEADER.unpack_from(data, epos)
                kind, ehsize, esize, entry_arch = f[0], f[2], f[3], f[8]
                if ehsize < _ENTRY_HEADER.size or kind not in (KIND_PTX, KIND_SASS):
                    break
                entries.append((kind, entry_arch, epos + ehsize, esize))
                epos += ehsize + esize
            has_sass = any(k == KIND_SASS and a == arch for k, a, _, _ in entries)
            for kind, entry_arch, start, length in entries:
                if (kind == KIND_SASS and entry_arch == arch) or (not has_sass and kind == KIND_PTX):
                    kept += length
                else:
                    data[start:start + length] = bytes(length)
                    zeroed += length
            pos = max(pos + 8, (end + 7) // 8 * 8)
    return fatbins, kept, zeroed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("lib", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--arch", type=int, default=90, help="SM number whose SASS is kept (default 90: H100, H200)")
    a = ap.parse_args(argv)
    data = bytearray(a.lib.read_bytes())
    fatbins, kept, zeroed = strip(data, a.arch)
    a.out.write_bytes(bytes(data))
    print(f"{a.lib.name}: {fatbins} fat binaries, kept {kept / 2**20:.1f} MiB, zeroed {zeroed / 2**20:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())

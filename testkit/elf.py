"""Synthetic ELF64 shared objects with a ``.nv_fatbin`` section of hand-made CUDA fat binaries, for the tests of
scripts/check_faiss_wheel.py (tests/) and benchmarks/gpu_session/strip_fatbin.py (benchmarks/tests/)."""

from __future__ import annotations

import struct


def entry(kind: int, arch: int, payload: bytes = b"\0" * 24) -> bytes:
    head = struct.pack("<HHIQIIHHIIIQQQ", kind, 0x0101, 64, len(payload), 0, 0, 7, 1, arch, 0, 0, 0x11, 0, 0)
    assert len(head) == 64
    return head + payload


def fatbin(entries: list[tuple[int, int]]) -> bytes:
    body = b"".join(entry(k, a) for k, a in entries)
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(body)) + body


def elf(sections: dict[str, bytes]) -> bytes:
    """A minimal little-endian ELF64 shared object: ELF header, section bodies, .shstrtab, section headers."""
    names = [""] + list(sections) + [".shstrtab"]
    strtab = b"".join(n.encode() + b"\0" for n in names)
    name_off, off = [], 0
    for n in names:
        name_off.append(off)
        off += len(n) + 1
    body = bytearray(b"\0" * 64)
    places = [(0, 0)]
    for data in list(sections.values()) + [strtab]:
        while len(body) % 8:
            body += b"\0"
        places.append((len(body), len(data)))
        body += data
    while len(body) % 8:
        body += b"\0"
    shoff = len(body)
    for i, (o, size) in enumerate(places):
        stype = 0 if i == 0 else (3 if i == len(places) - 1 else 1)
        body += struct.pack("<IIQQQQIIQQ", name_off[i], stype, 0, 0, o, size, 0, 0, 8, 0)
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + b"\0" * 8
    header = ident + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, shoff, 0, 64, 56, 0, 64, len(places),
                                 len(places) - 1)
    body[:64] = header
    return bytes(body)

"""benchmarks/gpu_session/strip_fatbin.py on a synthetic ELF library (testkit.elf), no download."""

from __future__ import annotations

import struct

from benchmarks.gpu_session import strip_fatbin as strip
from scripts import check_faiss_wheel as checker
from testkit.elf import elf, entry as make_entry


def test_strip_fatbin_keeps_only_one_architectures_sass_and_every_header(tmp_path):
    """benchmarks/gpu_session/strip_fatbin.py (transport to a lent GPU): sm_90 SASS payloads stay byte for byte,
    the others are zeroed, the checker still lists every entry, and a fat binary without sm_90 SASS keeps its PTX."""
    def entry(kind, arch):
        return make_entry(kind, arch, payload=bytes([arch]) * 24)

    def fatbin(entries):
        body = b"".join(entry(k, a) for k, a in entries)
        return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(body)) + body

    lib = tmp_path / "libfaiss.so"
    lib.write_bytes(elf({".text": b"\x90" * 32, ".nv_fatbin": fatbin([(2, 80), (2, 90), (1, 90)]) + fatbin([(2, 80), (1, 90)])}))
    out = tmp_path / "stripped.so"
    assert strip.main([str(lib), str(out)]) == 0
    data = out.read_bytes()
    assert len(data) == lib.stat().st_size and data.count(bytes([90]) * 24) == 2  # sm_90 SASS and the lone PTX
    assert data.count(bytes([80]) * 24) == 0  # both sm_80 payloads zeroed
    assert [lb.archs() for lb in checker.scan(out)] == [["sm_80", "ptx_90", "sm_90"]]

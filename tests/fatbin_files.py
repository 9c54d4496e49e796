"""Hostile ELF files for the `.nv_fatbin` reader (envcheck/probe/fatbin.py): sparse files whose
headers claim what a damaged or forged library might, so that its work is shown to stay bounded.
Used by tests/unit/test_fatbin.py, the outside fault campaign and bench/bench_fatbin.py."""

from __future__ import annotations

import struct
from pathlib import Path


def hostile_elf(
    path: Path, *, fatbin_at: int, fatbin_size: int, size: int, shentsize: int = 64, shnum: int = 3
) -> None:
    """A sparse ELF file of `size` bytes whose `.nv_fatbin` section header claims `fatbin_size`
    bytes at `fatbin_at`, and whose ELF header claims `shnum` section headers of `shentsize`."""
    names = b"\0.nv_fatbin\0.shstrtab\0"
    headers = [
        bytes(64),
        struct.pack("<IIQQQQIIQQ", 1, 1, 0, 0, fatbin_at, fatbin_size, 0, 0, 1, 0),
        struct.pack("<IIQQQQIIQQ", 12, 3, 0, 0, 64, len(names), 0, 0, 1, 0),
    ]
    ident = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    shoff = 64 + len(names)
    header = ident + struct.pack(
        "<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, shoff, 0, 64, 0, 0, shentsize, shnum, 2
    )
    with open(path, "wb") as f:
        f.write(header + names + b"".join(headers))
        f.truncate(size)

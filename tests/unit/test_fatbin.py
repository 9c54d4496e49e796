"""The archs of a 2.x build read from its libraries' `.nv_fatbin`, on small ELF files
this suite builds with the layout `cuobjdump` reads (the real 2.6.2 wheel: bench/bench_fatbin.py).
"""

from __future__ import annotations

import io
import struct
from pathlib import Path
from typing import Any

import pytest

from envcheck.probe.fatbin import (
    FATBIN_MAGIC,
    KIND_ELF,
    KIND_PTX,
    MAX_ENTRIES,
    MAX_PADDING,
    FatbinError,
    library_archs,
    read_fatbin,
)
from envcheck.probe.interpreter import Interpreter
from envcheck.probe.paddle_build import probe_paddle
from tests.fatbin_files import hostile_elf
from tests.paddle_versions import VERSION_262_GPU

Entry = tuple[int, int, int]  # kind, arch, payload bytes


def fatbin(entries: list[Entry]) -> bytes:
    """One fat binary: its 16-byte header, then per entry a 64-byte header and the payload."""
    body = b""
    for kind, arch, size in entries:
        header = struct.pack("<HHIQIIHHI", kind, 0x0101, 64, size, 0, 0, 0, 0, arch)
        body += header.ljust(64, b"\0") + b"\xcc" * size
    return struct.pack("<IHHQ", FATBIN_MAGIC, 1, 16, len(body)) + body


def elf(sections: dict[bytes, bytes]) -> bytes:
    """A 64-bit little-endian ELF with these sections, a name table and the section headers."""
    names = b"\0" + b"".join(n + b"\0" for n in [*sections, b".shstrtab"])
    data, headers, at = b"", [bytes(64)], 64
    for name, content in [*sections.items(), (b".shstrtab", names)]:
        name_at = names.index(name + b"\0")
        headers.append(
            struct.pack("<IIQQQQIIQQ", name_at, 1, 0, 0, at + len(data), len(content), 0, 0, 1, 0)
        )
        data += content
    shoff = 64 + len(data)
    ident = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    header = ident + struct.pack(
        "<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64, len(headers), len(headers) - 1
    )
    return header + data + b"".join(headers)


def library(entries: list[Entry]) -> bytes:
    return elf({b".text": b"\x90" * 32, b".nv_fatbin": fatbin(entries)})


# libphi.so of the 2.6.2 PyPI wheel in miniature (W-262): many cubins for each of its archs, one
# stray cubin each for archs a statically linked third-party object brings.
PHI = [(KIND_ELF, a, 48) for a in (61, 70, 75, 80, 86) for _ in range(12)] + [
    (KIND_ELF, a, 48) for a in (35, 50, 52, 60, 90)
]


def test_sass_and_ptx_archs_are_read_and_stray_cubins_dropped() -> None:
    found = read_fatbin(io.BytesIO(library(PHI + [(KIND_PTX, 80, 40)] * 12)))
    assert found.sass[61] == 12 and found.sass[90] == 1
    assert found.compiled() == ((61, 70, 75, 80, 86), (80,))


def test_two_fat_binaries_with_padding_between_them() -> None:
    two = fatbin([(KIND_ELF, 70, 16)] * 3) + bytes(8) + fatbin([(KIND_ELF, 86, 16)] * 3)
    found = read_fatbin(io.BytesIO(elf({b".nv_fatbin": two})))
    assert found.compiled() == ((70, 86), ())


class CountingFile(io.BytesIO):
    """A file that counts the bytes the reader asked for."""

    read_bytes = 0

    def read(self, size: int | None = -1, /) -> bytes:
        data = super().read(size)
        self.read_bytes += len(data)
        return data


def test_only_headers_are_read_never_the_kernels() -> None:
    # 40 kernels of 256 KiB each (10 MiB): the reader reads their headers, a few KiB.
    big = CountingFile(library([(KIND_ELF, 86, 256 * 1024)] * 40))
    assert read_fatbin(big).compiled() == ((86,), ())
    assert big.read_bytes < 8 * 1024 < len(big.getvalue()) // 1000


def test_libraries_together_and_the_unreadable_ones(tmp_path: Path) -> None:
    paddle = tmp_path / "libpaddle.so"
    paddle.write_bytes(library([(KIND_ELF, a, 8) for a in (61, 70) for _ in range(5)]))
    phi = tmp_path / "libphi.so"
    phi.write_bytes(library(PHI))
    assert library_archs([str(paddle), str(phi)]) == ((61, 70, 75, 80, 86), ())
    # not ELF, truncated, no such file: never an exception, None when nothing could be read
    (tmp_path / "text.so").write_text("INPUT(libfoo.so)")
    (tmp_path / "cut.so").write_bytes(library(PHI)[:200])
    broken = [str(tmp_path / n) for n in ("text.so", "cut.so", "absent.so")]
    assert library_archs(broken) is None
    plain = tmp_path / "plain.so"
    plain.write_bytes(elf({b".text": b"\x90" * 16}))  # a CPU library: no .nv_fatbin
    assert library_archs([str(plain)]) == ((), ())


def installed_262(tmp_path: Path, kernels: list[Entry]) -> Interpreter:
    site = tmp_path / "site-packages"
    (site / "paddle" / "version").mkdir(parents=True)
    (site / "paddle" / "version" / "__init__.py").write_text(VERSION_262_GPU)
    (site / "paddle" / "base").mkdir()
    (site / "paddle" / "base" / "libpaddle.so").write_bytes(library(kernels))
    (site / "paddlepaddle_gpu-2.6.2.dist-info").mkdir()
    return Interpreter(python="python", prefix="/", paths=(str(site),), version="3.11.2")


def test_the_probe_puts_a_2x_builds_archs_in_the_facts(tmp_path: Path) -> None:
    facts = probe_paddle(installed_262(tmp_path, PHI))
    assert facts.compiled_cuda_archs is None  # 2.x records none itself
    assert facts.fatbin_archs == (61, 70, 75, 80, 86) and facts.fatbin_ptx == ()


def test_a_saved_report_carries_them_and_the_judge_uses_them(tmp_path: Path) -> None:
    from envcheck.contracts.facts import HostFacts, from_dict, to_dict
    from envcheck.matrix.load import load_matrix
    from envcheck.verdict.judge import Context, judge
    from tests import scenarios as s

    facts = probe_paddle(installed_262(tmp_path, [(KIND_ELF, 75, 8)] * 4))
    doc: dict[str, Any] = s.host(
        driver=s.driver("535.104.05", "12.2"), gpus=[s.A100], paddle=to_dict(facts)
    )
    host = from_dict(HostFacts, doc)
    assert host.paddle.fatbin_archs == (75,)
    findings = judge(Context(host=host, matrix=load_matrix(), image=None))
    missing = next(f for f in findings if f.id == "paddle.arch-missing")
    assert "sm_80" in missing.message and ".nv_fatbin" in missing.message


# -- hostile files: whatever an ELF header or a fatbin claims, the reader's work is bounded -------
class CountingReader(io.BufferedReader):
    """A real file that counts the bytes the reader was given."""

    read_bytes = 0

    def read(self, size: int | None = -1, /) -> bytes:
        data = super().read(size)
        self.read_bytes += len(data)
        return data


def read_counting(path: Path) -> tuple[str, int]:
    with CountingReader(io.FileIO(path)) as f:
        try:
            read_fatbin(f)
        except FatbinError as e:
            return str(e), f.read_bytes
    return "read", f.read_bytes


def test_a_section_claiming_gigabytes_of_padding_is_given_up_on_after_a_mebibyte(
    tmp_path: Path,
) -> None:
    # A section header claiming 3 GiB of zeros took 116 s, 8 bytes per step.
    path = tmp_path / "libpadding.so"
    hostile_elf(path, fatbin_at=4096, fatbin_size=3 << 30, size=4096 + (3 << 30))
    outcome, read_bytes = read_counting(path)
    assert outcome == f"more than {MAX_PADDING} bytes of padding at offset 0x1000"
    assert read_bytes < 2 * MAX_PADDING
    assert library_archs([str(path)]) is None


def test_section_headers_of_any_claimed_size_are_never_read_whole(tmp_path: Path) -> None:
    # 65,279 headers of 65,000 bytes each: 4.2 GB read into memory before; ELF64's are 64 bytes.
    path = tmp_path / "libtable.so"
    size = 4096 + 65_279 * 65_000
    hostile_elf(path, fatbin_at=0, fatbin_size=0, size=size, shentsize=65_000, shnum=65_279)
    assert read_counting(path) == ("no readable section header table", 64)
    # The most headers an ELF header can name, at their real size: ~4 MB, read and parsed.
    hostile_elf(path, fatbin_at=0, fatbin_size=0, size=4096 + 65_279 * 64, shnum=65_279)
    outcome, read_bytes = read_counting(path)
    assert outcome == "read" and read_bytes < 65_279 * 64 + 2 * 4096


def test_zeros_then_a_word_that_is_not_padding_still_move_forward() -> None:
    # Four zero bytes (a zero magic) then a version field: a step of 8, never a loop in place.
    odd = bytes(4) + b"\x01\x00\x00\x00" + fatbin([(KIND_ELF, 80, 16)] * 2)
    found = read_fatbin(io.BytesIO(elf({b".nv_fatbin": odd})))
    assert found.compiled() == ((80,), ())


def test_a_section_of_empty_fat_binaries_is_capped() -> None:
    empty = struct.pack("<IHHQ", FATBIN_MAGIC, 1, 16, 0) * (MAX_ENTRIES + 2)
    with pytest.raises(FatbinError, match="more than 200000 fatbin entries"):
        read_fatbin(io.BytesIO(elf({b".nv_fatbin": empty})))

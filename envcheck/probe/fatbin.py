"""The GPU archs compiled into a shared library, read from its `.nv_fatbin` ELF section.

Equivalent to `cuobjdump --list-elf --list-ptx libphi.so`, without the CUDA toolkit and without
reading the file: Paddle 2.x records no `compiled_cuda_archs` (3.x does, compat_facts §6b), and its
`libpaddle.so` alone is 467 MB (`libphi.so` 1.9 GB). Only the ELF header, the section headers, the
section-name table and each fatbin entry's header are read (a few KB per thousand kernels), seeking
over the kernels themselves. Every read is bounded, whatever the file claims: the section headers
are ELF64's 64 bytes each (at most ~4 MB for the most an ELF header can name), a run of alignment
padding is skipped in chunks and capped, and the number of fat binaries and entries is capped.

The fatbin layout (NVIDIA does not document it; as `cuobjdump` reads it and the open
reimplementations spell it out): the section holds fat binaries one after another, each a 16-byte
header (magic 0xBA55ED50, version, header size, payload size) and then entries, each with its own
header: kind (1 = PTX, 2 = ELF cubin, i.e. SASS), header size, payload size and, at offset 28, the
sm arch (86). The next entry starts after the entry's header and payload.

Statically linked third-party objects bring a stray cubin or two for other archs (the 2.6.2 wheel's
libphi.so: ~665 cubins for each of sm_61 70 75 80 86, one each for 35 50 52 60 90, W-262): an arch
counts as compiled when it has at least a tenth of the most common arch's entries.
"""

from __future__ import annotations

import struct
from collections import Counter
from typing import BinaryIO

from envcheck.contracts.record import record

FATBIN_MAGIC = 0xBA55ED50
SECTION = b".nv_fatbin"
KIND_PTX, KIND_ELF = 1, 2
MAX_ENTRIES = 200_000  # 2.6.2's libphi.so holds ~3,400: a bound, never reached by a real library
# Padding between fat binaries aligns the next one (to 8 or 16 bytes in real libraries); a longer
# run of zeros is a damaged or hostile file, not a library: 1 MiB is far past any alignment.
MAX_PADDING = 1 << 20
_PADDING_CHUNK = 4096
_SECTION_HEADER = 64  # ELF64's Elf64_Shdr; another size is not an ELF64 file this reader knows
_ENTRY = struct.Struct("<HHIQIIHHI")  # kind, version, header size, size, …, minor, major, arch


class FatbinError(ValueError):
    """Not an ELF64 little-endian file, or a fatbin header that does not parse."""


@record
class FatbinArchs:
    """What one library's `.nv_fatbin` holds: entries per arch, SASS and PTX apart."""

    sass: Counter[int]
    ptx: Counter[int]

    def compiled(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(SASS archs, PTX archs) that the library's own kernels were compiled for: the archs with
        at least a tenth of the most common arch's entries (stray third-party cubins dropped)."""
        return _main_archs(self.sass), _main_archs(self.ptx)


def _main_archs(counts: Counter[int]) -> tuple[int, ...]:
    if not counts:
        return ()
    floor = max(counts.values()) / 10
    return tuple(sorted(a for a, n in counts.items() if n >= floor))


def read_fatbin(f: BinaryIO) -> FatbinArchs:
    """The archs of every fatbin entry in the `.nv_fatbin` section of the ELF file `f` (empty when
    the file has no such section)."""
    section = _find_section(f, SECTION)
    sass: Counter[int] = Counter()
    ptx: Counter[int] = Counter()
    if section is None:
        return FatbinArchs(sass, ptx)
    start, size = section
    offset, end, entries = start, start + size, 0
    while offset + 16 <= end:
        magic, _version, header_size, fat_size = struct.unpack("<IHHQ", _read(f, offset, 16))
        if magic != FATBIN_MAGIC:
            if magic == 0:  # alignment padding between fat binaries
                offset = _skip_padding(f, offset, end)
                continue
            raise FatbinError(f"no fatbin magic at offset {offset:#x}")
        entries += 1  # a fat binary counts as an entry: a section of empty ones is bounded too
        if entries > MAX_ENTRIES:
            raise FatbinError(f"more than {MAX_ENTRIES} fatbin entries")
        entry, stop = offset + header_size, min(offset + header_size + fat_size, end)
        while entry + _ENTRY.size <= stop:
            kind, _, entry_header, entry_size, *_, arch = _ENTRY.unpack(
                _read(f, entry, _ENTRY.size)
            )
            if entry_header < _ENTRY.size:
                raise FatbinError(f"fatbin entry header of {entry_header} bytes at {entry:#x}")
            if kind == KIND_ELF:
                sass[arch] += 1
            elif kind == KIND_PTX:
                ptx[arch] += 1
            entries += 1
            if entries > MAX_ENTRIES:
                raise FatbinError(f"more than {MAX_ENTRIES} fatbin entries")
            entry += entry_header + entry_size
        offset = max(stop, offset + 16)
    return FatbinArchs(sass, ptx)


def _skip_padding(f: BinaryIO, offset: int, end: int) -> int:
    """The offset of the first 8-byte word after `offset` that is not zero (or `end`), read in
    chunks; a run longer than MAX_PADDING is no alignment and raises FatbinError."""
    start = offset
    while offset < end:
        if offset - start > MAX_PADDING:
            raise FatbinError(f"more than {MAX_PADDING} bytes of padding at offset {start:#x}")
        chunk = _read(f, offset, min(_PADDING_CHUNK, end - offset))
        stripped = len(chunk) - len(chunk.lstrip(b"\0"))
        if stripped < len(chunk):  # the next word that is not zero; always a step forward
            return max(offset + stripped - stripped % 8, start + 8)
        offset += len(chunk)
    return end


def _find_section(f: BinaryIO, name: bytes) -> tuple[int, int] | None:
    """(file offset, size) of the section called `name`, from the ELF64 section headers."""
    ident = _read(f, 0, 64)
    if ident[:4] != b"\x7fELF" or ident[4] != 2 or ident[5] != 1:
        raise FatbinError("not a 64-bit little-endian ELF file")
    (shoff,) = struct.unpack_from("<Q", ident, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", ident, 0x3A)
    if shentsize != _SECTION_HEADER or not 0 < shnum < 65_280 or shstrndx >= shnum:
        raise FatbinError("no readable section header table")
    table = _read(f, shoff, _SECTION_HEADER * shnum)
    headers = [
        struct.unpack_from("<IIQQQQ", table, i * _SECTION_HEADER) for i in range(shnum)
    ]  # name, type, flags, addr, offset, size
    _, _, _, _, names_at, names_size = headers[shstrndx]
    names = _read(f, names_at, min(names_size, 1 << 20))
    for name_at, _, _, _, at, size in headers:
        end = names.find(b"\0", name_at)
        if names[name_at:end] == name:
            return at, size
    return None


def _read(f: BinaryIO, offset: int, size: int) -> bytes:
    f.seek(offset)
    data = f.read(size)
    if len(data) != size:
        raise FatbinError(f"truncated at offset {offset:#x}")
    return data


def library_archs(paths: list[str]) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """(SASS, PTX) archs compiled into these libraries together (`libpaddle.so`, `libphi.so`);
    None when none of them could be read."""
    sass: Counter[int] = Counter()
    ptx: Counter[int] = Counter()
    read_any = False
    for path in paths:
        try:
            with open(path, "rb") as f:
                found = read_fatbin(f)
        except (OSError, FatbinError, struct.error):
            continue
        read_any = True
        # Each library judged on its own: one library's stray cubins never pass for the other's.
        own_sass, own_ptx = found.compiled()
        sass.update({a: found.sass[a] for a in own_sass})
        ptx.update({a: found.ptx[a] for a in own_ptx})
    if not read_any:
        return None
    return tuple(sorted(sass)), tuple(sorted(ptx))

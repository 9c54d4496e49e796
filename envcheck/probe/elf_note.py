"""The `.note.cuda.fwd_compatibility` ELF note of a CUDA forward-compatibility libcuda, parsed
from the file's bytes with the standard library (pure: no file is opened here).

NVIDIA writes it into the cuda-compat package's `libcuda.so.<driver>` (driver 575 on): a note
named "NVIDIA Corporation" whose description is a JSON object, e.g.
`{"Format": 1, "CUDA Version": "13.1", "Driver": [535, 550, 570, 575, 580, 590],
"Device": [1, 2, 7, …]}`. The NVIDIA Container Toolkit (1.19+) decides with it whether a
container may use the library (`cmd/nvidia-cdi-hook/cudacompat/cuda-elf-header.go`).

The input is hostile (a file in someone's image): every offset and size is checked against the
bytes there are and against small caps, so a truncated or lying file reads as "no note" or an
`ElfNoteError`, never an exception of another kind, a huge read or a hang.
ELF layout: https://man7.org/linux/man-pages/man5/elf.5.html
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable

from envcheck.contracts.facts import CompatNote

SECTION = ".note.cuda.fwd_compatibility"
NOTE_NAME = "NVIDIA Corporation"
_SHT_NOTE = 7
_MAX_SECTIONS = 4096  # a libcuda has ~40; more is not a library we read
_MAX_ENTRY = 256  # a section header is 40 (ELF32) or 64 (ELF64) bytes
_MAX_NAMES = 1 << 20  # the section-name table
_MAX_NOTE = 1 << 16  # the note: a few hundred bytes of JSON

Read = Callable[[int, int], bytes]  # (offset, size) -> at most `size` bytes from `offset`


class ElfNoteError(ValueError):
    """The file is not an ELF file, or its headers point outside it."""


def note_from_bytes(data: bytes) -> CompatNote | None:
    """The note of a whole file held in memory."""
    return read_compat_note(lambda offset, size: data[offset : offset + size])


def read_compat_note(read: Read) -> CompatNote | None:
    """The compat note of the ELF file `read` gives; None when it has none (not a compat
    libcuda, or one older than the note). Raises ElfNoteError for a file that is not ELF or
    whose headers do not hold together."""
    ident = read(0, 16)
    if len(ident) < 16 or ident[:4] != b"\x7fELF":
        raise ElfNoteError("not an ELF file")
    if ident[4] not in (1, 2) or ident[5] not in (1, 2):
        raise ElfNoteError("unknown ELF class or byte order")
    wide = ident[4] == 2
    order = "<" if ident[5] == 1 else ">"
    header = _exact(read, 0, 64 if wide else 52)
    if wide:
        shoff, shentsize, shnum, shstrndx = _unpack(order + "40xQ10xHHH", header)
    else:
        shoff, shentsize, shnum, shstrndx = _unpack(order + "32xI10xHHH", header)
    if shnum == 0 or shoff == 0:
        return None  # a file without section headers (stripped of them) has no named note
    if shnum > _MAX_SECTIONS or not (64 if wide else 40) <= shentsize <= _MAX_ENTRY:
        raise ElfNoteError("implausible section header table")
    if shstrndx >= shnum:
        raise ElfNoteError("implausible section header table")
    table = _exact(read, shoff, shnum * shentsize)
    size = 56 if wide else 36
    sections = [
        _section(table[i * shentsize : i * shentsize + size], order, wide) for i in range(shnum)
    ]
    _, _, names_offset, names_size, _ = sections[shstrndx]
    names = _exact(read, names_offset, min(names_size, _MAX_NAMES))
    for name_at, kind, offset, size, align in sections:
        if kind == _SHT_NOTE and _name(names, name_at) == SECTION:
            if size > _MAX_NOTE:
                raise ElfNoteError(f"{SECTION} is {size} bytes")
            return parse_note(_exact(read, offset, size), order, align)
    return None


def parse_note(data: bytes, order: str = "<", align: int = 4) -> CompatNote | None:
    """The first note of a note section: (namesz, descsz, type), the name and the description,
    each padded to `align` (the section's alignment, as the toolkit reads it). None when the
    note is not NVIDIA's; ElfNoteError when it does not hold together."""
    if len(data) < 12:
        raise ElfNoteError("note header truncated")
    namesz, descsz, _ = _unpack(order + "III", data[:12])
    if namesz == 0 or descsz == 0:
        return None
    step = max(align, 1)
    desc_at = 12 + (namesz + step - 1) // step * step
    if 12 + namesz > len(data) or desc_at >= len(data):
        raise ElfNoteError("the note's name runs past its section")
    name = data[12 : 12 + namesz].strip(b"\0").decode("ascii", "replace")
    if name != NOTE_NAME:
        return None
    # As the toolkit does, a description cut short by the section's end is read as far as it goes
    return parse_description(data[desc_at : desc_at + descsz].strip(b"\0"))


def parse_description(raw: bytes) -> CompatNote:
    """The note's JSON object. Raises ElfNoteError when it is not one, or a field has the wrong
    type."""
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise ElfNoteError(f"the note is not JSON: {e}") from e
    if not isinstance(doc, dict):
        raise ElfNoteError("the note is not a JSON object")
    cuda, fmt = doc.get("CUDA Version"), doc.get("Format")
    if cuda is not None and not isinstance(cuda, str):
        raise ElfNoteError("'CUDA Version' is not text")
    if fmt is not None and (not isinstance(fmt, int) or isinstance(fmt, bool)):
        raise ElfNoteError("'Format' is not a number")
    return CompatNote(
        cuda=cuda,
        drivers=_numbers(doc.get("Driver"), "Driver"),
        devices=_numbers(doc.get("Device"), "Device"),
        format=fmt,
    )


def _numbers(value: object, key: str) -> tuple[int, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        raise ElfNoteError(f"'{key}' is not a list of numbers")
    return tuple(value)


def _section(entry: bytes, order: str, wide: bool) -> tuple[int, int, int, int, int]:
    """(name offset, type, file offset, size, alignment) of one section header."""
    if wide:
        name, kind, offset, size, align = _unpack(order + "II16xQQ8xQ", entry)
    else:
        name, kind, offset, size, align = _unpack(order + "II8xII8xI", entry)
    return name, kind, offset, size, align


def _name(names: bytes, at: int) -> str:
    end = names.find(b"\0", at)
    return names[at:end].decode("ascii", "replace") if 0 <= at < len(names) and end >= 0 else ""


def _exact(read: Read, offset: int, size: int) -> bytes:
    data = read(offset, size)
    if len(data) != size:
        raise ElfNoteError(f"the file ends before {size} bytes at offset {offset}")
    return data


def _unpack(fmt: str, data: bytes) -> tuple[int, ...]:
    try:
        return struct.unpack(fmt, data)
    except struct.error as e:
        raise ElfNoteError(f"truncated header: {e}") from e

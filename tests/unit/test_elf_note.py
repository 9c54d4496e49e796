"""The `.note.cuda.fwd_compatibility` parser on hostile input: whatever the bytes, it answers a
note, None, or ElfNoteError, and never reads more than its caps. The real compat libraries
(built by tests/fakenv with the note) are read in tests/integration/test_cuda_compat.py."""

from __future__ import annotations

import json
import os
import struct
import sys
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envcheck.contracts.facts import CompatNote
from envcheck.probe.elf_note import (
    NOTE_NAME,
    ElfNoteError,
    note_from_bytes,
    parse_note,
    read_compat_note,
)

with open(os.path.realpath(sys.executable), "rb") as _f:
    REAL_ELF = _f.read()  # this interpreter: a real ELF file without the note
NOTE_590 = {
    "Format": 1,
    "CUDA Version": "13.1",
    "Driver": [535, 550, 570, 575, 580, 590],
    "Device": [1, 2, 7, 8, 9, 10, 11, 12, 13, 14],
}


def note_bytes(
    name: bytes, desc: bytes, *, namesz: int | None = None, descsz: int | None = None
) -> bytes:
    """An ELF note as the linker lays it out: header, name and description padded to 4."""
    sizes = (len(name) if namesz is None else namesz, len(desc) if descsz is None else descsz)
    return struct.pack("<III", *sizes, 1) + _padded(name) + _padded(desc)


def _padded(b: bytes) -> bytes:
    return b + b"\0" * (-len(b) % 4)


def safely(parse: Callable[..., CompatNote | None], *args: Any) -> CompatNote | str | None:
    """The parser's answer, "refused" for its one expected error; anything else propagates."""
    try:
        return parse(*args)
    except ElfNoteError:
        return "refused"


def test_an_elf_file_without_the_note_has_none() -> None:
    assert note_from_bytes(REAL_ELF) is None


def test_a_note_of_nvidia_is_read() -> None:
    note = parse_note(note_bytes(NOTE_NAME.encode() + b"\0", json.dumps(NOTE_590).encode()))
    assert note == CompatNote(
        cuda="13.1",
        drivers=(535, 550, 570, 575, 580, 590),
        devices=(1, 2, 7, 8, 9, 10, 11, 12, 13, 14),
        format=1,
    )


def test_a_note_of_someone_else_is_not_nvidias() -> None:
    assert parse_note(note_bytes(b"GNU\0", b"{}")) is None


@pytest.mark.parametrize(
    "desc",
    [
        b"not json",
        b"[1, 2]",
        b'{"Driver": "580"}',
        b'{"CUDA Version": 13.1}',
        b'{"Driver": [true]}',
    ],
    ids=["not-json", "not-an-object", "driver-text", "cuda-number", "driver-bools"],
)
def test_a_note_that_is_not_the_expected_json_is_refused(desc: bytes) -> None:
    with pytest.raises(ElfNoteError):
        parse_note(note_bytes(NOTE_NAME.encode() + b"\0", desc))


@given(
    namesz=st.integers(0, 2**32 - 1),
    descsz=st.integers(0, 2**32 - 1),
    align=st.integers(0, 2**64 - 1),
    tail=st.binary(max_size=64),
)
@settings(max_examples=300, deadline=None)
def test_lying_note_sizes_never_crash(namesz: int, descsz: int, align: int, tail: bytes) -> None:
    data = note_bytes(NOTE_NAME.encode() + b"\0", tail, namesz=namesz, descsz=descsz)
    answer = safely(parse_note, data, "<", align)
    assert answer in (None, "refused") or isinstance(answer, CompatNote)


@given(cut=st.integers(0, 4096))
@settings(max_examples=200, deadline=None)
def test_a_truncated_elf_file_is_refused_or_has_no_note(cut: int) -> None:
    head = REAL_ELF[:cut]
    assert safely(note_from_bytes, head) in (None, "refused")


@given(data=st.binary(max_size=512), wide=st.booleans(), big=st.booleans())
@settings(max_examples=300, deadline=None)
def test_random_bytes_behind_an_elf_magic_never_crash(data: bytes, wide: bool, big: bool) -> None:
    ident = b"\x7fELF" + bytes([2 if wide else 1, 2 if big else 1]) + b"\0" * 10
    assert safely(note_from_bytes, ident + data) in (None, "refused")


@given(
    field=st.sampled_from(["shoff", "shnum", "shentsize", "shstrndx"]),
    value=st.integers(0, 2**16 - 1),
    huge=st.integers(0, 2**64 - 1),
)
@settings(max_examples=300, deadline=None)
def test_huge_header_values_never_make_a_huge_read(field: str, value: int, huge: int) -> None:
    """An ELF header edited to point anywhere: every read stays within the caps."""
    header = bytearray(REAL_ELF[:64])
    at = {"shoff": (40, "<Q", huge), "shentsize": (58, "<H", value)}
    at |= {"shnum": (60, "<H", value), "shstrndx": (62, "<H", value)}
    offset, fmt, v = at[field]
    struct.pack_into(fmt, header, offset, v)
    data = bytes(header) + REAL_ELF[64:]
    sizes: list[int] = []

    def read(offset: int, size: int) -> bytes:
        sizes.append(size)
        return data[offset : offset + size]

    assert safely(read_compat_note, read) in (None, "refused")
    assert max(sizes) <= 1 << 20  # the section table (4096 entries of 256 bytes), the names


def test_not_an_elf_file_is_refused() -> None:
    with pytest.raises(ElfNoteError):
        note_from_bytes(b"#!/bin/sh\n")

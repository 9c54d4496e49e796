"""The CUDA forward-compatibility libcuda of the smoke's image, read from its files: the created
(never started) smoke container's `/usr/local/cuda/compat` through the Engine API's archive
endpoint (`docker cp CONTAINER:/usr/local/cuda/compat -`), each `libcuda.so.*.*` parsed for its
ELF note (`envcheck/probe/elf_note.py`), and whether the image puts that folder on its
LD_LIBRARY_PATH (the CUDA 13.0 images do: Paddle#76558). Only where the smoke already uses an
image: the doctor's static tier reads no image.

Nothing here fails the smoke: an image without the folder has no compat library, and an answer
the engine cannot give is the library's `error`.
"""

from __future__ import annotations

import io
import posixpath
import re
import tarfile
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from envcheck.contracts.errors import EnvcheckError
from envcheck.contracts.facts import CompatLibrary
from envcheck.engine.docker_adapter import translate_errors
from envcheck.probe.elf_note import ElfNoteError, note_from_bytes

if TYPE_CHECKING:
    from docker.models.containers import Container

COMPAT_FOLDER = "/usr/local/cuda/compat"
_LIBRARY = re.compile(r"libcuda\.so\.(\d+(?:\.\d+)+)$")
# the image's folder as LD_LIBRARY_PATH names it: /usr/local/cuda/compat, /usr/local/cuda-13.0/compat
_ON_PATH = re.compile(r"/usr/local/cuda[^/]*/compat/?$")
_MAX_ARCHIVE = 1 << 30  # a compat folder holds a few libraries of ~100 MiB at most


def read_image_compat(container: Container) -> tuple[CompatLibrary, ...]:
    """The compat libcuda files of the container's image, with their notes."""
    loaded = any(_ON_PATH.search(d) for d in _library_path(container.attrs))
    try:
        with translate_errors(f"reading {COMPAT_FOLDER} of the smoke image"):
            chunks, _ = container.get_archive(COMPAT_FOLDER)
            return tuple(_libraries(_Stream(chunks), loaded))
    except EnvcheckError as e:
        if "not found" in str(e):
            return ()  # no compat folder: the image uses the driver's libcuda
        return (CompatLibrary(path=COMPAT_FOLDER, error=str(e), loaded=loaded),)


def _libraries(stream: _Stream, loaded: bool) -> list[CompatLibrary]:
    """Each `libcuda.so.<version>` of the folder's tar stream, read one at a time (the other
    libraries of the folder stream past unkept)."""
    found = []
    try:
        with tarfile.open(fileobj=stream, mode="r|") as tar:
            for member in tar:
                name = posixpath.basename(member.name)
                match = _LIBRARY.match(name)
                if not member.isfile() or match is None:
                    continue
                path = posixpath.join(COMPAT_FOLDER, name)
                data = tar.extractfile(member)
                try:
                    note = note_from_bytes(data.read() if data else b"")
                except ElfNoteError as e:
                    found.append(CompatLibrary(path, match.group(1), error=str(e), loaded=loaded))
                    continue
                found.append(CompatLibrary(path, match.group(1), note, loaded=loaded))
    except (tarfile.TarError, _TooLarge) as e:
        found.append(CompatLibrary(COMPAT_FOLDER, error=f"unreadable: {e}", loaded=loaded))
    return found


class _TooLarge(Exception):
    """The archive ran past its bound."""


class _Stream(io.RawIOBase):
    """The engine's archive chunks as a file tarfile reads in stream mode, bounded."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks, self._left, self._read = chunks, b"", 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._left:
            chunk = next(self._chunks, None)
            if chunk is None:
                return 0
            self._read += len(chunk)
            if self._read > _MAX_ARCHIVE:
                raise _TooLarge(f"{COMPAT_FOLDER} holds more than {_MAX_ARCHIVE >> 20} MiB")
            self._left = chunk
        n = min(len(buffer), len(self._left))
        buffer[:n] = self._left[:n]
        self._left = self._left[n:]
        return n


def _library_path(attrs: dict[str, Any]) -> list[str]:
    """The folders of the image's LD_LIBRARY_PATH (`ENV` of its config, as the container got it)."""
    for variable in (attrs.get("Config") or {}).get("Env") or []:
        if isinstance(variable, str) and variable.startswith("LD_LIBRARY_PATH="):
            return [d for d in variable.split("=", 1)[1].split(":") if d]
    return []

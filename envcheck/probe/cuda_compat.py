"""CUDA forward-compatibility libcuda files on the host, each with its ELF note
(`envcheck/probe/elf_note.py`): the cuda-compat package's `/usr/local/cuda/compat` (under
ENVCHECK_DRIVER_ROOT like every system path) and the folders of LD_LIBRARY_PATH, where a compat
libcuda is loaded in place of the driver's own.

`ls /usr/local/cuda/compat/libcuda.so.*.*` plus `readelf -n` on each: no library is loaded, a
file is read only as far as its section headers and its note.
"""

from __future__ import annotations

import glob
import os
import posixpath
from collections.abc import Mapping
from typing import BinaryIO

from envcheck.contracts.facts import CompatLibrary, CompatNote
from envcheck.probe.driver_root import system_path
from envcheck.probe.elf_note import ElfNoteError, read_compat_note

COMPAT_FOLDER = "/usr/local/cuda/compat"
_PATTERN = "libcuda.so.*.*"  # the versioned file, as the Container Toolkit globs it


def probe_cuda_compat(
    env: Mapping[str, str], loaded_libcuda: str | None = None
) -> tuple[CompatLibrary, ...]:
    """The compat libcuda files found; `loaded_libcuda`: the libcuda the CUDA probe loaded."""
    on_path = [d for d in env.get("LD_LIBRARY_PATH", "").split(":") if d]
    path_folders = {os.path.realpath(d) for d in on_path}
    loaded = os.path.realpath(loaded_libcuda) if loaded_libcuda else None
    found: dict[str, CompatLibrary] = {}
    for folder in [system_path(COMPAT_FOLDER, env), *on_path]:
        for path in sorted(glob.glob(os.path.join(glob.escape(folder), _PATTERN))):
            real = os.path.realpath(path)
            if real in found or not os.path.isfile(real):
                continue
            library = _read(path)
            is_compat = library.note is not None or posixpath.basename(folder) == "compat"
            if is_compat:
                in_use = os.path.realpath(folder) in path_folders or real == loaded
                found[real] = CompatLibrary(
                    path=library.path,
                    version=library.version,
                    note=library.note,
                    loaded=in_use,
                    error=library.error,
                )
    return tuple(found.values())


def _read(path: str) -> CompatLibrary:
    version = _version(path)
    try:
        with open(path, "rb") as f:
            return CompatLibrary(path=path, version=version, note=_note(f))
    except (OSError, ElfNoteError) as e:
        return CompatLibrary(path=path, version=version, error=str(e))


def _note(f: BinaryIO) -> CompatNote | None:
    def read(offset: int, size: int) -> bytes:
        f.seek(offset)
        return f.read(size)

    return read_compat_note(read)


def _version(path: str) -> str | None:
    """`libcuda.so.590.44.01` -> "590.44.01"."""
    tail = posixpath.basename(path).removeprefix("libcuda.so.")
    parts = tail.split(".")
    return tail if len(parts) >= 2 and all(p.isdigit() for p in parts) else None

"""A validated matrix, cached between runs and keyed by the files it came from.

Parsing ~1,100 TOML lines with the pure-Python `tomllib` and validating them costs ~30 ms, a
fifth of the doctor's start-up budget, to rebuild the same objects every run. The cache holds the
`Matrix` built last time with the stamp of its inputs (envcheck version, folder, each file's
name, size and mtime); any change to any of them is a miss and a fresh, fully validated load.
Errors are never cached. A cache that cannot be read or written is simply not used.
"""

from __future__ import annotations

import os
import pickle
import zlib
from collections.abc import Callable
from pathlib import Path

from envcheck import __version__
from envcheck.matrix.model import Matrix

CACHE_DIR_VAR = "ENVCHECK_CACHE_DIR"  # "" turns the cache off
_Stamp = tuple[object, ...]


def cache_dir() -> Path | None:
    configured = os.environ.get(CACHE_DIR_VAR)
    if configured is not None:
        return Path(configured) if configured else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "envcheck"


def stamp(root: Path) -> _Stamp | None:
    try:
        files = sorted((e.name, e.stat().st_size, e.stat().st_mtime_ns)
                       for e in os.scandir(root) if e.name.endswith(".toml"))
    except OSError:
        return None
    return (__version__, str(root), *files)


def cached_load(root: Path, load: Callable[[], Matrix]) -> Matrix:
    folder, key = cache_dir(), stamp(root)
    if folder is None or key is None:
        return load()
    file = folder / f"matrix-{zlib.crc32(str(root).encode()):08x}.pickle"
    hit = _read(file, key)
    if hit is not None:
        return hit
    matrix = load()
    _write(file, key, matrix)
    return matrix


def _read(file: Path, key: _Stamp) -> Matrix | None:
    try:
        with open(file, "rb") as f:
            saved_key, matrix = pickle.load(f)
    except Exception:  # noqa: BLE001 - any unreadable cache (truncated, other version) is a miss
        return None
    return matrix if saved_key == key and isinstance(matrix, Matrix) else None


def _write(file: Path, key: _Stamp, matrix: Matrix) -> None:
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        tmp = file.with_suffix(f".{os.getpid()}.tmp")
        with open(tmp, "wb") as f:
            pickle.dump((key, matrix), f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, file)  # readers see the old file or the new one, never half of one
    except OSError:
        return

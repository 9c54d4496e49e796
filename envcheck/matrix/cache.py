"""Parsed matrix TOML, cached between runs as plain JSON keyed by the bytes it came from.

The pure-Python `tomllib` spends ~30 ms of the ~40 ms a matrix load takes parsing the same
~1,100 lines every run; validation and building the model take the rest and ALWAYS run, with the
loader's current code, on whatever the cache returns. So the cache holds only what `tomllib`
returned for one file, and its key is the SHA-256 of that file's bytes plus the parser's identity
(envcheck and Python versions, this module's and the TOML shim's source): an edit, a loader
change or a touched mtime can never serve a stale result.

It can never run code either (the old cache was a pickle in a predictable path, and a
planted pickle ran `id` as root). JSON is data; and the folder is used only when it is ours: a
real directory (not a link), owned by the effective user, writable by nobody else, created 0700.
Each file is opened without following links and must pass the same ownership test. A cache that
cannot be trusted, read or written is simply not used. `ENVCHECK_CACHE_DIR=""` turns it off
(the test suite does).
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from envcheck import __version__
from envcheck.contracts.command_env import home
from envcheck.digest import sha256
from envcheck.regular import read_regular

CACHE_DIR_VAR = "ENVCHECK_CACHE_DIR"  # "" turns the cache off
_MAX_ENTRY = 4 * 1024 * 1024
MAX_MATRIX_FILE = 4 * 1024 * 1024  # bytes; the largest shipped file is about 34 kB


def read_toml(path: Path, variables: Mapping[str, str]) -> dict[str, Any]:
    """`tomllib.load(path)`, from the cache (its folder from the command's `variables`) when
    these exact bytes were parsed before.

    Raises what `tomllib` and `open` raise (TOMLDecodeError, OSError, UnicodeDecodeError);
    errors are never cached."""
    data = read_regular(path, MAX_MATRIX_FILE)  # a FIFO named *.toml is refused, never waited on
    folder = cache_dir(variables)
    if folder is None:
        return _parse(data)
    entry = folder / f"toml-{sha256(_salt() + data).hexdigest()[:48]}.json"
    hit = _read(entry)
    if hit is not None:
        return hit
    doc = _parse(data)
    _write(folder, entry, doc)
    return doc


def _parse(data: bytes) -> dict[str, Any]:
    from envcheck.matrix.toml import tomllib  # on a miss only: see envcheck/matrix/toml.py

    doc: dict[str, Any] = tomllib.loads(data.decode("utf-8"))
    return doc


def cache_dir(variables: Mapping[str, str]) -> Path | None:
    """The cache folder, created 0700 if missing; None when off or not safely ours."""
    configured = variables.get(CACHE_DIR_VAR)
    if configured is not None:
        if not configured:
            return None
        folder = Path(configured)
    else:
        base = variables.get("XDG_CACHE_HOME") or os.path.join(home(variables), ".cache")
        folder = Path(base) / "envcheck"
    try:
        folder.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            pass
        info = os.lstat(folder)
    except OSError:
        return None
    return folder if stat.S_ISDIR(info.st_mode) and _ours(info) else None


def _ours(info: os.stat_result) -> bool:
    return info.st_uid == os.geteuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


@lru_cache(maxsize=1)
def _salt() -> bytes:
    """The parser's identity: what could make the same bytes parse differently."""
    h = sha256(f"{__version__}\0{sys.version}\0".encode())
    for module in (__file__, _toml_parser_file(), Path(__file__).with_name("toml.py")):
        try:
            h.update(Path(str(module)).read_bytes())
        except (OSError, TypeError):
            h.update(str(module).encode())
    return h.digest()


def _toml_parser_file() -> str | None:
    """The file of the TOML parser envcheck/matrix/toml.py imports (`tomllib`, else `tomli`),
    found without importing it: a cache hit never parses, so never pays for importing one."""
    from importlib.util import find_spec

    spec = find_spec("tomllib") or find_spec("tomli")
    return spec.origin if spec is not None else None


def _read(entry: Path) -> dict[str, Any] | None:
    try:
        # O_NONBLOCK: a FIFO planted there is a miss (the fstat below), not a hang
        fd = os.open(entry, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None  # a miss, or a link someone planted
    try:
        with open(fd, "rb") as f:
            info = os.fstat(f.fileno())
            if not stat.S_ISREG(info.st_mode) or not _ours(info) or info.st_size > _MAX_ENTRY:
                return None
            doc = json.loads(f.read(_MAX_ENTRY + 1))
    except (OSError, ValueError, RecursionError):  # unreadable or corrupt: a miss
        return None
    return doc if isinstance(doc, dict) else None


def _write(folder: Path, entry: Path, doc: dict[str, Any]) -> None:
    try:
        text = json.dumps(doc, allow_nan=False)
    except (TypeError, ValueError):
        return  # a TOML date or a NaN has no exact JSON form: parse that file every time
    if json.loads(text) != doc:
        return  # never cache what would not come back identical
    import tempfile  # only on a miss: a warm run never writes, so never imports it

    try:
        fd, tmp = tempfile.mkstemp(prefix=".toml-", suffix=".tmp", dir=folder)  # 0600, O_EXCL
        try:
            with open(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, entry)  # readers see the old entry or the new one, never half of one
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        return

"""What a fix may name: the package versions on PyPI and the pins of Paddle's indexes, as
recorded in known_packages.toml by `scripts/refresh_packages.py` (run by hand, dated)."""

from __future__ import annotations

import functools
from pathlib import Path

from packaging.version import InvalidVersion, Version

from envcheck.contracts.record import record

FILE = Path(__file__).with_name("known_packages.toml")


@record
class KnownPackages:
    """The package versions that exist (PyPI and Paddle's indexes), to pin only real ones."""

    refreshed: str
    pypi: dict[str, tuple[str, ...]]  # name -> every released version
    indexes: dict[str, frozenset[str]]  # index URL -> the "name==version" pins it holds
    problem: str | None = None  # why nothing is known: the file is missing or damaged

    def exists(self, name: str, version: str, index: str | None = None) -> bool:
        if index is None:
            return version in self.pypi.get(name, ())
        return f"{name}=={version}" in self.indexes.get(index, frozenset())

    def newest(self, name: str, prefix: str) -> str | None:
        """The newest final release of `name` whose version starts with `prefix` ("8.6.")."""
        found = [v for v in self.pypi.get(name, ()) if v.startswith(prefix) and _final(v)]
        return max(found, key=Version) if found else None


def _final(version: str) -> bool:
    try:
        parsed = Version(version)
    except InvalidVersion:
        return False
    return not (parsed.is_prerelease or parsed.is_devrelease or parsed.is_postrelease)


@functools.cache
def known_packages() -> KnownPackages:
    return load_known_packages(FILE)


def load_known_packages(path: Path) -> KnownPackages:
    """The recorded versions and pins; none at all when the file is missing, not TOML or not in
    the shape the script writes, with the reason in `problem`.

    Why absence and not an error: the file is package data, checked by the suite on every change
    (tests/integration/test_known_packages.py), so a bad one on a user's machine is a damaged
    install, and all that rides on it is a version pin in a fix (the newest cuDNN wheel of a major):
    the fix then names no pin, which it already does for a version the list lacks. The diagnosis
    itself never depends on it, so a damaged pin list must not cost the user their doctor."""
    from envcheck.matrix.toml import tomllib  # here: see envcheck/matrix/toml.py

    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
        return _parsed(doc)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, ValueError) as e:
        return KnownPackages(refreshed="", pypi={}, indexes={}, problem=f"{path}: {e}")


def _parsed(doc: dict[str, object]) -> KnownPackages:
    refreshed, pypi, index = doc.get("refreshed"), doc.get("pypi"), doc.get("index")
    if not isinstance(refreshed, str):
        raise ValueError("no `refreshed` date")
    if not isinstance(pypi, dict) or not isinstance(index, dict):
        raise ValueError("no [pypi] or [index] tables")
    return KnownPackages(
        refreshed=refreshed,
        pypi={name: tuple(_strings(entry, "versions", name)) for name, entry in pypi.items()},
        indexes={url: frozenset(_strings(entry, "pins", url)) for url, entry in index.items()},
    )


def _strings(entry: object, key: str, where: str) -> list[str]:
    values = entry.get(key) if isinstance(entry, dict) else None
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ValueError(f"{where}: `{key}` is not a list of strings")
    return values

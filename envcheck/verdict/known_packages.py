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
    from envcheck.matrix.toml import tomllib  # here: see envcheck/matrix/toml.py

    doc = tomllib.loads(FILE.read_text(encoding="utf-8"))
    return KnownPackages(
        refreshed=doc["refreshed"],
        pypi={name: tuple(entry["versions"]) for name, entry in doc["pypi"].items()},
        indexes={url: frozenset(entry["pins"]) for url, entry in doc["index"].items()},
    )

"""SHA-256 without `hashlib` where CPython has its own: importing `hashlib` loads OpenSSL's
libcrypto, 3.7 MB of resident memory for the doctor's two small digests (the matrix cache's key,
a docker context's folder name), a sixth of its whole footprint. CPython's built-in
module gives the same digest; a build without it (some FIPS builds) uses `hashlib`."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from importlib import import_module
from typing import Protocol, cast

# The built-in SHA-256: `_sha2` from Python 3.12, `_sha256` before; then OpenSSL's.
_MODULES = ("_sha2", "_sha256", "hashlib")


class Hash(Protocol):
    def update(self, data: bytes, /) -> None: ...

    def digest(self) -> bytes: ...

    def hexdigest(self) -> str: ...


@cache
def _constructor() -> Callable[[bytes], Hash]:
    for name in _MODULES:
        try:
            return cast("Callable[[bytes], Hash]", import_module(name).sha256)
        except (ImportError, AttributeError):
            continue
    raise ImportError("no SHA-256 implementation")  # pragma: no cover - hashlib always has one


def sha256(data: bytes = b"") -> Hash:
    """`hashlib.sha256(data)`: an object with `update`, `digest` and `hexdigest`."""
    return _constructor()(data)


def short_id(digest: str) -> str:
    """`sha256:4f0c…` (64 hex) -> `4f0c1a2b3c4d`: the 12 characters `docker images` shows."""
    return digest.removeprefix("sha256:")[:12]

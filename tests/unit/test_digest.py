"""envcheck.digest: SHA-256 without loading OpenSSL, the same digest as `hashlib`'s."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from envcheck import digest


@given(st.binary(max_size=4096), st.binary(max_size=64))
def test_the_digest_is_hashlibs(data: bytes, more: bytes) -> None:
    ours, theirs = digest.sha256(data), hashlib.sha256(data)
    ours.update(more)
    theirs.update(more)
    assert (ours.digest(), ours.hexdigest()) == (theirs.digest(), theirs.hexdigest())


def test_a_python_without_the_builtin_module_uses_hashlib(monkeypatch: pytest.MonkeyPatch) -> None:
    digest._constructor.cache_clear()
    monkeypatch.setattr(digest, "_MODULES", ("_no_such_sha", "hashlib"))
    try:
        assert digest.sha256(b"abc").hexdigest() == hashlib.sha256(b"abc").hexdigest()
        assert digest._constructor() is hashlib.sha256
    finally:
        digest._constructor.cache_clear()

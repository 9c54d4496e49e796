"""A document envcheck wrote, read back: is it one of that kind, and a version this envcheck reads?

Saved `doctor --json` reports (`envcheck report`, fleets) and drift baselines come from other
hosts, other envcheck versions and hand edits. Each kind says what it is the same way: an integer
version under its own key, and a `kind` where the key alone cannot tell it. A version newer than
this envcheck writes needs a newer envcheck; one older than the first it ever wrote (0, -1) was
never written by envcheck. Pure.
"""

from __future__ import annotations

from typing import Any

from envcheck.contracts.record import record


class DocumentVersionError(ValueError):
    """Not a document of the kind expected, or a version of it this envcheck cannot read."""


@record
class Versioned:
    """A kind of document envcheck writes: what marks it, and the versions this envcheck reads."""

    name: str  # how messages name it: "report", "baseline"
    key: str  # the key of its integer version: "schema_version"
    newest: int  # the version this envcheck writes
    kind: str | None = None  # the `"kind"` it carries, where it has one: "envcheck-baseline"
    oldest: int = 1  # the first version envcheck wrote

    def version_of(self, doc: Any) -> int:
        """`doc`'s version; DocumentVersionError saying why when `doc` is not a document of this
        kind, or was written by a newer envcheck, or claims a version no envcheck wrote."""
        not_one = f"not an envcheck {self.name}"
        if not isinstance(doc, dict):
            raise DocumentVersionError(
                f"{not_one} (expected a JSON object, got {type(doc).__name__})"
            )
        if self.kind is not None and doc.get("kind") != self.kind:
            raise DocumentVersionError(f'{not_one} (no "kind": "{self.kind}")')
        version = doc.get(self.key)
        if not isinstance(version, int) or isinstance(version, bool):
            raise DocumentVersionError(f'{not_one} (no integer "{self.key}")')
        if version > self.newest:
            raise DocumentVersionError(
                f"written by a newer envcheck ({self.key} {version} > {self.newest});"
                " upgrade envcheck"
            )
        if version < self.oldest:
            raise DocumentVersionError(
                f"{not_one} ({self.key} {version}: the first envcheck wrote is {self.oldest})"
            )
        return version

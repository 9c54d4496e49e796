"""What a pull is asked and what it answers: the plan (the tag, the same tag on the mirrors, the
matrix's pin, the tags it knows for "tags nearby") and the result. Pure: no I/O."""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any, Literal

from envcheck.contracts.record import record
from envcheck.image.reference import Reference, parse_reference

if TYPE_CHECKING:
    from envcheck.matrix.model import Matrix

ConfigSource = Literal["registry", "local image"]


@record
class PullPlan:
    requested: Reference
    mirrors: tuple[Reference, ...] = ()  # the same tag on the other registries, in order
    pinned_digest: str | None = None  # the matrix's pin: the pulled digest must be this one
    known_tags: tuple[str, ...] = ()  # tags the matrix knows for this repository (404 hints)

    @property
    def targets(self) -> tuple[Reference, ...]:
        return (self.requested, *self.mirrors)


@record
class PullResult:
    reference: str  # as pulled, on the registry that served it
    requested: str
    registry: str  # the registry that served it
    digest: str
    image_id: str
    size: int | None  # compressed bytes (registry manifest; None when it could not be read)
    seconds: float
    outcome: Literal["pulled", "present"]
    attempts: int  # engine pulls started (0 when already present)
    platform: str
    mirror: bool = False
    failures: tuple[str, ...] = ()  # what failed on the way (retried, or the registry given up)
    # Where the image config's env (CUDA_VERSION, NVIDIA_REQUIRE_CUDA) was read: the registry,
    # before the pull; the pulled image, after it; None: not read (--force, registry unreadable).
    config_source: ConfigSource | None = "registry"
    warnings: tuple[str, ...] = ()  # advisory reads that could not be made
    downloaded: int = 0  # compressed bytes this pull downloaded (layers already present cost none)

    def to_json(self) -> dict[str, Any]:
        return {
            "reference": self.reference,
            "requested": self.requested,
            "registry": self.registry,
            "mirror": self.mirror,
            "digest": self.digest,
            "image_id": self.image_id,
            "size": self.size,
            "seconds": round(self.seconds, 3),
            "outcome": self.outcome,
            "attempts": self.attempts,
            "platform": self.platform,
            "failures": list(self.failures),
            "config_source": self.config_source,
            "warnings": list(self.warnings),
            "downloaded": self.downloaded,
        }


def plan_pull(ref: Reference, matrix: Matrix | None) -> PullPlan:
    """Mirrors, pin and known tags for `ref` from the matrix; a bare plan for images it does not know."""
    if matrix is None:
        return PullPlan(ref)
    homes = {name: parse_reference(value) for name, value in matrix.registries.items()}
    home = next(
        (
            n
            for n, r in homes.items()
            if (r.registry, r.repository) == (ref.registry, ref.repository)
        ),
        None,
    )
    if home is None:
        return PullPlan(ref)
    row = next((i for i in matrix.images if i.tag == ref.tag and home in i.registries), None)
    known = tuple(sorted({i.tag for i in matrix.images if home in i.registries}))
    if row is None:
        return PullPlan(ref, known_tags=known)
    mirrors = tuple(homes[r].with_tag(row.tag) for r in row.registries if r != home and r in homes)
    pin = None if ref.digest else row.digest
    return PullPlan(ref, mirrors, pin, known)


def nearest_tags(tag: str | None, known: tuple[str, ...], n: int = 3) -> list[str]:
    """The `n` tags of `known` most like `tag`: difflib's close matches, else the most similar
    of all (`2` is close to nothing at difflib's cutoff, yet `1` is what a user wants to see)."""
    if not known:
        return []
    wanted = tag or "latest"
    return difflib.get_close_matches(wanted, known, n=n, cutoff=0.5) or (
        difflib.get_close_matches(wanted, known, n=n, cutoff=0.0)
    )

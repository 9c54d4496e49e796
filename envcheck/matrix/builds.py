"""A Paddle build in the matrix: its wheel row for a CUDA version, and the archs it can run.

Pure queries over `Matrix`; the image choice and the judge both ask them, so a build's archs are
worked out (and worded) in one place.
"""

from __future__ import annotations

from envcheck.contracts.record import record
from envcheck.contracts.versions import release_of
from envcheck.matrix.compat import arch_supported
from envcheck.matrix.model import Matrix, PaddleBuild
from envcheck.matrix.provenance import plain_source
from envcheck.matrix.scope import arch_evidence


def build_for(matrix: Matrix, paddle: str, cuda: str | None) -> PaddleBuild | None:
    """The wheel flavour of `paddle` for CUDA `cuda` (compared as major.minor), or its CPU wheel
    when `cuda` is None. Confirmed rows win over unconfirmed ones."""
    want = _major_minor(cuda) if cuda else None
    builds = [
        b for b in matrix.builds_for(paddle) if (_major_minor(b.cuda) if b.cuda else None) == want
    ]
    return min(builds, key=lambda b: not b.confirmed, default=None)


@record
class ArchSource:
    """The archs a Paddle build can run on, and where the matrix learnt them."""

    archs: tuple[int, ...]
    origin: str  # "compiled into Paddle 3.1.0 cu126 (reported by users, …)"
    verified: bool = True  # False: only the toolkit's reach is known, not the build's own list
    absent: tuple[int, ...] = ()  # archs a report shows missing from the build
    source: str = ""  # the source keys, for --json / --explain
    present: tuple[int, ...] = ()  # archs a report shows running, where the list is unknown
    facts: tuple[str, ...] = ()  # the facts applied, each with its scope (`ScopedFact.text`)

    @property
    def covered(self) -> str:
        """Said when every GPU's arch is among these (the image choice and the judge)."""
        return f"every GPU's arch is among the archs {self.origin}"

    def known_to_run(self, compute_capability: str) -> bool:
        """Evidence that this build holds the GPU's arch: its own list, or a report of it running
        (PaddleX#4682: 3.2.0 cu118 on a GTX 1080). The toolkit's reach is no such evidence."""
        if self.verified and arch_supported(compute_capability, self.archs):
            return True
        return arch_supported(compute_capability, self.present)


def runnable_archs(
    matrix: Matrix, paddle: str, cuda: str, platform: str | None = "linux/amd64"
) -> ArchSource | None:
    """The build's compiled archs when some scope states them for `platform` (its own row, or a
    fact of its release line or CUDA family, `envcheck.matrix.scope`); otherwise every arch the
    CUDA toolkit can target (§2a), the most a build of that CUDA could contain, minus the archs a
    report shows missing, marked unverified. Images are Linux wheels: their platform is the
    host's machine under `linux/`."""
    build = build_for(matrix, paddle, cuda)
    label = f"Paddle {paddle} cu{cuda.replace('.', '')}"
    evidence = arch_evidence(matrix, paddle, cuda, build, platform)
    facts = tuple(f.text for f in evidence.facts)
    if evidence.archs:
        source = evidence.list_source or (build.source if build else "")
        return ArchSource(
            evidence.archs,
            f"compiled into {label} ({plain_archs_source(source)})",
            source=source,
            present=evidence.present,
            absent=evidence.absent,
            facts=facts,
        )
    toolkit = matrix.archs_for_cuda(cuda)
    if toolkit is None:
        return None
    absent = evidence.absent
    elsewhere = (
        f" for {platform} (the matrix's list was seen on {build.archs_platform} only)"
        if build is not None and build.archs and build.archs_platform != platform
        else ""
    )
    return ArchSource(
        tuple(a for a in toolkit.archs if a not in absent),
        f"CUDA {cuda} can target ({plain_source(toolkit.source, toolkit.confirmed)}); "
        f"{label}'s own list is unknown{elsewhere}: arch coverage unverified",
        verified=False,
        absent=absent,
        source=toolkit.source,
        present=evidence.present,
        facts=facts,
    )


def plain_archs_source(source: str) -> str:
    """How an arch list is known, in plain words: measured, or seen in a report."""
    if source.startswith("MEASURED"):
        return "measured from the wheel"
    if source.startswith("3P"):
        return "reported by a user, not in the official docs"
    return "seen in Paddle's issue tracker"


def _major_minor(cuda: str) -> tuple[int, ...]:
    return release_of(cuda)[:2]

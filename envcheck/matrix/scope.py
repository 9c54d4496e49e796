"""What a fact covers, and which facts reach a build: pure queries over `Matrix`.

A fact names its scope: a release (a `[[build]]` row's own `archs` / `archs_absent` /
`archs_present`), a release line or a major (`[[arch_fact]]` with `releases = "==2.5.*"` or
`"==3.*"`), a CUDA variant family (`cuda = "11"` or `"11.8"`) and optionally a platform. It applies
to every member, unless the member's own row says otherwise (its own list holds the arch, or its
own report shows it running). Pre-releases (3.0.0b1, rc), `.postNNN` wheels (2.5.2.post117: the
post number is Paddle's CUDA marker) and nightlies (3.0.0.dev20250717) belong to the line they
precede or follow, as PEP 440 prefix matching places them.

Paddle#55715 (2.5.0 post117: "arch: 70 75 80 86") is why a 2.5.2 row alone could not judge a 2.5.0
wheel; PaddleX#3853 (3.0.0rc0 cu118 on an H800) is why "3.x cu118 lacks sm_90" reaches an rc.
"""

from __future__ import annotations

import shlex

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from envcheck.contracts.record import record
from envcheck.contracts.versions import VersionParseError, release_of
from envcheck.matrix.model import (
    ArchFact,
    CudaLibrary,
    Matrix,
    PaddleBuild,
    PaddleRelease,
    release_version,
)


@record
class ScopedFact:
    """One fact applied to a build, with what it covers: said in the report and `--explain`."""

    says: str  # "compiled for 70 75 80 86", "sm_90 missing", "sm_61 running"
    scope: str  # "release 2.5.2 cu117", "release line 2.5.x, CUDA 11"
    source: str
    confirmed: bool = True

    @property
    def text(self) -> str:
        standing = "" if self.confirmed else ", unconfirmed"
        return f"{self.says} (fact of {self.scope}; {self.source}{standing})"


@record
class ArchEvidence:
    """Everything the matrix knows of one build's archs, merged across the scopes reaching it."""

    archs: tuple[int, ...] | None  # the compiled list, where some scope states one
    absent: tuple[int, ...] = ()
    present: tuple[int, ...] = ()
    facts: tuple[ScopedFact, ...] = ()  # every fact applied, the list's first
    list_source: str | None = None  # the list's source keys


def scope_label(releases: str) -> str:
    """`==2.5.*` -> `release line 2.5.x`, `==3.*` -> `3.x`, `==3.1.0` -> `release 3.1.0`."""
    spec = releases.strip()
    if spec.startswith("==") and spec.endswith(".*") and "," not in spec:
        line = spec[2:-2]
        return f"release line {line}.x" if "." in line else f"Paddle {line}.x"
    if spec.startswith("==") and "," not in spec:
        return f"release {spec[2:]}"
    return f"releases {spec}"


def covers_release(fact: ArchFact | CudaLibrary, paddle: str) -> bool:
    try:
        return SpecifierSet(fact.releases).contains(Version(paddle), prereleases=True)
    except (InvalidSpecifier, InvalidVersion):
        return False


def covers_cuda(fact: ArchFact | CudaLibrary, cuda: str) -> bool:
    try:
        want = release_of(fact.cuda)[: len(fact.cuda.split("."))]
        return release_of(cuda)[: len(want)] == want
    except VersionParseError:
        return False


def family_facts(
    matrix: Matrix, paddle: str, cuda: str, platform: str | None
) -> tuple[ArchFact, ...]:
    """The `[[arch_fact]]` rows covering this release, CUDA variant and platform."""
    return tuple(
        f
        for f in matrix.arch_facts
        if covers_release(f, paddle)
        and covers_cuda(f, cuda)
        and (f.platform is None or f.platform == platform)
    )


def arch_evidence(
    matrix: Matrix,
    paddle: str,
    cuda: str,
    build: PaddleBuild | None,
    platform: str | None,
) -> ArchEvidence:
    """The build's own row first (its release), then every family fact reaching it; a family's
    "missing" never overrides the member's own list or report of the arch running."""
    variant = f"cu{cuda.replace('.', '')}"
    facts: list[ScopedFact] = []
    own_list = build.archs_on(platform) if build is not None else None
    own_absent = build.archs_absent if build is not None else ()
    own_present = build.archs_present if build is not None else ()
    mine = f"release {build.paddle} {variant}" if build is not None else ""
    archs, list_source = own_list, None
    if build is not None and own_list:
        list_source = build.archs_source or build.source
        facts.append(
            ScopedFact(_compiled(own_list), f"{mine}, {platform}", list_source, build.confirmed)
        )
    family = family_facts(matrix, paddle, cuda, platform)
    for f in family:
        if archs is None and f.archs:
            archs, list_source = f.archs, f.source
            facts.append(ScopedFact(_compiled(f.archs), _family(f), f.source, f.confirmed))
    holds = set(own_list or ()) | set(own_present)
    absent = list(own_absent)
    present = list(own_present)
    if build is not None:
        facts += [
            ScopedFact(f"sm_{a} missing", mine, build.source, build.confirmed) for a in own_absent
        ]
        facts += [
            ScopedFact(f"sm_{a} running", mine, build.source, build.confirmed) for a in own_present
        ]
    for f in family:
        for a in f.absent:
            if a not in holds and a not in absent:
                absent.append(a)
                facts.append(ScopedFact(f"sm_{a} missing", _family(f), f.source, f.confirmed))
        for a in f.present:
            if a not in own_absent and a not in present:
                present.append(a)
                facts.append(ScopedFact(f"sm_{a} running", _family(f), f.source, f.confirmed))
    return ArchEvidence(archs, tuple(absent), tuple(present), tuple(facts), list_source)


def release_in_scope(matrix: Matrix, paddle: str) -> tuple[PaddleRelease, str] | None:
    """The release whose documented facts (the CC floor) cover an installed version: its own
    row, else the nearest release of its line (3.0.0b1 -> 3.0.0b2, 2.5.0 -> 2.5.2), with the
    scope in words. None: no release of that line is known."""
    try:
        v = Version(paddle)
    except InvalidVersion:
        return None
    for r in matrix.releases:
        if Version(r.version) == release_version(paddle):
            return r, f"release {r.version}"
    line = [r for r in matrix.releases if Version(r.version).release[:2] == v.release[:2]]
    if not line:
        return None
    after = [r for r in line if Version(r.version) >= v]
    if after:
        nearest = min(after, key=lambda r: Version(r.version))
    else:
        nearest = max(line, key=lambda r: Version(r.version))
    major, minor = v.release[:2]
    return nearest, f"release line {major}.{minor}.x ({nearest.version}'s row)"


def one_build(matrix: Matrix, requirement: str) -> bool:
    """Whether `name==version` installs one build wherever an index holds it: every row pinned to
    it is the same CUDA and cuDNN variant (a CPU build; 2.6.2's cu118 build, the one PyPI
    carries; a `.postNNN` wheel). A 3.x GPU release publishes one version for every CUDA variant,
    each on its own index: there only the index says which build it is."""
    from packaging.utils import canonicalize_name  # brings logging: only the fix asks this

    name, _, version = requirement.partition("==")
    wanted = (canonicalize_name(name), version)
    variants = {(b.cuda, b.cudnn) for b in matrix.builds if _pinned(b.pip) == wanted}
    return len(variants) == 1


def _pinned(pip: str) -> tuple[str, str] | None:
    """(canonical name, version) a row's `python -m pip install name==version …` pins."""
    from packaging.utils import canonicalize_name

    for arg in shlex.split(pip)[4:]:
        name, sep, version = arg.partition("==")
        if sep and not arg.startswith("-"):
            return canonicalize_name(name), version
    return None


def _compiled(archs: tuple[int, ...]) -> str:
    return "compiled for " + " ".join(map(str, archs))


def _family(f: ArchFact) -> str:
    where = f", {f.platform}" if f.platform else ""
    return f"{scope_label(f.releases)}, CUDA {f.cuda} builds{where}"


def libraries_of_build(
    matrix: Matrix, paddle: str, cuda: str, pip_cuda_libraries: bool
) -> tuple[CudaLibrary, ...]:
    """The `[[cuda_library]]` rows that say which names a build opens: one per library, the row of
    the narrowest CUDA scope that covers the build (`12.0` over `12`)."""
    best: dict[str, CudaLibrary] = {}
    for row in matrix.cuda_libraries:
        if row.pip_cuda_libraries != pip_cuda_libraries:
            continue
        if not (covers_release(row, paddle) and covers_cuda(row, cuda)):
            continue
        held = best.get(row.library)
        if held is None or len(row.cuda.split(".")) > len(held.cuda.split(".")):
            best[row.library] = row
    return tuple(best.values())

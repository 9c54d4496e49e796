"""Arch coverage: the GPU architectures compiled into the installed Paddle build, against every GPU
("no kernel image is available for execution on the device"). The chosen image's coverage is part
of the choice itself (`envcheck.image.assessment`: `ImageChoice.arch_note`, said on the image line).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from packaging.version import InvalidVersion, Version

from envcheck.contracts.findings import Finding, fail, passed, warn
from envcheck.contracts.versions import VersionParseError, sm_of
from envcheck.matrix.builds import plain_archs_source
from envcheck.matrix.compat import arch_supported, wheel_platform
from envcheck.matrix.scope import ArchEvidence, arch_evidence
from envcheck.verdict.fixes import PROVE_WITH_SMOKE_FIX, RECORD_ON_THAT_HOST_FIX, arch_build_fix
from envcheck.verdict.gpu_groups import GpuGroup, gpu_groups
from envcheck.verdict.proof import ARCH_UNVERIFIED_ID
from envcheck.verdict.rules.paddle import installed_build
from envcheck.verdict.verified_variant import verified_build_fix

if TYPE_CHECKING:
    from envcheck.verdict.judge import Context


def check_build_archs(ctx: Context) -> Iterable[Finding]:
    """The installed build against every GPU: its own list (3.x `compiled_cuda_archs`), else the
    matrix's list for that wheel or its release line / CUDA family (`envcheck.matrix.scope`),
    else (2.x) at least what its CUDA toolkit can target: a cu117 wheel cannot hold sm_90
    (Paddle#58971). Unknown coverage is said, never passed silently. Identical GPUs share one
    finding ("GPU 0-7 Tesla P40")."""
    p = ctx.host.paddle
    gpus = [g for g in ctx.gpus if g.compute_capability]
    if not gpus or p.status != "ok" or not p.cuda:
        return
    archs, origin, verified, facts = _installed_archs(ctx)
    own_list = p.compiled_cuda_archs or p.fatbin_archs
    evidence = None if own_list else _evidence(ctx)
    absent = evidence.absent if evidence else ()
    decided = "; ".join(facts) or origin
    prove = RECORD_ON_THAT_HOST_FIX if ctx.saved else PROVE_WITH_SMOKE_FIX
    for group in gpu_groups(gpus):
        cc = group.compute_capability
        try:
            sm = sm_of(cc)
        except VersionParseError:  # saved facts may hold anything; the GPU check reports it
            continue
        jit = any(a <= sm for a in p.fatbin_ptx or ())  # PTX compiles for any newer GPU
        off_list = archs is not None and not arch_supported(cc, archs) and not jit
        doubt = _doubtful(evidence, sm, off_list) if not own_list else None
        if (sm in absent or off_list) and doubt is not None:
            # an unconfirmed fact can warn, never fail: only the build itself or the smoke decides
            yield _unverified(
                group,
                f"an unconfirmed fact says Paddle {p.version} (CUDA {p.cuda}) lacks it ({doubt}); "
                "only the build's own list or the smoke training can decide",
                f"decided by: {decided} (unconfirmed: a warning, not a failure)",
                prove,
                facts,
            )
        elif sm in absent or off_list:
            listed = " ".join(map(str, archs or ()))
            because = (  # a list the build was compiled with says it best; else the report
                f"Paddle {p.version} (CUDA {p.cuda}) {origin}: {listed}"
                if off_list and verified or sm not in absent
                else f"a public report shows sm_{sm} missing from this build ({origin})"
            )
            yield fail(
                "paddle.arch-missing",
                f'{group.label} is sm_{sm} but {because}: "no kernel image is available '
                'for execution on the device"',
                fix=arch_build_fix(sm, verified_build_fix(ctx, sm)),
                layer="paddle",
                index=group.indices[0],
                indices=list(group.indices),
                compute_capability=cc,
                compiled=list(archs or ()),
                archs_verified=verified,
                facts=list(facts),
                detail=f"decided by: {decided}",
            )
        elif not verified:
            yield _unverified(
                group,
                f"{_what_is_missing(ctx)}{_newer_than_known(ctx, sm)}; {origin} includes "
                f"sm_{sm}, the build itself may not: only the smoke training can prove it",
                f"decided by: {decided}",
                prove,
                facts,
            )
        else:
            yield passed(
                "paddle.archs",
                f"{group.label} (sm_{sm}) is among the archs Paddle {p.version} (CUDA {p.cuda}) "
                f"{origin}",
                layer="paddle",
                index=group.indices[0],
                indices=list(group.indices),
                compute_capability=cc,
                facts=list(facts),
                detail=f"decided by: {decided}",
            )


def _unverified(
    group: GpuGroup, why: str, detail: str, fix: str, facts: tuple[str, ...]
) -> Finding:
    """`paddle.arch-unverified` for one set of identical GPUs: what is not known, and why."""
    sm = sm_of(group.compute_capability)
    return warn(
        ARCH_UNVERIFIED_ID,
        f"{group.label} (sm_{sm}): arch coverage unverified: {why}",
        fix=fix,
        layer="paddle",
        index=group.indices[0],
        indices=list(group.indices),
        compute_capability=group.compute_capability,
        facts=list(facts),
        detail=detail,
    )


def _what_is_missing(ctx: Context) -> str:
    """Why no list: a 3.x build always records `compiled_cuda_archs`; what is missing is that
    list in the saved facts (or an empty one), and a list in the matrix."""
    p = ctx.host.paddle
    if (p.version or "").startswith("2."):
        record = "a 2.x build records no compiled archs and its .nv_fatbin was not read"
    elif p.compiled_cuda_archs is not None:
        record = "its paddle/version record lists no compiled archs (empty)"
    else:
        record = "the saved facts lack its compiled_cuda_archs list"
    return (
        f"Paddle {p.version} (CUDA {p.cuda}): {record}, and the matrix has no list for this "
        "build, its release line or its CUDA family"
    )


def _newer_than_known(ctx: Context, sm: int) -> str:
    """ ", and sm_120 is newer than every arch in the lists it has of Paddle 3.1 builds (up to
    sm_90)": a nightly or unknown build on a new architecture."""
    p = ctx.host.paddle
    try:
        base = Version(p.version or "").base_version
        lists = [b.archs for b in ctx.matrix.builds_for(base) if b.archs]
    except InvalidVersion:
        return ""
    newest = max((max(archs) for archs in lists), default=None)
    if newest is None or sm <= newest:
        return ""
    return (
        f", and sm_{sm} is newer than every arch in its lists of Paddle {base} builds "
        f"(up to sm_{newest})"
    )


def _installed_archs(ctx: Context) -> tuple[tuple[int, ...] | None, str, bool, tuple[str, ...]]:
    """(archs, where they come from, whether they are the build's own list, the facts applied
    with their scope)."""
    p = ctx.host.paddle
    if p.compiled_cuda_archs:
        origin = "was compiled for (its own paddle/version record)"
        return tuple(p.compiled_cuda_archs), origin, True, (f"{origin}",)
    if p.fatbin_archs:
        origin = "was compiled for (read from the .nv_fatbin of its libpaddle.so/libphi.so)"
        return tuple(p.fatbin_archs), origin, True, (f"{origin}",)
    evidence = _evidence(ctx)
    facts = tuple(f.text for f in evidence.facts) if evidence else ()
    if evidence is not None and evidence.archs:
        how = plain_archs_source(evidence.list_source or "")
        return evidence.archs, f"was compiled for ({how})", True, facts
    toolkit = _toolkit_archs(ctx, p.cuda or "")
    if toolkit is None:
        return None, "records no archs, and its CUDA is unknown to the matrix", False, facts
    return toolkit, f"can at most contain what CUDA {p.cuda} can target", False, facts


def _doubtful(evidence: ArchEvidence | None, sm: int, off_list: bool) -> str | None:
    """The unconfirmed fact that alone says `sm` is missing from the build, or None when a
    confirmed fact (or the CUDA toolkit's own reach) says it."""
    if evidence is None:
        return None
    says = f"sm_{sm} missing"
    against = [
        f
        for f in evidence.facts
        if f.says == says or (off_list and f.says.startswith("compiled for"))
    ]
    if not against or any(f.confirmed for f in against):
        return None
    return "; ".join(f.text for f in against)


def _evidence(ctx: Context) -> ArchEvidence | None:
    """What the matrix knows of the installed build's archs, every scope reaching it."""
    p = ctx.host.paddle
    if not p.version or not p.cuda:
        return None
    machine = ctx.host.machine
    try:
        return arch_evidence(
            ctx.matrix,
            p.version,
            p.cuda,
            installed_build(ctx, p.cuda),
            wheel_platform(machine.os, machine.arch),
        )
    except (InvalidVersion, VersionParseError):
        return None


def _toolkit_archs(ctx: Context, cuda: str) -> tuple[int, ...] | None:
    try:
        row = ctx.matrix.archs_for_cuda(cuda)
    except ValueError:  # packaging's InvalidVersion: a saved facts file may hold anything
        return None
    return row.archs if row else None

"""Arch coverage: the GPU architectures compiled into the installed Paddle build, against every GPU
("no kernel image is available for execution on the device"). The chosen image's coverage is part
of the choice itself (`envcheck.image.assessment`: `ImageChoice.arch_note`, said on the image line).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from packaging.version import InvalidVersion, Version

from envcheck.contracts.findings import Finding, fail, warn
from envcheck.contracts.versions import VersionParseError, sm_of
from envcheck.matrix.builds import plain_archs_source
from envcheck.verdict.compat import arch_supported, wheel_platform
from envcheck.verdict.fixes import PROVE_WITH_SMOKE_FIX, arch_build_fix
from envcheck.verdict.proof import ARCH_UNVERIFIED_ID
from envcheck.verdict.rules.paddle import installed_build

if TYPE_CHECKING:
    from envcheck.verdict.judge import Context


def check_build_archs(ctx: Context) -> Iterable[Finding]:
    """The installed build against every GPU: its own list (3.x `compiled_cuda_archs`), else the
    matrix's list for that wheel, else (2.x) at least what its CUDA toolkit can target: a cu117
    wheel cannot hold sm_90 (Paddle#58971). Unknown coverage is said, never passed silently."""
    p = ctx.host.paddle
    gpus = [g for g in ctx.gpus if g.compute_capability]
    if not gpus or p.status != "ok" or not p.cuda:
        return
    archs, origin, verified = _installed_archs(ctx)
    build = installed_build(ctx, p.cuda)
    own_list = p.compiled_cuda_archs or p.fatbin_archs
    absent = build.archs_absent if build and not own_list else ()
    for g in gpus:
        cc = g.compute_capability or ""
        try:
            sm = sm_of(cc)
        except VersionParseError:  # saved facts may hold anything; the GPU check reports it
            continue
        jit = any(a <= sm for a in p.fatbin_ptx or ())  # PTX compiles for any newer GPU
        missing = sm in absent or (archs is not None and not arch_supported(cc, archs) and not jit)
        if missing:
            listed = " ".join(map(str, archs or ()))
            because = (
                f"a public report shows sm_{sm} missing from this build ({origin})"
                if sm in absent
                else f"Paddle {p.version} (CUDA {p.cuda}) {origin}: {listed}"
            )
            yield fail(
                "paddle.arch-missing",
                f'GPU {g.index} {g.name} is sm_{sm} but {because}: "no kernel image is available '
                'for execution on the device"',
                fix=arch_build_fix(sm, ctx.gpu_build_fix),
                layer="paddle",
                index=g.index,
                compute_capability=cc,
                compiled=list(archs or ()),
                archs_verified=verified,
            )
        elif not verified:
            yield warn(
                ARCH_UNVERIFIED_ID,
                f"GPU {g.index} {g.name} (sm_{sm}): arch coverage unverified: Paddle {p.version} "
                f"(CUDA {p.cuda}) does not record its compiled archs and the matrix has no list "
                f"for it{_newer_than_known(ctx, sm)}; {origin} includes sm_{sm}, the build itself "
                "may not: only the smoke training can prove it",
                fix=PROVE_WITH_SMOKE_FIX,
                layer="paddle",
                index=g.index,
                compute_capability=cc,
            )


def _newer_than_known(ctx: Context, sm: int) -> str:
    """ ", and sm_120 is newer than every arch in the lists it has of Paddle 3.1 builds (up to
    sm_90)": a nightly or unknown build on a new architecture (issue 22.7)."""
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


def _installed_archs(ctx: Context) -> tuple[tuple[int, ...] | None, str, bool]:
    """(archs, where they come from, whether they are the build's own list)."""
    p = ctx.host.paddle
    if p.compiled_cuda_archs:
        return (
            tuple(p.compiled_cuda_archs),
            "was compiled for (its own paddle/version record)",
            True,
        )
    if p.fatbin_archs:
        return (
            tuple(p.fatbin_archs),
            "was compiled for (read from the .nv_fatbin of its libpaddle.so/libphi.so)",
            True,
        )
    build = installed_build(ctx, p.cuda or "")
    machine = ctx.host.machine
    own = build.archs_on(wheel_platform(machine.os, machine.arch)) if build else None
    if build is not None and own:
        how = plain_archs_source(build.archs_source or build.source)
        return own, f"was compiled for ({how})", True
    toolkit = _toolkit_archs(ctx, p.cuda or "")
    if toolkit is None:
        return None, "records no archs, and its CUDA is unknown to the matrix", False
    return toolkit, f"can at most contain what CUDA {p.cuda} can target", False


def _toolkit_archs(ctx: Context, cuda: str) -> tuple[int, ...] | None:
    try:
        row = ctx.matrix.archs_for_cuda(cuda)
    except ValueError:  # packaging's InvalidVersion: a saved facts file may hold anything
        return None
    return row.archs if row else None

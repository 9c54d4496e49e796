"""The advice that follows an arch finding names a variant known to hold the GPU's arch.

A GTX 1080 on 3.2.0 cu129 is `arch-missing` (PaddleX#4682: sm_61 gets "no kernel image"); the
variant that runs it is 3.2.0 cu118 (the same report). When the chosen image's build has no such
evidence, the fix names the newest variant that has it (its own list, a release-line or CUDA-family
list, or a report of the arch running), its release first, then the other releases a first-party
source confirms, newest first. Pure: (facts, matrix, image choice) -> words.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from packaging.version import Version

from envcheck.contracts.facts import HostFacts, usable_gpus
from envcheck.contracts.remedy import Remedy, aiming
from envcheck.contracts.versions import VersionParseError, release_of, sm_of
from envcheck.image.assessment import gpu_compute_capability
from envcheck.matrix.builds import runnable_archs
from envcheck.matrix.compat import driver_support, wheel_platform
from envcheck.matrix.model import Matrix, PaddleBuild
from envcheck.verdict.fixes import (
    installed_distributions,
    matrix_install,
    paddle_remedy,
    target_python,
)

if TYPE_CHECKING:
    from envcheck.verdict.judge import Context


def verified_build_fix(ctx: Context, sm: int) -> Remedy:
    """The GPU build to install for `sm`: the chosen one where it is known to hold every GPU's
    arch, else the newest variant that is."""
    image = ctx.image
    if image is None or image.arch_known or not image.paddle:
        return ctx.gpu_build_fix
    build = verified_variant(ctx.host, ctx.matrix, image.paddle, _same_variant(ctx))
    if build is None:
        return ctx.gpu_build_fix
    host = ctx.host
    install = matrix_install(build.pip, target_python(host), installed_distributions(host))
    if install is None:
        return ctx.gpu_build_fix
    variant = f"Paddle {build.paddle} cu{(build.cuda or '').replace('.', '')}"
    goal = (
        f"install {variant}, known to hold sm_{sm} and every other GPU's arch (nothing shows the "
        f"variant of the chosen image, {image.tag}, holds it)"
    )
    # that variant's own cuDNN is not the chosen image's: no cuDNN step is derived from it
    return aiming(goal, paddle_remedy(host, None, install, ctx.gpu_build_fix))


def _same_variant(ctx: Context) -> bool:
    """The chosen image is of the CUDA variant the installed build is: the variant this report
    finds missing the arch, so other releases are searched too."""
    image, cuda = ctx.image, ctx.host.paddle.cuda
    if image is None or not image.cuda or not cuda:
        return False
    try:
        return release_of(image.cuda)[:2] == release_of(cuda)[:2]
    except VersionParseError:
        return False


def verified_variant(
    host: HostFacts, matrix: Matrix, prefer: str, other_releases: bool = False
) -> PaddleBuild | None:
    """The newest GPU build of `prefer` (then, with `other_releases`, of the releases a
    first-party source confirms, newest first) whose arch evidence holds every GPU's arch and
    whose CUDA the driver runs; None when no build has such evidence."""
    ccs = [cc for g in usable_gpus(host) if (cc := gpu_compute_capability(g, matrix))]
    if not ccs:
        return None
    platform = wheel_platform(host.machine.os, host.machine.arch)
    others = sorted(
        (r.version for r in matrix.releases if r.confirmed and r.version != prefer),
        key=Version,
        reverse=True,
    )
    if not other_releases:
        others = []
    for paddle in (prefer, *others):
        builds = [b for b in matrix.builds_for(paddle) if b.cuda and b.package.endswith("-gpu")]
        for b in sorted(builds, key=lambda b: release_of(b.cuda or "0")[:2], reverse=True):
            if _runs(host, matrix, b, ccs, platform):
                return b
    return None


def _runs(
    host: HostFacts, matrix: Matrix, build: PaddleBuild, ccs: list[str], platform: str | None
) -> bool:
    cuda = build.cuda or ""
    d = host.driver
    if d.version and driver_support(d.version, d.cuda, cuda, matrix).level == "none":
        return False
    archs = runnable_archs(matrix, build.paddle, cuda, platform)
    return archs is not None and all(
        archs.known_to_run(cc) and sm_of(cc) not in archs.absent for cc in ccs
    )

"""The installed Paddle build: present, one distribution, a GPU build on a GPU host, and a driver
that runs its CUDA.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from envcheck.contracts.facts import unlisted_gpus
from envcheck.contracts.findings import Finding, fail, passed, warn
from envcheck.contracts.remedy import Instruction, Remedy, say, steps
from envcheck.contracts.versions import VersionParseError, parse_dotted
from envcheck.matrix.builds import build_for
from envcheck.matrix.compat import driver_support
from envcheck.matrix.model import PaddleBuild
from envcheck.verdict.fixes import (
    RECORD_ON_THAT_HOST_FIX,
    paddle_install,
    paddle_remedy,
    upgrade_driver_fix,
)
from envcheck.verdict.rules.driver import no_gpu_hardware
from envcheck.verdict.rules.driver_floor import gpu_floors

if TYPE_CHECKING:
    from envcheck.verdict.judge import Context


_BOTH_DISTRIBUTIONS = frozenset({"paddlepaddle", "paddlepaddle-gpu"})


def check_paddle(ctx: Context) -> Iterable[Finding]:
    p = ctx.host.paddle
    if p.status == "absent":
        yield warn(
            "paddle.missing",
            f"Paddle is not installed for {p.python or 'this Python'}",
            fix=ctx.install_fix,
            layer="paddle",
            python=p.python,
        )
        return
    if p.status != "ok":
        if p.status == "error":
            yield warn(
                "paddle.unreadable",
                f"could not read the Paddle build: {p.reason}",
                fix=ctx.install_fix,
                layer="paddle",
            )
        return
    if _BOTH_DISTRIBUTIONS.issubset(p.distributions):
        yield fail(
            "paddle.both-installed",
            "both paddlepaddle and paddlepaddle-gpu are installed: they overwrite each other's files",
            fix=ctx.install_fix,
            layer="paddle",
        )
    if not p.cuda and p.package == "paddlepaddle-gpu":  # a saved report that left it out
        yield warn(
            "paddle.cuda-unverified",
            f"paddlepaddle-gpu {p.version} is installed, but the facts do not record its CUDA "
            "variant: the driver, cuDNN and archs it needs are unverified",
            fix=RECORD_ON_THAT_HOST_FIX if ctx.saved else ctx.install_fix,
            layer="paddle",
            package=p.package,
            version=p.version,
        )
        return
    if not p.cuda:
        yield from _check_cpu_build(ctx)
        return
    yield passed(
        "paddle.build",
        f"{p.package or 'paddle'} {p.version}, CUDA {p.cuda}, cuDNN {p.cudnn or 'not recorded'}",
        layer="paddle",
        version=p.version,
        cuda=p.cuda,
        cudnn=p.cudnn,
    )
    yield from _check_driver_for_build(ctx, p.cuda, f"Paddle {p.version} (CUDA {p.cuda})")


def _check_cpu_build(ctx: Context) -> Iterable[Finding]:
    p = ctx.host.paddle
    gpus = len(ctx.gpus) or unlisted_gpus(ctx.host)
    # On a CPU-only machine the driver's finding says it all: no GPU build to install there.
    if gpus or (ctx.expect_gpu and not no_gpu_hardware(ctx)):
        yield fail(
            "paddle.cpu-build",
            f"{p.package or 'paddlepaddle'} {p.version} is the CPU-only build on a host with "
            f"{gpus} NVIDIA GPU(s): training will silently run on the CPU",
            fix=ctx.gpu_build_fix,
            layer="paddle",
            package=p.package,
            version=p.version,
        )
    else:
        yield passed(
            "paddle.build",
            f"{p.package or 'paddlepaddle'} {p.version} (CPU build) on a host without GPU",
            layer="paddle",
            package=p.package,
            version=p.version,
        )


def _check_driver_for_build(ctx: Context, cuda: str, what: str) -> Iterable[Finding]:
    d = ctx.host.driver
    if d.status != "ok":
        return
    if not d.version and not d.cuda:  # a saved document: unknown is not absent
        yield warn(
            "driver.unverified",
            f"the saved facts record neither the driver's version nor its CUDA level: whether "
            f"it runs {what} is unverified",
            fix=RECORD_ON_THAT_HOST_FIX,
            layer="driver",
        )
        return
    support = driver_support(d.version, d.cuda, cuda, ctx.matrix)
    if support.level == "full":
        yield passed(
            "driver.cuda",
            f"{d.named} runs {what}",
            layer="driver",
            driver=d.version,
            cuda=cuda,
        )
    elif support.level == "minor-compat":
        yield warn(
            "driver.minor-compat",
            f"{d.named} supports CUDA {d.cuda}, older than {what}: it runs through "
            f"minor-version compatibility ({support.reason}); PTX JIT and newer-driver APIs fail"
            f"{_paddle_driver_note(ctx, cuda, d.version)}",
            fix=upgrade_driver_fix(support.full_driver, full_support=True),
            layer="driver",
            driver=d.version,
            driver_cuda=d.cuda,
            cuda=cuda,
        )
    elif gpu_floors(ctx) is None:  # else the driver's floor check names every variant's floor
        yield fail(
            "driver.too-old",
            f"{d.named} (CUDA {d.cuda or 'not recorded'}) is too old for {what}: {support.reason} "
            '(Paddle: "CUDA driver version is insufficient for CUDA runtime version")',
            fix=_build_for_driver(ctx, upgrade_driver_fix(support.minimum_driver)),
            layer="driver",
            driver=d.version,
            cuda=cuda,
            minimum_driver=support.minimum_driver,
        )


def _build_for_driver(ctx: Context, upgrade: str) -> Remedy:
    """A build for this driver, which `envcheck fix` installs, where there is one; the driver's
    upgrade is then the alternative (a person's, as root)."""
    install = paddle_install(ctx.host, ctx.image, gpu=True)
    if install is None:
        return say(upgrade)
    build = paddle_remedy(ctx.host, ctx.image, install, upgrade)
    return steps(build, Instruction(upgrade, alternative=True))  # rendered "or instead: …"


def _paddle_driver_note(ctx: Context, cuda: str, driver: str | None) -> str:
    """Paddle's own documented floor, where stricter than NVIDIA's (3.x cu126: 550.54.14), as a
    note: NVIDIA's minor-version compatibility decides."""
    build = installed_build(ctx, cuda)
    floor = build.paddle_min_driver if build else None
    try:
        if not floor or not driver or parse_dotted(driver).version >= parse_dotted(floor).version:
            return ""
    except VersionParseError:
        return ""
    return (
        f"; note: Paddle's install docs ask for >= {floor} for this build, stricter than "
        "NVIDIA's rule"
    )


def installed_build(ctx: Context, cuda: str) -> PaddleBuild | None:
    """The matrix's row for the installed wheel (same release, CUDA major.minor), if any."""
    p = ctx.host.paddle
    if not p.version or not cuda:
        return None
    try:
        return build_for(ctx.matrix, p.version, cuda)
    except (ValueError, VersionParseError):
        return None

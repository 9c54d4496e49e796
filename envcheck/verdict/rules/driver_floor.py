"""One driver target per report: where no GPU build of the target release runs on this driver,
the driver is the problem, whatever Paddle is installed (the CPU wheel included), and the finding
states the floor of each GPU variant. Before, a T4 on driver 418 with the CPU wheel read driver
PASS; with the GPU wheel it read one floor (the installed variant's) and the image another.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from envcheck.contracts.facts import unlisted_gpus
from envcheck.contracts.findings import Finding, fail, warn
from envcheck.contracts.versions import VersionParseError, parse_dotted
from envcheck.matrix.compat import driver_support
from envcheck.verdict.fixes import upgrade_driver_fix

if TYPE_CHECKING:
    from envcheck.verdict.judge import Context

DRIVER_TOO_OLD = "driver.too-old"


def gpu_floors(ctx: Context) -> dict[str, str] | None:
    """{CUDA of each GPU build of the target release: the lowest driver that runs it}, when this
    driver runs none of them; None when one runs, or nothing is known to judge by."""
    d, image = ctx.host.driver, ctx.image
    if d.status != "ok" or not d.version or image is None or not image.paddle:
        return None
    if not (ctx.gpus or unlisted_gpus(ctx.host)):
        return None
    floors: dict[str, str] = {}
    for build in ctx.matrix.builds_for(image.paddle):
        if not build.cuda:
            continue
        support = driver_support(d.version, d.cuda, build.cuda, ctx.matrix)
        if support.level != "none" or not support.minimum_driver:
            return None
        floors[build.cuda] = support.minimum_driver
    return floors or None


def _installed_runs(ctx: Context) -> bool:
    """The installed GPU build's CUDA runs on this driver."""
    p, d = ctx.host.paddle, ctx.host.driver
    if p.status != "ok" or not p.cuda:
        return False
    return driver_support(d.version, d.cuda, p.cuda, ctx.matrix).level != "none"


def check_driver_floor(ctx: Context) -> Iterable[Finding]:
    floors = gpu_floors(ctx)
    if floors is None or ctx.image is None:
        return
    d = ctx.host.driver
    try:
        lowest = min(floors.values(), key=lambda v: parse_dotted(v).version)
    except VersionParseError:
        return
    # the image's floor where the doctor chose one: the driver that runs its image runs a pip
    # build of the same CUDA too, so the report names one target
    target = ctx.image.min_driver or lowest
    each = ", ".join(f"CUDA {cuda} needs >= {floor}" for cuda, floor in sorted(floors.items()))
    # Another release installed, a GPU build this driver runs: the target's floor is advice.
    advice = _installed_runs(ctx) and ctx.about_another_release(ctx.image.paddle)
    about = (
        f"; advice only: the installed Paddle {ctx.host.paddle.version} runs on it and decides "
        "the verdict"
        if advice
        else ""
    )
    yield (warn if advice else fail)(
        DRIVER_TOO_OLD,
        f"{d.named} (CUDA {d.cuda or 'not recorded'}) runs no GPU build of Paddle "
        f"{ctx.image.paddle}: {each}{about}",
        fix=upgrade_driver_fix(target),
        layer="driver",
        driver=d.version,
        minimum_driver=target,
        floors=floors,
    )

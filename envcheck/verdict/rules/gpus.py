"""The GPUs the driver reports: each one usable by the Paddle release (compute capability, MIG),
and a GPU expected (--expect-gpu) where nothing shows one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from envcheck.contracts.facts import GpuFacts
from envcheck.contracts.findings import Finding, fail, passed, warn
from envcheck.verdict.compat import cc_below
from envcheck.verdict.fixes import GPU_MISSING_FIX, OLD_GPU_FIX, mig_instance_fix
from envcheck.verdict.rules.driver import install_driver_fix

if TYPE_CHECKING:
    from envcheck.verdict.judge import Context


def check_gpus(ctx: Context) -> Iterable[Finding]:
    if ctx.host.driver.status != "ok":
        return
    if not ctx.host.gpus:
        sev = fail if ctx.expect_gpu else warn
        yield sev(
            "gpu.none",
            "the driver answered but reports no GPU",
            fix=GPU_MISSING_FIX,
            layer="gpu",
        )
        return
    for g in ctx.host.gpus:
        yield from _check_one_gpu(ctx, g)


def _check_one_gpu(ctx: Context, g: GpuFacts) -> Iterable[Finding]:
    label = f"GPU {g.index} {g.name or '?'}"
    release = ctx.matrix.release(_target_paddle(ctx))
    if (
        g.compute_capability
        and release
        and cc_below(g.compute_capability, release.min_compute_capability)
    ):
        yield fail(
            "gpu.cc-too-low",
            f"{label} has compute capability {g.compute_capability}; Paddle {release.version} "
            f"needs more than {release.min_compute_capability}",
            fix=OLD_GPU_FIX,
            layer="gpu",
            index=g.index,
            compute_capability=g.compute_capability,
        )
    elif g.mig_mode and g.mig_instances == 0:
        yield fail(
            "gpu.mig-no-instances",
            f"{label} is in MIG mode with no GPU instance: nothing can run on it",
            fix=mig_instance_fix(g.index),
            layer="gpu",
            index=g.index,
        )
    else:
        yield passed(
            f"gpu.{g.index}",
            f"{label}, compute capability {g.compute_capability or '?'}, "
            f"{g.memory_total_mib or '?'} MiB",
            layer="gpu",
            index=g.index,
            compute_capability=g.compute_capability,
        )


def _target_paddle(ctx: Context) -> str:
    if ctx.image and ctx.image.paddle:
        return ctx.image.paddle
    return ctx.matrix.newest_release().version


def check_expected_gpu(ctx: Context) -> Iterable[Finding]:
    """--expect-gpu on facts that say nothing of the driver (a partial saved host): the other
    driver and GPU checks already fail every state they know."""
    if ctx.expect_gpu and ctx.host.driver.status == "unknown":
        yield fail(
            "gpu.expected",
            "a GPU was expected (--expect-gpu) but nothing shows a usable one",
            fix=install_driver_fix(ctx),
            layer="gpu",
        )

"""The GPUs the driver reports: each one usable by the Paddle release (compute capability, MIG),
and a GPU expected (--expect-gpu) where nothing shows one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from envcheck.contracts.facts import GpuFacts
from envcheck.contracts.findings import Finding, fail, passed, warn
from envcheck.matrix.compat import cc_below
from envcheck.verdict.fixes import (
    GPU_MISSING_FIX,
    OLD_GPU_FIX,
    keep_installed_fix,
    mig_instance_fix,
)
from envcheck.verdict.gpu_groups import gpu_groups, index_span
from envcheck.verdict.rules.driver import install_driver_fix
from envcheck.verdict.rules.gpu_health import unhealthy

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
    release = ctx.matrix.release(_target_paddle(ctx))
    floor = release.min_compute_capability if release else None
    low = [
        g
        for g in ctx.gpus
        if g.compute_capability and floor and cc_below(g.compute_capability, floor)
    ]
    target = release.version if release else ""
    # The newest release (or the image's) dropping a GPU is a finding about that release: advice
    # where the installed build is another one (it decides), a warning where the floor is
    # unconfirmed; else the GPU cannot train with it.
    advice = ctx.about_another_release(target)
    sure = release is not None and release.confirmed
    sev = fail if sure and not advice else warn
    for group in gpu_groups(low):  # identical GPUs: one finding ("GPU 0–7 Tesla K80")
        about = (
            f"; advice only: the installed Paddle {ctx.host.paddle.version} decides the verdict"
            if advice
            else ""
        )
        yield sev(
            "gpu.cc-too-low",
            f"{group.label} has compute capability {group.compute_capability}; Paddle {target} "
            f"needs at least {floor}{about}",
            fix=(
                keep_installed_fix(ctx.host.paddle.version or "", target, floor or "")
                if advice
                else OLD_GPU_FIX
            ),
            layer="gpu",
            index=group.indices[0],
            indices=list(group.indices),
            compute_capability=group.compute_capability,
        )
    rest = [g for g in ctx.gpus if g not in low]
    for g in rest:
        if g.mig_mode and g.mig_instances == 0:
            yield fail(
                "gpu.mig-no-instances",
                f"GPU {g.index} {g.name or '?'} is in MIG mode with no GPU instance: nothing can "
                "run on it",
                fix=mig_instance_fix(g.index),
                layer="gpu",
                index=g.index,
            )
    yield from _passed_groups(
        [g for g in rest if not (g.mig_mode and g.mig_instances == 0) and not unhealthy(g)]
    )


def _passed_groups(gpus: list[GpuFacts]) -> Iterable[Finding]:
    """One line per set of identical GPUs (name, compute capability, memory): "GPU 0–7 Tesla
    P40, compute capability 6.1, 24576 MiB", as `gpu.<first index>`."""
    groups: dict[tuple[str, str, str], list[int]] = {}
    for g in gpus:
        key = (g.name or "?", g.compute_capability or "?", str(g.memory_total_mib or "?"))
        groups.setdefault(key, []).append(g.index)
    for (name, cc, mib), indices in groups.items():
        yield passed(
            f"gpu.{indices[0]}",
            f"GPU {index_span(tuple(indices))} {name}, compute capability {cc}, {mib} MiB",
            layer="gpu",
            index=indices[0],
            indices=indices,
            compute_capability=None if cc == "?" else cc,
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

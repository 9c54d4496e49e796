"""The installed GPU build against this host, whatever image is chosen: its own release's compute
capability floor, and a driver it can use at all.

- A CC 5.2 card on an installed 3.0.0 (floor 6.0, "超过 6.0" in the docs) gets "not compatible"
  and CUDA error 209 from Paddle itself, even when an older release's image would run there.
  The floor is the release's own, else its line's (3.0.0b1 -> 3.0.0b2's row, 2.5.0 -> 2.5.2's):
  `envcheck.matrix.scope.release_in_scope`.
- A GPU build with no usable driver is not a pass: with NVIDIA GPUs on the PCI bus it is the silent
  CPU fallback (fix the driver or the container's NVIDIA runtime); with none, the CPU build is
  what this host needs (3.0 `paddlepaddle-gpu` errors even with `device='cpu'`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from envcheck.contracts.facts import unlisted_gpus
from envcheck.contracts.findings import Finding, fail, warn
from envcheck.contracts.versions import sm_of
from envcheck.matrix.compat import arch_supported, cc_below
from envcheck.matrix.scope import release_in_scope
from envcheck.verdict.fixes import OLD_GPU_FIX, driver_or_runtime_fix
from envcheck.verdict.gpu_groups import gpu_groups
from envcheck.verdict.rules.driver import install_driver_fix
from envcheck.verdict.rules.paddle import installed_build

if TYPE_CHECKING:
    from envcheck.verdict.judge import Context


def check_installed_floor(ctx: Context) -> Iterable[Finding]:
    p = ctx.host.paddle
    if p.status != "ok" or not p.cuda or not p.version:
        return
    scoped = release_in_scope(ctx.matrix, p.version)
    if scoped is None:
        return
    release, scope = scoped
    build = installed_build(ctx, p.cuda)
    minimum = (build.min_compute_capability if build else None) or release.min_compute_capability
    whose = (
        f"{scope} cu{p.cuda.replace('.', '')}" if build and build.min_compute_capability else scope
    )
    for group in gpu_groups(g for g in ctx.gpus if g.compute_capability):
        if cc_below(group.compute_capability, minimum):
            sure = build.confirmed if build and build.min_compute_capability else release.confirmed
            # the build's own list outranks every fact: it holds this GPU's arch
            own = p.compiled_cuda_archs or p.fatbin_archs
            held = bool(own) and arch_supported(group.compute_capability, own or ())
            if held:
                outcome = (
                    f"but the build's own list holds sm_{sm_of(group.compute_capability)}, which "
                    "outranks the floor: only the smoke training can tell"
                )
            else:
                outcome = 'Paddle reports the GPU "not compatible" and CUDA error 209'
            standing = "" if sure else ", unconfirmed"
            yield (fail if sure and not held else warn)(  # a doubtful floor can only warn
                "paddle.cc-too-low",
                f"{group.label} has compute capability {group.compute_capability}; the installed "
                f"Paddle {p.version} (CUDA {p.cuda}) needs at least {minimum} (the floor of "
                f"{whose}{standing}): {outcome}",
                fix=OLD_GPU_FIX,
                layer="paddle",
                index=group.indices[0],
                indices=list(group.indices),
                compute_capability=group.compute_capability,
                minimum=minimum,
                scope=whose,
                detail=f"decided by: the compute capability floor {minimum} of {whose} "
                f"({release.source}; {'confirmed' if sure else 'unconfirmed: a warning'})",
            )


def check_gpu_build_without_driver(ctx: Context) -> Iterable[Finding]:
    p = ctx.host.paddle
    d = ctx.host.driver
    if p.status != "ok" or not p.cuda or d.status != "absent":
        return
    build = f"{p.package or 'paddlepaddle-gpu'} {p.version} (CUDA {p.cuda})"
    on_bus = unlisted_gpus(ctx.host)
    if on_bus:
        yield fail(
            "paddle.gpu-build-no-driver",
            f"{build} is installed and {on_bus} NVIDIA GPU(s) are on the PCI bus, but no usable "
            "NVIDIA driver answers: Paddle silently falls back to the CPU",
            fix=driver_or_runtime_fix(install_driver_fix(ctx)),
            layer="paddle",
            gpus_present=on_bus,
        )
    else:
        yield fail(
            "paddle.gpu-build-no-gpu",
            f"{build} is installed on a host with no NVIDIA GPU and no driver: it cannot train "
            "here (Paddle 3.0's GPU build errors even with device='cpu'); this host needs the "
            "CPU build",
            fix=ctx.install_fix,
            layer="paddle",
        )

"""The environment variables that hide GPUs: CUDA_VISIBLE_DEVICES on the host, NVIDIA_VISIBLE_DEVICES
in a container started without GPUs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from envcheck.contracts.findings import Finding, fail, passed, warn
from envcheck.verdict.fixes import PASS_THE_GPUS_FIX, visible_devices_fix

if TYPE_CHECKING:
    from envcheck.verdict.judge import Context


def check_visible_devices(ctx: Context) -> Iterable[Finding]:
    value = ctx.host.env.get("CUDA_VISIBLE_DEVICES")
    if value is None or not ctx.gpus:
        return
    # imported here: only this branch needs it, and a doctor seldom takes it
    from envcheck.verdict.visible_devices import read_visible_devices

    seen = read_visible_devices(value, ctx.gpus)
    c = ctx.host.cuda_driver
    driver_sees = c.device_count if c.status == "ok" else 0 if devices_hidden(ctx) else None
    if driver_sees == 0 or (driver_sees is None and seen.visible == 0):
        why = (
            seen.stopped
            if seen.visible == 0 and seen.stopped
            else (f"cuInit found no device, although NVML sees {len(ctx.gpus)} GPU(s)")
        )
        uuids = ", ".join(g.uuid for g in ctx.gpus if g.uuid)
        yield fail(
            "env.cuda-visible-devices",
            f"CUDA_VISIBLE_DEVICES={value!r} hides every GPU ({why}): Paddle will say "
            '"CUDA_VISIBLE_DEVICES is set to be empty. No GPU detected."',
            fix=visible_devices_fix(len(ctx.gpus), uuids),
            layer="env",
            value=value,
            driver_device_count=driver_sees,
        )
    else:
        yield passed(
            "env.cuda-visible-devices",
            f"CUDA_VISIBLE_DEVICES={value}",
            layer="env",
            value=value,
            driver_device_count=driver_sees,
        )


def devices_hidden(ctx: Context) -> bool:
    """cuInit's CUDA_ERROR_NO_DEVICE where NVML sees GPUs: the variable hid them (one cause, one
    finding: env.cuda-visible-devices, not also cuda.init-failed with driver advice)."""
    c = ctx.host.cuda_driver
    return (
        c.error == "CUDA_ERROR_NO_DEVICE"
        and "CUDA_VISIBLE_DEVICES" in ctx.host.env
        and bool(ctx.gpus)
    )


def check_nvidia_visible_devices(ctx: Context) -> Iterable[Finding]:
    value = ctx.host.env.get("NVIDIA_VISIBLE_DEVICES")
    if (
        value is not None
        and value.strip() in ("", "void", "none")
        and ctx.host.driver.status != "ok"
    ):
        yield warn(
            "env.nvidia-visible-devices",
            f"NVIDIA_VISIBLE_DEVICES={value!r}: this container was started without GPUs",
            fix=PASS_THE_GPUS_FIX,
            layer="env",
            value=value,
        )

"""The NVIDIA driver: present and matching its kernel module, or the NVML error that says why not."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from envcheck.contracts.findings import Finding, fail, passed
from envcheck.contracts.remedy import Remedy
from envcheck.verdict.fixes import DEVICE_FILES_FIX, LOAD_DRIVER_FIX, REBOOT_FIX

if TYPE_CHECKING:
    from envcheck.verdict.judge import Context


_NVML_ERRORS: dict[str, tuple[str, str, Remedy | str]] = {
    "NVML_ERROR_DRIVER_NOT_LOADED": (
        "driver.not-loaded",
        "the NVIDIA kernel module is not loaded (NVML: Driver Not Loaded)",
        LOAD_DRIVER_FIX,
    ),
    "NVML_ERROR_LIB_RM_VERSION_MISMATCH": (
        "driver.version-mismatch",
        (
            "driver/library version mismatch: the loaded kernel module is older than the user-space "
            "driver (a driver upgrade is waiting for a reboot)"
        ),
        REBOOT_FIX,
    ),
    "NVML_ERROR_NO_PERMISSION": (
        "driver.no-permission",
        "no permission to talk to the GPU driver (NVML: Insufficient Permissions)",
        DEVICE_FILES_FIX,
    ),
}


def check_driver(ctx: Context) -> Iterable[Finding]:
    d = ctx.host.driver
    if d.status == "ok":
        yield passed(
            "driver.present",
            f"NVIDIA driver {d.version or '(version not recorded)'} (supports CUDA up to "
            f"{d.cuda or 'a level not recorded'})",
            layer="driver",
            version=d.version,
            cuda=d.cuda,
        )
        if d.kernel_module and d.version and d.kernel_module != d.version:
            yield fail(
                "driver.version-mismatch",
                f"kernel module {d.kernel_module} differs from the user-space driver {d.version}",
                fix=REBOOT_FIX,
                layer="driver",
                kernel_module=d.kernel_module,
                version=d.version,
            )
        return
    if d.status == "absent":
        message = "no NVIDIA driver (libnvidia-ml.so.1 not found)"
        if ctx.expect_gpu and no_gpu_hardware(ctx):  # a CPU-only runner: no driver to install
            yield fail(
                "driver.missing",
                f"--expect-gpu, but this is a CPU-only machine: {message} and no NVIDIA GPU on "
                "its PCI bus",
                fix=CPU_ONLY_MACHINE_FIX,
                layer="driver",
            )
        elif ctx.expect_gpu:
            yield fail("driver.missing", message, fix=install_driver_fix(ctx), layer="driver")
        else:
            yield passed(
                "driver.missing", f"{message}: this host can only run the CPU build", layer="driver"
            )
        return
    if d.status == "error":
        id_, message, fix = _NVML_ERRORS.get(
            d.error or "",
            (
                "driver.error",
                f"NVML failed: {d.error or d.reason}",
                "nvidia-smi prints the driver's own message; reinstall the driver if it fails too",
            ),
        )
        if d.kernel_module and d.version:
            message += f" (kernel module {d.kernel_module}, user space {d.version})"
        yield fail(
            id_,
            message,
            fix=fix,
            layer="driver",
            error=d.error,
            reason=d.reason,
            kernel_module=d.kernel_module,
        )


# Words, not a command: the gate is on the wrong machine, nothing on this one fixes it.
CPU_ONLY_MACHINE_FIX = (
    "run the --expect-gpu gate on a machine with an NVIDIA GPU (a GPU runner or node), or drop "
    "--expect-gpu where no GPU is meant to be"
)


def no_gpu_hardware(ctx: Context) -> bool:
    """No driver, and the PCI bus was read and holds no NVIDIA GPU: a CPU-only machine."""
    d = ctx.host.driver
    return d.status == "absent" and d.gpus_present == 0 and not ctx.host.gpus


def install_driver_fix(ctx: Context) -> str:
    floor = ctx.matrix.minor_compat_for("12.0")
    at_least = f" {floor.min_driver} or newer" if floor else ""
    return f"install the NVIDIA driver{at_least} (https://www.nvidia.com/Download/index.aspx), then reboot"

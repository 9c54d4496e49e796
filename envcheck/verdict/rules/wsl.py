"""Windows Subsystem for Linux, judged as what it is: the GPU belongs to the Windows driver, which
lends its Linux libraries through /usr/lib/wsl/lib and the device /dev/dxg; there is no
/proc/driver/nvidia and no Linux driver may be installed inside: NVIDIA's CUDA on WSL guide
(https://docs.nvidia.com/cuda/wsl-user-guide/); a Linux driver's libraries inside make NVML say
"GPU access blocked by the operating system" (microsoft/WSL#9166). WSL 1 has no GPU at all.

Such a host is not a Linux host with a broken or missing driver: these findings replace the
Linux driver's (`driver.missing`, `driver.not-loaded`, `driver.error`, `gpu.none`) where they say
why.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from envcheck.contracts.facts import WslFacts
from envcheck.contracts.findings import Finding, fail, passed, warn
from envcheck.contracts.remedy import Instruction, root, steps

if TYPE_CHECKING:
    from envcheck.verdict.judge import Context

WSL_DRIVER_FINDINGS = ("driver.missing", "driver.not-loaded", "driver.error", "gpu.none")
_WINDOWS_DRIVER = (
    "install or update the NVIDIA driver on Windows (its WSL support comes with it: "
    "https://www.nvidia.com/Download/index.aspx), then run `wsl --shutdown` in Windows and "
    "open the distribution again"
)


def check_wsl(ctx: Context) -> Iterable[Finding]:
    wsl = ctx.host.wsl
    if wsl is None:
        return
    if wsl.version == 1:
        sev = fail if ctx.expect_gpu else warn
        yield sev(
            "wsl.version-1",
            f"WSL 1 (kernel {wsl.kernel or '?'}) has no GPU: CUDA runs only under WSL 2",
            fix=steps(
                Instruction(
                    "convert the distribution to WSL 2: in Windows, `wsl --set-version Ubuntu 2` "
                    "with your distribution's name as `wsl -l -v` lists it"
                )
            ),
            layer="driver",
            kernel=wsl.kernel,
            replaces=list(WSL_DRIVER_FINDINGS),
        )
        return
    yield from _library(ctx, wsl)
    yield from _device(wsl)
    yield from _linux_driver(wsl)


def _library(ctx: Context, wsl: WslFacts) -> Iterable[Finding]:
    if wsl.libcuda and wsl.libnvidia_ml:
        yield passed(
            "wsl.library",
            f"WSL 2 (kernel {wsl.kernel or '?'}): the Windows driver's libcuda and libnvidia-ml "
            f"in {wsl.library_dir}",
            layer="driver",
            library_dir=wsl.library_dir,
        )
        return
    missing = [
        n for n, ok in (("libcuda", wsl.libcuda), ("libnvidia-ml", wsl.libnvidia_ml)) if not ok
    ]
    sev = fail if ctx.expect_gpu or wsl.dxg else warn
    yield sev(
        "wsl.library-missing",
        f"WSL 2 without the Windows driver's {' and '.join(missing)} in /usr/lib/wsl/lib: the "
        "NVIDIA driver on Windows provides them (a Linux driver inside WSL cannot)",
        fix=_WINDOWS_DRIVER,
        layer="driver",
        missing=missing,
        replaces=list(WSL_DRIVER_FINDINGS),
    )


def _device(wsl: WslFacts) -> Iterable[Finding]:
    if wsl.dxg:
        return
    yield fail(
        "wsl.no-dxg",
        "WSL 2 without /dev/dxg, the GPU device the Windows driver lends: this WSL or its kernel "
        "is too old for GPU compute, or the GPU is switched off for WSL",
        fix=steps(
            Instruction("update WSL: in Windows, `wsl --update`, then `wsl --shutdown`"),
            Instruction(_WINDOWS_DRIVER),
        ),
        layer="driver",
        replaces=list(WSL_DRIVER_FINDINGS),
    )


def _linux_driver(wsl: WslFacts) -> Iterable[Finding]:
    if not wsl.linux_driver:
        return
    shown = ", ".join(wsl.linux_driver[:4]) + (" …" if len(wsl.linux_driver) > 4 else "")
    yield fail(
        "wsl.linux-driver",
        f"a Linux NVIDIA driver is installed inside WSL ({shown}): its libcuda and libnvidia-ml "
        "shadow the Windows driver's in /usr/lib/wsl/lib, and CUDA fails or finds no device",
        fix=steps(
            root(
                "apt-get",
                "remove",
                "--purge",
                "^nvidia-driver-.*",
                "^libnvidia-compute-.*",
                changes="removes the Linux driver's packages (Debian, Ubuntu)",
            ),
            Instruction(
                "install the CUDA toolkit without a driver if one is needed "
                "(`cuda-toolkit-12-x`, never the `cuda` or `cuda-drivers` packages)"
            ),
        ),
        layer="driver",
        files=list(wsl.linux_driver),
        replaces=list(WSL_DRIVER_FINDINGS),
    )

"""Windows Subsystem for Linux, recognised as what it is: `uname -r` ends in
`-microsoft-standard-WSL2` (WSL 1: `-Microsoft`), the GPU is `/dev/dxg`, the Windows driver's
Linux libraries are in `/usr/lib/wsl/lib`, and there is no `/proc/driver/nvidia`
(https://docs.nvidia.com/cuda/wsl-user-guide/). A Linux driver installed inside the
distribution puts its own libcuda and libnvidia-ml in the system library folders
(microsoft/WSL#9166: "GPU access blocked by the operating system"): found here by name, judged by the rules.

Every path is read under ENVCHECK_DRIVER_ROOT (envcheck/probe/driver_root.py) where one is set.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from envcheck.contracts.facts import WslFacts
from envcheck.probe.driver_root import CUDA_SONAME, NVML_SONAME, WSL_LIBRARY_DIR, system_path

OSRELEASE = "/proc/sys/kernel/osrelease"
DXG = "/dev/dxg"
# Where a Linux driver package puts its user-space libraries (Debian/Ubuntu, then Fedora/RHEL).
LINUX_DRIVER_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64")
_DRIVER_STEMS = ("libcuda.so", "libnvidia-ml.so")


def probe_wsl(env: Mapping[str, str]) -> WslFacts | None:
    """`uname -r; ls /dev/dxg /usr/lib/wsl/lib`: the WSL facts, None when this is not WSL."""
    kernel = _kernel_release(env)
    if kernel is None or "microsoft" not in kernel.lower():
        return None
    version = 2 if "wsl2" in kernel.lower() or "microsoft-standard" in kernel.lower() else 1
    library_dir = system_path(WSL_LIBRARY_DIR, env)
    has_dir = os.path.isdir(library_dir)
    return WslFacts(
        version=version,
        kernel=kernel,
        library_dir=WSL_LIBRARY_DIR if has_dir else None,
        libcuda=os.path.exists(os.path.join(library_dir, CUDA_SONAME)),
        libnvidia_ml=os.path.exists(os.path.join(library_dir, NVML_SONAME)),
        dxg=os.path.exists(system_path(DXG, env)),
        linux_driver=_linux_driver_files(env),
    )


def _kernel_release(env: Mapping[str, str]) -> str | None:
    try:
        with open(system_path(OSRELEASE, env), encoding="utf-8", errors="replace") as f:
            return f.read(256).strip() or None
    except OSError:
        return None


def _linux_driver_files(env: Mapping[str, str]) -> tuple[str, ...]:
    """libcuda.so* / libnvidia-ml.so* in the distribution's library folders: a Linux driver's,
    which WSL must not have (the toolkit's stubs live elsewhere, under the CUDA prefix)."""
    found: list[str] = []
    for folder in LINUX_DRIVER_DIRS:
        try:
            names = sorted(os.listdir(system_path(folder, env)))
        except OSError:
            continue
        found += [f"{folder}/{n}" for n in names if n.startswith(_DRIVER_STEMS)]
    return tuple(found)

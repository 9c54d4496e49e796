"""Where the probes look for the NVIDIA driver: the system, or an explicit root standing in for it.

Without `ENVCHECK_DRIVER_ROOT` the probes meet the driver as a CUDA program does: `dlopen` of
`libnvidia-ml.so.1` and `libcuda.so.1` (LD_LIBRARY_PATH, then the loader cache and the default
directories) and the kernel module's `/proc/driver/nvidia/version`.

`ENVCHECK_DRIVER_ROOT=DIR` replaces all of that by one folder, so that a test can describe a
host — a fake driver, a broken one, or none at all — even on a machine with a real driver:

    DIR/lib/libnvidia-ml.so.1        NVML, loaded by this path (absent: no driver installed)
    DIR/lib/libcuda.so.1             the CUDA driver API, loaded by this path (absent: none)
    DIR/proc/driver/nvidia/version   the kernel module (absent: not loaded)
    DIR/sys/bus/pci/devices/*/       the PCI functions (vendor, class, device): GPUs NVML cannot list
    DIR/var/log/kern.log             the kernel log (the NVRM lines of a GPU the driver ignored)
    DIR/usr/lib/wsl/lib/             WSL 2: the Windows driver's libcuda and libnvidia-ml
    DIR/dev/dxg, DIR/proc/sys/kernel/osrelease   WSL 2's GPU device and kernel release

Neither LD_LIBRARY_PATH nor the loader cache can then supply the real driver's libraries, and
the real `/proc/driver/nvidia` is not read. The probes never open `/dev/nvidia*` themselves:
NVML and libcuda do, so a root without the real libraries never reaches the real devices.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the checkers know it)

if TYPE_CHECKING:  # imported before the CUDA child starts (envcheck/probe/early.py): kept light
    from collections.abc import Mapping

DRIVER_ROOT_ENV = "ENVCHECK_DRIVER_ROOT"
PROC_DRIVER_VERSION = "/proc/driver/nvidia/version"
NVML_SONAME = "libnvidia-ml.so.1"
CUDA_SONAME = "libcuda.so.1"
WSL_LIBRARY_DIR = "/usr/lib/wsl/lib"  # WSL 2: the Windows driver's Linux libraries


def driver_root(env: Mapping[str, str]) -> str | None:
    """The folder standing in for the system's driver, or None (the system itself)."""
    root = env.get(DRIVER_ROOT_ENV)
    return root or None


def driver_library(soname: str, env: Mapping[str, str]) -> str | None:
    """The file to load for `soname`: WSL 2's copy (/usr/lib/wsl/lib, the Windows driver's) where
    there is one, so that a Linux driver's copy installed by mistake cannot answer instead; else
    the one under the driver root; None: let dlopen search for it."""
    wsl = os.path.join(system_path(WSL_LIBRARY_DIR, env), soname)
    if os.path.exists(wsl):
        return wsl
    root = driver_root(env)
    return os.path.join(root, "lib", soname) if root else None


def system_path(path: str, env: Mapping[str, str]) -> str:
    """An absolute system path (`/sys/bus/pci/devices`), or its copy under the driver root."""
    root = driver_root(env)
    return os.path.join(root, path.lstrip("/")) if root else path


def proc_driver_version(env: Mapping[str, str]) -> str:
    """The kernel module's version file: `/proc/driver/nvidia/version`, or the root's copy."""
    root = driver_root(env)
    return os.path.join(root, PROC_DRIVER_VERSION.lstrip("/")) if root else PROC_DRIVER_VERSION

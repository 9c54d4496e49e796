"""NVIDIA GPUs the machine has, seen without the driver: after a driver upgrade
waiting for a reboot NVML answers NVML_ERROR_LIB_RM_VERSION_MISMATCH and lists no GPU, yet the
GPUs are there and the user needs the GPU build once the machine is rebooted.

`lspci -d 10de::0300; lspci -d 10de::0302` (VGA and 3D controllers of vendor 0x10de) read from
sysfs, else `ls /proc/driver/nvidia/gpus/` (one folder per GPU the kernel module bound).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from envcheck.contracts.facts import PciGpu
from envcheck.probe.driver_root import system_path

NVIDIA_VENDOR = "0x10de"
DISPLAY_CLASSES = ("0x0300", "0x0302")  # VGA compatible, 3D controller (class code, subclass)
PCI_DEVICES = "/sys/bus/pci/devices"
PROC_GPUS = "/proc/driver/nvidia/gpus"


def probe_nvidia_gpus(env: Mapping[str, str]) -> int | None:
    """How many NVIDIA GPUs the PCI bus (else the kernel module) shows (under the driver root of
    the command's variables `env`); None when neither can be read."""
    pci = _pci_gpus(system_path(PCI_DEVICES, env))
    if pci:
        return pci
    try:
        return len(os.listdir(system_path(PROC_GPUS, env)))
    except OSError:
        return pci


def probe_pci_gpus(env: Mapping[str, str]) -> tuple[PciGpu, ...] | None:
    """`lspci -nn -d 10de:`, display and 3D controllers only: each NVIDIA GPU on the bus with its
    device id (`1b80`: a GeForce GTX 1080), whether a driver took it or not; None when sysfs
    cannot be read."""
    devices = system_path(PCI_DEVICES, env)
    names = _nvidia_functions(devices)
    if names is None:
        return None
    return tuple(
        PciGpu(
            address=n,
            device_id=_read(devices, n, "device").removeprefix("0x"),
            bound_to=_bound_to(devices, n),
        )
        for n in names
    )


def _bound_to(devices: str, name: str) -> str | None:
    """`lspci -k`'s "Kernel driver in use": the name of the `driver` link's target."""
    try:
        return os.path.basename(os.readlink(os.path.join(devices, name, "driver"))) or None
    except OSError:
        return None


def _pci_gpus(devices: str) -> int | None:
    names = _nvidia_functions(devices)
    return None if names is None else len(names)


def _nvidia_functions(devices: str) -> list[str] | None:
    try:
        names = sorted(os.listdir(devices))
    except OSError:
        return None
    return [
        n
        for n in names
        if _read(devices, n, "vendor") == NVIDIA_VENDOR
        and _read(devices, n, "class")[:6] in DISPLAY_CLASSES
    ]


def _read(devices: str, name: str, field: str) -> str:
    try:
        with open(os.path.join(devices, name, field), encoding="ascii", errors="replace") as f:
            return f.read(64).strip().lower()
    except OSError:
        return ""

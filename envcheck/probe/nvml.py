"""The NVIDIA driver and its GPUs as NVML reports them: the one adapter for `pynvml`.

Every `pynvml.NVMLError` is translated here into a fact with a status: no NVML library means
"no driver" (`absent`, found before pynvml is imported); any other failure is `error`, with the
NVML constant name in `error` and plain words in `reason` (the way nvitop explains them:
https://github.com/XuehaiPan/nvitop/blob/main/nvitop/api/libnvml.py). Nothing here raises.

NVML reference: https://docs.nvidia.com/deploy/nvml-api/
"""

from __future__ import annotations

import ctypes
import re
from collections.abc import Callable, Mapping
from importlib.util import find_spec
from types import ModuleType
from typing import Any, TypeVar

from envcheck.contracts.facts import DriverFacts, GpuFacts
from envcheck.contracts.record import replace
from envcheck.contracts.versions import (
    KernelModuleFlavor,
    VersionParseError,
    cuda_version_from_int,
    parse_kernel_module_flavor,
    parse_kernel_module_version,
)
from envcheck.probe.driver_root import NVML_SONAME, driver_library, proc_driver_version
from envcheck.probe.kernel_log import probe_kernel_log
from envcheck.probe.pci import probe_nvidia_gpus, probe_pci_gpus

T = TypeVar("T")
_NOT_FOUND = "NVML_ERROR_LIBRARY_NOT_FOUND"  # no libnvidia-ml: no driver installed

# Plain words for the NVML errors a user can act on. Driver/library mismatch is the classic
# "upgraded the driver, did not reboot": https://github.com/oddmario/NVIDIA-Ubuntu-Driver-Guide/issues/4
_REASONS: dict[str, str] = {
    _NOT_FOUND: (
        "No NVIDIA driver is installed: libnvidia-ml.so.1 (NVML, shipped with the driver) is not"
        " on the loader path. A CUDA toolkit alone does not provide it."
    ),
    "NVML_ERROR_DRIVER_NOT_LOADED": (
        "The NVIDIA driver's libraries are installed but its kernel module is not loaded (no"
        " NVIDIA GPU in this machine, the module failed to build for this kernel, or Secure Boot"
        " refused it). Check `lsmod | grep nvidia` and `dmesg | grep -i nvidia`."
    ),
    "NVML_ERROR_LIB_RM_VERSION_MISMATCH": (
        "Driver/library version mismatch: the user-space driver libraries differ from the loaded"
        " kernel module{module}. The driver was upgraded without a reboot; reboot (or reload the"
        " nvidia kernel modules) before using the GPU."
    ),
    "NVML_ERROR_NO_PERMISSION": (
        "NVML was denied access to the GPU device files (/dev/nvidia*): this user cannot open"
        " them, or this container was started without the GPUs."
    ),
    "NVML_ERROR_FUNCTION_NOT_FOUND": (
        "The driver's libnvidia-ml lacks a function nvidia-ml-py needs: the driver is older than"
        " the NVML API in use. Upgrade the NVIDIA driver."
    ),
    "NVML_ERROR_GPU_IS_LOST": (
        "A GPU stopped responding or fell off the bus (see `dmesg` for Xid errors); reboot the"
        " machine and check the GPU's power and seating."
    ),
    "NVML_ERROR_UNKNOWN": (
        "NVML failed with an unknown error: the driver is in a bad state. Look for Xid errors in"
        " `dmesg`; a reboot usually clears it."
    ),
}


def probe_driver(env: Mapping[str, str]) -> tuple[DriverFacts, tuple[GpuFacts, ...]]:
    """`nvidia-smi --query-gpu=driver_version,index,name,uuid,compute_cap,memory.total,
    mig.mode.current --format=csv` plus the "CUDA Version" of the `nvidia-smi` header. `env`:
    the command's variables (ENVCHECK_DRIVER_ROOT). Where NVML lists no GPU, the PCI bus's
    NVIDIA GPUs and the kernel log's NVRM lines say which GPU the driver left out, and why."""
    driver, gpus = _probe_driver(env)
    if gpus:
        return driver, gpus
    return replace(driver, pci_gpus=probe_pci_gpus(env), kernel_log=probe_kernel_log(env)), gpus


def _probe_driver(env: Mapping[str, str]) -> tuple[DriverFacts, tuple[GpuFacts, ...]]:
    kernel_module, flavor = read_kernel_module(proc_driver_version(env))
    if find_spec("pynvml") is not None and not load_nvml_library(env):
        # No driver: nvmlInit's answer, without importing pynvml (~10 ms, ~2 MB). A
        # pynvml that is not installed is still reported, driver or not: that is the install's
        # fault, which the first driver installed here would meet.
        found = _unusable(_NOT_FOUND, _REASONS[_NOT_FOUND], kernel_module, env, library=None)
        return replace(found, kernel_module_flavor=flavor), ()
    try:
        import pynvml  # deferred: ~10 ms, only needed here
    except ImportError as e:
        reason = f"nvidia-ml-py (pynvml) cannot be imported: {e}. Reinstall envcheck."
        return DriverFacts(status="error", error="pynvml-missing", reason=reason), ()
    if not callable(getattr(pynvml, "nvmlInitWithFlags", None)):
        # The unrelated PyPI package `pynvml` can shadow nvidia-ml-py's module (nvitop checks too).
        reason = "the `pynvml` module is not nvidia-ml-py's; reinstall nvidia-ml-py."
        return DriverFacts(status="error", error="pynvml-corrupted", reason=reason), ()
    try:
        init_nvml(pynvml, env)
    except pynvml.NVMLError as e:
        return replace(_failed(pynvml, e, kernel_module, env), kernel_module_flavor=flavor), ()
    try:
        driver = _read_driver(pynvml, kernel_module)
        gpus = tuple(_read_gpu(pynvml, i) for i in range(pynvml.nvmlDeviceGetCount()))
    except pynvml.NVMLError as e:
        return replace(_failed(pynvml, e, kernel_module, env), kernel_module_flavor=flavor), ()
    finally:
        _shutdown(pynvml)
    return replace(driver, kernel_module_flavor=flavor), gpus


def init_nvml(nvml: ModuleType, env: Mapping[str, str]) -> None:
    """`nvmlInit` on the driver's libnvidia-ml.so.1 (`load_nvml_library`). Raises `NVMLError` as
    nvmlInit does."""
    if not load_nvml_library(env):
        raise nvml.NVMLError(nvml.NVML_ERROR_LIBRARY_NOT_FOUND)
    nvml.nvmlInit()


def load_nvml_library(env: Mapping[str, str]) -> bool:
    """Load the driver's libnvidia-ml.so.1: the one the loader finds, or the one under
    ENVCHECK_DRIVER_ROOT (envcheck/probe/driver_root.py). False: there is none (no driver), where
    nvmlInit fails with NVML_ERROR_LIBRARY_NOT_FOUND.

    Without a root this is pynvml's own `dlopen("libnvidia-ml.so.1")`. Under a root the file is
    loaded by its path; glibc then answers pynvml's dlopen with that copy (a requested name
    matches the soname of an object already loaded), so the loader cache's copy is never reached.
    """
    try:
        ctypes.CDLL(driver_library(NVML_SONAME, env) or NVML_SONAME)
    except OSError:
        return False
    return True


def read_kernel_module_version(path: str) -> str | None:
    """`cat /proc/driver/nvidia/version` (`proc_driver_version`): the loaded kernel module, None
    when not loaded."""
    return read_kernel_module(path)[0]


def read_kernel_module(path: str) -> tuple[str | None, KernelModuleFlavor | None]:
    """The loaded kernel module's version and flavour (open or proprietary), None when not
    loaded or not said."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read(4096)
    except OSError:
        return None, None
    try:
        version: str | None = parse_kernel_module_version(text)
    except VersionParseError:
        version = None
    return version, parse_kernel_module_flavor(text)


def error_name(nvml: ModuleType, error: BaseException) -> str:
    """`NVMLError(18)` -> "NVML_ERROR_LIB_RM_VERSION_MISMATCH" (the name in nvml.h)."""
    value = getattr(error, "value", None)
    for name, constant in vars(nvml).items():
        if name.startswith("NVML_ERROR_") and constant == value:
            return name
    return f"NVML_ERROR_{value}"


def _read_driver(nvml: ModuleType, kernel_module: str | None) -> DriverFacts:
    return DriverFacts(
        status="ok",
        version=nvml.nvmlSystemGetDriverVersion(),
        cuda=_cuda_version(nvml),
        kernel_module=kernel_module,
        nvml_version=_optional(nvml, nvml.nvmlSystemGetNVMLVersion),
        library=_library_path(nvml),
    )


def _cuda_version(nvml: ModuleType) -> str | None:
    """The "CUDA Version" nvidia-smi prints: the newest CUDA this driver supports."""
    raw = _optional(nvml, nvml.nvmlSystemGetCudaDriverVersion_v2)
    if raw is None:  # drivers before the _v2 entry point
        raw = _optional(nvml, nvml.nvmlSystemGetCudaDriverVersion)
    try:
        return cuda_version_from_int(raw) if raw is not None else None
    except VersionParseError:
        return None


def _read_gpu(nvml: ModuleType, index: int) -> GpuFacts:
    from envcheck.probe.nvml_health import read_health  # its sibling, which reads through _optional

    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    cc = _optional(nvml, nvml.nvmlDeviceGetCudaComputeCapability, handle)
    memory = _optional(nvml, nvml.nvmlDeviceGetMemoryInfo, handle)
    mig_mode = _mig_mode(nvml, handle)
    return GpuFacts(
        index=index,
        name=_optional(nvml, nvml.nvmlDeviceGetName, handle),
        uuid=_optional(nvml, nvml.nvmlDeviceGetUUID, handle),
        compute_capability=f"{cc[0]}.{cc[1]}" if cc else None,
        memory_total_mib=memory.total // (1024 * 1024) if memory is not None else None,
        mig_mode=mig_mode,
        mig_instances=_mig_instances(nvml, handle) if mig_mode else None,
        process_query=_process_query(nvml, handle),
        health=read_health(nvml, handle),
    )


def _mig_mode(nvml: ModuleType, handle: Any) -> bool | None:
    """`nvidia-smi --query-gpu=mig.mode.current`; None where MIG does not exist (not A100/H100)."""
    modes = _optional(nvml, nvml.nvmlDeviceGetMigMode, handle)
    return bool(modes[0] == nvml.NVML_DEVICE_MIG_ENABLE) if modes is not None else None


def _mig_instances(nvml: ModuleType, handle: Any) -> int | None:
    """`nvidia-smi -L` MIG lines: the MIG devices (GPU + compute instance) CUDA can use.

    Counted through the MIG device handles, as nvitop does, because enumerating GPU instances
    (`nvmlDeviceGetGpuInstances`) needs root. MIG on with 0 devices leaves CUDA no GPU at all.
    """
    slots = _optional(nvml, nvml.nvmlDeviceGetMaxMigDeviceCount, handle)
    if slots is None:
        return None
    count = 0
    for slot in range(slots):
        try:
            nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, slot)
        except nvml.NVMLError_NotFound:
            continue  # an empty slot
        except nvml.NVMLError:
            return None
        count += 1
    return count


def _process_query(nvml: ModuleType, handle: Any) -> str | None:
    """Which `nvidia-smi --query-compute-apps` entry point works: "v3" (R510+), "v2" (older
    drivers lack the _v3 symbol), None when neither answers. Decided the way nvitop does."""
    for suffix, query in (
        ("v3", nvml.nvmlDeviceGetComputeRunningProcesses_v3),
        ("v2", nvml.nvmlDeviceGetComputeRunningProcesses_v2),
    ):
        try:
            query(handle)
        except nvml.NVMLError_FunctionNotFound:
            continue
        except nvml.NVMLError:
            return None
        return suffix
    return None


def _optional(nvml: ModuleType, query: Callable[..., T], *args: Any) -> T | None:
    """One field: None when this driver or GPU cannot say (NOT_SUPPORTED on GeForce and Jetson,
    FUNCTION_NOT_FOUND on old drivers). Errors that mean the driver is broken propagate."""
    try:
        return query(*args)
    except (
        nvml.NVMLError_NotSupported,
        nvml.NVMLError_FunctionNotFound,
        nvml.NVMLError_NoPermission,
        UnicodeDecodeError,  # a name or UUID NVML returned in bytes that are not UTF-8
    ):
        return None


def _failed(
    nvml: ModuleType, error: BaseException, kernel_module: str | None, env: Mapping[str, str]
) -> DriverFacts:
    name = error_name(nvml, error)
    template = _REASONS.get(name, f"NVML failed: {error} ({name}).")
    return _unusable(name, template, kernel_module, env, _library_path(nvml))


def _unusable(
    name: str,
    template: str,
    kernel_module: str | None,
    env: Mapping[str, str],
    library: str | None,
) -> DriverFacts:
    """The facts of a driver NVML cannot read: error `name`, `template`'s words."""
    module = f" (kernel module {kernel_module})" if kernel_module else ""
    return DriverFacts(
        status="absent" if name == _NOT_FOUND else "error",
        # With a mismatch NVML cannot say its version; the library's file name still can.
        version=_version_from_library_name(library),
        kernel_module=kernel_module,
        error=name,
        reason=template.format(module=module),
        library=library,
        gpus_present=probe_nvidia_gpus(env),
    )


def _shutdown(nvml: ModuleType) -> None:
    try:
        nvml.nvmlShutdown()
    except nvml.NVMLError:
        pass  # nothing left to release; the facts are already read


def _library_path(nvml: ModuleType) -> str | None:
    """The libnvidia-ml file that answered (symlinks resolved), found with dladdr(3)."""
    from envcheck.probe._cuda_child import loaded_from  # stdlib-only, shared with the CUDA child

    lib = getattr(nvml, "nvmlLib", None)
    try:
        return loaded_from(lib.nvmlShutdown) if lib is not None else None
    except AttributeError:
        return None


_VERSIONED_LIBRARY = re.compile(r"libnvidia-ml\.so\.(\d+\.\d+(?:\.\d+)?)$")


def _version_from_library_name(path: str | None) -> str | None:
    """`/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15` -> "550.54.15"."""
    m = _VERSIONED_LIBRARY.search(path or "")
    return m.group(1) if m else None

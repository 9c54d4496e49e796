"""Which NVIDIA libraries the workload's process really mapped, from where, and what each says
its version is; and the driver's user space as the process sees it.

Read after the first training step (Paddle dlopen()s the CUDA runtime, cuBLAS and cuDNN lazily),
never loading anything: the host decodes the raw answers and judges them.
"""

# Python 3.8 syntax on purpose (typing.Dict, %-formatting): old Paddle images run this file.
# ruff: noqa: UP006, UP031, UP035, UP045

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Set

if TYPE_CHECKING:
    from envcheck.smoke.workload import protocol
    from envcheck.smoke.workload.protocol import LibrarySource
else:
    try:  # beside the workload wherever it runs: the container's mount, the in-process copy
        import envcheck_smoke_protocol as protocol
    except ImportError:  # imported from the envcheck package (the host's tests)
        from envcheck.smoke.workload import protocol


# What the process really mapped, read from /proc/self/maps after the first training
# step: Paddle dlopen()s the CUDA runtime, cuBLAS and cuDNN lazily, on first use. A whole file name
# per match (libcudnn_ops_infer.so.8, libcublasLt.so.13.1.0.3, libcuda.so.580.159.04).
LOADED_NAME = re.compile(
    r"(?P<name>lib(?:cuda|nvidia-ml|cudart|cublas|cublasLt|cudnn(?:_[a-z_]+)?|nccl"
    r"|nvrtc(?:-builtins)?))\.so(?:\.[0-9][0-9.]*)?"
)
# The library's own version call, on the copy already mapped: (symbol, how it answers).
# libcuda's cuDriverGetVersion is the CUDA API it serves (13000), not the driver's version: the
# file name says that (libcuda.so.580.159.04). libnvidia-ml would need nvmlInit: file name only.
VERSION_CALLS = {
    "libcudart": ("cudaRuntimeGetVersion", "int-out"),
    "libcudnn": ("cudnnGetVersion", "size-return"),
    "libcublas": ("cublasGetProperty", "properties"),
    "libcublasLt": ("cublasLtGetProperty", "properties"),
    "libnccl": ("ncclGetVersion", "int-out"),
    "libnvrtc": ("nvrtcVersion", "two-ints"),
    "libcuda": ("cuDriverGetVersion", "int-out"),
}
# The CUDA forward-compat package installs libcuda under /usr/local/cuda-X.Y/compat:
# https://docs.nvidia.com/deploy/cuda-compatibility/#forward-compatibility
COMPAT_DIR = re.compile(r"/cuda[^/]*/compat(?:/|$)")
PIP_DIR = re.compile(r"/(?:site|dist)-packages/nvidia/")
CUDA_HOME_DIR = re.compile(r"^/usr/local/cuda[^/]*/")
# NVML's answers that name a broken driver state inside a container (nvml.h).
NVML_ERRORS = {
    3: "NVML_ERROR_NOT_SUPPORTED",
    4: "NVML_ERROR_NO_PERMISSION",
    9: "NVML_ERROR_DRIVER_NOT_LOADED",
    12: "NVML_ERROR_LIBRARY_NOT_FOUND",
    18: "NVML_ERROR_LIB_RM_VERSION_MISMATCH",
    999: "NVML_ERROR_UNKNOWN",
}



def loaded_libraries(
    maps: Optional[str] = None, env: Optional[Dict[str, str]] = None
) -> List[Dict[str, Any]]:
    """Every NVIDIA library mapped in this process, in load order: path, where it came from, and
    the raw answer of its own version call (the host decodes it). Never loads anything."""
    if maps is None:
        try:
            with open("/proc/self/maps") as f:
                maps = f.read()
        except OSError:  # not Linux: nothing to say, and the host says so
            return []
    env = dict(os.environ) if env is None else env
    found: List[Dict[str, Any]] = []
    seen: Set[str] = set()
    for line in maps.splitlines():
        fields = line.split(None, 5)
        if len(fields) < 6:
            continue
        path = fields[5].strip()
        if path.endswith(" (deleted)"):  # noqa: FURB188 - Python 3.8 has no removesuffix
            path = path[: -len(" (deleted)")]
        match = LOADED_NAME.fullmatch(os.path.basename(path))
        if match is None or path in seen:
            continue
        seen.add(path)
        name = match.group("name")
        entry = {"name": name, "path": path, "source": library_source(path, env)}
        entry.update(version_call(name, path))
        found.append(entry)
    return found


def library_source(path: str, env: Dict[str, str]) -> LibrarySource:
    """compat, pip, conda, LD_LIBRARY_PATH, cuda-home or system: the most telling first."""
    if COMPAT_DIR.search(path):
        return "compat"
    if PIP_DIR.search(path):
        return "pip"
    conda = (env.get("CONDA_PREFIX") or "").rstrip("/")
    if conda and path.startswith(conda + "/"):
        return "conda"
    folder = os.path.dirname(path)
    for entry in (env.get("LD_LIBRARY_PATH") or "").split(":"):
        if entry and os.path.realpath(entry) == folder:
            return "LD_LIBRARY_PATH"
    if CUDA_HOME_DIR.match(path):
        return "cuda-home"
    return "system"


def version_call(name: str, path: str) -> Dict[str, Any]:
    """{"call", "raw", "call_error"}: the library's own answer, from the mapped copy only
    (RTLD_NOLOAD: a path that is not already loaded is never loaded)."""
    family = "libcudnn" if name.startswith("libcudnn") else name
    if family not in VERSION_CALLS:
        return {"call": None, "raw": None, "call_error": None}
    symbol, how = VERSION_CALLS[family]
    out: Dict[str, Any] = {"call": symbol, "raw": None, "call_error": None}
    try:
        import ctypes

        lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
        fn = getattr(lib, symbol)
        out["raw"] = _ask_version(ctypes, fn, how)
    except (OSError, AttributeError, ValueError) as e:  # no such symbol, or an error code
        out["call_error"] = protocol.one_line(e)
    return out


def _ask_version(ctypes: Any, fn: Any, how: str) -> Any:
    if how == "size-return":
        fn.restype = ctypes.c_size_t
        return int(fn())
    if how == "properties":  # libraryPropertyType: MAJOR_VERSION 0, MINOR_VERSION 1, PATCH_LEVEL 2
        parts = []
        for prop in (0, 1, 2):
            value = ctypes.c_int(0)
            _status(fn(prop, ctypes.byref(value)))
            parts.append(value.value)
        return parts
    if how == "two-ints":
        major, minor = ctypes.c_int(0), ctypes.c_int(0)
        _status(fn(ctypes.byref(major), ctypes.byref(minor)))
        return [major.value, minor.value]
    value = ctypes.c_int(0)
    _status(fn(ctypes.byref(value)))
    return value.value


def _status(code: int) -> None:
    if code != 0:
        raise ValueError("returned error %d" % code)


def driver_check(libraries: List[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """The driver's user space as this process sees it (in a container: what the NVIDIA runtime
    injected): nvmlInit's answer and the driver version NVML reports. Only for a process that
    mapped libcuda or libnvidia-ml, after training, so it changes nothing the training saw."""
    if not any(lib["name"] in ("libcuda", "libnvidia-ml") for lib in libraries):
        return None
    import ctypes

    nvml = next((lib["path"] for lib in libraries if lib["name"] == "libnvidia-ml"), None)
    out: Dict[str, Any] = {"library": nvml or "libnvidia-ml.so.1", "init": None,
                           "error": None, "driver_version": None}
    try:
        lib = ctypes.CDLL(out["library"])
    except OSError as e:
        out["error"] = protocol.one_line(e)
        return out
    init = getattr(lib, "nvmlInit_v2", None) or getattr(lib, "nvmlInit", None)
    if init is None:
        out["error"] = "no nvmlInit in %s" % out["library"]
        return out
    out["init"] = int(init())
    if out["init"] != 0:
        out["error"] = NVML_ERRORS.get(out["init"], "NVML error %d" % out["init"])
        return out
    buffer = ctypes.create_string_buffer(96)
    if lib.nvmlSystemGetDriverVersion(buffer, ctypes.c_uint(96)) == 0:
        out["driver_version"] = buffer.value.decode("ascii", "replace")
    lib.nvmlShutdown()
    return out

"""Child process of the CUDA probes: load NVIDIA libraries and report, one JSON line per step.

Run by path as `python -I -S _cuda_child.py [--driver[=PATH]] [cudart=PATH | cudnn=PATH]...
[open=NAME[:DIR...]]...` (`--driver=PATH`: that libcuda file, the driver root's; `--driver`:
libcuda.so.1 as dlopen finds it; `open=NAME:DIR`: dlopen `DIR/NAME` for each folder given, then
`NAME` as the loader finds it, the order Paddle's dynamic loader tries a library in).
A broken driver can hang in cuInit or abort the process; each step prints
`{"step": ..., "begin": true}` before it starts and its result after, flushed, so the parent
knows which step never finished.

Steps: "library" (one per path), "open" (one per name), "driver-load" (dlopen +
cuDriverGetVersion), "driver" (cuInit). Library loads come first: they do not touch the driver, so
a wedged cuInit cannot hide them; the names come after cudart and cuDNN, so a library that is slow
to map (cuBLASLt is hundreds of MB) cannot hide those two.

Start-up is the cost that matters (the doctor has ~150 ms in all): only `ctypes`, `json`, `os`
and `sys` are imported (`json` costs ~2 ms of the child's ~16 ms start, measured on 2 cores).
"""

from __future__ import annotations

import _ctypes  # already loaded by ctypes; named for the type of a function pointer
import ctypes
import json
import os
import sys

Record = dict[str, "str | int | bool | None"]

# CUresult names from cuda.h, for a libcuda whose cuGetErrorName cannot answer.
# https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TYPES.html
CURESULT_NAMES = {
    0: "CUDA_SUCCESS",
    1: "CUDA_ERROR_INVALID_VALUE",
    2: "CUDA_ERROR_OUT_OF_MEMORY",
    3: "CUDA_ERROR_NOT_INITIALIZED",
    4: "CUDA_ERROR_DEINITIALIZED",
    34: "CUDA_ERROR_STUB_LIBRARY",
    36: "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER",
    46: "CUDA_ERROR_DEVICE_UNAVAILABLE",
    100: "CUDA_ERROR_NO_DEVICE",
    101: "CUDA_ERROR_INVALID_DEVICE",
    102: "CUDA_ERROR_DEVICE_NOT_LICENSED",
    304: "CUDA_ERROR_OPERATING_SYSTEM",
    800: "CUDA_ERROR_NOT_PERMITTED",
    801: "CUDA_ERROR_NOT_SUPPORTED",
    802: "CUDA_ERROR_SYSTEM_NOT_READY",
    803: "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
    804: "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
    999: "CUDA_ERROR_UNKNOWN",
}


class _DlInfo(ctypes.Structure):
    _fields_ = [
        ("dli_fname", ctypes.c_char_p),
        ("dli_fbase", ctypes.c_void_p),
        ("dli_sname", ctypes.c_char_p),
        ("dli_saddr", ctypes.c_void_p),
    ]


def emit(record: Record) -> None:
    """One JSON line, ASCII only (so paths and loader messages survive any locale and file
    names that do not decode: their surrogate escapes become `\\udcxx`), flushed."""
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


def loaded_from(function: _ctypes.CFuncPtr) -> str | None:
    """The file a symbol was loaded from (dladdr), symlinks resolved."""
    try:
        dladdr = ctypes.CDLL(None).dladdr
        dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
        info = _DlInfo()
        if dladdr(ctypes.cast(function, ctypes.c_void_p), ctypes.byref(info)) and info.dli_fname:
            return os.path.realpath(os.fsdecode(info.dli_fname))
    except (AttributeError, OSError, ValueError, ctypes.ArgumentError):
        pass
    return None


def library_version(kind: str, path: str) -> Record:
    """cudaRuntimeGetVersion / cudnnGetVersion of one file, loaded by its full path."""
    try:
        lib = ctypes.CDLL(path)
        if kind == "cudart":
            value = ctypes.c_int(0)
            status = lib.cudaRuntimeGetVersion(ctypes.byref(value))
            if status != 0:
                return {"error": f"cudaRuntimeGetVersion returned {status}"}
            return {"version": value.value}
        get_version = lib.cudnnGetVersion
        get_version.restype = ctypes.c_size_t
        return {"version": int(get_version())}
    except (OSError, AttributeError) as e:
        return {"error": str(e)}


class _LinkMap(ctypes.Structure):
    # The head of glibc's `struct link_map` (<link.h>): enough for the file's name.
    _fields_ = [("l_addr", ctypes.c_void_p), ("l_name", ctypes.c_char_p)]


_RTLD_DI_LINKMAP = 2  # <dlfcn.h>


def opened_file(lib: ctypes.CDLL) -> str | None:
    """The file a handle was loaded from (dlinfo RTLD_DI_LINKMAP), symlinks resolved."""
    try:
        dlinfo = ctypes.CDLL(None).dlinfo
        dlinfo.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
        entry = ctypes.POINTER(_LinkMap)()
        if dlinfo(lib._handle, _RTLD_DI_LINKMAP, ctypes.byref(entry)) == 0 and entry:
            name = entry.contents.l_name
            return os.path.realpath(os.fsdecode(name)) if name else None
    except (AttributeError, OSError, ValueError, ctypes.ArgumentError):
        pass
    return None


def open_by_name(name: str, folders: list[str]) -> Record:
    """dlopen `name` as Paddle's loader does: each of the build's folders, then the loader's
    search (LD_LIBRARY_PATH, the cache, the default folders). The loader's message when none
    loads (a missing file, or a dependency of it that is missing): a pip copy's first."""
    failed: Record | None = None
    for folder in folders:
        path = os.path.join(folder, name)
        if os.path.exists(path):
            try:
                return {"file": os.path.realpath(ctypes.CDLL(path)._name), "origin": "pip"}
            except OSError as e:
                failed = failed or {"error": str(e), "origin": "pip"}
    try:
        lib = ctypes.CDLL(name)
    except OSError as e:
        return failed or {"error": str(e)}
    return {"file": opened_file(lib), "origin": "loader"}


def error_name(lib: ctypes.CDLL, code: int) -> str:
    name = ctypes.c_char_p()
    try:
        if lib.cuGetErrorName(code, ctypes.byref(name)) == 0 and name.value:
            return name.value.decode("ascii", "replace")
    except AttributeError:
        pass
    return CURESULT_NAMES.get(code, f"CUresult {code}")


def load_driver(path: str | None = None) -> tuple[ctypes.CDLL | None, Record]:
    """dlopen libcuda.so.1 (or `path`) and ask its version, which it answers before cuInit.

    The explicit soname, because ctypes.util.find_library misses LD_LIBRARY_PATH.
    """
    try:
        lib = ctypes.CDLL(path or "libcuda.so.1")
    except OSError as e:
        return None, {"absent": True, "detail": str(e), "looked_at": path}
    found: Record = {"library": loaded_from(lib.cuInit)}
    version = ctypes.c_int(0)
    if lib.cuDriverGetVersion(ctypes.byref(version)) == 0:
        found["version"] = version.value
    return lib, found


def init_driver(lib: ctypes.CDLL) -> Record:
    """cuInit(0), then cuDeviceGetCount."""
    code = lib.cuInit(0)
    if code != 0:
        return {"code": code, "error": error_name(lib, code), "call": "cuInit"}
    count = ctypes.c_int(0)
    code = lib.cuDeviceGetCount(ctypes.byref(count))
    if code != 0:
        return {"code": code, "error": error_name(lib, code), "call": "cuDeviceGetCount"}
    return {"device_count": count.value}


def main(argv: list[str]) -> int:
    for arg in argv[1:]:
        kind, sep, path = arg.partition("=")
        if sep and kind in ("cudart", "cudnn"):
            emit({"step": "library", "path": path, "begin": True})
            emit({"step": "library", "path": path, **library_version(kind, path)})
    for arg in argv[1:]:
        kind, sep, spec = arg.partition("=")
        if sep and kind == "open":
            name, *folders = spec.split(":")
            emit({"step": "open", "path": name, "begin": True})
            emit({"step": "open", "path": name, **open_by_name(name, folders)})
    driver = [a.partition("=")[2] for a in argv[1:] if a.partition("=")[0] == "--driver"]
    if driver:
        emit({"step": "driver-load", "begin": True})
        lib, found = load_driver(driver[-1] or None)
        emit({"step": "driver-load", **found})
        if lib is not None:
            emit({"step": "driver", "begin": True})
            emit({"step": "driver", **init_driver(lib)})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""The CUDA driver API (libcuda.so.1) as a CUDA program meets it, probed in a child process.

A broken driver can hang in cuInit or abort its caller, and a library loaded into a process can
never be unloaded, so all native CUDA calls run in `_cuda_child.py`, started as
`python -I -S` (standard library only, ~20 ms), with a timeout, and always reaped.
Codes and names: https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TYPES.html
"""

from __future__ import annotations

import json
import signal
from collections.abc import Mapping
from typing import Any

from envcheck.contracts.facts import CudaDriverFacts
from envcheck.contracts.record import field, record, replace
from envcheck.contracts.versions import VersionParseError, cuda_version_from_int
from envcheck.probe.cuda_spawn import Child, start_cuda_child

_REASONS: dict[str, str] = {
    "CUDA_ERROR_NO_DEVICE": (
        "libcuda found no usable GPU: no NVIDIA GPU, CUDA_VISIBLE_DEVICES hides them all, MIG is"
        " on without instances, or the kernel module is not loaded."
    ),
    "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH": (
        "libcuda and the loaded kernel module come from different driver versions: the driver"
        " was upgraded without a reboot. Reboot (or reload the nvidia modules)."
    ),
    "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE": (
        "A CUDA forward-compatibility libcuda (cuda-compat) is loaded on a GPU that does not"
        " support it. Remove the compat directory from LD_LIBRARY_PATH."
    ),
    "CUDA_ERROR_STUB_LIBRARY": (
        "The libcuda.so.1 found is the CUDA toolkit's link-time stub (…/lib64/stubs), not the"
        " driver. Remove the stubs directory from LD_LIBRARY_PATH; the real one ships with the"
        " NVIDIA driver."
    ),
    "CUDA_ERROR_NOT_PERMITTED": "The driver refused this process access to the GPU.",
    "CUDA_ERROR_OPERATING_SYSTEM": "The operating system refused the driver's request (see dmesg).",
    "CUDA_ERROR_UNKNOWN": "The driver failed with an unknown error; look for Xid errors in dmesg.",
}


@record
class ChildRun:
    """What the child printed before it exited, crashed or was stopped."""

    records: tuple[dict[str, Any], ...] = ()
    unfinished: dict[str, Any] | None = None  # the step that began and never reported
    failure: str | None = None  # None | "timeout" | "crashed" | "failed"
    detail: str = ""
    timeout: float = 0.0
    by_step: dict[str, dict[str, Any]] = field(default_factory=dict)

    def result(self, step: str, path: str | None = None) -> dict[str, Any] | None:
        return self.by_step.get(f"{step}:{path or ''}")

    def stopped_during(self, step: str, path: str | None = None) -> bool:
        u = self.unfinished
        return u is not None and u.get("step") == step and u.get("path") == path


def probe_cuda_driver(env: Mapping[str, str], timeout: float = 5.0) -> CudaDriverFacts:
    """`cuInit(0)`, `cuDriverGetVersion`, `cuDeviceGetCount`: what `deviceQuery` prints as
    "CUDA Driver Version" and "Detected N CUDA Capable device(s)"."""
    return driver_facts(run_cuda_child({"driver": True}, env, timeout))


def run_cuda_child(request: dict[str, Any], env: Mapping[str, str], timeout: float) -> ChildRun:
    """Run the child on `request` ({"driver": bool, "libraries": [{"kind", "path"}]});
    never raises for anything the child does."""
    return finish_cuda_child(start_cuda_child(request, env, timeout))


def finish_cuda_child(child: Child | str) -> ChildRun:
    """What a child started with `start_cuda_child` printed, once it ended or was stopped."""
    if isinstance(child, str):
        return ChildRun(failure="failed", detail=child)
    out, err, returncode, timed_out = child.finish()
    return _parse_run(out, err, returncode, "timeout" if timed_out else None, child.timeout)


def driver_facts(run: ChildRun) -> CudaDriverFacts:
    loaded = run.result("driver-load")
    if loaded is None:
        return _not_finished(run, "driver-load", CudaDriverFacts())
    if loaded.get("absent"):
        looked_at = loaded.get("looked_at")
        where = f"from {looked_at}" if looked_at else "from the loader path"
        # Absent whatever NVML says: the judge knows whether NVML answered (a container without
        # the driver's compute libraries, a loader path that misses them) or no driver is here.
        detail = loaded.get("detail")
        return CudaDriverFacts(
            status="absent",
            reason=f"libcuda.so.1 cannot be loaded {where}" + (f" ({detail})" if detail else ""),
        )
    known = CudaDriverFacts(
        version=_cuda_version(loaded.get("version")), library=loaded.get("library")
    )
    record = run.result("driver")
    if record is None:
        return _not_finished(run, "driver", known)
    error = record.get("error")
    if error:
        call = record.get("call", "cuInit")
        reason = _REASONS.get(error, f"{call} failed with {error} ({record.get('code')}).")
        return replace(known, status="error", error=error, reason=reason)
    return replace(known, status="ok", device_count=record.get("device_count"))


def _not_finished(run: ChildRun, step: str, known: CudaDriverFacts) -> CudaDriverFacts:
    """The child never reported `step`: say whether it hung or died there, or earlier."""
    call = "dlopen(libcuda.so.1)" if step == "driver-load" else "cuInit"
    if run.stopped_during(step) and run.failure == "timeout":
        reason = (
            f"{call} did not return within {run.timeout:g} s: the driver is wedged (a GPU in a"
            " bad state or a stuck persistence daemon). Check dmesg for Xid errors."
        )
        return replace(known, status="error", error="timeout", reason=reason)
    if run.stopped_during(step) and run.failure == "crashed":
        reason = f"The process calling {call} was {run.detail}: the driver is broken."
        return replace(known, status="error", error="crashed", reason=reason)
    if run.failure in ("timeout", "crashed") and run.unfinished:
        where = run.unfinished.get("path") or run.unfinished.get("step")
        reason = f"not probed: the probe process stopped ({run.failure}) while loading {where}"
        return replace(known, status="unknown", reason=reason)
    return replace(known, status="error", error="probe-failed", reason=run.detail or None)


def _cuda_version(value: Any) -> str | None:
    try:
        return cuda_version_from_int(value) if value else None
    except VersionParseError:
        return None


def _parse_run(
    out: bytes, err: bytes, returncode: int, failure: str | None, timeout: float
) -> ChildRun:
    records: list[dict[str, Any]] = []
    by_step: dict[str, dict[str, Any]] = {}
    unfinished: dict[str, Any] | None = None
    for line in out.decode("utf-8", "replace").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a library that printed to stdout
        if not isinstance(record, dict) or "step" not in record:
            continue
        if record.get("begin"):
            unfinished = record
            continue
        unfinished = None
        records.append(record)
        by_step[f"{record['step']}:{record.get('path') or ''}"] = record
    detail = ""
    if failure is None and returncode < 0:
        failure, detail = "crashed", f"killed by {_signal_name(-returncode)}"
    elif failure is None and returncode > 0:
        tail = err.decode("utf-8", "replace").strip().splitlines()[-3:]
        failure, detail = "failed", f"exit status {returncode}: {' / '.join(tail)}"
    return ChildRun(tuple(records), unfinished, failure, detail, timeout, by_step)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"

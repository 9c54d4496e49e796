"""Reading what the workload printed: bounded on the way in, strictly validated on the way out.

Both runners (container and subprocess) feed the same `OutputCollector`, so a script that prints
megabytes costs at most `MAX_STDOUT` bytes of memory and becomes a clean `bad-output` finding, and
a crash keeps only the last lines of its log. `parse_result` accepts exactly one JSON line with
the `envcheck-smoke/1` shape that `workload.py` writes, and says precisely what is wrong otherwise.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from envcheck.smoke.protocol import SCHEMA

MAX_STDOUT = 256 * 1024  # the real line is ~3 KB per device; 256 KiB leaves room for many GPUs
STDERR_TAIL = 64 * 1024
LOG_TAIL_LINES = 25


class OutputCollector:
    """Thread-safe sink for the two streams: stdout up to a bound, the tail of stderr."""

    def __init__(self, max_stdout: int = MAX_STDOUT, stderr_tail: int = STDERR_TAIL) -> None:
        self._lock = threading.Lock()
        self._stdout = bytearray()
        self._stderr = bytearray()
        self._max_stdout = max_stdout
        self._stderr_tail = stderr_tail
        self.stdout_bytes = 0  # everything seen, including what was dropped
        self.overflow = threading.Event()

    def feed_stdout(self, chunk: bytes) -> None:
        with self._lock:
            self.stdout_bytes += len(chunk)
            room = self._max_stdout - len(self._stdout)
            self._stdout += chunk[: max(room, 0)]
            if self.stdout_bytes > self._max_stdout:
                self.overflow.set()

    def feed_stderr(self, chunk: bytes) -> None:
        with self._lock:
            self._stderr += chunk
            if len(self._stderr) > 2 * self._stderr_tail:  # trim in batches, not per chunk
                del self._stderr[: len(self._stderr) - self._stderr_tail]

    def stdout(self) -> bytes:
        with self._lock:
            return bytes(self._stdout)

    def stderr(self) -> str:
        with self._lock:
            return bytes(self._stderr[-self._stderr_tail :]).decode("utf-8", "replace")

    def raw_run(
        self, exit_code: int | None, started: float, *, timed_out: bool, **more: Any
    ) -> RawRun:
        """What the streams held when the run ended (`started` from time.monotonic())."""
        return RawRun(
            exit_code=exit_code,
            stdout=self.stdout(),
            stderr=self.stderr(),
            duration_s=round(time.monotonic() - started, 3),
            stdout_bytes=self.stdout_bytes,
            stdout_overflow=self.overflow.is_set(),
            timed_out=timed_out,
            **more,
        )


@dataclass(frozen=True)
class RawRun:
    """One execution of the workload, as the host saw it (before any judging)."""

    exit_code: int | None  # None when killed before it could say
    stdout: bytes
    stderr: str  # the tail only
    duration_s: float
    stdout_bytes: int = 0
    stdout_overflow: bool = False
    timed_out: bool = False
    oom_killed: bool = False
    pid: int | None = None  # host pid of the workload (NVML's per-process accounting key)
    extra: dict[str, Any] = field(default_factory=dict)  # container id, limits, image id...


class BadOutput(ValueError):
    """The workload's stdout is not the one JSON line it must print."""


def parse_result(stdout: bytes) -> dict[str, Any]:
    """The workload's JSON object, validated; `BadOutput` saying what is wrong otherwise."""
    text = stdout.decode("utf-8", "replace")
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise BadOutput("printed nothing on stdout")
    if len(lines) > 1:
        raise BadOutput(
            f"printed {len(lines)} lines on stdout, not one JSON line: {_preview(lines[0])}"
        )
    try:
        doc = json.loads(lines[0], parse_constant=_reject_constant)
    except (json.JSONDecodeError, ValueError) as e:
        raise BadOutput(f"stdout is not JSON ({e}): {_preview(lines[0])}") from e
    validate(doc)
    return doc  # type: ignore[no-any-return]


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-finite number {name}")  # the workload writes null for NaN/Infinity


def _preview(line: str, limit: int = 120) -> str:
    return repr(line[:limit] + ("…" if len(line) > limit else ""))


# Expected types, by key. `float` accepts ints too; a tuple allows None.
_NUM = (int, float)
_TOP = {"schema": str, "error": (dict, type(None)), "runs": list, "warnings": list}
_BUILD = {
    "paddle_version": str,
    "compiled_with_cuda": bool,
    "cuda_device_count": (int, type(None)),
    "device_capabilities": list,
    "default_device": str,
    "env": dict,
}
_RUN = {
    "device_requested": str,
    "device_used": str,
    "device_error": (str, type(None)),
    "error": (dict, type(None)),
}
_TRAINED = {
    "steps": int,
    "batch_size": int,
    "param_places": dict,
    "logits_place": str,
    "loss_start": (*_NUM, type(None)),
    "loss_end": (*_NUM, type(None)),
    "losses": list,
    "first_step_s": _NUM,
    "steps_per_s": (*_NUM, type(None)),
    "peak_gpu_mem_bytes": (int, type(None)),
    "amp": dict,
    "checks": list,
    "loss_check": dict,
    "train_window": dict,
}
# The known answers (issue 16): a trained run without them proves nothing about its numbers.
_CHECK = {
    "op": str,
    "phase": str,
    "device": str,
    "ok": bool,
    "problem": (str, type(None)),
    "max_abs_diff": (*_NUM, type(None)),
    "tolerance": _NUM,
}
_LOSS_CHECK = {"start": (*_NUM, type(None)), "non_finite": int, "zero_steps": int, "distinct": int}
_WINDOW = {"start": _NUM, "end": _NUM}
_WARNING = {"kind": str, "text": str}
# What the process mapped (issue 11): optional, so an older workload's line still reads.
_LOADED = {
    "name": str,
    "path": str,
    "source": str,
    "call": (str, type(None)),
    "raw": (int, list, type(None)),
    "call_error": (str, type(None)),
}
# /dev/shm as the workload saw it (issue 11.2): optional, as above.
_SHM = {"size_bytes": int, "free_bytes": int}
_DRIVER_CHECK = {
    "library": str,
    "init": (int, type(None)),
    "error": (str, type(None)),
    "driver_version": (str, type(None)),
}


def validate(doc: Any) -> None:
    if not isinstance(doc, dict):
        raise BadOutput(f"stdout is JSON but not an object: {type(doc).__name__}")
    _check(doc, _TOP, "result")
    if doc["schema"] != SCHEMA:
        raise BadOutput(f"unknown schema {doc['schema']!r} (expected {SCHEMA!r})")
    for i, warning in enumerate(doc["warnings"]):
        _check(warning, _WARNING, f"warnings[{i}]")
    if doc["error"] is not None:
        return  # died before training: only the error is promised
    _check_loaded(doc)
    if doc.get("shm") is not None:
        _check(doc["shm"], _SHM, "shm")
    _check(doc, _BUILD, "result")
    if not doc["runs"]:
        raise BadOutput("result has no runs")
    for i, run in enumerate(doc["runs"]):
        _check(run, _RUN, f"runs[{i}]")
        for j, check in enumerate(run.get("checks") or []):
            _check(check, _CHECK, f"runs[{i}].checks[{j}]")
        if run["error"] is None:
            _check(run, _TRAINED, f"runs[{i}]")
            _check(run["loss_check"], _LOSS_CHECK, f"runs[{i}].loss_check")
            _check(run["train_window"], _WINDOW, f"runs[{i}].train_window")
            _check_numbers(run, f"runs[{i}]")


def _check_loaded(doc: dict[str, Any]) -> None:
    libraries = doc.get("loaded_libraries")
    if libraries is None:
        return
    if not isinstance(libraries, list):
        raise BadOutput(f"result.loaded_libraries: expected list, got {type(libraries).__name__}")
    for i, lib in enumerate(libraries):
        _check(lib, _LOADED, f"loaded_libraries[{i}]")
        raw = lib["raw"]
        if isinstance(raw, list) and not all(
            isinstance(v, int) and not isinstance(v, bool) for v in raw
        ):
            raise BadOutput(f"loaded_libraries[{i}].raw: expected integers")
    if doc.get("driver_check") is not None:
        _check(doc["driver_check"], _DRIVER_CHECK, "driver_check")


def _check(obj: Any, spec: dict[str, Any], where: str) -> None:
    if not isinstance(obj, dict):
        raise BadOutput(f"{where}: expected an object, got {type(obj).__name__}")
    for key, types in spec.items():
        if key not in obj:
            raise BadOutput(f"{where}: missing {key!r}")
        value = obj[key]
        if isinstance(value, bool) and bool not in _as_tuple(types):
            raise BadOutput(f"{where}.{key}: expected {_names(types)}, got a boolean")
        if not isinstance(value, types):
            raise BadOutput(f"{where}.{key}: expected {_names(types)}, got {type(value).__name__}")


def _check_numbers(run: dict[str, Any], where: str) -> None:
    if run["steps"] < 1:
        raise BadOutput(f"{where}.steps: {run['steps']} < 1")
    for i, value in enumerate(run["losses"]):
        if value is not None and (not isinstance(value, _NUM) or not math.isfinite(value)):
            raise BadOutput(f"{where}.losses[{i}]: not a number: {value!r}")
    if not all(isinstance(v, str) for v in run["param_places"].values()) or not run["param_places"]:
        raise BadOutput(f"{where}.param_places: expected a non-empty object of strings")
    if not run["checks"]:
        raise BadOutput(f"{where}.checks: a trained run must report its known-answer checks")


def _as_tuple(types: Any) -> tuple[type, ...]:
    return types if isinstance(types, tuple) else (types,)


def _names(types: Any) -> str:
    return " or ".join("null" if t is type(None) else t.__name__ for t in _as_tuple(types))


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")  # Paddle colours its PIR pass lines


def log_tail(stderr: str, lines: int = LOG_TAIL_LINES) -> list[str]:
    """The last non-blank lines of the log, colours stripped, each cut to 300 characters."""
    kept = [_ANSI.sub("", line).rstrip()[:300] for line in stderr.splitlines()]
    return [line for line in kept if line.strip()][-lines:]

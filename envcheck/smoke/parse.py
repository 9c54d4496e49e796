"""Reading what the workload printed: bounded on the way in, strictly validated on the way out.

Both runners (container and subprocess) feed the same `OutputCollector`, so a script that prints
megabytes costs at most `MAX_STDOUT` bytes of memory and becomes a clean `bad-output` finding, and
a crash keeps only the last lines of its log. `parse_result` accepts exactly one JSON line with
the `envcheck-smoke/1` shape that `workload.py` writes, and says precisely what is wrong otherwise.
"""

from __future__ import annotations

import functools
import json
import math
import re
import threading
import time
from typing import Any, Literal, Union, cast, get_args, get_origin, get_type_hints, is_typeddict

from envcheck.contracts.record import field, record
from envcheck.smoke.workload.protocol import (
    SCHEMA,
    PaddleBuild,
    RunResult,
    SmokeResult,
    TrainedRun,
    _ResultRequired,
)

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
        duration, now = time.monotonic() - started, time.time()
        return RawRun(
            exit_code=exit_code,
            stdout=self.stdout(),
            stderr=self.stderr(),
            duration_s=round(duration, 3),
            started_at=now - duration,
            ended_at=now,
            stdout_bytes=self.stdout_bytes,
            stdout_overflow=self.overflow.is_set(),
            timed_out=timed_out,
            **more,
        )


@record
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
    # The host's wall clock (the clock `train_window` uses) when it started and reaped the run:
    # a training window outside them was not this run's (#23.1).
    started_at: float | None = None
    ended_at: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # container id, limits, image id...


class BadOutput(ValueError):
    """The workload's stdout is not the one JSON line it must print."""


def parse_result(stdout: bytes) -> SmokeResult:
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
    except RecursionError as e:  # `[[[[…` deeper than the parser's recursion limit
        raise BadOutput(f"stdout is JSON nested too deeply: {_preview(lines[0])}") from e
    return validate(doc)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-finite number {name}")  # the workload writes null for NaN/Infinity


def _preview(line: str, limit: int = 120) -> str:
    return repr(line[:limit] + ("…" if len(line) > limit else ""))


def validate(doc: Any) -> SmokeResult:
    """`doc` as the typed result, or `BadOutput` naming the first key that breaks the protocol's
    types (`envcheck.smoke.workload.protocol`): the rules never meet a wrong-typed field."""
    if not isinstance(doc, dict):
        raise BadOutput(f"stdout is JSON but not an object: {type(doc).__name__}")
    _present(doc, _ResultRequired, "result")  # the schema is judged before the rest is walked
    _conform(doc["schema"], str, "result.schema")
    if doc["schema"] != SCHEMA:
        raise BadOutput(f"unknown schema {doc['schema']!r} (expected {SCHEMA!r})")
    _conform(doc, SmokeResult, "result")
    if doc["error"] is not None:
        return cast(SmokeResult, doc)  # died before training: only the error is promised
    _require(doc, PaddleBuild, "result")
    if not doc["runs"]:
        raise BadOutput("result has no runs")
    for i, run in enumerate(doc["runs"]):
        if run["error"] is None:
            _require(run, TrainedRun, f"runs[{i}]")
            _check_numbers(run, f"runs[{i}]")
    return cast(SmokeResult, doc)


def _require(obj: dict[str, Any], part: Any, where: str) -> None:
    """Every key of `part` present (its types were checked with the whole)."""
    missing = [key for key in _hints(part) if key not in obj]
    if missing:
        raise BadOutput(f"{where}: missing {missing[0]!r}")


@functools.cache
def _hints(typed: Any) -> dict[str, Any]:
    """A protocol TypedDict's fields and their types, worked out once per class."""
    return get_type_hints(typed)


def _present(value: Any, typed: Any, where: str) -> None:
    """`value` is an object holding every required key of the TypedDict `typed`."""
    if not isinstance(value, dict):
        raise BadOutput(f"{where}: expected an object, got {_kind(value)}")
    missing = sorted(typed.__required_keys__ - value.keys())
    if missing:
        raise BadOutput(f"{where}: missing {missing[0]!r}")


def _conform(value: Any, hint: Any, where: str) -> None:
    """`value` has the type `hint` (a protocol TypedDict, list, dict, union, or a JSON scalar)."""
    if is_typeddict(hint):
        _present(value, hint, where)
        for key, part in _hints(hint).items():
            if key in value:
                _conform(value[key], part, f"{where}.{key}")
        return
    origin, args = get_origin(hint), get_args(hint)
    if origin is Literal:
        if not _shallow(value, hint):
            raise BadOutput(f"{where}: expected {_plain(hint)}, got {_short(value)}")
    elif origin is Union:
        fits = [a for a in args if _shallow(value, a)]
        if not fits:
            raise BadOutput(f"{where}: expected {_names(args)}, got {_kind(value)}")
        _conform(value, fits[0], where)
    elif origin is list:
        if not isinstance(value, list):
            raise BadOutput(f"{where}: expected a list, got {_kind(value)}")
        for i, item in enumerate(value):
            _conform(item, args[0], f"{where}[{i}]")
    elif origin is dict:
        if not isinstance(value, dict):
            raise BadOutput(f"{where}: expected an object, got {_kind(value)}")
        for key, item in value.items():
            _conform(item, args[1], f"{where}.{key}")
    elif not _shallow(value, hint):
        raise BadOutput(f"{where}: expected {_names((hint,))}, got {_kind(value)}")
    elif hint is float and not _finite(value):
        raise BadOutput(f"{where}: not a finite number: {_short(value)}")


def _finite(value: float) -> bool:
    """An int past a float's range (10**400) is no finite number either (#23.3: OverflowError)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _shallow(value: Any, hint: Any) -> bool:
    """The JSON kind alone: a bool is no number, an int is a float."""
    origin = get_origin(hint) or hint
    if origin is Literal:  # one of the protocol's words, spelled exactly
        return isinstance(value, str) and value in get_args(hint)
    if value is None or hint is type(None):
        return value is None and hint is type(None)
    if isinstance(value, bool):
        return hint is bool
    if hint is float:
        return isinstance(value, (int, float))
    if is_typeddict(hint):
        return isinstance(value, dict)
    return isinstance(value, origin)


def _names(hints: tuple[Any, ...]) -> str:
    words = {type(None): "null", float: "number", str: "str", int: "int", bool: "bool"}
    return " or ".join(words.get(h) or _plain(h) for h in hints)


def _plain(hint: Any) -> str:
    origin = get_origin(hint) or hint
    if origin is Literal:
        return "one of " + ", ".join(map(str, get_args(hint)))
    return "a list" if origin is list else "an object"


def _short(value: Any) -> str:
    """A wrong value in a one-line message: a bounded repr, or what kind of JSON it is."""
    return repr(value[:40]) if isinstance(value, str) else _kind(value)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return "a boolean" if isinstance(value, bool) else type(value).__name__


def _check_numbers(run: RunResult, where: str) -> None:
    """What the types cannot say: a trained run trained, and reports where and how well."""
    if run["steps"] < 1:
        raise BadOutput(f"{where}.steps: {run['steps']} < 1")
    if not run["param_places"]:
        raise BadOutput(f"{where}.param_places: expected a non-empty object of strings")
    if not run["checks"]:
        raise BadOutput(f"{where}.checks: a trained run must report its known-answer checks")


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")  # Paddle colours its PIR pass lines


def log_tail(stderr: str, lines: int = LOG_TAIL_LINES) -> list[str]:
    """The last non-blank lines of the log, colours stripped, each cut to 300 characters."""
    kept = [_ANSI.sub("", line).rstrip()[:300] for line in stderr.splitlines()]
    return [line for line in kept if line.strip()][-lines:]

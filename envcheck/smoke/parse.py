"""Reading what the workload printed: bounded on the way in, strictly validated on the way out.

Both runners (container and subprocess) feed the same `OutputCollector`, so a script that prints
megabytes costs at most `MAX_STDOUT` bytes of memory and becomes a clean `bad-output` finding, and
a crash keeps only the last lines of its log. `parse_result` accepts exactly one JSON line with
the `envcheck-smoke/1` shape that `workload.py` writes, and says precisely what is wrong otherwise.
"""

from __future__ import annotations

import json
import re
import threading
import time
from typing import Any

from envcheck.contracts.facts import FactsError, from_dict, is_required
from envcheck.contracts.record import fields, record
from envcheck.contracts.smoke_report import ContainerInfo
from envcheck.contracts.smoke_result import RunResult, SmokeResult
from envcheck.smoke.workload.protocol import SCHEMA

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
        self,
        exit_code: int | None,
        started: float,
        *,
        timed_out: bool,
        oom_killed: bool = False,
        container: ContainerInfo | None = None,
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
            oom_killed=oom_killed,
            container=container,
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
    # a training window outside them was not this run's (a window stamped elsewhere proves
    # nothing about this run).
    started_at: float | None = None
    ended_at: float | None = None
    container: ContainerInfo | None = None  # the container's id, limits, image, cleanup


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
    types (the records of `envcheck.contracts.smoke_result`, read by the one reader of every
    document, `from_dict`): the rules never meet a wrong-typed field."""
    if not isinstance(doc, dict):
        raise BadOutput(f"stdout is JSON but not an object: {type(doc).__name__}")
    _present(doc, [f.name for f in fields(SmokeResult) if is_required(f)], "result")
    schema = doc["schema"]  # judged before the rest: another version's runs are not ours
    if not isinstance(schema, str):
        raise BadOutput(f"result.schema: expected a string, got {type(schema).__name__}")
    if schema != SCHEMA:
        raise BadOutput(f"unknown schema {_short(schema)} (expected {SCHEMA!r})")
    try:
        result = from_dict(SmokeResult, doc, "result", numbers_as_text=False)
    except FactsError as e:
        raise BadOutput(str(e)) from e
    if result.error is not None:
        return result  # died before training: only the error is promised
    _present(doc, _UNLESS_ERROR[SmokeResult], "result")
    if not result.runs:
        raise BadOutput("result has no runs")
    for i, run in enumerate(result.runs):
        if run.error is None:
            _present(doc["runs"][i], _UNLESS_ERROR[RunResult], f"runs[{i}]")
            _check_numbers(run, f"runs[{i}]")
    return result


# The keys that are there whenever the `error` beside them is null (`unless_error`).
_UNLESS_ERROR = {
    cls: [f.name for f in fields(cls) if f.metadata.get("unless_error")]
    for cls in (SmokeResult, RunResult)
}


def _present(obj: dict[str, Any], keys: list[str], where: str) -> None:
    missing = [key for key in keys if key not in obj]
    if missing:
        raise BadOutput(f"{where}: missing {missing[0]!r}")


def _short(value: Any) -> str:
    """A wrong value in a one-line message: a bounded repr."""
    shown = repr(value)
    return shown if len(shown) <= 60 else shown[:57] + "..."


def _check_numbers(run: RunResult, where: str) -> None:
    """What the types cannot say: a trained run trained, and reports where and how well."""
    if run.steps is not None and run.steps < 1:
        raise BadOutput(f"{where}.steps: {run.steps} < 1")
    if not run.param_places:
        raise BadOutput(f"{where}.param_places: expected a non-empty object of strings")
    if not run.checks:
        raise BadOutput(f"{where}.checks: a trained run must report its known-answer checks")


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")  # Paddle colours its PIR pass lines


def log_tail(stderr: str, lines: int = LOG_TAIL_LINES) -> list[str]:
    """The last non-blank lines of the log, colours stripped, each cut to 300 characters."""
    kept = [_ANSI.sub("", line).rstrip()[:300] for line in stderr.splitlines()]
    return [line for line in kept if line.strip()][-lines:]

"""What envcheck is doing right now, for the progress display on stderr.

The slow parts (probing, container create/start, Paddle's import and each training phase inside
the smoke, the NVML witness, pulls) say what they start with `phase(...)` and what they see on
the way with `detail(...)`; the command that owns the terminal installs a display with
`showing(display)` (envcheck.render.activity: a live line on a terminal, plain lines and a
heartbeat in a log, nothing under --quiet). Without one, every call is a no-op, so library code
and tests never print. A display is never handed the report: stdout stays the result's.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol


class ActivityDisplay(Protocol):
    def phase(self, text: str) -> None: ...  # a new step begins

    def detail(self, text: str) -> None: ...  # progress inside the step (a workload log line)

    def failed(self, why: str) -> None: ...  # the step ended without doing its work; why, in a line

    def pause(self) -> None: ...  # another display (a pull's bars) takes the terminal

    def resume(self) -> None: ...

    def stop(self) -> None: ...


class _Null:
    def phase(self, text: str) -> None:
        pass

    def detail(self, text: str) -> None:
        pass

    def failed(self, why: str) -> None:
        pass

    def pause(self) -> None:
        pass

    def resume(self) -> None:
        pass

    def stop(self) -> None:
        pass


NULL: ActivityDisplay = _Null()
_lock = threading.Lock()
_route: list[ActivityDisplay] = [NULL]  # the display installed by `showing`, else NULL
_interrupt_said = [False]  # the interrupted phase was marked ✗ (once per display)


def phase(text: str) -> None:
    """A new step begins. During the unwinding after a signal, the step cut short is marked
    failed first: a cleanup step ("removing the smoke container") must never mark it ✓."""
    from envcheck.edges.signals import unwinding

    if unwinding():
        interrupted()
    _route[-1].phase(text)


def interrupted() -> None:
    """Ctrl-C or an ending signal cut the current phase short: `✗ <phase>: interrupted`, once."""
    if not _interrupt_said[0]:
        _interrupt_said[0] = True
        _route[-1].failed("interrupted")


def detail(text: str) -> None:
    _route[-1].detail(text)


def failed(why: str) -> None:
    """The current phase did not do its work (a pull that failed, a GPU the engine refused):
    one line says why, and the phase is never marked done."""
    _route[-1].failed(why)


@contextmanager
def showing(display: ActivityDisplay) -> Iterator[ActivityDisplay]:
    """Route phases to `display` for the `with`; stopped on the way out, errors and Ctrl-C too."""
    with _lock:
        _route.append(display)
        _interrupt_said[0] = False
    try:
        yield display
    finally:
        with _lock:
            _route.remove(display)
        display.stop()


def step_aside() -> None:
    """Another display draws now (the pull's per-layer bars): the activity line steps aside."""
    _route[-1].pause()


def step_back() -> None:
    _route[-1].resume()


class LineSplitter:
    """Whole lines out of a child's stderr chunks; calls `emit` with the text after `prefix` of
    each line that has it. A line without an end is kept up to `limit` bytes, no more."""

    def __init__(self, prefix: bytes | None = None, limit: int = 4096) -> None:
        from envcheck.smoke.workload.protocol import LOG_PREFIX  # the smoke's, off the static path

        self.prefix, self.limit = prefix or LOG_PREFIX.encode(), limit
        self._partial = b""

    def feed(self, chunk: bytes) -> None:
        lines = (self._partial + chunk).split(b"\n")
        self._partial = lines.pop()[-self.limit :]
        for line in lines:
            start = line.find(self.prefix)
            if start >= 0:
                workload_said(
                    line[start + len(self.prefix) :][: self.limit]
                    .decode("utf-8", "replace")
                    .rstrip()
                )


def workload_said(text: str) -> None:
    """The smoke workload's log line (workload.log): its milestones (the protocol's
    `MILESTONES`) begin a phase, the rest (`step 31/60, 95.2 steps/s`, what it loaded) are
    details of the current one."""
    from envcheck.smoke.workload.protocol import MILESTONES

    for opening, title in MILESTONES:
        if text.startswith(opening):
            phase(f"smoke: {title or text}")
            return
    detail(text)

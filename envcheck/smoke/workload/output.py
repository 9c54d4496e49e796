"""The workload's two streams: the log on stderr (Paddle's own lines teed and classified, the
progress lines the host displays) and the one JSON line on stdout."""

# Python 3.8 syntax on purpose (typing.Dict, %-formatting): old Paddle images run this file.
# ruff: noqa: UP006, UP031, UP035

from __future__ import annotations

import os
import sys
import threading
import time
from typing import TYPE_CHECKING, Dict, List, Set, Tuple

if TYPE_CHECKING:
    from envcheck.smoke.workload import protocol
else:
    try:  # beside the workload wherever it runs: the container's mount, the in-process copy
        import envcheck_smoke_protocol as protocol
    except ImportError:  # imported from the envcheck package (the host's tests)
        from envcheck.smoke.workload import protocol


class StderrTee:
    """Copies fd 2 (Python *and* the C++ glog lines) to the real stderr while scanning it.

    A pipe at the file-descriptor level is the only way to see glog's output, which bypasses
    `sys.stderr`. Pumped by a thread so the host still sees the log live (and on a crash).
    With `stdout_too`, fd 1 joins the log until `stop()` gives it back.
    """

    def __init__(self, stdout_too: bool = False) -> None:
        self._read, write = os.pipe()
        self._saved = os.dup(2)
        self._stdout = os.dup(1) if stdout_too else None
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(write, 2)
        if stdout_too:
            os.dup2(write, 1)
        os.close(write)
        self.warnings: List[Dict[str, str]] = []  # {kind, text}
        self._seen: Set[Tuple[str, str]] = set()
        self._thread = threading.Thread(target=self._pump, daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        pending = b""
        while True:
            chunk = os.read(self._read, 65536)
            if not chunk:
                break
            write_all(self._saved, chunk)
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()[-protocol.MAX_LINE * 4 :]
            for raw in lines:
                self._note(raw.decode("utf-8", "replace"))
        self._note(pending.decode("utf-8", "replace"))

    def _note(self, line: str) -> None:
        hit = protocol.classify_line(line)
        if hit is None or len(self.warnings) >= protocol.MAX_WARNINGS:
            return
        key = (hit["kind"], hit["text"])
        if key not in self._seen:
            self._seen.add(key)
            self.warnings.append(hit)

    def stop(self) -> List[Dict[str, str]]:
        """Give the descriptors back (closing every write end of the pipe) and drain it."""
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(self._saved, 2)
        if self._stdout is not None:
            os.dup2(self._stdout, 1)
            os.close(self._stdout)
        self._thread.join(timeout=2.0)  # drains what is left into the real stderr
        if not self._thread.is_alive():  # a child holding the pipe open keeps it pumping
            os.close(self._saved)
        return list(self.warnings)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def log(message: str) -> None:
    print(protocol.LOG_PREFIX + message, file=sys.stderr, flush=True)


# -- live progress for the host's display: log lines only, apart from the training.
_SAID_AT = [0.0]


def say_step(step: int, steps: int, since: float) -> None:
    """At most one line a second while training, and the last step: `step 31/60, 95.2 steps/s`
    (dispatch rate: the device is not waited for, so the figure in the result stays the one)."""
    now = time.perf_counter()
    last = step + 1 == steps
    if step == 0 or (not last and now - _SAID_AT[0] < 1.0):
        _SAID_AT[0] = _SAID_AT[0] or now
        return
    _SAID_AT[0] = now
    rate = ", %.1f steps/s" % (step / (now - since)) if now > since else ""
    log("step %d/%d%s" % (step + 1, steps, rate))

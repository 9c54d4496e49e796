"""Start the CUDA probe child (`_cuda_child.py`) and collect what it printed, within a deadline.

The doctor starts its `cuInit` child before it imports anything heavy (the slowest
probe sets the wall time), so this module is the standard library's `os`, `select`, `sys`,
`time` and `_thread` only, with its type names read by the type checker alone: `subprocess`
alone costs ~10 ms of imports on a loaded two-core machine, `typing`, `threading` and `signal`
(its enums) another ~15 ms, all of it before the child could start. The child runs in a
session of its own (a kill at the deadline reaches everything it started), gets `/dev/null` as
stdin, and is always reaped; no CUDA library is ever loaded in this process.
"""

from __future__ import annotations

import _thread  # threading's own lock, without threading's imports
import os
import select
import sys
import time

from envcheck.probe.driver_root import CUDA_SONAME, driver_library

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the checkers know it)
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_cuda_child.py")
_POLL_S = 0.005  # how often a child that closed its pipes is checked for its exit
_AFTER_KILL_S = 1.0  # its pipes may stay open in a process that left its group
TIMEOUT_S = 5.0  # the probe children's deadline, unless the caller gives one
# What `_cuda_child.py` prints just before it calls cuInit (its `emit` of a step's begin).
CUINIT_BEGINS = b'{"step": "driver", "begin": true}'


class Child:
    """A started child: `finish()` reads its stdout/stderr until it exits or the deadline
    passes (then kills its process group), reaps it and says how it ended. `wait_for()` may be
    called from another thread meanwhile."""

    def __init__(self, argv: list[str], env: Mapping[str, str], timeout: float) -> None:
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            self.pid = os.posix_spawnp(
                argv[0],
                argv,
                env,
                file_actions=[
                    (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                    (os.POSIX_SPAWN_DUP2, out_w, 1),
                    (os.POSIX_SPAWN_DUP2, err_w, 2),
                ],
                setsid=True,  # its own session and process group
            )
        except BaseException:
            os.close(out_r)
            os.close(err_r)
            raise
        finally:
            os.close(out_w)
            os.close(err_w)
        self._out, self._err = out_r, err_r
        self._chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
        self._open = [out_r, err_r]
        self._lock = _thread.allocate_lock()  # one reader at a time
        self._result: tuple[bytes, bytes, int, bool] | None = None

    def wait_for(self, marker: bytes, timeout: float) -> None:
        """Read its stdout until `marker` appears, it ends, or `timeout` seconds pass."""
        with self._lock:
            if self._result is None:
                until = min(self.deadline, time.monotonic() + timeout)
                self._pump(until, lambda: marker in b"".join(self._chunks[self._out]))

    def finish(self) -> tuple[bytes, bytes, int, bool]:
        """(stdout, stderr, exit status: negative for a signal, whether the deadline stopped it);
        the same answer on every call."""
        with self._lock:
            if self._result is None:
                status = self._wait() if self._pump(self.deadline) else None
                timed_out = status is None
                if status is None:
                    self.kill()
                    self._pump(time.monotonic() + _AFTER_KILL_S)  # what it wrote before
                    status = os.waitpid(self.pid, 0)[1]
                os.close(self._out)
                os.close(self._err)
                out, err = (b"".join(self._chunks[fd]) for fd in (self._out, self._err))
                self._result = (out, err, os.waitstatus_to_exitcode(status), timed_out)
            return self._result

    def stop(self) -> None:
        """Kill it now (a caller that no longer wants its answer) and reap it."""
        self.kill()
        self.finish()

    def kill(self) -> None:
        """SIGKILL to the child's process group (the group of the child we started, by its id);
        nothing once it is reaped (its id may belong to another process by then)."""
        if self._result is not None:
            return
        import signal  # here: its enums cost ~3 ms before the child could start (see above)

        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def _pump(self, deadline: float, done: Callable[[], bool] = lambda: False) -> bool:
        """Read what arrives until both pipes end or `done()` holds (True), or the deadline
        passes (False)."""
        while self._open and not done():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            ready, _, _ = select.select(self._open, [], [], left)
            for fd in ready:
                data = os.read(fd, 65536)
                if data:
                    self._chunks[fd].append(data)
                else:
                    self._open.remove(fd)
        return True

    def _wait(self) -> int | None:
        """Its pipes are closed: its wait status once it exits, None if the deadline comes
        first (a process can close its output and hang)."""
        while True:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return status
            if time.monotonic() >= self.deadline:
                return None
            time.sleep(_POLL_S)


def start_cuda_child(
    request: dict[str, Any], env: Mapping[str, str], timeout: float
) -> Child | str:
    """Start the child on `request` ({"driver": bool, "libraries": [{"kind", "path"}], "open":
    [{"name", "folders"}]}), its
    deadline `timeout` seconds from now; a string says why it could not start. The child's
    variables are `env`, the command's: CUDA_VISIBLE_DEVICES, LD_LIBRARY_PATH and the driver
    root it meets are the ones the command was given."""
    args = [f"{lib['kind']}={lib['path']}" for lib in request.get("libraries", [])]
    args += [":".join(("open=" + o["name"], *o["folders"])) for o in request.get("open", [])]
    if request.get("driver"):
        library = driver_library(CUDA_SONAME, env)
        args.append("--driver" if library is None else f"--driver={library}")
    python = sys.executable or "python3"
    try:
        return Child([python, "-I", "-S", CHILD, *args], env, timeout)
    except OSError as e:
        return f"cannot start {python}: {e}"

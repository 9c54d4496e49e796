"""Run envcheck as a person or a CI job would see it, and time the silences.

`watch(argv, tty=True)` runs the command with its stderr on a real pseudo-terminal (`pty`, the
size a tmux pane has) or on a pipe (a CI log), stdout on a pipe of its own; returns what each
stream carried, when each stderr chunk arrived, and the longest stretch without any stderr output
between the start and the exit. `python -m tests.silence [--tty] -- ARGS` prints those numbers.
"""

from __future__ import annotations

import fcntl
import itertools
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from dataclasses import dataclass


@dataclass
class Watched:
    code: int
    stdout: str
    stderr: str
    arrivals: list[float]  # seconds after the start, one per stderr chunk
    elapsed: float

    @property
    def longest_silence(self) -> float:
        marks = [0.0, *self.arrivals, self.elapsed]
        return max(b - a for a, b in itertools.pairwise(marks))


def watch(
    argv: list[str],
    *,
    tty: bool,
    env: dict[str, str] | None = None,
    timeout: float = 300,
    columns: int = 120,
    rows: int = 40,
) -> Watched:
    if tty:
        err_read, err_write = pty.openpty()
        fcntl.ioctl(err_write, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    else:
        err_read, err_write = os.pipe()
    out_read, out_write = os.pipe()
    started = time.monotonic()
    proc = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=out_write, stderr=err_write, env=env, close_fds=True
    )
    os.close(err_write)
    os.close(out_write)
    chunks: dict[int, list[bytes]] = {out_read: [], err_read: []}
    arrivals: list[float] = []
    open_fds = {out_read, err_read}
    try:
        while open_fds and time.monotonic() - started < timeout:
            ready, _, _ = select.select(list(open_fds), [], [], 0.05)
            for fd in ready:
                try:
                    data = os.read(fd, 65536)
                except OSError:  # a pty reads EIO once the other side is closed
                    data = b""
                if not data:
                    open_fds.discard(fd)
                    continue
                chunks[fd].append(data)
                if fd == err_read:
                    arrivals.append(time.monotonic() - started)
        code = proc.wait(timeout=max(1.0, timeout - (time.monotonic() - started)))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(out_read)
        os.close(err_read)
    return Watched(
        code,
        b"".join(chunks[out_read]).decode("utf-8", "replace"),
        b"".join(chunks[err_read]).decode("utf-8", "replace"),
        arrivals,
        time.monotonic() - started,
    )


def main(argv: list[str]) -> int:
    tty = "--tty" in argv[: argv.index("--")]
    run = watch(
        [sys.executable, "-m", "envcheck", *argv[argv.index("--") + 1 :]],
        tty=tty,
        env=dict(os.environ),
    )
    where = "terminal" if tty else "pipe"
    print(
        f"{where}: exit {run.code}, {run.elapsed:.1f} s, {len(run.arrivals)} stderr chunks, "
        f"longest silence {run.longest_silence:.2f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""The process's own standard streams, when the other end goes away.

`envcheck doctor | head -1` closes the pipe while the report is being written: the verdict is
already decided and its exit code must survive (a CI gate reading the first line must not turn a
FAIL into 0). The rest of the output goes to /dev/null, as Python's documentation recommends
for SIGPIPE-free programs (https://docs.python.org/3/library/signal.html#note-on-sigpipe).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator


def discard_stdout() -> None:
    """Point fd 1 at /dev/null so later writes and the interpreter's final flush succeed."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)


@contextlib.contextmanager
def reader_may_leave() -> Iterator[None]:
    """Write the report; if the reader closed the pipe, drop the rest and carry on."""
    try:
        yield
        sys.stdout.flush()
    except BrokenPipeError:
        discard_stdout()

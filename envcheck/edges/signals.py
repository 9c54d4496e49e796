"""Every ending signal (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1/2) unwinds the whole run like
Ctrl-C, and never in the middle of a creation.

CI cancelling a job, `timeout`, `kill` and a batch scheduler send SIGTERM, whose default action
ends the process at once: containers, the in-process training child and its temp folder would be
left behind. `unwind_on_signals()` (installed by `envcheck.cli.main` before any command runs)
turns them (`SIGNALS`) into `Interrupted`, a `KeyboardInterrupt`, so every `with` and `finally`
that cleans up on Ctrl-C cleans up on SIGTERM or a hangup too.

A signal can land between "the engine created a container" and "we hold its handle". Code that
creates something wraps that step in `deferred()`: a signal arriving inside is raised when the
block ends, once the handle is kept and its cleanup armed. After the first signal has raised,
further ones are ignored: the run is already unwinding (each cleanup step has its own timeout),
and a second Ctrl-C must not cut a removal in half.

When the run is the process itself (`envcheck.cli.main` with no environment given), leaving the
block does not bring back the default action: the verdict is decided and written, and a signal
landing between there and the interpreter's exit (flushing stdout, its shutdown) would otherwise
end the process as "killed by SIGTERM" (-15) instead of with its verdict's exit status. Nothing
is left to clean up by then, so the signal is ignored until the process ends.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import ClassVar

# What a terminal, an ssh session or a batch system sends to end a run: SIGTERM (CI, `kill`,
# `timeout`, Slurm before its SIGKILL), SIGINT (Ctrl-C), SIGHUP (the terminal or ssh session
# closed), SIGQUIT (Ctrl-\), SIGUSR1/SIGUSR2 (`scancel --signal=USR1`, `sbatch --signal`): each
# one's default ends the process at once and leaves the container and temp folder behind.
SIGNALS = (
    signal.SIGTERM,
    signal.SIGINT,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
)


class Interrupted(KeyboardInterrupt):
    """One of `SIGNALS`: unwind as Ctrl-C does. The process exits 130 (ExitStatus.INTERRUPTED)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class _State:
    installed = False
    deferring = 0  # depth of nested deferred() blocks
    pending: int | None = None  # a signal that arrived inside deferred()
    stop: int | None = None  # inside deferred(): a second signal, or one that is not SIGINT
    raised = False  # the run is unwinding
    cleaned: ClassVar[list[str]] = []  # what the unwinding removed or stopped, in words


def _handler(signum: int, frame: FrameType | None) -> None:
    if _State.raised:
        return
    if _State.deferring:
        if _State.pending is not None or signum != signal.SIGINT:
            _State.stop = _State.stop or signum
        _State.pending = _State.pending or signum
        return
    _State.raised = True
    raise Interrupted(signum)


@contextmanager
def unwind_on_signals(*, process_ends_after: bool = False) -> Iterator[None]:
    """`SIGNALS` raise `Interrupted` inside the block. Re-entrant; a no-op off the main
    thread (only it may set handlers). `process_ends_after`: the block is the process's whole
    run, and the signals are ignored after it instead of given back their previous handlers."""
    if _State.installed or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, _handler) for s in SIGNALS}
    _State.installed, _State.pending, _State.raised = True, None, False
    _State.cleaned = []
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, signal.SIG_IGN if process_ends_after else handler)
        _State.installed, _State.pending, _State.raised = False, None, False


@contextmanager
def deferred() -> Iterator[None]:
    """A signal arriving inside the block is raised when it ends, even if the block failed:
    a failure may be caught and the run go on (the smoke falls back in-process), a signal
    must not be lost."""
    if not _State.installed or threading.current_thread() is not threading.main_thread():
        yield
        return
    if not _State.deferring:
        _State.stop = None
    _State.deferring += 1
    try:
        yield
    finally:
        _State.deferring -= 1
        if not _State.deferring and _State.pending is not None and not _State.raised:
            signum, _State.pending = _State.pending, None
            _State.raised = True
            raise Interrupted(signum)  # the signal outranks a failure in the block


def stop_asked() -> int | None:
    """Inside `deferred()`: the signal that asks to stop what the block waits on rather than wait
    for it (a second Ctrl-C, or any other ending signal: SIGTERM is a scheduler's last word
    before its SIGKILL); None while nothing or only a first Ctrl-C has arrived."""
    return _State.stop


def unwinding() -> bool:
    """A signal has raised `Interrupted`: whatever runs now is the cleanup."""
    return _State.raised


def cleaned_up(what: str) -> None:
    """A cleanup step of an interrupted run did its work (`removed the smoke container …`): the
    run's last line says so (envcheck.cli), so an interrupted user knows nothing was left."""
    _State.cleaned.append(what)


def cleaned() -> list[str]:
    """What the last interrupted run said it cleaned up, in order."""
    return list(_State.cleaned)


def wait_for_signal(seconds: float, *, while_exists: str | None = None) -> None:
    """Sleep up to `seconds`, ending early when one of `SIGNALS` arrives (outside `deferred()` it
    raises at once; inside, it is kept pending and raised where the block ends) or when the file
    `while_exists` is gone. A test hook's pause: a phase held open for a test to act there."""
    import os
    import time

    end = time.monotonic() + seconds
    while time.monotonic() < end and _State.pending is None and not _State.raised:
        if while_exists is not None and not os.path.exists(while_exists):
            return
        time.sleep(0.05)

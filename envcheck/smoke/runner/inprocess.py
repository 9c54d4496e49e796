"""The smoke without a container: the same script in a subprocess of the target Python.

The embedded default on a laptop or inside a CI container, and the fallback when no image can be
had. `paddle` is imported by the child only; a crash there (`std::exit(-1)` from Paddle's
place.cc, compat_facts 7 row 3) cannot take envcheck down. The child runs in its own session so
a timeout kills it together with anything it started (Paddle shells out to `grep`).

The script is copied, with the modules that travel with it (`payload.COMPANIONS`) and nothing
else, into a fresh directory and run from there: `python path/to/script` puts the script's
directory first on `sys.path`, and envcheck/smoke/ holds modules
(`parse`, `check`, `options`…) that must not shadow anything the target environment imports.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO

from envcheck.contracts.errors import EnvironmentProblem
from envcheck.edges import activity, signals
from envcheck.smoke.parse import OutputCollector, RawRun
from envcheck.smoke.runner.payload import COMPANIONS
from envcheck.smoke.runner.workdir import make_workdir, remove_dead_workdirs

KILL_WAIT_S = 10.0


def child_environment(base: Mapping[str, str]) -> dict[str, str]:
    """The command's variables `base` (CUDA_VISIBLE_DEVICES included: it is part of what is
    checked), with PCI device order unless they chose one, and an unbuffered log."""
    env = dict(base)
    # https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#env-vars
    env.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def run_subprocess(
    python: str,
    script: Path,
    args: Sequence[str],
    timeout: float,
    env: Mapping[str, str],
    on_start: Callable[[int | None], None] | None = None,
) -> RawRun:
    """Run `python script ARGS`, on the command's variables `env`, with a hard timeout and bounded output; always reaped, and its
    folder always removed: a signal between the folder's creation and the cleanup's taking charge
    of it (or during the cleanup) waits until the cleanup holds it."""
    workdir = None
    remove_dead_workdirs()  # what a run killed with SIGKILL could not remove
    try:
        with signals.deferred():
            workdir = make_workdir()
        copy = Path(workdir) / "workload.py"
        shutil.copyfile(script, copy)
        for source, placed in COMPANIONS:  # the workload imports them from beside it
            shutil.copyfile(source, Path(workdir) / placed)
        return _run([python, str(copy), *args], workdir, timeout, on_start, child_environment(env))
    except KeyboardInterrupt:
        if workdir is not None:
            with signals.deferred():
                shutil.rmtree(workdir, ignore_errors=True)
            signals.cleaned_up(f"removed the smoke's folder {workdir}")
        raise
    finally:
        if workdir is not None:
            with signals.deferred():
                shutil.rmtree(workdir, ignore_errors=True)


def _run(
    argv: list[str],
    cwd: str,
    timeout: float,
    on_start: Callable[[int | None], None] | None,
    env: dict[str, str],
) -> RawRun:
    collector, finished = OutputCollector(), threading.Event()
    lines = activity.LineSplitter()
    started = time.monotonic()
    activity.phase(f"smoke: starting {argv[0]}")
    proc: subprocess.Popen[bytes] | None = None
    try:
        with signals.deferred():  # a signal now would orphan a child we hold no handle of
            proc = subprocess.Popen(
                argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
    except OSError as e:
        raise EnvironmentProblem(
            f"cannot start the target Python {argv[0]}: {e.strerror or e}",
            hint="pass an existing interpreter with --python",
        ) from e
    except BaseException:  # the signal that came while it started, raised as the block ends
        if proc is not None:
            _reap(proc)
        raise
    assert proc.stdout is not None and proc.stderr is not None
    failures: list[Exception] = []  # a bug in a reader thread, raised here (exit 3)
    pumps = [
        threading.Thread(
            target=_pump,
            args=(proc.stdout, collector.feed_stdout, collector, finished, failures, True),
            daemon=True,
        ),
        threading.Thread(
            target=_pump,
            args=(
                proc.stderr,
                _both(collector.feed_stderr, lines.feed),
                collector,
                finished,
                failures,
                False,
            ),
            daemon=True,
        ),
    ]
    try:
        for pump in pumps:
            pump.start()
        activity.phase("smoke: importing Paddle")
        if on_start is not None:
            on_start(proc.pid)
        done = finished.wait(timeout=max(0.0, started + timeout - time.monotonic()))
        if done and not collector.overflow.is_set() and not failures:
            exit_code: int | None = _wait(proc, started + timeout)
            done = exit_code is not None
        if not done or collector.overflow.is_set() or failures:
            _kill_group(proc)  # a reader's failure ends the run at once: nobody drains its pipe
        exit_code = proc.wait(timeout=KILL_WAIT_S)
        for pump in pumps:
            pump.join(timeout=KILL_WAIT_S)
    finally:
        # Ctrl-C or SIGTERM (envcheck.edges.signals) on our side: take the child's group with us.
        # `returncode` rather than poll(): until we reap it the child's pid (its group's id)
        # cannot be reused, so the kill never reaches a stranger, and its children go too.
        running = proc.returncode is None
        _reap(proc)
        if running and signals.unwinding():
            signals.cleaned_up(f"stopped the training process {proc.pid} and its children")
    if failures:
        raise failures[0]
    return collector.raw_run(exit_code, started, timed_out=not done)


def _both(
    first: Callable[[bytes], None], second: Callable[[bytes], None]
) -> Callable[[bytes], None]:
    def feed(chunk: bytes) -> None:
        first(chunk)
        second(chunk)  # the log lines to the activity display too

    return feed


def _pump(
    pipe: IO[bytes],
    feed: Callable[[bytes], None],
    collector: OutputCollector,
    finished: threading.Event,
    failures: list[Exception],
    is_stdout: bool,
) -> None:
    """Read one stream to its end; stdout's pump signals `finished` at its end (or the overflow),
    either pump at its failure. Only the read is guarded: an error in `feed` is a bug, handed to
    the main thread, which stops the run at once (exit 3) rather than at the smoke's timeout."""
    try:
        while chunk := _read(pipe):
            feed(chunk)
            if is_stdout and collector.overflow.is_set():
                break
    except Exception as e:  # noqa: BLE001 - not swallowed: re-raised by _run in the main thread
        failures.append(e)
        finished.set()
    finally:
        if is_stdout:
            finished.set()


def _read(pipe: IO[bytes]) -> bytes:
    try:
        return pipe.read1(65536)  # type: ignore[attr-defined,no-any-return]
    except (OSError, ValueError):
        return b""  # the pipe closed under us after a kill


def _wait(proc: subprocess.Popen[bytes], deadline: float) -> int | None:
    """stdout closed; the exit follows at once unless the script closed stdout and hangs."""
    try:
        return proc.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        return None


def _reap(proc: subprocess.Popen[bytes]) -> None:
    """Kill its group unless it was reaped already, and reap it; then wait until the rest of its
    group (Paddle's DataLoader workers, forked from it) has died too, so that nothing we started
    outlives the command (a busy machine can take a moment to end a killed process)."""
    if proc.returncode is None:
        _kill_group(proc)
        proc.wait(timeout=KILL_WAIT_S)
    deadline = time.monotonic() + KILL_WAIT_S
    while _group_alive(proc.pid) and time.monotonic() < deadline:
        _kill_group(proc)
        time.sleep(0.01)


def _group_alive(pgid: int) -> bool:
    """Whether a process of group `pgid` still runs (a zombie has ended: only its parent's
    reaping is left, and that parent is not us)."""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue  # gone meanwhile
        # pid (comm) state ppid pgrp …: comm may hold spaces and parentheses, so after the last ')'
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != b"Z":
            return True
    return False


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # already gone

"""Which piece of the training broke (pure): cuDNN, the DataLoader's shared memory, its worker.

A real run fails in one of its pieces while a plain matmul works (Paddle#45122): the convolution's
cuDNN, the DataLoader passing batches through /dev/shm, the DataLoader's worker process. The
workload runs each of them; here a crashed run is told apart by Paddle's own words,
so each piece fails with its own finding, the line that proves it and its fix, instead of a
generic `smoke.crashed`.

Paddle's texts, as 3.3.1 prints them (paddle/io/dataloader, paddle/fluid/imperative/data_loader.cc):
- a worker that raised: the reader thread re-raises "DataLoader worker(0) caught ValueError with
  message: …"; the training loop only sees "(Fatal) Blocking queue is killed because the data
  reader raises an exception."
- a worker killed: "DataLoader process (pid N) exited is killed by signal: Killed." raised in the
  training loop, or the log line "DataLoader 1 workers exit unexpectedly, pids: N";
- /dev/shm full: SIGBUS in the worker, "ERROR: Unexpected BUS error encountered in DataLoader
  worker. This might be caused by insufficient shared memory (shm) …", or ENOSPC ("[Errno 28] No
  space left on device") from the queues' semaphores before any worker starts (measured in the
  offline image with --shm-size 64k and 16k);
- cuDNN missing: "The third-party dynamic library (libcudnn.so) that Paddle depends on is not
  configured correctly. (error code is …)" then "Cannot load cudnn shared library" (compat_facts 7
  rows 18-19); a cuDNN call that fails: "CUDNN error(N), CUDNN_STATUS_…".
"""

from __future__ import annotations

import re

from envcheck.contracts.facts import to_dict
from envcheck.contracts.findings import Finding, fail
from envcheck.contracts.remedy import Instruction, root, steps
from envcheck.contracts.smoke_result import RunResult, SmokeResult, WorkloadError
from envcheck.smoke.plan import Plan
from envcheck.smoke.verdict.known_answers import cudnn_fix, errors_of, where
from envcheck.smoke.workload.protocol import classify_line

SHM_ID = "smoke.shm"
WORKER_ID = "smoke.dataloader-worker"
CUDNN_ID = "smoke.cudnn"
PIECE_IDS = (SHM_ID, WORKER_ID, CUDNN_ID)

SHM_CONTAINER_FIX = (
    "give the training container more shared memory: start it with --shm-size=8g (Docker's "
    "default is 64 MB; --ipc=host shares the host's), or pass use_shared_memory=False to "
    "paddle.io.DataLoader"
)
SHM_HOST_FIX = steps(
    Instruction("make room in /dev/shm: remove stale files there, or enlarge it"),
    root(
        "mount",
        "-o",
        "remount,size=8G",
        "/dev/shm",
        changes="enlarges /dev/shm to 8 GB until the next boot",
    ),
    Instruction("or pass use_shared_memory=False to paddle.io.DataLoader", alternative=True),
)
WORKER_KILLED_FIX = (
    "a worker killed by a signal is usually the memory limit (the OOM killer, in the kernel "
    "log): raise the memory (and pids) limit or lower num_workers"
)
WORKER_RAISED_FIX = (
    "the worker's traceback is in the log (the JSON report's smoke.log_tail); an import or "
    "permission error there is the environment's, not the training's"
)
_NO_SPACE = re.compile(r"No space left on device|\[Errno 28\]")
_LIBRARY = re.compile(
    r"dynamic library \((?P<lib>[^)]+)\)|Cannot load (?P<name>\w+) shared library", re.IGNORECASE
)
_DLERROR = re.compile(r"\(error code is (?P<why>[^)]*)\)")


def piece_failure(plan: Plan, result: SmokeResult, runs: list[RunResult]) -> Finding | None:
    """The finding for crashed `runs` when Paddle's words name the piece that broke, else None."""
    errors = errors_of(runs)
    lines = [w.text for w in result.warnings]
    for error in errors:
        lines += _lines(error.message)
        for thread in error.thread_errors or ():
            lines += _lines(thread.message)
    kinds = {line: _kind(line) for line in lines}
    data = any(e.phase == "data" for e in errors) or any(
        k in ("shm", "dataloader-worker") for k in kinds.values()
    )
    shm = [line for line, kind in kinds.items() if kind == "shm"]
    if data and not shm:
        shm = [line for line in lines if _NO_SPACE.search(line)]
    if shm:
        return _shm(plan, result, shm[0])
    if data:
        return _worker(
            plan, errors, [line for line, kind in kinds.items() if kind == "dataloader-worker"]
        )
    cudnn = [
        line
        for line, kind in kinds.items()
        if kind in ("cudnn-error", "cudnn-mismatch")
        or (kind == "library-missing" and "cudnn" in line.lower())
    ]
    return _cudnn(plan, result, cudnn) if cudnn else None


def _kind(line: str) -> str | None:
    hit = classify_line(line)
    return hit["kind"] if hit else None


def _lines(text: str | None) -> list[str]:
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


def _shm(plan: Plan, result: SmokeResult, line: str) -> Finding:
    space = result.shm
    seen = (
        f"/dev/shm has {_size(space.size_bytes)} ({_size(space.free_bytes)} free before training)"
        if space
        else "/dev/shm could not be read"
    )
    return fail(
        SHM_ID,
        f"the DataLoader could not pass its batches through shared memory in {where(plan)}: "
        f"{line}; {seen}",
        fix=SHM_CONTAINER_FIX if plan.mode == "container" else SHM_HOST_FIX,
        layer="smoke",
        shm=to_dict(space),
        lines=[line],
    )


def _worker(plan: Plan, errors: list[WorkloadError], said: list[str]) -> Finding:
    """The worker's own exception (its last line) first, else Paddle's line about the worker."""
    raised = [_lines(thread.message) for error in errors for thread in error.thread_errors or ()]
    own = [f"{lines[0]} … {lines[-1]}" if len(lines) > 1 else lines[0] for lines in raised if lines]
    # Paddle may print "DataLoader 1 workers exit unexpectedly" before the line naming the signal
    # (seen 2 of 3 runs under load): the signal is the why, whichever came first.
    said = sorted(said, key=lambda line: "by signal" not in line)
    line = (own or said or [_first(errors[0].message)])[0]
    return fail(
        WORKER_ID,
        f"the DataLoader worker failed in {where(plan)}: {line}",
        fix=WORKER_RAISED_FIX if own else WORKER_KILLED_FIX,
        layer="smoke",
        lines=[line],
        errors=[to_dict(e) for e in errors],
    )


def _cudnn(plan: Plan, result: SmokeResult, lines: list[str]) -> Finding:
    named = [m for m in (_LIBRARY.search(line) for line in lines) if m]
    library = (named[0].group("lib") or f"lib{named[0].group('name')}") if named else None
    why = next((m.group("why") for m in (_DLERROR.search(line) for line in lines) if m), None)
    mapped = [lib for lib in result.loaded_libraries or () if lib.name.startswith("libcudnn")]
    tried = (
        f"; the process tried to load {library}" + (f" ({why})" if why else "") if library else ""
    )
    loaded = "; mapped: " + ", ".join(lib.path for lib in mapped) if mapped else ""
    return fail(
        CUDNN_ID,
        f"cuDNN failed in {where(plan)} at the training's convolution: {lines[0]}{tried}{loaded}",
        fix=cudnn_fix(plan, result),
        layer="smoke",
        library=library,
        lines=lines[:3],
        mapped=[lib.path for lib in mapped],
    )


def _size(value: int) -> str:
    return f"{value // 2**10} KiB" if value < 2**20 else f"{value / 2**20:.0f} MiB"


def _first(text: str) -> str:
    lines = _lines(text)
    return lines[0][:300] if lines else ""

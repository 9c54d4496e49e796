"""What the smoke workload and the host agree on (stdlib only, Python 3.8 syntax): the output
schema and its types (`SmokeResult`), the progress lines, Paddle's log lines worth reporting and
how they are classified, the test hook's name.

It runs in two places: beside the workload (mounted into the container, copied for the
in-process run, as `envcheck_smoke_protocol.py`; see envcheck/smoke/runner/payload.py), where the
workload tees Paddle's stderr through `classify_line`; and in envcheck, where the verdict reads the
same lines with the same patterns.
"""

# Python 3.8 syntax on purpose (typing.Dict, %-formatting): old Paddle images run this file.
# ruff: noqa: UP006, UP031, UP035, UP045

from __future__ import annotations

import re
from typing import Dict, List, Literal, Optional, Tuple, TypedDict

SCHEMA = "envcheck-smoke/1"

# Paddle's own stderr lines worth reporting, first match wins per line. Texts from
# Paddle's gpu_resources.cc, place.cc, gpu_info.cc, dynamic_loader.cc and enforce.h, collected in
# docs/facts/compat_facts.md section 7 (row numbers in the comments).
WARNING_PATTERNS: Tuple[Tuple[str, str], ...] = (
    # paddle/fluid/imperative/data_loader.cc (SIGBUS in a worker) and the queue's ENOSPC hint
    (
        "shm",
        (
            r"Unexpected BUS error encountered in DataLoader worker"
            r"|insufficient shared (?:memory|storage space)"
        ),
    ),
    (  # paddle/io/dataloader: a worker's exception, a worker that died, its SIGCHLD report
        "dataloader-worker",
        (
            r"DataLoader worker\(\d+\) caught \w+|DataLoader \d+ workers? exit unexpectedly"
            r"|DataLoader process \(pid \d+\) exited"
            r"|Unexpected segmentation fault encountered in DataLoader"
        ),
    ),
    # row 14: "Please NOTE: device: 0, GPU Compute Capability: 8.6, Driver API Version: 12.3, ..."
    (
        "versions",
        r"GPU Compute Capability: [\d.]+, Driver API Version: [\d.]+, Runtime API Version",
    ),
    ("cudnn-version", r"device: \d+, cuDNN Version: [\d.]+"),
    ("cuda-cudnn-mismatch", r"installed Paddle is compiled with CUDA\d+/cuDNN\d+"),  # row 16
    ("cuda-mismatch", r"installed Paddle is compiled with CUDA [\d.]+, but CUDA runtime"),  # 15
    ("cudnn-mismatch", r"installed Paddle is compiled with CUDNN [\d.]+, but CUDNN version"),  # 17
    (  # rows 22-24: 3.1+ "Mismatched GPU Architecture", older builds warn, CUDA error 209
        "arch-mismatch",
        (
            r"Mismatched GPU Architecture|Unsupported GPU architecture"
            r"|not compatible with Paddle installation with arch"
            r"|GPU compute capability in your current machine is .* not supported"
            r"|no kernel image is available"
        ),
    ),
    (  # rows 5, 7, 8, 9, 10
        "no-gpu",
        r"no GPU detected|No GPU detected|no GPU found in runtime|no CUDA-capable device",
    ),
    ("cpu-build", r"installed CPU version PaddlePaddle|not compiled with CUDA"),  # rows 1-3
    (  # rows 21, 26: the driver is missing, too old, a stub, or mismatched
        "driver-error",
        r"CUDA error\((?:3|34|35|36|46|221|222|802|803|804)\)|CUDA driver version is insufficient",
    ),
    (  # rows 18, 19
        "library-missing",
        (
            r"third-party dynamic library \(\S+\) that Paddle depends on is not configured correctly"
            r"|Cannot load \w+ shared library"
        ),
    ),
    # paddle/amp/auto_cast.py: "amp_guard can only be enabled on CUDAPlace, ... so it makes no effect"
    # enforce.h: "CUDNN error(3), CUDNN_STATUS_BAD_PARAM." from any cuDNN call
    ("cudnn-error", r"CUDNN error\(\d+\)|CUDNN_STATUS_[A-Z_]+"),
    ("amp-no-effect", r"amp_guard can only be enabled on"),
    ("bf16-unsupported", r"(?:bfloat16 precision|bf16 gemm) requires GPU compute capability"),
    ("cuda-error", r"CUDA error\(\d+\)"),  # row 20, any other code
)
_COMPILED = tuple((kind, re.compile(pattern)) for kind, pattern in WARNING_PATTERNS)
MAX_WARNINGS = 40
MAX_LINE = 400


def one_line(e: BaseException) -> str:
    """`Type: the message's first line`, at most MAX_LINE characters: an error in a field."""
    text = str(e).strip().splitlines()
    return ("%s: %s" % (type(e).__name__, text[0] if text else ""))[:MAX_LINE]


# Tests only: corrupt one result after Paddle computed it (the workload's `corruptions`).
CORRUPT_ENV = "ENVCHECK_SMOKE_CORRUPT"

# The workload's progress lines on stderr are `LOG_PREFIX + text`, read by people in the log and
# by the host's live display. The milestones open a phase of the display, by their first words;
# the rest (`step 31/60, 95.2 steps/s`, what was loaded) are details of the current phase.
LOG_PREFIX = "envcheck-smoke: "
SAY_BUILD = "paddle "  # "paddle 3.3.1, compiled with CUDA: ..."
SAY_DEVICE = "training on "  # "training on gpu:0 (asked for gpu:all)"
SAY_WINDOW_START = "training window start"  # + " 1716800000.123" (the host's clock)
SAY_WINDOW_END = "training window end"
# (first words, the phase's title; None: the line itself)
MILESTONES: Tuple[Tuple[str, Optional[str]], ...] = (
    (SAY_BUILD, None),
    (SAY_DEVICE, None),
    (SAY_WINDOW_START, "training"),
    (SAY_WINDOW_END, "known answers after training"),
)


# -- The JSON line (SCHEMA). The host validates a line against these types (envcheck.smoke.parse)
# before any rule reads it: a required key is always there; the keys of `TrainedRun` and
# `PaddleBuild` are there when the `error` beside them is null; the rest may be absent (an older
# workload). `float` accepts an int, as JSON does.


class PaddleWarning(TypedDict):
    """One of Paddle's recognised log lines (`WARNING_PATTERNS`)."""

    kind: str
    text: str


class ThreadError(TypedDict):
    thread: str
    type: str
    message: str


class _ErrorRequired(TypedDict):
    type: str
    message: str


class WorkloadError(_ErrorRequired, total=False):
    """An exception that ended the smoke (result.error) or a run (run.error)."""

    phase: str  # import, setup, check, train, data, export, compare-cpu
    traceback: str
    thread_errors: List[ThreadError]  # phase "data": the DataLoader's reader thread


class KnownAnswer(TypedDict):
    """One op computed on the run's device and with numpy from the same inputs (issue 16)."""

    op: str
    phase: str  # before / after training
    device: str
    ok: bool
    problem: Optional[str]  # shape ..., non-finite, all-zero, mismatch
    max_abs_diff: Optional[float]
    tolerance: float


class LossCheck(TypedDict):
    start: Optional[float]
    non_finite: int
    zero_steps: int
    distinct: int


class TrainWindow(TypedDict):
    """The training's span on the host's wall clock (the NVML witness's window)."""

    start: float
    end: float


class Amp(TypedDict):
    enabled: bool
    dtype: Optional[str]


class CompareCpu(TypedDict, total=False):
    skipped: Optional[str]
    steps_per_s: Optional[float]
    first_step_s: float
    loss_start: Optional[float]
    loss_end: Optional[float]
    speedup: Optional[float]
    error: Optional[WorkloadError]


class Export(TypedDict, total=False):
    format: str
    inference_gpu: bool
    max_abs_diff: float
    argmax_agreement: float
    match: bool
    seconds: float
    error: Optional[WorkloadError]


class _RunRequired(TypedDict):
    device_requested: str
    device_used: str
    device_error: Optional[str]
    error: Optional[WorkloadError]


class TrainedRun(TypedDict, total=False):
    """A run's figures: all there when its `error` is null, absent after a crash."""

    steps: int
    batch_size: int
    param_places: Dict[str, str]
    logits_place: str
    loss_start: Optional[float]
    loss_end: Optional[float]
    losses: List[Optional[float]]
    first_step_s: float
    steps_per_s: Optional[float]
    peak_gpu_mem_bytes: Optional[int]
    amp: Amp
    checks: List[KnownAnswer]
    loss_check: LossCheck
    train_window: TrainWindow


class RunResult(_RunRequired, TrainedRun, total=False):
    """One device's run."""

    logits_dtype: str
    accuracy: float
    samples_per_s: Optional[float]
    peak_gpu_reserved_bytes: Optional[int]
    checks_s: float
    compare_cpu: CompareCpu
    export: Export


# Where a copy of a CUDA library comes from, spelled the same on both sides. The host probe finds
# copies where a Paddle process looks for them (envcheck/probe/cuda_libs.py, in its search order;
# envcheck.contracts.facts.LibraryOrigin, which this standalone file cannot import: a test keeps
# them equal)...
LibraryOrigin = Literal["pip", "LD_LIBRARY_PATH", "system", "cuda-home"]
# ... and the workload, reading a mapped path (`workload.library_source`), can also tell a CUDA
# compat folder and the active conda environment.
LibrarySource = Literal[LibraryOrigin, "compat", "conda"]


class LoadedLibrary(TypedDict):
    """An NVIDIA library in the process's /proc/self/maps, and its own version call (issue 11)."""

    name: str
    path: str
    source: LibrarySource
    call: Optional[str]
    raw: int | List[int] | None
    call_error: Optional[str]


class ShmSpace(TypedDict):
    size_bytes: int
    free_bytes: int


class DriverCheck(TypedDict):
    """nvmlInit inside the process: the driver's user space against its kernel module."""

    library: str
    init: Optional[int]
    error: Optional[str]
    driver_version: Optional[str]


class PaddleBuild(TypedDict, total=False):
    """What the Paddle under test is and sees: all there when the result's `error` is null."""

    paddle_version: str
    compiled_with_cuda: bool
    cuda_device_count: Optional[int]
    device_capabilities: List[Optional[str]]  # "8.6" per GPU, null when Paddle could not say
    default_device: str
    env: Dict[str, Optional[str]]


class _ResultRequired(TypedDict):
    schema: str
    error: Optional[WorkloadError]  # the smoke died before training (import, setup)
    runs: List[RunResult]
    warnings: List[PaddleWarning]


class SmokeResult(_ResultRequired, PaddleBuild, total=False):
    """The workload's one JSON line."""

    python: str
    cuda_version: str
    cudnn_version: str
    cuda_device_count_error: Optional[str]
    device_names: List[Optional[str]]
    uid: Optional[int]
    pid: int
    import_s: float
    total_s: float
    shm: Optional[ShmSpace]
    loaded_libraries: List[LoadedLibrary]
    loaded_when: str
    driver_check: Optional[DriverCheck]


def scan_paddle_warnings(text: str) -> List[PaddleWarning]:
    """Paddle's recognised warning/error lines in a log, deduplicated, in order of appearance."""
    found: List[PaddleWarning] = []
    seen = set()
    for line in text.splitlines():
        hit = classify_line(line)
        if hit is not None and (hit["kind"], hit["text"]) not in seen:
            seen.add((hit["kind"], hit["text"]))
            found.append(hit)
            if len(found) >= MAX_WARNINGS:
                break
    return found


def classify_line(line: str) -> Optional[PaddleWarning]:
    for kind, pattern in _COMPILED:
        if pattern.search(line):
            return PaddleWarning(kind=kind, text=line.strip()[:MAX_LINE])
    return None

"""What the smoke workload and the host agree on (stdlib only, Python 3.8 syntax): the output
schema's name (its records are the host's: envcheck/contracts/smoke_result.py), the progress
lines, Paddle's log lines worth reporting and how they are classified, the test hook's name.

It runs in two places: beside the workload (mounted into the container, copied for the
in-process run, as `envcheck_smoke_protocol.py`; see envcheck/smoke/runner/payload.py), where the
workload tees Paddle's stderr through `classify_line`; and in envcheck, where the verdict reads the
same lines with the same patterns.
"""

# Python 3.8 syntax on purpose (typing.Dict, %-formatting): old Paddle images run this file.
# ruff: noqa: UP006, UP031, UP035, UP045

from __future__ import annotations

import re
from typing import Dict, List, Literal, Optional, Tuple

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


# Where a copy of a CUDA library comes from, spelled the same on both sides. The host probe finds
# copies where a Paddle process looks for them (envcheck/probe/cuda_libs.py, in its search order;
# envcheck.contracts.facts.LibraryOrigin, which this standalone file cannot import: a test keeps
# them equal)...
LibraryOrigin = Literal["pip", "LD_LIBRARY_PATH", "system", "cuda-home"]
# ... and the workload, reading a mapped path (`workload.library_source`), can also tell a CUDA
# compat folder and the active conda environment.
LibrarySource = Literal[LibraryOrigin, "compat", "conda"]

# The JSON line (SCHEMA) is plain dicts here; its schema is the host's records
# (envcheck/contracts/smoke_result.py), which read it back before any rule does.


def scan_paddle_warnings(text: str) -> List[Dict[str, str]]:
    """Paddle's recognised warning/error lines in a log, deduplicated, in order of appearance:
    {"kind", "text"} each (the result's `warnings`)."""
    found: List[Dict[str, str]] = []
    seen = set()
    for line in text.splitlines():
        hit = classify_line(line)
        if hit is not None and (hit["kind"], hit["text"]) not in seen:
            seen.add((hit["kind"], hit["text"]))
            found.append(hit)
            if len(found) >= MAX_WARNINGS:
                break
    return found


def classify_line(line: str) -> Optional[Dict[str, str]]:
    for kind, pattern in _COMPILED:
        if pattern.search(line):
            return {"kind": kind, "text": line.strip()[:MAX_LINE]}
    return None

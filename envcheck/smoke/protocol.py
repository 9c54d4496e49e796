"""What the smoke workload and the host agree on (stdlib only, Python 3.8 syntax): the output
schema, Paddle's log lines worth reporting and how they are classified, the test hook's name.

It runs in two places: beside the workload (mounted into the container, copied for the
in-process run, as `envcheck_smoke_protocol.py`), where the workload tees Paddle's stderr through
`classify_line`; and in envcheck, where the verdict reads the same lines with the same patterns.
"""

# Python 3.8 syntax on purpose (typing.Dict): old Paddle images run this file.
# ruff: noqa: UP006, UP035, UP045

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

SCHEMA = "envcheck-smoke/1"
# The name this file has beside the workload (unique: it must never shadow a module Paddle imports).
PLACED_AS = "envcheck_smoke_protocol.py"
PROTOCOL = __file__  # this file, for the runners to place

# Paddle's own stderr lines worth reporting, first match wins per line. Texts from
# Paddle's gpu_resources.cc, place.cc, gpu_info.cc, dynamic_loader.cc and enforce.h, collected in
# /work/shared/facts/compat_facts.md section 7 (row numbers in the comments).
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

# Tests only: corrupt one result after Paddle computed it (the workload's `corruptions`).
CORRUPT_ENV = "ENVCHECK_SMOKE_CORRUPT"


def scan_paddle_warnings(text: str) -> List[Dict[str, str]]:
    """Paddle's recognised warning/error lines in a log, deduplicated, in order of appearance."""
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

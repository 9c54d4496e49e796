"""A smoke script that crashes the way a broken CUDA stack does: a traceback, no result."""

from __future__ import annotations

import sys

print("envcheck-smoke: training on gpu:0 (asked for gpu:0)", file=sys.stderr)
raise OSError(
    "(External) CUDA error(35), CUDA driver version is insufficient for CUDA runtime version."
)

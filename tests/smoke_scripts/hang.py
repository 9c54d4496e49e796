"""A smoke script that hangs (a dead NCCL/CUDA init does this) after starting a child process."""

from __future__ import annotations

import subprocess
import sys
import time

child = subprocess.Popen(["sleep", "600"])
print(f"envcheck-smoke: child pid {child.pid}", file=sys.stderr, flush=True)
print("envcheck-smoke: waiting for a GPU that never answers", file=sys.stderr, flush=True)
time.sleep(600)

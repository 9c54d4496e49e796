"""A smoke script that floods stdout (a debug print in a loop): far more than the bound."""

from __future__ import annotations

import sys

line = "x" * 1023 + "\n"
for _ in range(64 * 1024):  # 64 MiB if nobody stops it
    sys.stdout.write(line)

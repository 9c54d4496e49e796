"""The NVIDIA kernel module's own words about a GPU it ignored: `sudo dmesg | grep NVRM`, read
from the kernel log file where this user can read it (`/var/log/kern.log`, Debian and Ubuntu;
under ENVCHECK_DRIVER_ROOT its copy). The ring buffer itself (`dmesg`, `/dev/kmsg`) needs
privileges on most systems and is not read.

Only the tail is read (the newest boot's lines are last), and only when NVML lists no GPU.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from envcheck.probe.driver_root import system_path

KERN_LOG = "/var/log/kern.log"
_TAIL_BYTES = 256 * 1024
_KEEP = 12  # the last NVRM lines: one ignored GPU's message spans four or five


def probe_kernel_log(env: Mapping[str, str]) -> tuple[str, ...] | None:
    """The last NVRM lines of the kernel log, their text after `NVRM:`; None when the log
    cannot be read (absent, or this user may not read it)."""
    try:
        with open(system_path(KERN_LOG, env), "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - _TAIL_BYTES))
            tail = f.read(_TAIL_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return None
    lines = [line.split("NVRM:", 1)[1].strip() for line in tail.splitlines() if "NVRM:" in line]
    return tuple(lines[-_KEEP:])

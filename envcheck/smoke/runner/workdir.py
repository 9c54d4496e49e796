"""The in-process smoke's folder, named after the run that made it, and the folders of runs that
died without removing theirs.

A run removes its folder on every exit it sees (return, exception, signal); SIGKILL (an OOM kill,
a CI cancel past its grace period) it never sees, and the folder stayed in $TMPDIR for good. So
the folder's name carries who made it: the boot, the PID namespace, the PID and that process's
start time (`/proc/PID/stat` field 22, clock ticks since boot: a PID reused later starts later).
The next run removes a folder only when that proves its maker dead: another boot, or no such
process in our namespace, or another process under that PID now. A folder of a live run, of
another PID namespace (a container sharing /tmp), of another user, a link, or a name without
the marks (an older envcheck, a system without /proc) is never touched.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

PREFIX = "envcheck-smoke-"
_MARKED = re.compile(rf"^{PREFIX}([0-9a-f]{{12}})\.(\d+)\.(\d+)\.(\d+)-")


def make_workdir() -> str:
    """A fresh private folder (mkdtemp: 0700, O_EXCL) named after this process."""
    mark = _mark()
    return tempfile.mkdtemp(prefix=f"{PREFIX}{mark}-" if mark else PREFIX)


def remove_dead_workdirs(folder: str | None = None) -> list[str]:
    """Remove the smoke folders in `folder` (the temp folder) whose makers are proven dead, as
    the module docstring says; return their paths. Never raises: this is housekeeping."""
    here = _boot_and_namespace()
    if here is None:
        return []
    removed = []
    try:
        entries = list(os.scandir(folder or tempfile.gettempdir()))
    except OSError:
        return []
    for entry in entries:
        found = _MARKED.match(entry.name)
        if found is None or not _ours(entry):
            continue
        boot, namespace, pid, start = found.groups()
        if _dead(here, boot, namespace, int(pid), start):
            shutil.rmtree(entry.path, ignore_errors=True)  # never follows a link inside
            removed.append(entry.path)
    return removed


def _ours(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False) and (
            entry.stat(follow_symlinks=False).st_uid == os.geteuid()
        )
    except OSError:
        return False


def _dead(here: tuple[str, str], boot: str, namespace: str, pid: int, start: str) -> bool:
    if boot != here[0]:
        return True  # made before this boot: every process of then is gone
    if namespace != here[1]:
        return False  # its PID means another process here: nothing proven
    now = _start_time(str(pid))
    return now is None or now != start


def _mark() -> str | None:
    here, start = _boot_and_namespace(), _start_time("self")
    if here is None or start is None:
        return None
    return f"{here[0]}.{here[1]}.{os.getpid()}.{start}"


def _boot_and_namespace() -> tuple[str, str] | None:
    """This boot's id (12 hex digits of it) and our PID namespace's inode; None without /proc."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii")
        namespace = re.fullmatch(r"pid:\[(\d+)\]", os.readlink("/proc/self/ns/pid"))
    except (OSError, UnicodeDecodeError):
        return None
    boot = boot.strip().replace("-", "")[:12]
    if namespace is None or not re.fullmatch(r"[0-9a-f]{12}", boot):
        return None
    return boot, namespace.group(1)


def _start_time(pid: str) -> str | None:
    """Field 22 of /proc/PID/stat (after the command name, which may hold spaces and `)`)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()
    return fields[19] if len(fields) > 19 and fields[19].isdigit() else None

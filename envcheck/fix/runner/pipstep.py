"""A pip step that may outlive the fix that ran it, and what pip leaves behind when it is cut.

pip runs in a session of its own, so a fix killed outright (SIGKILL, an OOM kill, a CI cancel of
envcheck alone) can leave it running. Every step therefore holds the environment's lock too: the
locked file is handed down to pip, and the kernel frees the lock only when the fix *and* its pip
have ended. The next `envcheck fix`, whatever its mode, finds the lock held by a process that is
not the fix named in it: a pip step of a killed fix. It stops that step's process group and waits
for the lock before it reads or changes anything (`settle`), so it never races a running pip.

A pip cut half-way leaves its own files: the uninstall stash beside what it was removing
(`~addle/` beside `paddle/`, thousands of files), and its temporary folders. Every step runs with
TMPDIR in the record (`<record>/pip-tmp`), and the record notes, before the first step, which
folders pip may stash into and which `~` names were already there (`stash.json`); what is new
there is pip's stash of this fix, removed before anything is said to be back (`clean`) and
counted as a difference by the proof until it is gone (`leftovers`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from envcheck.contracts.errors import EnvironmentProblem
from envcheck.fix.runner.journal import write_whole

STASH = "stash.json"
TEMPORARY = "pip-tmp"
STOP_WAIT_S = 10.0  # a stopped pip step's lock is free within this after SIGTERM, else SIGKILL
KILL_WAIT_S = 30.0
_STASH_MARK = "~"  # pip's AdjacentTempDirectory: `~` then characters no project name has
_READ_LIMIT = 1 << 20


class _Held:
    fd: int | None = None  # the environment's lock while this process holds it


@contextlib.contextmanager
def holding(fd: int) -> Iterator[None]:
    """Inside the block every pip step inherits `fd` (the locked lock file): the lock lives as
    long as the step does, whatever happens to this process."""
    _Held.fd = fd
    try:
        yield
    finally:
        _Held.fd = None


def inherited() -> tuple[int, ...]:
    return () if _Held.fd is None else (_Held.fd,)


def variables(record: str) -> dict[str, str]:
    """What a step's environment adds: its temporary folders inside the record."""
    folder = Path(record) / TEMPORARY
    with contextlib.suppress(OSError):
        folder.mkdir(mode=0o700, exist_ok=True)
    return {"TMPDIR": str(folder)} if folder.is_dir() else {}


def after_step(record: str) -> None:
    """pip ended: its temporary folder goes (it is pip's; an ended pip needs none of it)."""
    _remove(Path(record) / TEMPORARY)


# -- before the first step: where pip may stash -----------------------------------------------


def note_stash(record: str, roots: Iterable[str]) -> None:
    """The folders pip stashes into when it removes what is in them (the parents of the files of
    everything the fix removes or adds), and the `~` names already there: not this fix's."""
    folders = sorted({os.path.normpath(r) for r in roots if r})
    before = sorted(_stashes(folders))
    write_whole(Path(record) / STASH, json.dumps({"roots": folders, "before": before}))


def roots_of(paths: Iterable[str], install: Iterable[str]) -> set[str]:
    """The install folders, and every folder holding one of `paths` up to them."""
    stop = {os.path.normpath(p) for p in install}
    found = set(stop)
    for path in paths:
        parent = os.path.dirname(os.path.normpath(path))
        while parent not in found and parent != os.path.dirname(parent):
            found.add(parent)
            if parent in stop:
                break
            parent = os.path.dirname(parent)
    return found


def leftovers(record: str, prefix: str) -> list[str]:
    """pip's stash and temporary folders of this fix still there: `~` entries in its roots that
    were not there before the fix, and whatever is in the step's temporary folder. Only paths
    inside the target's `prefix` are ever named."""
    noted = _read_stash(Path(record) / STASH)
    inside = os.path.realpath(prefix) + os.sep
    roots = [r for r in noted.get("roots", []) if (r + os.sep).startswith(inside)]
    before = set(noted.get("before", []))
    found = [p for p in _stashes(roots) if p not in before]
    temporary = Path(record) / TEMPORARY
    with contextlib.suppress(OSError):
        found += [str(p) for p in sorted(temporary.iterdir())]
    return sorted(found)


def clean(record: str, prefix: str, tell: Callable[[str], None]) -> list[str]:
    """pip's leftovers of this fix removed (never a link followed); what could not go, with why."""
    found = leftovers(record, prefix)
    problems = []
    for path in found:
        try:
            _remove(Path(path), strict=True)
        except OSError as e:
            problems.append(f"{path}: {e.strerror or e}")
    if found:
        gone = [p for p in found if not os.path.lexists(p)]
        tell(f"envcheck fix: removed what the cut pip step left: {_named(gone)}")
    return problems


def _named(paths: Sequence[str]) -> str:
    shown = ", ".join(paths[:3])
    return shown + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")


def _stashes(roots: Iterable[str]) -> list[str]:
    found = []
    for root in roots:
        try:
            with os.scandir(root) as entries:
                found += [e.path for e in entries if e.name.startswith(_STASH_MARK)]
        except OSError:
            continue
    return found


def _read_stash(path: Path) -> dict[str, list[str]]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return {}
    try:
        if not _regular(fd):
            return {}
        doc = json.loads(os.read(fd, _READ_LIMIT))
    except (OSError, ValueError):
        return {}
    finally:
        os.close(fd)
    if not isinstance(doc, dict):
        return {}
    return {
        k: [p for p in doc.get(k, []) if isinstance(p, str) and os.path.isabs(p)]
        for k in ("roots", "before")
        if isinstance(doc.get(k), list)
    }


def _regular(fd: int) -> bool:
    import stat

    return stat.S_ISREG(os.fstat(fd).st_mode)


def _remove(path: Path, *, strict: bool = False) -> None:
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    except FileNotFoundError:
        pass
    except OSError:
        if strict:
            raise


# -- a step still running from a killed fix ---------------------------------------------------


def settle(folder: Path, tell: Callable[[str], None]) -> None:
    """Before anything else: where the environment's lock is held by processes other than the fix
    named in it (that fix was killed; its pip step goes on), stop that step's process group and
    wait until the lock is free. A live fix holding the lock is left alone (the lock refuses the
    new run with its pid)."""
    path = folder / "lock"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return
    try:
        if not _regular(fd) or _free(fd):
            return
        owner = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
        info = os.fstat(fd)
        holders = _holders(info.st_dev, info.st_ino) - {os.getpid()}
        if not holders or owner in {str(p) for p in holders}:
            return  # a live fix, or holders this user cannot see: the lock says so
        groups = sorted({g for g in map(_group, holders) if g and g != os.getpgrp()})
        for group in groups:
            tell(
                "envcheck fix: a pip step of a killed `envcheck fix` is still running "
                f"(process group {group}: {_command(group)}); stopping it before anything else"
            )
        if not _stop(fd, groups, signal.SIGTERM, STOP_WAIT_S) and not _stop(
            fd, groups, signal.SIGKILL, KILL_WAIT_S
        ):
            raise EnvironmentProblem(
                f"the pip step of a killed `envcheck fix` still holds {path} after SIGKILL",
                hint="find it with `fuser -v " + str(path) + "`, end it, then run envcheck fix "
                "again",
            )
        tell("envcheck fix: the killed fix's pip step has ended")
    finally:
        os.close(fd)


def _free(fd: int) -> bool:
    """Whether nobody holds the lock (asked with a shared lock, let go at once)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:
        return True
    fcntl.flock(fd, fcntl.LOCK_UN)
    return True


def _stop(fd: int, groups: Sequence[int], signum: int, wait_s: float) -> bool:
    for group in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signum)
    end = time.monotonic() + wait_s
    while time.monotonic() < end:
        if _free(fd):
            return True
        time.sleep(0.05)
    return _free(fd)


def _holders(dev: int, ino: int) -> set[int]:
    """Every process with an open file holding a flock on the file (dev, ino), as /proc says
    (`/proc/PID/fdinfo/N`: `lock: … FLOCK … WRITE`); those this user may not look at are missed."""
    mark = f"{os.major(dev):02x}:{os.minor(dev):02x}:{ino} "
    found: set[int] = set()
    for entry in _proc():
        try:
            fds = os.listdir(f"/proc/{entry}/fdinfo")
        except OSError:
            continue
        for n in fds:
            try:
                with open(f"/proc/{entry}/fdinfo/{n}", encoding="ascii", errors="replace") as f:
                    text = f.read(4096)
            except OSError:
                continue
            if any(
                line.startswith("lock:") and "FLOCK" in line and mark in line
                for line in text.splitlines()
            ):
                found.add(int(entry))
                break
    return found


def _proc() -> list[str]:
    try:
        return [e for e in os.listdir("/proc") if e.isdigit()]
    except OSError:
        return []


def _group(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def _command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            raw = f.read(4096)
    except OSError:
        return "?"
    return " ".join(a.decode("utf-8", "replace") for a in raw.split(b"\0") if a)[:300]

"""Where a fix of one environment keeps its state, found by every user of that environment: a
folder inside the target's real prefix, `<prefix>/.envcheck-fix/`, holding

    lock             one fix at a time (flock: the kernel releases it when the holder dies)
    journal.json     the open fix: its record, its phase, each step written before it runs and
                     marked done after; closed with the outcome
    records/<stamp>/ the state to come back to: pip freeze, pip config, the wheelhouse, the kept
                     files of what the fix removes or replaces

The same venv through a symbolic link, under another user or `sudo`, is one prefix, so one lock
and one journal. Every write is whole or absent (a fresh temporary name, synced, renamed over).

The journal records what happened; it never says what to do. It is read back only when it is
envcheck's own (envcheck/fix/runner/trust.py): bound to this prefix, whole, written by this user
or root; every command `--resume` runs is derived again from it and must be one a plan makes.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import stat
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from envcheck.contracts.errors import EnvironmentProblem, UsageError
from envcheck.contracts.record import field, record
from envcheck.edges.userfiles import create_own_file, make_own_folder, replace_own_file

FOLDER = ".envcheck-fix"
JOURNAL = "journal.json"
OPEN = "open"
VERSION = 2  # 2: bound to its prefix, with a digest over its content (1 had neither)
_LOCK_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


@record(frozen=False)
class JournalStep:
    argv: tuple[str, ...]
    what: str  # in words: the plan's step it comes from
    state: str = "pending"  # pending, started, done


@record(frozen=False)
class Journal:
    """The open fix of one environment, as written to `journal.json`."""

    path: str  # the journal file
    python: str
    prefix: str
    record: str  # the record folder
    steps: list[JournalStep] = field(default_factory=list)
    phase: str = "record"
    state: str = OPEN  # open, or the outcome it was closed with
    pid: int = 0
    started: str = ""
    expect: str | None = None  # what the verification must prove ("gpu", "cpu")
    pip_flags: tuple[str, ...] = ()
    added: list[str] = field(default_factory=list)  # distributions the plan installs anew
    strays: list[str] = field(default_factory=list)  # files an install may leave half-written
    kept: list[str] = field(default_factory=list)  # distributions whose files the record keeps
    dev: int = 0  # the prefix's identity (st_dev, st_ino) when the journal was opened
    ino: int = 0
    seals: dict[str, str] = field(default_factory=dict)  # record file -> sha256, as written

    def to_json(self) -> dict[str, Any]:
        from envcheck.fix.runner.trust import sealed

        return sealed(self.body())

    def body(self) -> dict[str, Any]:
        """The journal's content and its binding, without its digest."""
        return {
            "version": VERSION,
            "target": {"prefix": self.prefix, "dev": self.dev, "ino": self.ino},
            "python": self.python,
            "record": self.record,
            "phase": self.phase,
            "state": self.state,
            "pid": self.pid,
            "started": self.started,
            "expect": self.expect,
            "pip_flags": list(self.pip_flags),
            "added": self.added,
            "strays": self.strays,
            "kept": self.kept,
            "seals": dict(sorted(self.seals.items())),
            "steps": [{"argv": list(s.argv), "what": s.what, "state": s.state} for s in self.steps],
        }

    @property
    def done(self) -> list[JournalStep]:
        return [s for s in self.steps if s.state == "done"]

    @property
    def changed(self) -> bool:
        """Whether a step may have changed the target (one started, done or not)."""
        return any(s.state != "pending" for s in self.steps)

    def save(self) -> None:
        write_whole(Path(self.path), json.dumps(self.to_json(), indent=1))

    def seal(self, name: str) -> None:
        """Note the digest of the record's file `name` (relative to the record), just written:
        what is read back later must be these bytes."""
        from envcheck.fix.runner.trust import file_digest

        self.seals[name] = file_digest(Path(self.record) / name)

    def enter(self, phase: str) -> None:
        self.phase = phase
        self.save()

    def close(self, outcome: str) -> None:
        self.state = outcome
        self.phase = "closed"
        self.save()


def home(prefix: str) -> Path:
    """The fix's folder of the environment at `prefix` (its real path: symlinks meet here)."""
    return Path(os.path.realpath(prefix)) / FOLDER


def ensure_home(prefix: str) -> Path:
    """The fix's folder, made where missing: a folder itself (never a link to one) that neither
    group nor others may write, as is its `records/`."""
    folder = home(prefix)
    for where in (folder, folder / "records"):
        try:
            make_own_folder(where, 0o755)
        except OSError as e:
            if e.errno in (errno.ENOTDIR, errno.EPERM):
                raise UsageError(
                    f"refusing the fix's folder {where}: {e.strerror}",
                    hint=f"envcheck keeps its journal there: remove {where} (it is not one "
                    "envcheck made), then run envcheck fix again",
                ) from e
            raise problem(f"cannot make {where} to keep the fix's record and journal", e) from e
    return folder


def open_journal(
    folder: Path,
    *,
    python: str,
    prefix: str,
    record_folder: str,
    expect: str | None,
    pip_flags: Sequence[str],
) -> Journal:
    target = os.stat(folder.parent)
    journal = Journal(
        str(folder / JOURNAL),
        python,
        str(folder.parent),
        record_folder,
        pid=os.getpid(),
        started=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        expect=expect,
        pip_flags=tuple(pip_flags),
        dev=target.st_dev,
        ino=target.st_ino,
    )
    for name in RECORD_FILES:
        if (Path(record_folder) / name).exists():
            journal.seal(name)
    journal.save()
    return journal


RECORD_FILES = ("freeze.txt", "pip-check.txt")  # written before the journal, sealed in it


def read_journal(folder: Path, python: str | None = None) -> Journal | None:
    """The journal left in `folder` when it is envcheck's own, for this prefix (and `python`,
    when given); None when there is none. Any other is refused (exit 2) with why: it is the
    only account of what a fix did, and nothing in it is obeyed unchecked."""
    from envcheck.fix.runner.trust import trusted

    return trusted(folder / JOURNAL, python)


def unfinished(folder: Path, python: str | None = None) -> Journal | None:
    journal = read_journal(folder, python)
    return journal if journal is not None and journal.state == OPEN else None


@contextmanager
def held(folder: Path, prefix: str) -> Iterator[int]:
    """One fix of this environment at a time, whoever runs it; refused at once, never queued.
    Gives the locked file's descriptor (a pip step inherits it: envcheck.fix.runner.pipstep)."""
    path = folder / "lock"
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | _LOCK_FLAGS, 0o644)
    except PermissionError:  # another user's lock: still the lock to meet (flock needs no write)
        fd = _read_only(path)
    except OSError as e:
        raise lock_problem(path, e) from e
    try:
        _regular_lock(fd, path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "?"
            raise EnvironmentProblem(
                f"another `envcheck fix` (pid {holder}) is changing {prefix}",
                hint=f"wait for it to finish (its lock: {path})",
            ) from None
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError:
            pass  # the pid is a courtesy to the next one; the lock is what counts
        yield fd
    finally:
        os.close(fd)  # releases the lock


def _read_only(path: Path) -> int:
    try:
        return os.open(path, os.O_RDONLY | _LOCK_FLAGS)
    except OSError as e:
        raise lock_problem(path, e) from e


def _regular_lock(fd: int, path: Path) -> None:
    """The lock is a regular file: a FIFO or a device there is never waited on, written or
    read (opened with O_NONBLOCK, refused on its fstat)."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise lock_problem(path, OSError(errno.EINVAL, "not a regular file"))
    os.set_blocking(fd, True)


def lock_problem(path: Path, e: OSError) -> EnvironmentProblem | UsageError:
    """A link (ELOOP under O_NOFOLLOW) or a special file where the lock belongs is refused, exit
    2: never followed, truncated or written through; anything else is the host's."""
    if e.errno in (errno.ELOOP, errno.EINVAL):
        why = "a symbolic link" if e.errno == errno.ELOOP else "not a regular file"
        return UsageError(
            f"refusing the fix's lock {path}: it is {why}, not the file envcheck makes",
            hint=f"remove {path} (envcheck never follows or writes through it), then run "
            "envcheck fix again",
        )
    return problem(f"cannot open the fix's lock {path}", e)


def holder(folder: Path) -> str | None:
    """The pid of the fix holding this environment's lock now (asked without taking it); None
    when no fix holds it. Not to be asked while this process holds it."""
    path = folder / "lock"
    try:
        fd = os.open(path, os.O_RDONLY | _LOCK_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise lock_problem(path, e) from e
        return None
    _regular_lock(fd, path)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "?"
    except OSError:
        return None
    finally:
        os.close(fd)  # and with it the shared lock just taken
    return None


def write_whole(path: Path, text: str) -> None:
    """Whole or not at all: a fresh temporary name (O_EXCL), synced, then renamed over; no
    group or other write."""
    try:
        replace_own_file(path, text.encode("utf-8", "surrogateescape"), 0o644)
    except OSError as e:
        raise problem(f"cannot write {path}", e) from e


def write_new(path: Path, text: str) -> None:
    """A record file, new in a record folder just made: never through a name already there."""
    try:
        create_own_file(path, text.encode("utf-8", "surrogateescape"), 0o644)
    except OSError as e:
        raise problem(f"cannot write {path}", e) from e


def problem(what: str, e: OSError) -> EnvironmentProblem:
    why = e.strerror or str(e)
    hint = None
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        hint = "free space on that file system, then run `envcheck fix --yes` again"
    elif e.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        hint = "run envcheck fix as a user who may write the target environment"
    return EnvironmentProblem(f"{what}: {why}", hint=hint)

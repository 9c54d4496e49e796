"""Where a fix of one environment keeps its state, found by every user of that environment: a
folder inside the target's real prefix, `<prefix>/.envcheck-fix/`, holding

    lock             one fix at a time (flock: the kernel releases it when the holder dies)
    journal.json     the open fix: its record, its phase, each step written before it runs and
                     marked done after; closed with the outcome
    records/<stamp>/ the state to come back to: pip freeze, pip config, the wheelhouse, the kept
                     files of what the fix removes or replaces

The same venv through a symbolic link, under another user or `sudo`, is one prefix, so one lock
and one journal. Every write is whole or absent (a temporary file, synced, renamed over).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from envcheck.contracts.errors import EnvironmentProblem
from envcheck.contracts.record import field, record

FOLDER = ".envcheck-fix"
JOURNAL = "journal.json"
OPEN = "open"


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

    def to_json(self) -> dict[str, Any]:
        return {
            "version": 1,
            "python": self.python,
            "prefix": self.prefix,
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
    folder = home(prefix)
    try:
        folder.mkdir(exist_ok=True)
        (folder / "records").mkdir(exist_ok=True)
    except OSError as e:
        raise problem(f"cannot make {folder} to keep the fix's record and journal", e) from e
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
    journal = Journal(
        str(folder / JOURNAL),
        python,
        prefix,
        record_folder,
        pid=os.getpid(),
        started=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        expect=expect,
        pip_flags=tuple(pip_flags),
    )
    journal.save()
    return journal


def read_journal(folder: Path) -> Journal | None:
    """The journal left in `folder`; None when there is none. One that cannot be read is an
    error naming it: it is the only account of what a fix did."""
    path = folder / JOURNAL
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        return Journal(
            str(path),
            doc["python"],
            doc["prefix"],
            doc["record"],
            [JournalStep(tuple(s["argv"]), s["what"], s["state"]) for s in doc["steps"]],
            doc["phase"],
            doc["state"],
            doc["pid"],
            doc["started"],
            doc.get("expect"),
            tuple(doc.get("pip_flags", ())),
            list(doc.get("added", [])),
            list(doc.get("strays", [])),
            list(doc.get("kept", [])),
        )
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise EnvironmentProblem(
            f"the fix journal {path} cannot be read: {e}",
            hint="look at it, and at the record it names; remove it once the environment is as "
            "you want it",
        ) from e


def unfinished(folder: Path) -> Journal | None:
    journal = read_journal(folder)
    return journal if journal is not None and journal.state == OPEN else None


@contextmanager
def held(folder: Path, prefix: str) -> Iterator[int]:
    """One fix of this environment at a time, whoever runs it; refused at once, never queued.
    Gives the locked file's descriptor (a pip step inherits it: envcheck.fix.runner.pipstep)."""
    path = folder / "lock"
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except PermissionError:  # another user's lock: still the lock to meet (flock needs no write)
        fd = _read_only(path)
    except OSError as e:
        raise problem(f"cannot open the fix's lock {path}", e) from e
    try:
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
        return os.open(path, os.O_RDONLY)
    except OSError as e:
        raise problem(f"cannot open the fix's lock {path}", e) from e


def holder(folder: Path) -> str | None:
    """The pid of the fix holding this environment's lock now (asked without taking it); None
    when no fix holds it. Not to be asked while this process holds it."""
    try:
        fd = os.open(folder / "lock", os.O_RDONLY)
    except OSError:
        return None
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
    """Whole or not at all: a temporary file, synced, then renamed over."""
    temporary = path.with_name(f".{path.name}.tmp")
    try:
        with open(temporary, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    except OSError as e:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise problem(f"cannot write {path}", e) from e


def problem(what: str, e: OSError) -> EnvironmentProblem:
    why = e.strerror or str(e)
    hint = None
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        hint = "free space on that file system, then run `envcheck fix --yes` again"
    elif e.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        hint = "run envcheck fix as a user who may write the target environment"
    return EnvironmentProblem(f"{what}: {why}", hint=hint)

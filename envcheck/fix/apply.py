"""Apply a `FixPlan` to its target interpreter (the I/O): refuse an externally managed one, hold
the target's lock, record `pip freeze` and `pip config list`, run the steps, and restore the
recorded freeze when a step or the verification fails, or a signal arrives.

pip runs in a session of its own (a Ctrl-C at the terminal does not reach it) under
`signals.deferred()`: a signal waits for the running pip to finish, never cuts it half-way, and
then unwinds into the rollback. Only the target's pip is ever run; never `sudo`.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shlex
import subprocess
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from envcheck.contracts.command_env import home
from envcheck.contracts.errors import EnvironmentProblem, UsageError
from envcheck.contracts.record import field, record
from envcheck.edges.signals import deferred
from envcheck.fix.plan import PIP_OVERRIDE, Step, Wheel

ASK_TIMEOUT_S = 30.0
TAIL_LINES = 15
_ASK = (
    "import json, os, sys, sysconfig; m = os.path.join(sysconfig.get_path('stdlib'), "
    "'EXTERNALLY-MANAGED'); print(json.dumps({'prefix': sys.prefix, 'venv': sys.prefix != "
    "sys.base_prefix, 'marker': m if os.path.isfile(m) else None}))"
)


@record
class Ran:
    """One command run: its argv, exit status and the last lines it printed."""

    argv: tuple[str, ...]
    code: int
    seconds: float
    tail: str

    def to_json(self) -> dict[str, Any]:
        return {"argv": list(self.argv), "exit_code": self.code, "seconds": self.seconds}


@record
class Record:
    """The target's state before the fix: where it was written, and the freeze itself."""

    folder: str
    freeze: str  # `pip freeze --all`, byte for byte
    pip_config: str

    def to_json(self) -> dict[str, Any]:
        return {
            "folder": self.folder,
            "freeze": os.path.join(self.folder, "freeze.txt"),
            "pip_config": os.path.join(self.folder, "pip-config.txt"),
        }


@record(frozen=False)
class Rollback:
    ran: list[Ran] = field(default_factory=list)
    freeze_matches: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"ran": [r.to_json() for r in self.ran], "freeze_matches": self.freeze_matches}


Runner = Callable[[Sequence[str]], Ran]


def refuse_externally_managed(
    python: str, pip_flags: Sequence[str], variables: Mapping[str, str]
) -> None:
    """PEP 668: a distribution's interpreter outside a venv is its package manager's; pip's own
    override (`--break-system-packages`) is the user's to give, never ours."""
    info = _ask(python, variables)
    if info["venv"] or not info["marker"] or PIP_OVERRIDE in pip_flags:
        return
    raise UsageError(
        f"{python} is externally managed (PEP 668: {info['marker']}); envcheck fix will not "
        "install into it",
        hint=f"use a virtual environment (`{python} -m venv /path/to/venv`, then "
        f"--python /path/to/venv/bin/python), or pass pip's own override {PIP_OVERRIDE}",
    )


def _ask(python: str, variables: Mapping[str, str]) -> dict[str, Any]:
    try:
        out = subprocess.run(
            [python, "-c", _ASK],
            capture_output=True,
            text=True,
            timeout=ASK_TIMEOUT_S,
            check=True,
            stdin=subprocess.DEVNULL,
            env=dict(variables),
        ).stdout
        answer: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError) as e:
        raise EnvironmentProblem(f"{python} did not say where it installs: {e}") from e
    return answer


def state_dir(variables: Mapping[str, str]) -> Path:
    base = variables.get("XDG_STATE_HOME") or os.path.join(home(variables), ".local", "state")
    return Path(base) / "envcheck" / "fix"


@contextmanager
def target_lock(prefix: str, folder: Path) -> Iterator[Path]:
    """One fix per target at a time (fcntl, released by the kernel if we die); a second one is
    refused at once, never queued behind the first."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / f"{_key(prefix)}.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "?"
            raise EnvironmentProblem(
                f"another `envcheck fix` (pid {holder}) is changing {prefix}",
                hint=f"wait for it to finish (its lock: {path})",
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield path
    finally:
        os.close(fd)  # releases the lock


def _key(prefix: str) -> str:
    return hashlib.sha256(prefix.encode()).hexdigest()[:16]


def run_command(
    argv: Sequence[str], variables: Mapping[str, str], echo: Callable[[str], None] | None = None
) -> Ran:
    """Run one step to its end: its own session, output kept (its tail) and echoed line by line."""
    started = time.perf_counter()
    lines: list[str] = []
    with deferred():
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            start_new_session=True,
            env={**variables, "PIP_NO_INPUT": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            del lines[:-200]
            if echo is not None:
                echo(line.rstrip("\n"))
        code = proc.wait()
    tail = "\n".join(lines[-TAIL_LINES:])
    return Ran(tuple(argv), code, round(time.perf_counter() - started, 3), tail)


def capture(argv: Sequence[str], variables: Mapping[str, str]) -> str:
    """A read-only pip command's stdout, exactly (`pip freeze`, `pip config list`)."""
    run = subprocess.run(
        list(argv),
        capture_output=True,
        text=True,
        check=False,
        stdin=subprocess.DEVNULL,
        env={**variables, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    if run.returncode != 0:
        raise EnvironmentProblem(
            f"`{' '.join(argv)}` failed ({run.returncode}): {run.stderr.strip()[-400:]}",
            hint="envcheck fix records the target's packages before changing them; "
            "make its pip work first",
        )
    return run.stdout


def freeze(python: str, variables: Mapping[str, str]) -> str:
    return capture([python, "-m", "pip", "freeze", "--all"], variables)


def record_state(
    python: str,
    prefix: str,
    folder: Path,
    variables: Mapping[str, str],
    changed: Collection[str] = (),
) -> Record:
    """The state to come back to, on disk before anything changes; refused (nothing changed)
    when a package the plan removes or replaces (`changed`) could not be put back."""
    frozen = freeze(python, variables)
    lost = unrestorable(frozen, {canonical(n) for n in changed})
    if lost:
        names = [name for name, _ in lost]
        raise EnvironmentProblem(
            f"{python} holds package(s) the plan replaces that were installed from a local file"
            " that is gone or has changed since, so a rollback could not put them back: "
            + "; ".join(f"{name} ({why})" for name, why in lost),
            hint="remove them first, as the plan would: "
            f"`{shlex.join([python, '-m', 'pip', 'uninstall', '-y', *names])}`, or reinstall"
            " them from a file that exists; then run `envcheck fix --yes` again. Nothing was"
            " changed",
        )
    config = capture([python, "-m", "pip", "config", "list"], variables)
    where = folder / f"{_key(prefix)}-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
    where.mkdir(parents=True, mode=0o700)
    (where / "freeze.txt").write_text(frozen)
    (where / "pip-config.txt").write_text(config)
    (where / "target.txt").write_text(f"{python}\n{prefix}\n")
    return Record(str(where), frozen, config)


_FILE_LINE = re.compile(
    r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*@\s*(file://[^\s#]+)(?:#sha256=([0-9a-f]{64}))?$"
)


def unrestorable(frozen: str, names: Collection[str]) -> list[tuple[str, str]]:
    """(name, why) of the freeze lines of `names` (canonical) that name a local file
    (`name @ file:///…whl#sha256=…`) no longer holding what was installed: gone, or its sha256
    is not the one pip recorded at install."""
    lost: list[tuple[str, str]] = []
    for line in frozen.splitlines():
        m = _FILE_LINE.match(line.strip())
        if not m or canonical(m.group(1)) not in names:
            continue
        path = Path(unquote(urlsplit(m.group(2)).path))
        if not path.is_file():
            lost.append((m.group(1), f"{path} is gone"))
        elif m.group(3) and _sha256(path) != m.group(3):
            lost.append((m.group(1), f"{path} has changed: its sha256 is not the one installed"))
    return lost


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def run_steps(steps: Sequence[Step], run: Runner) -> tuple[list[Ran], Ran | None]:
    """The steps in order until one fails: (what ran, the failed one or None)."""
    done: list[Ran] = []
    for step in steps:
        ran = run(step.argv)
        done.append(ran)
        if ran.code != 0:
            return done, ran
    return done, None


_NAME = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def frozen_lines(text: str) -> dict[str, str]:
    """{canonical name: its freeze line}; comments and editable installs' notes skipped."""
    lines: dict[str, str] = {}
    for line in text.splitlines():
        m = _NAME.match(line.strip())
        if m and not line.startswith("#"):
            lines[canonical(m.group(1))] = line.strip()
    return lines


def restore_commands(
    python: str,
    before: str,
    after: str,
    *,
    paddle_source: Wheel | None,
    pip_flags: Sequence[str] = (),
) -> list[tuple[str, ...]]:
    """From `after` back to `before`: uninstall what was added or changed, then reinstall each
    changed or removed line exactly (`--no-deps`: the freeze names every package). A Paddle
    build comes from the index of its recorded build (a 3.x CUDA variant is not in its version);
    the rest from pip's configured index, or the URL its line names."""
    old, new = frozen_lines(before), frozen_lines(after)
    pip = (python, "-m", "pip")
    drop = sorted(n for n in new if old.get(n) != new[n])
    back = sorted(n for n in old if new.get(n) != old[n])
    commands: list[tuple[str, ...]] = []
    if drop:
        commands.append((*pip, "uninstall", "-y", *pip_flags, *drop))
    paddle = {"paddlepaddle", "paddlepaddle-gpu"}
    rest = [old[n] for n in back if n not in paddle or paddle_source is None or "@" in old[n]]
    ours = [old[n] for n in back if old[n] not in rest]
    if rest:
        commands.append((*pip, "install", "--no-deps", *pip_flags, *rest))
    if ours and paddle_source is not None:
        where = paddle_source.pip_args[1:]  # the recorded build's own index or links page
        commands.append((*pip, "install", "--no-deps", *pip_flags, *ours, *where))
    return commands


def roll_back(
    python: str,
    rec: Record,
    run: Runner,
    variables: Mapping[str, str],
    *,
    paddle_source: Wheel | None,
    pip_flags: Sequence[str],
) -> Rollback:
    """Back to the recorded freeze; `freeze_matches` says whether it is, byte for byte."""
    result = Rollback()
    now = freeze(python, variables)
    commands = restore_commands(
        python, rec.freeze, now, paddle_source=paddle_source, pip_flags=pip_flags
    )
    for argv in commands:
        result.ran.append(run(argv))
    result.freeze_matches = freeze(python, variables) == rec.freeze
    return result

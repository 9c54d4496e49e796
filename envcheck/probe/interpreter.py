"""The target interpreter, resolved once and handed to every layer, with why it was taken.

The interpreter a person trains with, as `uv` finds it: `--python`; else the active environment
(`VIRTUAL_ENV`, then `CONDA_PREFIX`), read from the command's variables; else envcheck's own when
Paddle is there; else the first `python3` on PATH that has Paddle; else envcheck's own, said so
(where envcheck runs from pipx, whose venv never trains, the `python3` on PATH instead).

An interpreter is identified by what it reports (`sys.prefix`, `sys.path`), never by the
`realpath` of its binary: every venv's `python` is a symlink to its base interpreter, so two
venvs of one base (pipx, the Slurm recipe, most CI runners) resolve to the same file while
loading different site-packages.

Asking a user-named program is bounded in time and output, and the program runs in its own
session so a timeout kills it together with anything it started.
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping

from envcheck.contracts.errors import UsageError
from envcheck.contracts.record import record, replace

ASK_TIMEOUT_S = 10.0
OUTPUT_LIMIT = 1 << 20  # a sys.path is a few KiB; megabytes mean "not what we asked"
_MARK = "envcheck-interpreter:"
_ASK = (
    "import json, sys; print(" + repr(_MARK) + " + json.dumps({'executable': sys.executable, "
    "'prefix': sys.prefix, 'path': sys.path, 'version': '%d.%d.%d' % sys.version_info[:3]}))"
)


@record
class Interpreter:
    """The Python that would train: where its `paddle` is looked up."""

    python: str  # what is run: the path as given (a venv's own `python`, not its base binary)
    prefix: str  # its sys.prefix: which environment it is
    paths: tuple[str, ...]  # its sys.path: where its `paddle` is looked up
    version: str
    why: str = ""  # why it is the one judged, in words ("the active venv"); "" not said

    @property
    def site_packages(self) -> list[str]:
        return [
            p
            for p in self.paths
            if p.endswith(("site-packages", "dist-packages")) and os.path.isdir(p)
        ]


def current_interpreter() -> Interpreter:
    """envcheck's own interpreter: no subprocess needed."""
    return Interpreter(
        python=sys.executable,
        prefix=sys.prefix,
        paths=tuple(p for p in sys.path if p),
        version=".".join(str(n) for n in sys.version_info[:3]),
    )


PIPX_METADATA = "pipx_metadata.json"  # pipx writes it at the root of each venv it makes
PADDLE_VERSION_FILE = os.path.join("paddle", "version", "__init__.py")  # every build writes it
FLAG = "--python"
ACTIVE = (("VIRTUAL_ENV", "the active venv"), ("CONDA_PREFIX", "the active conda environment"))
HINT = "give --python the path of a working Python interpreter (e.g. /opt/venv/bin/python)"


def has_paddle(target: Interpreter) -> bool:
    """Whether `import paddle` would find a build: its version file on the interpreter's path."""
    return any(os.path.isfile(os.path.join(p, PADDLE_VERSION_FILE)) for p in target.paths)


def resolve_interpreter(
    python: str | None,
    env: Mapping[str, str],
    *,
    timeout: float = ASK_TIMEOUT_S,
    limit: int = OUTPUT_LIMIT,
) -> Interpreter:
    """The interpreter judged: `--python PATH` (looked up on the PATH of the command's variables
    `env` and asked with them), else the one a person means (see the module). A `--python`, or
    an active environment, that is not a working Python is exit 2."""
    if python is not None:
        if not python.strip() or "\0" in python:
            raise UsageError(f"{FLAG} {python!r} is not a path", hint=HINT)
        return _named(python, env, timeout, limit, label=f"{FLAG} {python}", why=FLAG)
    for variable, why in ACTIVE:
        prefix = env.get(variable)
        if prefix:
            return _active(variable, prefix, env, timeout, limit, why)
    return _default_target(env, timeout, limit)


def _active(
    variable: str, prefix: str, env: Mapping[str, str], timeout: float, limit: int, why: str
) -> Interpreter:
    """The activated environment's own `bin/python`: envcheck's, when it runs from that very
    environment (nothing to ask)."""
    hint = f"activate the environment again, `deactivate` it, or name the interpreter with {FLAG}"
    if not os.path.isabs(prefix) or "\0" in prefix:
        raise UsageError(f"{variable}={prefix!r} is not an absolute path", hint=hint)
    own = current_interpreter()
    if os.path.realpath(prefix) == os.path.realpath(own.prefix):
        return replace(own, why=why)
    python = os.path.join(prefix, "bin", "python")
    label = f"{python} (the Python of {variable}={prefix})"
    return _named(python, env, timeout, limit, label, why, hint)


def _default_target(env: Mapping[str, str], timeout: float, limit: int) -> Interpreter:
    """No --python and no active environment: envcheck's own when it has Paddle (and is not
    pipx's venv of envcheck, which never trains), else the first `python3` on PATH that has
    Paddle, else the first one (pipx) or envcheck's own, each saying why."""
    own = current_interpreter()
    pipx = os.path.isfile(os.path.join(own.prefix, PIPX_METADATA))
    if not pipx and has_paddle(own):
        return replace(own, why="envcheck's own interpreter, which has Paddle")
    first = None
    for python3 in _python3s(env):
        try:
            found = _named(python3, env, timeout, limit, python3, "")
        except UsageError:  # a broken python3 on PATH is not the one a person trains with
            continue
        if os.path.realpath(found.prefix) == os.path.realpath(own.prefix):
            continue
        if has_paddle(found):
            return replace(found, why="the first python3 on PATH with Paddle")
        first = first or found
    if pipx and first is not None:
        why = "the python3 on PATH: none here has Paddle, and envcheck's own is pipx's venv"
        return replace(first, why=why)
    return replace(own, why="envcheck's own interpreter: no other python3 on PATH has Paddle")


def _python3s(env: Mapping[str, str]) -> list[str]:
    """Every `python3` on PATH, in order, each folder once (`/bin` and `/usr/bin` are one)."""
    found: list[str] = []
    seen: set[str] = set()
    for folder in env.get("PATH", os.defpath).split(os.pathsep):
        real = os.path.realpath(folder or ".")
        if real in seen or not os.path.isabs(folder):
            continue
        seen.add(real)
        python3 = shutil.which("python3", path=folder)
        if python3 is not None:
            found.append(python3)
    return found


def _named(
    python: str,
    env: Mapping[str, str],
    timeout: float,
    limit: int,
    label: str,
    why: str,
    hint: str = HINT,
) -> Interpreter:
    """`python` asked what it is; `label` names it in the error (exit 2) when it is not a
    working Python."""
    # a bare name is looked up on PATH, as a shell would
    path = python if os.sep in python else shutil.which(python, path=env.get("PATH", os.defpath))
    if path is None or not os.path.exists(path):
        raise UsageError(f"{label}: no such file", hint=hint)
    if os.path.isdir(path) or not os.access(path, os.X_OK):
        raise UsageError(f"{label}: not an executable file", hint=hint)
    stdout, stderr, code, problem = _ask(os.path.abspath(path), env, timeout, limit)
    if problem is not None:
        raise UsageError(f"{label}: {problem}", hint=hint)
    answer = _parse_answer(stdout, os.path.abspath(path))
    if answer is None:
        tail = stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [
            f"exit status {code}"
        ]
        raise UsageError(
            f"{label} did not answer as a Python interpreter ({tail[0][:200]})", hint=hint
        )
    return replace(answer, why=why)


def _parse_answer(stdout: bytes, python: str) -> Interpreter | None:
    for line in reversed(stdout.decode("utf-8", "replace").splitlines()):
        if not line.startswith(_MARK):
            continue
        try:
            doc = json.loads(line[len(_MARK) :])
        except (ValueError, RecursionError):
            return None
        if not isinstance(doc, dict):
            return None
        prefix, paths, version = doc.get("prefix"), doc.get("path"), doc.get("version")
        if not (isinstance(prefix, str) and isinstance(version, str) and isinstance(paths, list)):
            return None
        kept = tuple(p for p in paths if isinstance(p, str) and p)
        return Interpreter(python=python, prefix=prefix, paths=kept, version=version)
    return None


def _ask(
    python: str, env: Mapping[str, str], timeout: float, limit: int
) -> tuple[bytes, bytes, int | None, str | None]:
    """Run the question; (stdout, stderr, exit code, why it was stopped) with both bounded."""
    try:
        proc = subprocess.Popen(
            [python, "-c", _ASK],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            env=dict(env),
        )
    except OSError as e:
        return b"", b"", None, f"cannot run it: {e.strerror or e}"
    assert proc.stdout is not None and proc.stderr is not None
    streams = {proc.stdout.fileno(): bytearray(), proc.stderr.fileno(): bytearray()}
    problem = None
    try:
        problem = _read_bounded(proc, streams, timeout, limit)
    finally:
        if problem is not None or proc.poll() is None:
            _kill_group(proc)
        code = _reap(proc, timeout)
        proc.stdout.close()
        proc.stderr.close()
    stdout, stderr = streams.values()
    return bytes(stdout), bytes(stderr), code, problem


def _read_bounded(
    proc: subprocess.Popen[bytes], streams: dict[int, bytearray], timeout: float, limit: int
) -> str | None:
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as sel:
        for fd in streams:
            sel.register(fd, selectors.EVENT_READ)
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                return f"did not answer within {timeout:g} s"
            for key, _ in sel.select(left):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fd)
                    continue
                streams[key.fd] += chunk
                if len(streams[key.fd]) > limit:
                    return f"printed more than {limit // 1024} KiB when asked for its sys.path"
    return None


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _reap(proc: subprocess.Popen[bytes], timeout: float) -> int | None:
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        return proc.wait()

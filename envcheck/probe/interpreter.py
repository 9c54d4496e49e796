"""The target interpreter (`--python`), resolved once and handed to every layer.

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
from envcheck.contracts.record import record

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


def _default_target(env: Mapping[str, str], timeout: float, limit: int) -> Interpreter:
    """No --python: envcheck's own interpreter, except where that is pipx's venv of envcheck,
    which never holds the user's Paddle: then the `python3` a shell would run here
    (the activated venv's, else the system's)."""
    own = current_interpreter()
    python3 = shutil.which("python3", path=env.get("PATH", os.defpath))
    if not os.path.isfile(os.path.join(own.prefix, PIPX_METADATA)) or python3 is None:
        return own
    return resolve_interpreter(python3, env, timeout=timeout, limit=limit)


def resolve_interpreter(
    python: str | None,
    env: Mapping[str, str],
    *,
    timeout: float = ASK_TIMEOUT_S,
    limit: int = OUTPUT_LIMIT,
) -> Interpreter:
    """`--python PATH` as an `Interpreter`, looked up on the PATH of the command's variables
    `env` and asked with them; a path that is not a working Python is exit 2."""
    if python is None:
        return _default_target(env, timeout, limit)
    hint = "give --python the path of a working Python interpreter (e.g. /opt/venv/bin/python)"
    if not python.strip() or "\0" in python:
        raise UsageError(f"--python {python!r} is not a path", hint=hint)
    # a bare name is looked up on PATH, as a shell would
    path = python if os.sep in python else shutil.which(python, path=env.get("PATH", os.defpath))
    if path is None or not os.path.exists(path):
        raise UsageError(f"--python {python}: no such file", hint=hint)
    if os.path.isdir(path) or not os.access(path, os.X_OK):
        raise UsageError(f"--python {python}: not an executable file", hint=hint)
    stdout, stderr, code, problem = _ask(os.path.abspath(path), env, timeout, limit)
    if problem is not None:
        raise UsageError(f"--python {python}: {problem}", hint=hint)
    answer = _parse_answer(stdout, os.path.abspath(path))
    if answer is None:
        tail = stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [
            f"exit status {code}"
        ]
        raise UsageError(
            f"--python {python} did not answer as a Python interpreter ({tail[0][:200]})", hint=hint
        )
    return answer


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

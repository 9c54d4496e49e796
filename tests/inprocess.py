"""Run the CLI in this process: `envcheck.cli.main(argv, env)` with an `Environment` of
`io.StringIO` streams, a variables mapping and a working folder of the test's choosing. About
100 times faster than `python -m envcheck` (~0.3 s of interpreter and imports per run).

What needs a process of its own stays a subprocess (`envcheck_process`): signals, closed or full
stdio, a reader that leaves, `/dev/stdout`, the entry point itself, and a fake NVIDIA driver
(`fake_nvidia`: dlopen reads LD_LIBRARY_PATH at start, and a library loaded here stays loaded).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envcheck.cli import main
from envcheck.contracts.command_env import PROCESS_CWD, Environment

# The test process's variables without the ones that change what the CLI prints (an activated
# environment is the interpreter judged: a test names its own).
ENV = {
    k: v
    for k, v in os.environ.items()
    if k
    not in (
        "GITHUB_ACTIONS",
        "GITHUB_STEP_SUMMARY",
        "GITHUB_OUTPUT",
        "NO_COLOR",
        "VIRTUAL_ENV",
        "CONDA_PREFIX",
    )
}


@dataclass(frozen=True)
class Result:
    """What a run left: named as `subprocess.CompletedProcess` names it, so either can be asserted."""

    returncode: int
    stdout: str
    stderr: str


def run_envcheck(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    stdin: str | None = None,
) -> Result:
    """`envcheck ARGV` in this process; `env` defaults to `ENV`, `cwd` to the process's folder,
    `stdin` to an empty one."""
    out, err = io.StringIO(), io.StringIO()
    environment = Environment(
        stdin=io.StringIO(stdin or ""),
        stdout=out,
        stderr=err,
        env=dict(ENV if env is None else env),
        cwd=PROCESS_CWD if cwd is None else cwd,
    )
    code = main(list(argv), environment)
    return Result(code, out.getvalue(), err.getvalue())


def process_env() -> Environment:
    """This test process's own streams and variables as they are now (pytest's capture and a
    `monkeypatch.setenv` included): for a test that calls a library function the way the
    process's command would."""
    return Environment(sys.stdin, sys.stdout, sys.stderr, os.environ, PROCESS_CWD)


def envcheck(*args: str, stdin: str | None = None, env: dict[str, str] | None = None) -> Result:
    """`run_envcheck` with the arguments spread, as most tests write them."""
    return run_envcheck(args, env=env, stdin=stdin)


def envcheck_process(
    *args: str, stdin: str | None = None, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`python -m envcheck ARGS` in a process of its own, for what only a process can show."""
    return subprocess.run(
        [sys.executable, "-m", "envcheck", *args],
        capture_output=True,
        text=True,
        input=stdin,
        env=env or ENV,
        timeout=timeout,
        check=False,
    )


def run_with_a_gone_reader(
    args: list[str], *, stderr_too: bool, env: Mapping[str, str] | None = None
) -> tuple[int, str]:
    """`envcheck ARGS | head -1` (with `2>&1` when `stderr_too`): the reader is gone before the
    first byte, so every write to that pipe is EPIPE; the returned text is what stderr said when
    it was not the pipe."""
    read, write_end = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "envcheck", *args],
            stdout=write_end,
            stderr=write_end if stderr_too else subprocess.PIPE,
            env=dict(env or ENV),
            timeout=300,
            check=False,
        )
    finally:
        os.close(write_end)
    return proc.returncode, (proc.stderr or b"").decode()


def doctor_process(
    env: Mapping[str, str], *args: str, timeout: float = 300
) -> tuple[int, dict[str, Any], str]:
    """`python -m envcheck doctor --json ARGS` on the host `env` describes (a fake driver needs a
    process of its own): (exit code, the JSON document, stderr), and never a traceback."""
    run = envcheck_process("doctor", "--json", *args, env=dict(env), timeout=timeout)
    assert "Traceback" not in run.stderr, run.stderr
    doc: dict[str, Any] = json.loads(run.stdout)
    return run.returncode, doc, run.stderr


def assert_one_screen(stderr: str) -> None:
    """An error a person reads at once: `envcheck: error: …`, no traceback, one screen."""
    assert "Traceback" not in stderr
    assert stderr.startswith("envcheck: error: ") or "\nenvcheck: error: " in stderr
    assert len(stderr.splitlines()) <= 12

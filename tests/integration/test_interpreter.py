"""`--python`: the target interpreter is identified by what it reports, and a program that is not
a working Python is a bad flag (exit 2), bounded in time and output, leaving no process behind.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import pytest

from envcheck.contracts.errors import UsageError
from envcheck.probe.interpreter import resolve_interpreter
from tests.inprocess import ENV, assert_one_screen, run_envcheck
from tests.paths import ROOT
from tests.subject_commands import uncarried

ENVCHECK = [sys.executable, "-m", "envcheck"]


def _script(tmp_path: Path, body: str, name: str = "python") -> str:
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def test_a_sibling_venv_is_its_own_interpreter(sibling_venv: Path) -> None:
    target = resolve_interpreter(str(sibling_venv / "bin" / "python"), os.environ)
    assert target.prefix == str(sibling_venv)
    assert not any(p.startswith(sys.prefix + os.sep) for p in target.paths), target.paths


def test_doctor_judges_the_python_it_was_given(sibling_venv: Path) -> None:
    """envcheck's own venv has Paddle's CPU build; the target venv has no Paddle at all. The
    report must be about the target, which the smoke would run in."""
    out = subprocess.run(
        [
            *ENVCHECK,
            "doctor",
            "--no-smoke",
            "--json",
            "--python",
            str(sibling_venv / "bin" / "python"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode in (0, 1), out.stderr
    paddle = json.loads(out.stdout)["host"]["paddle"]
    assert paddle["status"] == "absent", paddle
    assert paddle["python"] == str(sibling_venv / "bin" / "python")


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ("echo hello\n", "did not answer as a Python interpreter"),
        ("echo 'Traceback: boom' >&2; exit 1\n", "Traceback: boom"),
        ("exec yes envcheck-interpreter:\n", "printed more than"),
        ("echo 'envcheck-interpreter:{\"prefix\": 1}'\n", "did not answer as a Python interpreter"),
    ],
    ids=["not-python", "crashes", "megabytes", "wrong-shape"],
)
def test_not_a_python_is_a_usage_error(tmp_path: Path, body: str, words: str) -> None:
    with pytest.raises(UsageError) as err:
        resolve_interpreter(_script(tmp_path, body), os.environ, timeout=20)
    assert words in err.value.message


def test_a_hanging_python_is_stopped_with_what_it_started(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    python = _script(tmp_path, f"sleep 1000 & echo $! > {pidfile}\nsleep 1000\n")
    with pytest.raises(UsageError, match="did not answer within 1 s"):  # its own timeout ended it
        resolve_interpreter(python, os.environ, timeout=1)
    child = int(pidfile.read_text())
    for _ in range(100):  # the SIGKILL of the group is delivered asynchronously
        if not _alive(child):
            break
        time.sleep(0.05)
    assert not _alive(child), "the interpreter's own child was left running"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize(
    "python",
    ["/no/such/python", "/", "no-such-python-on-path", ""],
    ids=["missing", "directory", "not-on-path", "empty"],
)
def test_doctor_with_a_bad_python_is_exit_2(python: str) -> None:
    out = subprocess.run(
        [*ENVCHECK, "doctor", "--no-smoke", "--python", python],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert "--python" in out.stderr and "Traceback" not in out.stderr


def test_a_bug_in_the_cuda_probe_is_a_bug_not_a_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    """The probe thread's exception reaches the caller (exit 3 at the CLI), instead of
    "timeout: the CUDA probe did not finish" with a driver fix."""
    from envcheck.probe import cuda_libs
    from envcheck.probe.host import start_host_probe

    def broken(*_: object, **__: object) -> None:
        raise KeyError("a bug in the probe")

    monkeypatch.setattr(cuda_libs, "probe_cuda_libraries", broken)  # the library thread
    with pytest.raises(KeyError, match="a bug in the probe"):
        start_host_probe(os.environ).facts()


def test_envcheck_in_pipx_judges_the_python3_a_shell_runs_not_its_own_venv(
    sibling_venv: Path,
) -> None:
    """Installed with pipx, envcheck's own interpreter is pipx's venv of envcheck,
    which never holds the user's Paddle: every fix named it. Without --python the target is the
    `python3` on PATH (here this test's venv, with Paddle's CPU build, first on PATH)."""
    (sibling_venv / "pipx_metadata.json").write_text("{}")  # what pipx leaves in its venvs
    site = next(p for p in sys.path if p.startswith(sys.prefix) and p.endswith("site-packages"))
    root = str(ROOT)
    env = {
        **_inactive(os.environ),
        "PATH": f"{sys.prefix}/bin:/usr/bin:/bin",
        "PYTHONPATH": f"{root}:{site}",  # envcheck and its dependencies, as pipx installs them
    }
    out = subprocess.run(
        [str(sibling_venv / "bin" / "python"), "-m", "envcheck", "doctor", "--no-smoke", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )
    doc = json.loads(out.stdout)
    assert doc["host"]["paddle"]["python"] == f"{sys.prefix}/bin/python3", out.stderr
    assert doc["host"]["paddle"]["python_reason"] == "the first python3 on PATH with Paddle"
    fixes = " ".join(f["fix"] or "" for f in doc["findings"])
    assert str(sibling_venv) not in fixes


def _inactive(env: Mapping[str, str]) -> dict[str, str]:
    """The variables with no environment activated."""
    return {k: v for k, v in env.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX")}


@pytest.mark.parametrize(
    ("variable", "why"),
    [("VIRTUAL_ENV", "the active venv"), ("CONDA_PREFIX", "the active conda environment")],
)
def test_the_doctor_judges_the_activated_environment_not_its_own(
    sibling_venv: Path, variable: str, why: str
) -> None:
    """`(train)` active, envcheck installed in another venv: the doctor said "Paddle is not
    installed for .../envcheck-venv/bin/python3" of a venv nobody trains with. (A conda
    environment is a prefix with its own bin/python, as this venv is.)"""
    python = str(sibling_venv / "bin" / "python")
    env = _inactive(ENV) | {variable: str(sibling_venv)}
    run = run_envcheck(["doctor", "--no-smoke", "--json"], env=env)
    paddle = json.loads(run.stdout)["host"]["paddle"]
    assert (paddle["python"], paddle["status"], paddle["python_reason"]) == (python, "absent", why)
    text = run_envcheck(["doctor", "--no-smoke"], env=env).stdout
    assert f"{python} ({why})" in text
    assert f"envcheck fix --python {python} --yes" in text and uncarried(text, python) == []


def test_an_active_venv_outranks_conda_s(sibling_venv: Path, tmp_path: Path) -> None:
    env = _inactive(ENV) | {"VIRTUAL_ENV": str(sibling_venv), "CONDA_PREFIX": str(tmp_path)}
    target = resolve_interpreter(None, env)
    assert (target.prefix, target.why) == (str(sibling_venv), "the active venv")


def test_an_active_venv_that_is_not_a_python_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    _script(tmp_path / "bin", "echo hello\n")
    run = run_envcheck(
        ["doctor", "--no-smoke"], env=_inactive(ENV) | {"VIRTUAL_ENV": str(tmp_path)}
    )
    assert run.returncode == 2, run.stderr
    assert_one_screen(run.stderr)
    assert f"(the Python of VIRTUAL_ENV={tmp_path}) did not answer" in run.stderr

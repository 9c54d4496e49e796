"""Errors that help: each one a line that says what is wrong and what to do, with its exit code.

A mistyped command, a timeout out of range, a Docker socket one may not open, `--gpus` naming a
GPU the host does not have, and Ctrl-C (which never marks the phase it cut short as done, and says
what it cleaned up). The missing tag's nearest tags are in tests/integration/test_pull.py, against
the local registry.
"""

from __future__ import annotations

import grp
import io
import os
import pwd
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from envcheck.edges import activity
from envcheck.edges.signals import unwind_on_signals
from envcheck.render.activity import PlainActivity, RichActivity
from tests.inprocess import ENV, envcheck_process, run_envcheck
from tests.smoke_host import PADDLE_IMAGE, SCRIPTS

# fake_nvidia: a one-GPU host; paddle_image: the offline Paddle image
pytest_plugins = ("tests.fakenv", "tests.smoke_fixtures")

HINT = "envcheck: hint: "


def lines(stderr: str) -> tuple[str, list[str]]:
    """(the error line, the hint lines) of a failed run's stderr."""
    errors = [line for line in stderr.splitlines() if line.startswith("envcheck: error: ")]
    assert len(errors) == 1, stderr
    return errors[0], [line for line in stderr.splitlines() if line.startswith(HINT)]


# -- a mistyped command ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("typed", "meant"), [("doctr", "doctor"), ("reprot", "report"), ("pull-imgae", "pull-image")]
)
def test_a_mistyped_command_gets_did_you_mean(typed: str, meant: str) -> None:
    r = run_envcheck([typed])
    assert r.returncode == 2 and r.stdout == ""
    error, hints = lines(r.stderr)
    assert error == f"envcheck: error: unknown command '{typed}': did you mean `{meant}`?"
    assert hints == [f"{HINT}the commands are doctor, fix, pull-image, report and completion"]


def test_a_command_like_no_other_lists_them_all() -> None:
    r = run_envcheck(["xyzzy", "--json"])
    assert r.returncode == 2
    error, _ = lines(r.stderr)
    assert error == "envcheck: error: unknown command 'xyzzy'"
    assert '"message": "unknown command \'xyzzy\'"' in r.stdout  # the --json error document


# -- the smoke's timeout -----------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["0", "-5", "86401", "nan"])
def test_a_smoke_timeout_out_of_range_names_the_real_range(value: str) -> None:
    # It said "between 0 and 86400" and refused 0.
    r = run_envcheck(["doctor", "--no-smoke", f"--smoke-timeout={value}"])
    assert r.returncode == 2
    error, _ = lines(r.stderr)
    assert error == (
        "envcheck: error: argument --smoke-timeout: must be more than 0 and at most 86400 "
        f"seconds (24 hours), got {value}"
    )


# -- a Docker socket one may not open ---------------------------------------------------------------
@pytest.fixture
def denied_socket(tmp_path: Path) -> Iterator[Path]:
    """A listening unix socket whose mode lets nobody in (root too, once CAP_DAC_OVERRIDE is
    dropped: `as_unprivileged`)."""
    path = tmp_path / "docker.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen()
    path.chmod(0o000)
    yield path
    server.close()


def as_unprivileged(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`python -m envcheck ARGS` as this user without the capabilities that let root past a
    file's mode (a root test run would otherwise open any socket)."""
    drop = "-dac_override,-dac_read_search"
    prefix = (
        ["setpriv", f"--bounding-set={drop}", f"--inh-caps={drop}"] if os.geteuid() == 0 else []
    )
    return subprocess.run(
        [*prefix, sys.executable, "-m", "envcheck", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "code", "start"),
    [
        (("pull-image",), 4, "connecting to the Docker engine: "),
        (
            ("doctor", "--image", PADDLE_IMAGE),
            4,
            f"--image {PADDLE_IMAGE} needs a container, but no container engine: ",
        ),
    ],
    ids=["pull-image", "doctor-image"],
)
def test_a_socket_without_permission_names_the_socket_and_the_three_ways_in(
    denied_socket: Path, args: tuple[str, ...], code: int, start: str
) -> None:
    env = {**ENV, "DOCKER_HOST": f"unix://{denied_socket}", "HOME": str(denied_socket.parent)}
    run = as_unprivileged(*args, env=env)
    assert run.returncode == code and "Traceback" not in run.stderr
    error, hints = lines(run.stderr)
    assert "[Errno 13]" not in run.stderr and "PermissionError" not in run.stderr
    st = denied_socket.stat()
    owner = f"{pwd.getpwuid(st.st_uid).pw_name}:{grp.getgrgid(st.st_gid).gr_name}"
    assert error == (
        f"envcheck: error: {start}"
        f"permission denied on the engine's socket {denied_socket} ({owner}, s---------)"
    )
    [hint] = hints
    assert "`sudo usermod -aG docker $USER`" in hint  # the group
    assert "dockerd-rootless-setuptool.sh install" in hint  # rootless
    assert "`docker context use NAME`" in hint  # a context


def test_the_doctor_names_the_socket_in_its_engine_finding(denied_socket: Path) -> None:
    env = {**ENV, "DOCKER_HOST": f"unix://{denied_socket}", "HOME": str(denied_socket.parent)}
    run = as_unprivileged("doctor", "--in-process", "--no-smoke", "--json", env=env)
    assert "[Errno 13]" not in run.stdout
    assert f"permission denied on the engine's socket {denied_socket}" in run.stdout


# -- --gpus naming a GPU the host does not have ------------------------------------------------------
@pytest.mark.fakegpu
def test_gpus_5_on_a_one_gpu_host_is_refused(
    fake_nvidia: Callable[[str], dict[str, str]],
) -> None:
    env = {**os.environ, **fake_nvidia("h100-580")}
    run = envcheck_process("doctor", "--no-smoke", "--gpus", "5", env=env)
    assert run.returncode == 2, run.stderr
    error, hints = lines(run.stderr)
    assert error == "envcheck: error: --gpus 5: no GPU 5 on this host, which has 1 GPU (index 0)"
    assert hints == [
        f"{HINT}pass indices that `nvidia-smi -L` lists, or drop --gpus to use every GPU"
    ]
    ok = envcheck_process("doctor", "--no-smoke", "--gpus", "0", env=env)
    assert "--gpus" not in ok.stderr  # the GPU it has is taken


def test_gpus_on_saved_facts_are_checked_against_the_saved_gpus(tmp_path: Path) -> None:
    from tests import faults

    facts = tmp_path / "facts.json"
    facts.write_text(faults.good_facts_text())  # two A100s
    r = run_envcheck(["doctor", "--facts", str(facts), "--gpus", "1,2,7"])
    assert r.returncode == 2
    error, _ = lines(r.stderr)
    assert error == (
        "envcheck: error: --gpus 1,2,7: no GPU 2, 7 on this host, which has 2 GPUs (index 0, 1)"
    )


# -- Ctrl-C ----------------------------------------------------------------------------------------
def interrupted_then_cleaned_up(display: Any) -> None:
    """A phase cut short by SIGINT, then the cleanup's own phase, as the smoke container does."""
    with activity.showing(display), unwind_on_signals():
        activity.phase("smoke: training")
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)  # pragma: no cover - the signal lands first
        except KeyboardInterrupt:  # the cleanup runs while the run unwinds
            activity.phase("removing the smoke container")


def test_on_a_terminal_ctrl_c_never_marks_the_phase_it_cut_done() -> None:
    # The cleanup's phase marked the interrupted one `✓ smoke: training`.
    out = io.StringIO()
    interrupted_then_cleaned_up(RichActivity(out))
    text = out.getvalue()
    assert "✓ smoke: training" not in text
    assert "✗ smoke: training" in text and ": interrupted" in text


def test_in_a_log_ctrl_c_says_the_phase_was_interrupted() -> None:
    out = io.StringIO()
    interrupted_then_cleaned_up(PlainActivity(out))
    assert out.getvalue().splitlines() == [
        "envcheck: smoke: training",
        "envcheck: smoke: training: failed: interrupted",
        "envcheck: removing the smoke container",
    ]


@pytest.mark.docker
def test_ctrl_c_mid_smoke_says_what_was_cleaned_up(paddle_image: str, tmp_path: Path) -> None:
    env = {**os.environ, "ENVCHECK_SMOKE_SCRIPT": str(SCRIPTS / "hang.py")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "envcheck", "doctor", "--image", paddle_image],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:  # until the smoke runs: then there is something to clean up
        seen.append(line.rstrip("\n"))
        if "smoke: importing Paddle in the container" in line:
            break
    proc.send_signal(signal.SIGINT)
    _, rest = proc.communicate(timeout=120)
    said = seen + rest.splitlines()
    assert proc.returncode == 130, said
    assert "envcheck: smoke: importing Paddle in the container: failed: interrupted" in said
    [last] = [line for line in said if line.startswith("envcheck: error: ")]
    assert last.startswith(
        "envcheck: error: interrupted by Ctrl-C (SIGINT): removed the smoke container envcheck-"
    )


# -- a missing tag, from the doctor ------------------------------------------------------------------
@pytest.mark.docker
def test_the_doctor_says_a_missing_tag_once(tmp_path: Path) -> None:
    """Its progress line repeated the error in full before the error line said it again."""
    ref = "127.0.0.1:5000/envcheck-test/busybox:2"
    r = run_envcheck(["doctor", "--image", ref], cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.count("tag not found") == 2  # the phase's end, then the one full line
    assert (
        f"{ref} from 127.0.0.1:5000: this engine does not have it yet: failed: tag not found\n"
        in (r.stderr)
    )
    error, [hint] = lines(r.stderr)
    assert error == f"envcheck: error: tag not found: {ref}"
    assert hint.startswith(f"{HINT}the nearest tags in 127.0.0.1:5000/envcheck-test/busybox: ")

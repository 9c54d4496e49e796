"""SIGTERM and SIGINT unwind like Ctrl-C and leave nothing behind.

A bounded loop sends SIGTERM or SIGINT at seeded random moments to real `envcheck doctor` runs —
the smoke in a container on the real engine, and in-process with the real CPU Paddle — and
checks that no container, process or temp folder of that run is left, and that the run ended
cleanly (130, or its own verdict when the signal came after the end), never a traceback.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from envcheck.edges.signals import Interrupted, deferred, unwind_on_signals
from envcheck.smoke.runner import ownership
from envcheck.smoke.runner.container import SmokeContainer
from envcheck.smoke.runner.container_spec import ContainerSpec
from envcheck.smoke.runner.inprocess import run_subprocess
from envcheck.smoke.runner.ownership import OWNER_LABEL
from tests.smoke_host import SCRIPTS, processes_mentioning

pytest_plugins = ("tests.smoke_fixtures",)

CASES = 10
_rng = random.Random(94)  # seeded: a failing case can be replayed
MOMENTS = [
    (mode, sig, round(_rng.uniform(0.0, 6.5 if mode == "container" else 4.0), 2))
    for mode, sig in (
        (("container", "in-process")[i % 2], (signal.SIGTERM, signal.SIGINT)[i // 2 % 2])
        for i in range(CASES)
    )
]


# -- the handler itself ----------------------------------------------------------------------------
def test_a_signal_inside_deferred_is_raised_when_the_block_ends() -> None:
    reached = []
    with pytest.raises(Interrupted) as stopped, unwind_on_signals():
        with deferred():
            os.kill(os.getpid(), signal.SIGTERM)
            reached.append("end of the block")  # the handle is kept before the signal lands
        reached.append("after")  # pragma: no cover - never reached
    assert reached == ["end of the block"] and stopped.value.signum == signal.SIGTERM
    assert isinstance(stopped.value, KeyboardInterrupt)  # every Ctrl-C cleanup applies


def test_a_signal_right_after_the_smoke_folder_is_made_leaves_no_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The in-process smoke's folder was made and the signal landed before anything held it
    (seen once in CI: SIGUSR2, `envcheck-smoke-*` left in TMPDIR): now the signal waits."""
    made = tempfile.mkdtemp

    def made_then_signalled(*args: Any, **kwargs: Any) -> str:
        path: str = made(*args, **kwargs)
        os.kill(
            os.getpid(), signal.SIGTERM
        )  # handled at the next bytecode: before a caller holds it
        return path

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(tempfile, "mkdtemp", made_then_signalled)
    with pytest.raises(Interrupted), unwind_on_signals():
        run_subprocess(sys.executable, SCRIPTS / "hang.py", [], 60, os.environ)
    assert list(tmp_path.iterdir()) == []


def test_a_second_signal_while_unwinding_does_not_cut_the_cleanup() -> None:
    cleaned = []
    with pytest.raises(Interrupted), unwind_on_signals():
        try:
            os.kill(os.getpid(), signal.SIGINT)
        finally:
            os.kill(os.getpid(), signal.SIGTERM)  # a second Ctrl-C, an impatient CI
            cleaned.append(True)
    assert cleaned == [True]


def test_a_signal_after_the_verdict_leaves_the_exit_status_alone(tmp_path: Path) -> None:
    """CI at 8890a38: SIGTERM landed after "removing the smoke container", once the handler was
    given back, and the run ended as killed (-15) instead of with the verdict it had written."""
    script = (
        "import os, signal, sys\n"
        "from envcheck.cli import main\n"
        f"status = main(['report', {str(tmp_path / 'missing.json')!r}])\n"
        "os.kill(os.getpid(), signal.SIGTERM)  # after the command, before the interpreter's exit\n"
        "sys.exit(status)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, (done.returncode, done.stderr)  # the report's own usage error
    assert "Traceback" not in done.stderr


def test_a_run_inside_another_program_gives_the_handlers_back() -> None:
    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    with unwind_on_signals():
        assert signal.getsignal(signal.SIGTERM) is not before[signal.SIGTERM]
    assert {s: signal.getsignal(s) for s in before} == before


@pytest.mark.docker
def test_a_create_whose_answer_was_lost_is_found_by_its_run_id(
    docker_client: Any, paddle_image: str
) -> None:
    """The engine made the container, envcheck never got the handle (the create's answer was cut):
    the failed `__enter__` looks the container up by its name, the run id, and removes it."""
    box = SmokeContainer(
        docker_client,
        ContainerSpec(paddle_image, (), SCRIPTS / "hang.py", 60.0),
        variables=os.environ,
        stderr=sys.stderr,
    )
    made = docker_client.containers.create(
        paddle_image, ["true"], name=ownership.container_name(box.run_id)
    )
    with pytest.raises(Exception, match="Conflict|already in use"), box:
        pass  # pragma: no cover
    assert not docker_client.containers.list(all=True, filters={"id": made.id})


# -- the fault loop ------------------------------------------------------------------------------
def _catches_sigterm(pid: int) -> bool:
    """Has the process installed a SIGTERM handler (`SigCgt` in /proc/PID/status)?"""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = next(
        (line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), "0"
    )
    return bool(int(caught, 16) >> (signal.SIGTERM - 1) & 1)


def _wait_until_in_charge(proc: subprocess.Popen[str]) -> None:
    """Until envcheck's handler is in place. Before it, only the interpreter is starting: nothing
    exists to leave behind, and Python's own default (SIGINT: KeyboardInterrupt in an import) applies."""
    while proc.poll() is None and not _catches_sigterm(proc.pid):
        time.sleep(0.01)


@pytest.mark.docker
@pytest.mark.parametrize(
    ("mode", "signum", "after"),
    MOMENTS,
    ids=[f"{m}-{signal.Signals(s).name}-{a}s" for m, s, a in MOMENTS],
)
def test_a_signal_at_a_random_moment_leaves_nothing(
    docker_client: Any,
    paddle_image: str,
    tmp_path: Path,
    mode: str,
    signum: int,
    after: float,
) -> None:
    flags = ["--image", paddle_image] if mode == "container" else ["--in-process"]
    env = {
        **os.environ,
        "TMPDIR": str(tmp_path),
    }  # the in-process workdir lands where we can see it
    proc = subprocess.Popen(
        [sys.executable, "-m", "envcheck", "doctor", "--json", *flags],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_until_in_charge(proc)
    try:
        proc.communicate(timeout=after)
    except subprocess.TimeoutExpired:
        proc.send_signal(signum)
    out, err = proc.communicate(timeout=120)
    owner = f"{socket.gethostname()}:{proc.pid}"

    assert "Traceback" not in err, err
    assert proc.returncode in (0, 130), (proc.returncode, err[-2000:])
    left = docker_client.containers.list(all=True, filters={"label": f"{OWNER_LABEL}={owner}"})
    assert not left, f"containers left: {[c.name for c in left]}"
    assert not processes_mentioning(str(tmp_path)), "the training child survived"
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith("envcheck")]
    if proc.returncode == 130:
        assert "interrupted" in (out + err)


def test_the_moments_cover_both_signals_and_both_modes() -> None:
    assert {(m, s) for m, s, _ in MOMENTS} == {
        (m, s) for m in ("container", "in-process") for s in (signal.SIGTERM, signal.SIGINT)
    }


# -- every signal a terminal or a scheduler sends --------------------------------------------------
ENDING = (signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)


def _smoke_under_way(mode: str, docker_client: Any, owner: str, workdir: Path) -> bool:
    """The moment there is something to leave behind: the smoke container, or the in-process
    child's temp folder."""
    if mode == "container":
        # the low-level list: no inspect per container, which races the run's own removal
        return bool(
            docker_client.api.containers(all=True, filters={"label": f"{OWNER_LABEL}={owner}"})
        )
    return any(p.name.startswith("envcheck-smoke-") for p in workdir.iterdir())


@pytest.mark.docker
@pytest.mark.parametrize("mode", ["container", "in-process"])
@pytest.mark.parametrize("signum", ENDING, ids=[s.name for s in ENDING])
def test_a_hangup_quit_or_user_signal_mid_smoke_leaves_nothing(
    docker_client: Any, paddle_image: str, tmp_path: Path, mode: str, signum: signal.Signals
) -> None:
    """SIGHUP (a closed terminal or ssh session), SIGQUIT, SIGUSR1/2 (`scancel --signal`) ended
    the process at once: the smoke container kept running, the child kept its temp folder."""
    flags = ["--image", paddle_image] if mode == "container" else ["--in-process"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "envcheck", "doctor", "--json", *flags],
        env={**os.environ, "TMPDIR": str(tmp_path)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    owner = f"{socket.gethostname()}:{proc.pid}"
    polls = 0
    while proc.poll() is None and not _smoke_under_way(mode, docker_client, owner, tmp_path):
        polls += 1
        assert polls < 6000, "the smoke never started"  # a bound on the wait, not a timing
        time.sleep(0.02)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=120)
    assert "Traceback" not in err, err
    assert proc.returncode == 130, (proc.returncode, err[-2000:])
    left = docker_client.containers.list(all=True, filters={"label": f"{OWNER_LABEL}={owner}"})
    assert not left, f"containers left: {[c.name for c in left]}"
    assert not processes_mentioning(str(tmp_path)), "the training child survived"
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith("envcheck")]

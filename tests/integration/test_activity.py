"""Progress while envcheck is slow, seen the way a person and a CI log see it: the
doctor run for real (the real engine, the offline Paddle image, the real CPU Paddle) with stderr on
a pseudo-terminal or a pipe, stdout on a pipe of its own. No timed asserts: the lines (phases,
steps/s, heartbeats) must appear, and stdout must stay the one JSON document."""

from __future__ import annotations

import io
import json
import os
import sys
import threading
import uuid
from typing import Any

import pytest

from envcheck.contracts.command_env import PROCESS_CWD, Environment
from envcheck.contracts.errors import UsageError
from envcheck.edges import activity
from envcheck.render.activity import PlainActivity, heartbeat_interval, make_activity_display
from tests.paths import ROOT
from tests.silence import Watched, watch

IMAGE = "envcheck-test/paddle-cpu:3.3.1"

pytest_plugins = ("tests.fakenv",)  # no_driver
# The CPU image and CPU Paddle train on the CPU: a pass only where no GPU is expected, so every
# doctor here runs on a host without a driver, even on a GPU machine (the lent H100 said exit 1/6).
pytestmark = pytest.mark.usefixtures("no_driver")
HANG = str(ROOT / "tests" / "smoke_scripts" / "hang.py")


def doctor(*args: str, tty: bool, **env: str) -> Watched:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")} | env
    return watch(
        [sys.executable, "-m", "envcheck", "doctor", *args], tty=tty, env=environ, timeout=240
    )


def _in_order(text: str, *needles: str) -> None:
    at = 0
    for needle in needles:
        found = text.find(needle, at)
        assert found >= 0, f"{needle!r} missing after offset {at} in:\n{text}"
        at = found + len(needle)


@pytest.mark.docker  # --image: the real engine
def test_container_smoke_in_a_log_says_each_phase_and_json_stays_alone_on_stdout() -> None:
    run = doctor("--image", IMAGE, "--json", tty=False)
    assert run.code == 0, run.stderr
    assert json.loads(run.stdout)["proof"] == "cpu-trained"  # stdout: the document, nothing else
    _in_order(
        run.stderr,
        "envcheck: probing the host",
        "envcheck: creating the smoke container",
        "envcheck: starting the smoke container",
        "envcheck: smoke: importing Paddle in the container",
        "envcheck: smoke: paddle 3.3.1",
        "envcheck: smoke: training",
        "envcheck:   step 60/60, ",
        " steps/s",
        "envcheck: smoke: known answers after training",
        "known answers: 14/14 right",
        "envcheck: removing the smoke container",
    )
    assert "\x1b[" not in run.stderr  # plain lines in a log


@pytest.mark.docker  # --image: the real engine
def test_container_smoke_on_a_terminal_is_a_live_line() -> None:
    run = doctor("--image", IMAGE, "--json", tty=True)
    assert run.code == 0, run.stderr
    json.loads(run.stdout)
    assert "\x1b[" in run.stderr  # rich redraws the line in place
    for phase in (
        "creating the smoke container",
        "importing Paddle in the container",
        "smoke: training",
    ):
        assert phase in run.stderr
    assert "✓" not in run.stderr  # finished phases go with the live line: the report's screen


@pytest.mark.docker  # --image: the real engine
def test_a_hung_smoke_in_a_log_keeps_a_heartbeat_until_its_timeout() -> None:
    run = doctor(
        "--image",
        IMAGE,
        "--json",
        "--smoke-timeout",
        "4",
        tty=False,
        ENVCHECK_SMOKE_SCRIPT=HANG,
        ENVCHECK_HEARTBEAT_S="0.5",
    )
    assert run.code == 5, run.stderr
    assert json.loads(run.stdout)["verdict"] == "fail"
    _in_order(
        run.stderr,
        "envcheck: smoke: importing Paddle in the container",
        "envcheck:   waiting for a GPU that never answers",
        "envcheck: still smoke: importing Paddle in the container (",
    )


def test_quiet_silences_progress_and_in_process_runs_say_their_phases_too() -> None:
    quiet = doctor("--in-process", "--json", "--quiet", tty=False)
    assert quiet.code == 0 and json.loads(quiet.stdout) and "envcheck:" not in quiet.stderr
    loud = doctor("--in-process", "--json", tty=False)
    _in_order(
        loud.stderr,
        "envcheck: smoke: starting ",
        "envcheck: smoke: importing Paddle",
        "envcheck: smoke: training",
        "envcheck:   step 60/60",
    )


def test_json_with_markdown_to_stdout_is_a_usage_error() -> None:
    run = doctor("--facts", "-", "--json", "--markdown", "-", tty=False)
    doc = json.loads(run.stdout)  # the one document on stdout is the error's, no Markdown after it
    assert run.code == 2 and doc["exit_code"] == 2 and "--markdown -" in doc["error"]["message"]


# -- the parts, without a smoke ---------------------------------------------------------------------
class Recorder:
    def __init__(self) -> None:
        self.said: list[tuple[str, str]] = []

    def phase(self, text: str) -> None:
        self.said.append(("phase", text))

    def detail(self, text: str) -> None:
        self.said.append(("detail", text))

    def failed(self, why: str) -> None:
        self.said.append(("failed", why))

    def pause(self) -> None:
        self.said.append(("pause", ""))

    def resume(self) -> None:
        self.said.append(("resume", ""))

    def stop(self) -> None:
        self.said.append(("stop", ""))


def test_the_workload_log_becomes_phases_and_details_whole_lines_only() -> None:
    seen = Recorder()
    with activity.showing(seen):
        lines = activity.LineSplitter()
        lines.feed(b"W0101 paddle noise\nenvcheck-smoke: paddle 3.3.1, compiled")
        lines.feed(
            b" with CUDA: False\nenvcheck-smoke: training window start 17.5\nenvcheck-smoke: step 31/60, 9"
        )
        lines.feed(b"5.2 steps/s\n")
        lines.feed(b"x" * 100_000)  # a line without an end: bounded, never shown
    assert seen.said == [
        ("phase", "smoke: paddle 3.3.1, compiled with CUDA: False"),
        ("phase", "smoke: training"),
        ("detail", "step 31/60, 95.2 steps/s"),
        ("stop", ""),
    ]
    assert len(lines._partial) <= 4096
    activity.phase("nobody listens")  # no display installed: a no-op


def test_the_plain_heartbeat_repeats_the_phase_while_nothing_else_is_said() -> None:
    out = io.StringIO()
    display = PlainActivity(out, heartbeat=0.05)
    display.phase("smoke: importing Paddle\x1b[2J")
    beat = threading.Event()
    while not beat.wait(0.05):
        if "still" in out.getvalue():
            beat.set()
    display.stop()
    lines = out.getvalue().splitlines()
    assert (
        lines[0] == "envcheck: smoke: importing Paddle\\x1b[2J"
    )  # the workload's text made visible
    assert lines[1].startswith("envcheck: still smoke: importing Paddle")


@pytest.mark.parametrize("value", ["soon", "0", "-1", "nan", "1e9"])
def test_a_bad_heartbeat_interval_is_a_usage_error(value: str) -> None:
    with pytest.raises(UsageError, match="ENVCHECK_HEARTBEAT_S"):
        heartbeat_interval({"ENVCHECK_HEARTBEAT_S": value})
    assert (
        heartbeat_interval({}) == 10.0
        and heartbeat_interval({"ENVCHECK_HEARTBEAT_S": "0.5"}) == 0.5
    )


def test_quiet_is_no_display_and_a_pipe_is_plain() -> None:
    env = Environment(None, io.StringIO(), io.StringIO(), {}, PROCESS_CWD)
    assert make_activity_display("none", env) is activity.NULL
    assert isinstance(make_activity_display("auto", env), PlainActivity)


def test_a_cold_pull_under_json_shows_its_layers_in_the_log(
    registry: Any, docker_client: Any
) -> None:
    """It was silent: under --json the doctor pulled with no display at all."""
    from tests.registry_push import push_random_image

    repo = f"envcheck-test/cold-{uuid.uuid4().hex[:10]}"
    pushed = push_random_image(registry.url, repo, "1", layers=2, layer_size=256 << 10)
    try:
        run = doctor("--image", registry.ref(f"{repo}:1"), "--json", tty=False)
        assert (
            json.loads(run.stdout)["exit_code"] == run.code
        )  # the one document: no Python in it, exit 4
        _in_order(
            run.stderr,
            f"envcheck: pulling {registry.ref(repo)}:1 from {registry.addr}: this engine does "
            "not have it yet",
            f"envcheck: pulling {registry.ref(repo)}:1: 2 layer(s)",
            "downloaded",
            "overall 100%",
            f"envcheck: creating the smoke container from {registry.ref(repo)}:1 (image "
            f"{pushed.config_digest.removeprefix('sha256:')[:12]})",
        )
        for digest, _ in pushed.layers:
            assert f"layer {digest.removeprefix('sha256:')[:12]}: extracted" in run.stderr
    finally:
        for image in docker_client.images.list():
            if any(repo in name for name in image.tags + image.attrs.get("RepoDigests", [])):
                docker_client.images.remove(image.id, force=True)


def test_the_workloads_own_milestone_lines_open_the_phases(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The words are the protocol's (protocol.SAY_*), written by the workload's `log` and read
    here: one string, said once, on both sides."""
    from envcheck.smoke.workload import output as workload_output
    from envcheck.smoke.workload import protocol

    workload_output.log(protocol.SAY_DEVICE + "gpu:0 (asked for gpu:all)")
    workload_output.log(protocol.SAY_WINDOW_START + " 17.500")
    workload_output.log("step 31/60, 95.2 steps/s")
    workload_output.log(protocol.SAY_WINDOW_END + " 18.100")
    seen = Recorder()
    with activity.showing(seen):
        activity.LineSplitter().feed(capsys.readouterr().err.encode())
    assert seen.said == [
        ("phase", "smoke: training on gpu:0 (asked for gpu:all)"),
        ("phase", "smoke: training"),
        ("detail", "step 31/60, 95.2 steps/s"),
        ("phase", "smoke: known answers after training"),
        ("stop", ""),
    ]

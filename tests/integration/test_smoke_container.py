"""The smoke in a real container on this machine's engine (Debian docker.io 20.10, no NVIDIA
runtime), from the offline image envcheck-test/paddle-cpu:3.3.1. No GPU exists here: the GPU
paths end in the engine's real refusal, and bad scripts run in real containers.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from envcheck.contracts.errors import EnvironmentProblem
from envcheck.contracts.exitcodes import ExitStatus
from envcheck.contracts.facts import to_dict
from envcheck.contracts.findings import Finding
from envcheck.contracts.host_report import exit_status_of, verdict_of
from envcheck.contracts.record import replace
from envcheck.edges import activity
from envcheck.edges.signals import Interrupted
from envcheck.engine.docker_adapter import NVIDIA_RUNTIME_FIX, GpuRequestRefused
from envcheck.smoke.options import SmokeOptions
from envcheck.smoke.runner.check import smoke_check
from envcheck.smoke.runner.container import SmokeContainer, _oom_killed
from envcheck.smoke.runner.container_spec import ContainerSpec
from envcheck.smoke.runner.payload import WORKLOAD
from tests.smoke_host import CPU_CHOICE, NO_GPU_HOST, PADDLE_IMAGE, SCRIPTS, envcheck_containers
from tests.smoke_samples import BAD_SCRIPT_IDS, BAD_SCRIPTS

pytest_plugins = ("tests.smoke_fixtures",)

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("paddle_image", "no_leftovers")]


# what the doctor hands a container: the command's variables (the test's own) and its stderr
# (none: a sweep's removals are not this file's subject)
COMMAND: dict[str, Any] = {"variables": os.environ, "stderr": None}


def check(**options: Any) -> tuple[dict[str, Any], list[Finding]]:
    """The report's smoke section as JSON, and the findings."""
    doc, findings = smoke_check(
        NO_GPU_HOST,
        CPU_CHOICE,
        SmokeOptions(**{"quiet": True, "timeout": 180.0, "variables": os.environ, **options}),
    )
    return to_dict(doc), findings


def ids(findings: list[Finding]) -> list[str]:
    return [f.id for f in findings]


def spec(script: Path, timeout: float = 60.0, **kw: Any) -> ContainerSpec:
    return ContainerSpec(
        image=CPU_CHOICE.ref or "", args=kw.pop("args", ()), script=script, timeout=timeout, **kw
    )


# -- the real smoke ----------------------------------------------------------------------------
def test_cpu_smoke_in_the_container_that_learns_is_a_pass() -> None:
    doc, findings = check(export=True)
    assert ids(findings) == ["smoke.pass"] and verdict_of(findings) == "pass"
    assert doc is not None and doc["mode"] == "container" and doc["status"] == "pass"
    run = doc["runs"][0]
    assert run["device_used"] == "cpu" and run["loss_end"] < 0.9 * run["loss_start"]
    assert run["export"]["match"] is True
    assert doc["paddle"]["paddle_version"] == "3.3.1" and doc["container"]["removed"] is True
    assert doc["container"]["limits"]["network"] == "none"


class _Said:
    """An activity display that keeps what it was told."""

    def __init__(self) -> None:
        self.said: list[tuple[str, str]] = []

    def phase(self, text: str) -> None:
        self.said.append(("phase", text))

    def failed(self, why: str) -> None:
        self.said.append(("failed", why))

    def detail(self, text: str) -> None:
        pass

    def pause(self) -> None:
        pass

    def resume(self) -> None:
        pass

    def stop(self) -> None:
        pass


def test_expect_gpu_is_cpu_fallback_naming_the_refusal_and_the_cpu_build() -> None:
    seen = _Said()
    with activity.showing(seen):
        doc, findings = check(expect_gpu=True)
    # one line says why the smoke container is made again; the image as docker shows it
    (why,) = [text for kind, text in seen.said if kind == "failed"]
    assert why.startswith("the engine refused the GPU request (could not select device driver")
    assert why.endswith("creating the smoke container again without a GPU, to train on the CPU")
    creating = [text for kind, text in seen.said if text.startswith("creating the smoke")]
    assert len(creating) == 2 and all(
        re.fullmatch(
            rf"creating the smoke container from {re.escape(CPU_CHOICE.ref or '')} "
            r"\(image [0-9a-f]{12}\)",
            text,
        )
        for text in creating
    ), creating
    assert ids(findings) == ["smoke.gpu-refused", "smoke.cpu-fallback"]
    refused, fallback = findings
    assert 'could not select device driver "" with capabilities: [[gpu]]' in refused.message
    assert refused.remedy == NVIDIA_RUNTIME_FIX
    assert fallback.observed["causes"] == ["engine-refused", "cpu-build"]
    assert (
        verdict_of(findings) == "cpu-fallback"
        and exit_status_of(findings) == ExitStatus.CPU_FALLBACK
    )
    assert (
        doc is not None and doc["gpu_request"] == ["all"] and doc["runs"][0]["device_used"] == "cpu"
    )


def test_gpu_request_is_refused_at_start_and_leaves_no_container(
    docker_client: Any, containers_before: frozenset[str]
) -> None:
    box = SmokeContainer(docker_client, spec(WORKLOAD, gpu_ids=("all",)), **COMMAND)
    with pytest.raises(GpuRequestRefused) as refused, box:
        box.run()
    assert refused.value.hint == NVIDIA_RUNTIME_FIX.prose()
    assert (
        envcheck_containers(docker_client, containers_before) == []
    )  # it stayed "created": __exit__ removed it


# -- bad scripts in real containers ----------------------------------------------------------------
@pytest.mark.parametrize(
    ("script", "finding", "words"),
    BAD_SCRIPTS,
    ids=BAD_SCRIPT_IDS,
)
def test_bad_scripts_in_the_container_are_exit_5_with_a_clean_message(
    smoke_script: Callable[[str], Path], script: str, finding: str, words: str
) -> None:
    smoke_script(script)
    _, findings = check()
    assert ids(findings) == [finding] and words in findings[0].message
    assert exit_status_of(findings) == ExitStatus.SMOKE_FAILED


def test_an_image_claiming_a_gpu_this_host_does_not_have_fails_the_smoke(
    smoke_script: Callable[[str], Path],
) -> None:
    """A real container given no GPU, on a host with none, whose workload reports gpu:0: a
    contradiction (exit 5), where it was a pass that said "trained … gpu:0"."""
    smoke_script("claims_gpu.py")
    doc, findings = check()
    assert ids(findings) == ["smoke.contradicted"]
    assert "it claims training on gpu:0" in findings[0].message
    assert exit_status_of(findings) == ExitStatus.SMOKE_FAILED
    assert doc is not None and doc["status"] == "contradicted" and not doc["runs"][0]["on_gpu"]


def test_hanging_smoke_is_killed_at_the_timeout_and_removed(
    smoke_script: Callable[[str], Path],
) -> None:
    smoke_script("hang.py")
    doc, findings = check(timeout=3.0)
    assert ids(findings) == ["smoke.timeout"] and "never answers" in findings[0].message
    assert doc is not None and doc["timed_out"] and doc["duration_s"] >= 3.0  # not cut before it


# -- what a test counts ----------------------------------------------------------------------------
def test_a_container_another_process_left_is_not_counted_as_this_tests(docker_client: Any) -> None:
    """Another process shares the engine: an envcheck container it left (a killed run, before
    its deadline) must not fail this test's count, and this test must not remove it."""
    from envcheck.engine.docker_adapter import LABEL
    from tests.smoke_host import envcheck_container_ids

    foreign = docker_client.containers.create(PADDLE_IMAGE, labels={LABEL: "other"})
    try:
        before = envcheck_container_ids(docker_client)
        with SmokeContainer(docker_client, spec(SCRIPTS / "lockdown.py"), **COMMAND) as box:
            box.run()
        assert envcheck_containers(docker_client) != []  # the foreign one is on the engine
        assert envcheck_containers(docker_client, before) == []  # and none of this test's
        foreign.reload()  # still there: not this test's to remove
    finally:
        foreign.remove(force=True)


# -- the lockdown ---------------------------------------------------------------------------------
def test_the_container_is_locked_down(docker_client: Any) -> None:
    with SmokeContainer(
        docker_client, spec(SCRIPTS / "lockdown.py", args=("--device", "cpu")), **COMMAND
    ) as box:
        raw = box.run()
    seen = json.loads(raw.stdout)
    assert (seen["uid"], seen["gid"]) == (1000, 1000)
    assert not seen["root_writable"] and seen["tmp_writable"] and not seen["script_writable"]
    assert seen["interfaces"] == ["lo"]  # network_mode none
    assert seen["cap_eff"] == "0000000000000000" and seen["no_new_privs"] == "1"
    assert seen["memory_limit"] in (str(8 * 2**30), "8589934592")
    assert seen["pids_limit"] == "1024" and seen["shm_bytes"] == 256 * 2**20
    assert seen["home"] == "/tmp" and seen["cuda_device_order"] == "PCI_BUS_ID"
    assert seen["args"] == ["--device", "cpu"]


# -- always removed ---------------------------------------------------------------------------------
def test_ctrl_c_while_running_removes_the_container(
    docker_client: Any, containers_before: frozenset[str]
) -> None:
    def interrupt(pid: int | None) -> None:
        raise KeyboardInterrupt

    box = SmokeContainer(docker_client, spec(SCRIPTS / "hang.py"), **COMMAND)
    with pytest.raises(KeyboardInterrupt), box:
        box.run(on_start=interrupt)
    assert envcheck_containers(docker_client, containers_before) == []


def test_sigterm_during_the_run_removes_the_container(
    docker_client: Any, containers_before: frozenset[str]
) -> None:
    """CI cancelling the job sends SIGTERM: it must unwind like Ctrl-C."""
    import os
    import signal

    box = SmokeContainer(docker_client, spec(SCRIPTS / "hang.py"), **COMMAND)
    timer = threading.Timer(2.0, lambda: os.kill(os.getpid(), signal.SIGTERM))
    with pytest.raises(Interrupted) as stopped, box:
        timer.start()
        box.run()
    assert stopped.value.signum == signal.SIGTERM
    assert envcheck_containers(docker_client, containers_before) == []


# -- through the command line --------------------------------------------------------------------
def doctor(*flags: str) -> tuple[int, dict[str, Any]]:
    proc = subprocess.run(
        [sys.executable, "-m", "envcheck", "doctor", "--json", *flags],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return proc.returncode, json.loads(proc.stdout)


def test_doctor_with_the_offline_image_passes_and_reports_the_smoke(paddle_image: str) -> None:
    code, report = doctor("--image", paddle_image)
    assert (code, report["verdict"]) == (0, "pass")
    assert report["smoke"]["status"] == "pass" and report["smoke"]["mode"] == "container"


def test_doctor_expect_gpu_exits_6_cpu_fallback(paddle_image: str) -> None:
    code, report = doctor("--image", paddle_image, "--expect-gpu")
    assert (code, report["verdict"]) == (6, "cpu-fallback")
    found = {f["id"]: f for f in report["findings"]}
    assert found["smoke.cpu-fallback"]["observed"]["cause"] == "engine-refused"
    assert "smoke.gpu-refused" in found


# -- the image cannot be had: say so, and smoke in-process ----------------------------------------
@pytest.mark.registry
def test_no_pull_with_a_missing_image_is_an_error_not_a_fallback(registry: Any) -> None:
    """`--no-pull` names a wish: that image, or a failure."""
    choice = replace(CPU_CHOICE, ref=registry.ref("envcheck-test/nothing:1"))
    with pytest.raises(EnvironmentProblem, match=r"pulling is off \(--no-pull\)"):
        smoke_check(NO_GPU_HOST, choice, SmokeOptions(pull=False, quiet=True, variables=os.environ))


@pytest.mark.registry
@pytest.mark.parametrize(
    ("name", "words"),
    [("envcheck-test/nothing:1", "unavailable (tag not found)")],
    ids=["missing-tag"],
)
def test_image_that_cannot_be_had_warns_and_falls_back_in_process(
    registry: Any, name: str, words: str
) -> None:
    choice = replace(CPU_CHOICE, ref=registry.ref(name))
    doc, findings = smoke_check(NO_GPU_HOST, choice, SmokeOptions(quiet=True, variables=os.environ))
    assert ids(findings) == ["smoke.image-unavailable", "smoke.pass"]
    assert words in findings[0].message and findings[0].severity == "warn"
    assert doc.mode == "in-process" and doc.fallback
    assert verdict_of(findings) == "warn" and exit_status_of(findings) == ExitStatus.OK


def test_unreachable_registry_warns_and_falls_back_in_process() -> None:
    choice = replace(CPU_CHOICE, ref="127.0.0.1:1/envcheck-test/paddle-cpu:3.3.1")
    doc, findings = smoke_check(NO_GPU_HOST, choice, SmokeOptions(quiet=True, variables=os.environ))
    assert ids(findings) == ["smoke.image-unavailable", "smoke.pass"]
    assert "connection refused" in findings[0].message.lower()  # the engine's own words
    assert doc.runs[0].device_used == "cpu"


def test_a_bug_while_reading_the_output_is_raised_and_the_container_removed(
    docker_client: Any,
    monkeypatch: pytest.MonkeyPatch,
    containers_before: frozenset[str],
) -> None:
    """The attach reader once swallowed every exception: our bug became a smoke verdict."""
    from envcheck.smoke.parse import OutputCollector

    def broken(self: OutputCollector, chunk: bytes) -> None:
        raise KeyError("a bug in envcheck")

    monkeypatch.setattr(OutputCollector, "feed_stdout", broken)
    with (
        pytest.raises(KeyError, match="a bug in envcheck"),
        SmokeContainer(docker_client, spec(SCRIPTS / "lockdown.py"), **COMMAND) as box,
    ):
        box.run()
    assert envcheck_containers(docker_client, containers_before) == []


def test_oom_check_of_a_container_removed_under_us_is_no_traceback(docker_client: Any) -> None:
    """Exit 137 (killed) and then removed by another tool's `docker rm -f` before envcheck asks
    whether the memory limit did it: not OOM-killed, not a docker.errors.NotFound (exit 3)."""
    container = docker_client.containers.create("envcheck-test/busybox:1", ["true"])
    container.remove(force=True)
    assert _oom_killed(container) is False

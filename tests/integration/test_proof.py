"""No green without evidence: what the verdict rests on (`proof`), and `--expect-gpu` when
nothing trained on a GPU."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from envcheck.contracts.exitcodes import ExitStatus
from envcheck.contracts.findings import Finding, fail, passed, warn
from envcheck.contracts.host_report import UNPROVEN_ID, exit_status_of
from envcheck.verdict.proof import expect_gpu_unproven, proof_of, proof_words
from tests.inprocess import doctor_process

pytest_plugins = ("tests.fakenv",)

NO_ENGINE = "unix:///nonexistent/docker.sock"
GPU_PASS = passed("smoke.pass", "trained", layer="smoke", devices=["gpu:0"])
CPU_PASS = passed("smoke.pass", "trained", layer="smoke", devices=["cpu"])
NOT_RUN = warn("smoke.not-run", "no smoke training ran", fix="install Paddle", layer="smoke")


@pytest.mark.parametrize(
    ("findings", "asked", "proof"),
    [
        ([GPU_PASS], True, "gpu-trained"),
        ([CPU_PASS], True, "cpu-trained"),
        ([NOT_RUN], True, "none"),
        ([GPU_PASS, fail("smoke.wrong-results", "zeros", fix="fix", layer="smoke")], True, "none"),
        ([], False, "static"),
        ([GPU_PASS], False, "static"),
    ],
    ids=["gpu", "cpu", "not-run", "smoke-failed", "no-smoke", "facts"],
)
def test_proof_is_what_the_run_showed(findings: list[Finding], asked: bool, proof: str) -> None:
    assert proof_of(findings, smoke_asked=asked) == proof


def test_expect_gpu_with_nothing_trained_fails_with_the_smokes_reasons() -> None:
    unproven = expect_gpu_unproven([NOT_RUN], "none")
    assert unproven is not None and unproven.severity == "fail" and unproven.family == "smoke"
    assert "no smoke training ran" in unproven.message and unproven.fix == "install Paddle"


def test_expect_gpu_is_satisfied_by_a_gpu_run() -> None:
    assert expect_gpu_unproven([NOT_RUN], "gpu-trained") is None


def test_under_expect_gpu_a_static_proof_is_not_a_pass() -> None:
    """`--no-smoke --expect-gpu` (or `--facts` of a host object) proved nothing on a GPU. Before:
    a warning, so a healthy host passed the GPU gate with exit 0; now a failure, exit 1
    (unverified), not 5 (no smoke failed) nor 6 (nothing fell back)."""
    unproven = expect_gpu_unproven([], "static")
    assert unproven is not None and (unproven.id, unproven.severity) == (UNPROVEN_ID, "fail")
    assert "unverified GPU" in unproven.message
    assert exit_status_of([unproven]) == ExitStatus.INCOMPATIBLE


def test_an_existing_smoke_failure_is_not_said_twice() -> None:
    crashed = fail("smoke.crashed", "crashed", fix="look at the log", layer="smoke")
    assert expect_gpu_unproven([crashed], "none") is None


@pytest.fixture
def h100(fake_nvidia: Callable[[str], dict[str, str]]) -> dict[str, str]:
    fake = fake_nvidia("h100-580")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")} | fake
    return env | {"PYTHONPATH": fake["FAKE_NVIDIA_SITE_PACKAGES"], "DOCKER_HOST": NO_ENGINE}


@pytest.mark.fakegpu
def test_expect_gpu_when_no_smoke_could_run_is_a_failure(
    h100: dict[str, str], sibling_venv: Path
) -> None:
    """A healthy H100 host, but no engine and no Paddle in the target: before, WARN and exit 0,
    then exit 5, "smoke training failed", for a smoke that never started; now 6: nothing ran on
    the GPU this host has."""
    python = str(sibling_venv / "bin" / "python")
    code, doc, _ = doctor_process(h100, "--expect-gpu", "--python", python)
    ids = {f["id"]: f for f in doc["findings"]}
    assert ids[UNPROVEN_ID]["severity"] == "fail", ids
    assert doc["proof"] == "none" and doc["verdict"] == "fail" and code == 6
    # without --expect-gpu the same run is an honest warning, and says it proved nothing
    code, doc, _ = doctor_process(h100, "--python", python)
    assert (
        code == 0
        and doc["proof"] == "none"
        and UNPROVEN_ID not in {f["id"] for f in doc["findings"]}
    )


@pytest.mark.fakegpu
def test_no_smoke_keeps_the_static_tier_and_says_so(h100: dict[str, str]) -> None:
    code, doc, _ = doctor_process(h100, "--expect-gpu", "--no-smoke")
    unproven = {f["id"]: f["severity"] for f in doc["findings"]}.get(UNPROVEN_ID)
    # Before: a warning, and the healthy H100 passed the GPU gate; now unverified: exit 1
    assert doc["proof"] == "static" and unproven == "fail" and code == 1
    run = subprocess.run(
        [sys.executable, "-m", "envcheck", "doctor", "--no-smoke", "--no-color"],
        env=h100,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "Proof: static checks only: training was not proven" in run.stdout


ENV = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}


@pytest.mark.docker
@pytest.mark.parametrize(
    ("args", "env", "words"),
    [
        (["--no-pull"], {}, "pulling is off (--no-pull)"),
        (["--no-pull", "--image", "envcheck-test/not-here:1"], {}, "envcheck-test/not-here:1"),
        (
            ["--image", "envcheck-test/paddle-cpu:3.3.1"],
            {"DOCKER_HOST": NO_ENGINE},
            "needs a container",
        ),
        (["--no-pull"], {"DOCKER_HOST": NO_ENGINE}, "needs a container"),
    ],
    ids=[
        "no-pull-missing-choice",
        "no-pull-missing-named",
        "named-engine-down",
        "no-pull-engine-down",
    ],
)
def test_a_demanded_image_is_tested_or_the_run_fails(
    args: list[str], env: dict[str, str], words: str
) -> None:
    """Never a quiet move of the smoke into the host's Python."""
    code, doc, err = doctor_process(ENV | env, *args)
    assert code == 4 and doc["verdict"] == "error", doc
    assert words in doc["error"]["message"] and words in err


def test_the_proof_line_says_why_nothing_was_proven() -> None:
    """On the real H100 the CPU wheel's run under --expect-gpu trained (loss 0.694 -> 0.217) and
    the report said "Proof: none: no smoke training completed"."""
    fallback = fail("smoke.cpu-fallback", "trained on the CPU", fix="install", layer="smoke")
    crashed = fail("smoke.crashed", "error 209", fix="install", layer="smoke")
    unproven = fail(UNPROVEN_ID, "nothing trained", fix="start docker", layer="smoke")
    assert proof_words("none", "cpu-fallback", [fallback]) == (
        "none: the smoke trained on the CPU, not on the GPU it was meant to use"
    )
    assert proof_words("none", "wrong-results", [crashed]) == "none: the smoke's results were wrong"
    assert proof_words("none", "fail", [crashed]) == "none: the smoke training failed"
    assert proof_words("none", "fail", [unproven]) == "none: no smoke training ran"
    assert proof_words("cpu-trained", "pass", []) == "the smoke trained on the CPU only"


def test_a_gpu_proof_says_how_many_of_the_hosts_gpus_trained() -> None:
    """A Slurm step given one GPU of eight proved one, and the report said "the GPU"."""
    one = passed("smoke.pass", "trained", layer="smoke", devices=["gpu:0"])
    assert proof_words("gpu-trained", "pass", [one], gpus=8) == (
        "the smoke trained on 1 of 8 GPUs (gpu:0) and its checks passed"
    )
    every = passed("smoke.pass", "trained", layer="smoke", devices=["gpu:0", "gpu:1"])
    assert proof_words("gpu-trained", "pass", [every], gpus=2).startswith(
        "the smoke trained on 2 of 2 GPUs (gpu:0, gpu:1)"
    )

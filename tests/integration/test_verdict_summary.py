"""The verdict's reason on the last screen and a CPU run beside a usable GPU is a
CPU fallback, asked or not: the recorded real H100 with Paddle 2.6.2 judged again, and
the fake H100 (C-level fakes) with this venv's real CPU Paddle."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from envcheck.contracts.facts import host_from_document
from envcheck.smoke.options import SmokeOptions
from envcheck.smoke.plan import gpu_expectation
from tests import scenarios as s
from tests.inprocess import envcheck, envcheck_process
from tests.paths import DATA

pytest_plugins = ("tests.fakenv",)

REAL_262 = DATA / "real-h100" / "f-gpu262-expect.json"


def _after_verdict(text: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Verdict: "))
    return lines[start:]


def _before_verdict(text: str) -> list[str]:
    """The short summary: the rows between the last layer and the verdict."""
    lines = text.splitlines()
    end = next(i for i, line in enumerate(lines) if line.startswith("Verdict: "))
    start = max(i for i, line in enumerate(lines[:end]) if not line) + 1
    return lines[start:end]


def test_the_real_h100_with_262_names_its_cause_above_the_verdict_and_fix_under_it(
    tmp_path: Path,
) -> None:
    """Before: `Verdict: FAIL (exit 1)`, then `Proof:`; the cause 12 lines above. Then: the
    command cut from the cause's prose, the same chain once more in its fix line."""
    env = {**os.environ, "ENVCHECK_DRIVER_ROOT": str(tmp_path), "NO_COLOR": "1"}
    run = envcheck("doctor", "--facts", str(REAL_262), "--no-smoke", env=env)
    assert run.returncode == 5  # the recorded smoke's failure is kept
    rows = _before_verdict(run.stdout)
    assert rows[0] == "  FAIL  paddle.arch-missing: envcheck fix does it (below)"
    assert (
        "  FAIL  cudnn.major-mismatch, smoke.loaded-cudnn-mismatch, smoke.loaded-cuda-mismatch: "
        "resolved by the fix for paddle.arch-missing"
    ) in rows  # one line for what the root's fix resolves
    assert "  WARN  smoke.loaded-cudnn-shadowed: by hand (below)" in rows
    tail = _after_verdict(run.stdout)
    assert run.stdout.splitlines()[-len(tail) - 1] == "Proof: none: the smoke training failed"
    assert tail[:2] == ["Verdict: FAIL (exit 5)", "Next, in order:"]
    # the judged interpreter, as the saved report names it, is the fix's subject
    assert tail[2].startswith("  envcheck fix --python /") and tail[2].endswith(" --yes")


def test_a_warning_is_listed_above_the_verdict_and_envcheck_fix_under_it(
    tmp_path: Path,
) -> None:
    facts = tmp_path / "host.json"
    facts.write_text(
        '{"machine": {"arch": "x86_64"}, "driver": {}, "gpus": [],'
        ' "paddle": {"status": "absent", "python": "/u/bin/python"}}'
    )
    run = envcheck(
        "doctor", "--facts", str(facts), "--no-smoke", env={**os.environ, "NO_COLOR": "1"}
    )
    assert _before_verdict(run.stdout) == [
        "  WARN  paddle.missing: envcheck fix does it (below)",
        "Proof: static checks only: training was not proven (no smoke run)",
    ]
    assert _after_verdict(run.stdout)[1:] == [
        "Next: envcheck fix does all of it (without --yes it shows its plan):",
        "  envcheck fix --python /u/bin/python --yes",
    ]


def test_a_cpu_build_beside_a_usable_gpu_is_expected_to_use_it() -> None:
    host = host_from_document(
        s.host(driver=s.driver("580.159.04", "13.0"), gpus=[s.H100], paddle=s.PADDLE_331_CPU)
    )
    assert gpu_expectation(host, SmokeOptions(), gpu_build=False) == (
        True,
        "1 usable GPU(s) on the host",
    )
    assert (
        gpu_expectation(host_from_document(s.host()), SmokeOptions(), gpu_build=False)[0] is False
    )


@pytest.mark.fakegpu
@pytest.mark.parametrize("expect", [[], ["--expect-gpu"]], ids=["plain", "expect-gpu"])
def test_the_cpu_wheel_on_the_fake_h100_is_a_cpu_fallback_asked_or_not(
    fake_nvidia: Callable[[str], dict[str, str]], expect: list[str]
) -> None:
    """Before: without --expect-gpu, `PASS smoke.pass … (no GPU expected: 1 usable GPU(s), but
    the Paddle to test is a CPU build)` and FAIL exit 1."""
    fake = fake_nvidia("h100-580")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "DOCKER_"))}
    env |= fake | {"PYTHONPATH": fake["FAKE_NVIDIA_SITE_PACKAGES"], "NO_COLOR": "1"}
    run = envcheck_process(
        "doctor", "--in-process", "--python", sys.executable, "--quiet", *expect, env=env
    )
    assert run.returncode == 6, run.stdout[-2000:]
    assert "no GPU expected" not in run.stdout
    tail = _after_verdict(run.stdout)
    assert tail[0] == "Verdict: CPU-FALLBACK (exit 6)"
    assert f"  envcheck fix --python {sys.executable} --yes" in tail
    rows = _before_verdict(run.stdout)
    assert rows[0] == "  FAIL  paddle.cpu-build: envcheck fix does it (below)"
    assert "  FAIL  smoke.cpu-fallback: resolved by the fix for paddle.cpu-build" in rows

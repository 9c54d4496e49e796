"""The verdict's reason on the last screen (issue 21.7) and a CPU run beside a usable GPU is a
CPU fallback, asked or not (21.8): the recorded real H100 with Paddle 2.6.2 judged again, and
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

pytest_plugins = ("tests.fakenv",)

REAL_262 = Path(__file__).parent / "data" / "real-h100" / "f-gpu262-expect.json"


def _after_verdict(text: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Verdict: "))
    return lines[start:]


def test_the_real_h100_with_262_names_its_cause_and_command_under_the_verdict(
    tmp_path: Path,
) -> None:
    """Before: `Verdict: FAIL (exit 1)`, then `Proof:`; the cause 12 lines above."""
    env = {**os.environ, "ENVCHECK_DRIVER_ROOT": str(tmp_path), "NO_COLOR": "1"}
    run = envcheck("doctor", "--facts", str(REAL_262), "--no-smoke", env=env)
    assert run.returncode == 5  # the recorded smoke's failure is kept (issue 21.10)
    tail = _after_verdict(run.stdout)
    assert tail[:2] == [
        "Verdict: FAIL (exit 5)",
        (
            "  FAIL  paddle.arch-missing: `/opt/torch/.venv/bin/python3 -m pip install "
            "paddlepaddle-gpu==3.3.1 -i https://www.paddlepaddle.org.cn/packages/stable/cu129/`"
        ),
    ]
    assert (
        "  FAIL  cudnn.major-mismatch, smoke.loaded-cudnn-mismatch, smoke.loaded-cuda-mismatch: "
        "resolved by the fix for paddle.arch-missing"
    ) in tail  # one line for what the root's fix resolves
    assert "  WARN  smoke.loaded-cudnn-shadowed: its fix is above" in tail
    assert tail[-1] == "Proof: none: the smoke training failed"


def test_a_warning_is_listed_under_the_verdict_with_its_command(tmp_path: Path) -> None:
    facts = tmp_path / "host.json"
    facts.write_text(
        '{"machine": {"arch": "x86_64"}, "paddle": {"status": "absent", "python": "/u/bin/python"}}'
    )
    run = envcheck(
        "doctor", "--facts", str(facts), "--no-smoke", env={**os.environ, "NO_COLOR": "1"}
    )
    assert [line for line in _after_verdict(run.stdout) if line.startswith("  ")] == [
        (
            "  WARN  paddle.missing: `/u/bin/python -m pip install paddlepaddle==3.3.1 -i "
            "https://www.paddlepaddle.org.cn/packages/stable/cpu/`"
        )
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
    assert tail[1].startswith(f"  FAIL  paddle.cpu-build: `{sys.executable} -m pip uninstall -y ")
    assert "  FAIL  smoke.cpu-fallback: resolved by the fix for paddle.cpu-build" in tail

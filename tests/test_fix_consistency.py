"""Every fake host profile, judged as users run it: no report tells the user two opposite things
(issue #8 item 14). The smoke runs in-process with this venv's real CPU Paddle where a GPU is
expected, so the smoke's own fixes meet the judge's."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

from tests.fakenv import profile_names
from tests.fix_consistency import contradictions
from tests.inprocess import doctor_process

pytest_plugins = ("tests.fakenv",)
pytestmark = pytest.mark.fakegpu


def _findings(env: dict[str, str], *args: str) -> list[dict[str, object]]:
    return list(doctor_process(env, *args)[1]["findings"])


def test_the_checker_sees_a_contradiction() -> None:
    pairs = [
        {"id": "a", "fix": "`python -m pip install paddlepaddle-gpu==3.3.1 -i https://x/cu126/`"},
        {"id": "b", "fix": "`python -m pip install paddlepaddle==3.3.1 -i https://x/cpu/`"},
    ]
    assert len(contradictions(pairs)) == 2  # the package and the index
    reinstall = {
        "id": "c",
        "fix": "`python -m pip uninstall -y paddlepaddle && python -m pip install paddlepaddle==3.3.1`",
    }
    cpu_as_gpu = {
        "id": "d",
        "fix": "install the GPU build: `python -m pip install paddlepaddle==3.3.1 -i https://x/cpu/`",
    }
    assert len(contradictions([reinstall])) == len(contradictions([cpu_as_gpu])) == 1


@pytest.mark.parametrize("profile", profile_names())
@pytest.mark.parametrize(
    "mode",
    [["--no-smoke"], ["--no-smoke", "--expect-gpu"], ["--in-process", "--expect-gpu"]],
    ids=["static", "expect-gpu", "smoke"],
)
def test_no_report_contradicts_itself(
    fake_nvidia: Callable[[str], dict[str, str]], profile: str, mode: list[str]
) -> None:
    fake = fake_nvidia(profile)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")} | fake
    env["PYTHONPATH"] = fake["FAKE_NVIDIA_SITE_PACKAGES"]
    assert contradictions(_findings(env, *mode, "--smoke-timeout", "120")) == []


@pytest.mark.parametrize(
    "mode",
    [["--no-smoke", "--expect-gpu"], ["--in-process", "--expect-gpu"]],
    ids=["expect-gpu", "smoke"],
)
def test_this_driverless_machine_does_not_contradict_itself(mode: list[str]) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    assert contradictions(_findings(env, *mode)) == []


def test_a_socket_that_refuses_us_gets_the_docker_group_fix_everywhere() -> None:
    """doctor said "start Docker" where pull-image said "add yourself to the docker group"."""
    from envcheck.facts import host_from_document
    from envcheck.judge import Context, judge
    from envcheck.matrix.load import load_matrix
    from envcheck.select import select_image
    from envcheck.smoke.failures import image_unavailable
    from envcheck.smoke.options import SmokeOptions
    from envcheck.smoke.plan import plan_smoke
    from tests import scenarios as s

    denied = {
        "status": "error",
        "denied": True,
        "host": "unix:///var/run/docker.sock",
        "reason": "permission denied on the engine socket: [Errno 13] Permission denied",
    }
    host = host_from_document(s.host(paddle=s.PADDLE_331_CPU, engine=denied))
    matrix = load_matrix(None)
    image = select_image(host, matrix)
    plan = plan_smoke(host, image, SmokeOptions())
    assert plan.fallback is not None
    findings = [
        *judge(Context(host=host, matrix=matrix, image=image, needs_engine=True)),
        image_unavailable(plan, plan.fallback),
    ]
    fixes = {f.id: f.fix or "" for f in findings}
    assert (
        "docker group" in fixes["engine.unreachable"]
        and "docker group" in fixes["smoke.image-unavailable"]
    )
    assert (
        contradictions([{"id": f.id, "severity": f.severity, "fix": f.fix} for f in findings]) == []
    )

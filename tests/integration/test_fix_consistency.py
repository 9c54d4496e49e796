"""Every fake host profile, judged as users run it: no report tells the user two opposite things
(two package names, two indexes, two plans). The smoke runs in-process with this venv's real CPU
Paddle where a GPU is expected, so the smoke's own fixes meet the judge's."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fakenv import profile_names
from tests.fix_consistency import contradictions
from tests.inprocess import doctor_process
from tests.paths import DATA
from tests.subject_commands import uncarried

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
    # a variant switch removes the installed build before installing the same name again
    assert (len(contradictions([reinstall])), len(contradictions([cpu_as_gpu]))) == (0, 1)


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
    doc = doctor_process(env, *mode, "--smoke-timeout", "120")[1]
    assert contradictions(doc["findings"]) == []
    assert uncarried(json.dumps(doc), doc["host"]["paddle"]["python"]) == []


@pytest.mark.parametrize("profile", profile_names())
def test_every_envcheck_command_names_the_python_given(
    fake_nvidia: Callable[[str], dict[str, str]], profile: str, sibling_venv: Path
) -> None:
    """`--python` of a venv without Paddle on every fake host: each envcheck command the report
    prints (`envcheck fix --yes` in a remedy, the fix's own command) names it."""
    fake = fake_nvidia(profile)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")} | fake
    env["PYTHONPATH"] = fake["FAKE_NVIDIA_SITE_PACKAGES"]
    python = str(sibling_venv / "bin" / "python")
    doc = doctor_process(env, "--no-smoke", "--python", python)[1]
    assert doc["host"]["paddle"]["python"] == python
    assert doc["meta"]["fix_command"][:4] == ["envcheck", "fix", "--python", python]
    assert uncarried(json.dumps(doc), python) == []


def test_the_checker_sees_two_plans() -> None:
    """The real H100 with Paddle 2.6.2, as reported before one plan per report: two
    plans, one for the old build and one that replaces it."""
    two = [
        {"id": "cudnn.major-mismatch", "fix": "`python -m pip install nvidia-cudnn-cu11==8.*`"},
        {
            "id": "paddle.arch-missing",
            "fix": "`python -m pip install paddlepaddle-gpu==3.3.1 -i https://x/cu129/`",
        },
    ]
    assert contradictions(two) == [
        (
            "two plans: nvidia-cudnn-cu11 (cudnn.major-mismatch) beside Paddle "
            "{'paddlepaddle-gpu': 'paddle.arch-missing'}"
        )
    ]


RECORDED = {
    **{p.name: p for p in sorted((DATA / "hosts").glob("*.json"))},
    **{p.name: p for p in sorted((DATA / "real-h100").glob("[a-f]-*.json"))},
}


@pytest.mark.parametrize("name", RECORDED, ids=lambda n: n.removesuffix(".json"))
@pytest.mark.parametrize(
    "mode", [["--no-smoke"], ["--no-smoke", "--expect-gpu"]], ids=["static", "expect-gpu"]
)
def test_no_recorded_real_host_gets_two_plans(name: str, mode: list[str], tmp_path: Path) -> None:
    """The recorded real machines judged again (`--facts`): one plan each."""
    env = {**os.environ, "ENVCHECK_DRIVER_ROOT": str(tmp_path)}  # nothing probed here
    findings = _findings(env, "--facts", str(RECORDED[name]), *mode)
    assert contradictions(findings) == []


def test_on_the_real_h100_with_262_the_arch_fix_stands_and_cudnn_points_at_it(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "ENVCHECK_DRIVER_ROOT": str(tmp_path)}
    report = RECORDED["f-gpu262-expect.json"]
    fixes = {f["id"]: f["fix"] for f in _findings(env, "--facts", str(report), "--no-smoke")}
    assert fixes["cudnn.major-mismatch"] == "resolved by the fix for paddle.arch-missing"
    assert fixes["paddle.arch-missing"] == (
        "install a build compiled for sm_90: "
        "`/opt/torch/.venv/bin/python3 -m pip uninstall -y paddlepaddle-gpu`; then "
        "`/opt/torch/.venv/bin/python3 -m pip install paddlepaddle-gpu==3.3.1 "
        "-i https://www.paddlepaddle.org.cn/packages/stable/cu129/`"
    )


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
    from envcheck.contracts.facts import host_from_document
    from envcheck.image.choice import select_image
    from envcheck.matrix.load import load_matrix
    from envcheck.smoke.options import SmokeOptions
    from envcheck.smoke.plan import plan_smoke
    from envcheck.smoke.verdict.failures import image_unavailable
    from envcheck.verdict.judge import Context, judge
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

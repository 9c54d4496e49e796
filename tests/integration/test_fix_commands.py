"""Advice a person can run as printed.

Every command any scenario prints — each fake GPU profile as the real probes see it (with this
venv's CPU Paddle, and with an interpreter that has none), the judge's scenarios, the recorded
real hosts (tests/data/hosts, tests/data/real-h100), the smoke's fixes on the fakes — must name
the judged interpreter by its absolute path, install only pinned releases that the recorded
indexes hold (envcheck/verdict/known_packages.toml), remove the conflicting Paddle first, and pass
`bash -n` and `zsh -n` without a glob, a redirect or a <placeholder> a shell would act on.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from typing import Any

import pytest

from envcheck.contracts.facts import host_from_document
from envcheck.contracts.host_report import Report
from envcheck.image.choice import select_image
from envcheck.matrix.load import load_matrix
from envcheck.render.text import pip_line
from envcheck.verdict.fixes import PADDLE_DISTRIBUTIONS
from envcheck.verdict.judge import Context, judge
from envcheck.verdict.known_packages import known_packages
from tests import scenarios as s
from tests.fakenv import profile_names
from tests.fix_commands import commands_of, pip_problems, shell_problems
from tests.fleet_samples import recorded_hosts
from tests.inprocess import doctor_process
from tests.scenarios import JUDGE_HOSTS

pytest_plugins = ("tests.fakenv",)

NO_PADDLE = "/usr/bin/python3"  # Debian's Python: no Paddle (the fakes' "not installed" case)

# Paddle 2.5.2 for CUDA 10.2 (its matrix row), no libcudnn found: PyPI never had a cuDNN wheel
# for CUDA 10 (`nvidia-cudnn-cu10` is a 404).
PADDLE_252_CU102 = {
    "status": "ok",
    "package": "paddlepaddle-gpu",
    "version": "2.5.2",
    "cuda": "10.2",
    "cudnn": "7.6.5",
    "compiled_cuda_archs": None,
    "with_pip_cuda_libraries": False,
    "python": "/home/u/train/bin/python",
}
EXTRA_HOSTS: dict[str, dict[str, Any]] = {
    "t4-cu102-wheel-no-cudnn": s.host(
        driver=s.driver("470.82.01", "11.4"),
        gpus=[s.T4],
        paddle=PADDLE_252_CU102,
        cudnn=s.cudnn(None),
    ),
    "a100-both-distributions": s.host(
        driver=s.driver("535.104.05", "12.2"),
        gpus=[s.A100],
        paddle=s.PADDLE_331_CU126
        | {"python": "/srv/venv/bin/python", "distributions": list(PADDLE_DISTRIBUTIONS)},
    ),
    "laptop-no-paddle": s.host(
        paddle={"status": "absent", "python": "/home/u/train/bin/python"},
    ),
}


def judged(host_doc: dict[str, Any], expect_gpu: bool = False) -> Report:
    matrix = load_matrix()
    host = host_from_document(host_doc)
    image = select_image(host, matrix)
    findings = judge(Context(host, matrix, image, expect_gpu=expect_gpu, needs_engine=True))
    return Report(host=host, findings=tuple(findings), image=image)


@pytest.fixture(scope="module")
def profile_hosts(fake_nvidia: Callable[[str], dict[str, str]]) -> dict[str, dict[str, Any]]:
    """Each fake profile probed by `doctor --no-smoke --json`, with this venv's CPU Paddle and
    with an interpreter without Paddle."""
    found = {}
    for profile in profile_names():
        env = _env(fake_nvidia(profile))
        for label, args in (("cpu-wheel", ()), ("no-paddle", ("--python", NO_PADDLE))):
            _, doc, _ = doctor_process(env, "--no-smoke", *args)
            found[f"{profile}/{label}"] = doc["host"]
    return found


def _env(fake: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "DOCKER_"))}
    return env | fake | {"PYTHONPATH": fake["FAKE_NVIDIA_SITE_PACKAGES"]}


def _problems(name: str, report: Report) -> list[str]:
    python = report.host.paddle.python
    line = pip_line(report)
    commands = commands_of(
        [{"id": f.id, "message": f.message, "fix": f.fix} for f in report.findings]
    ) + ([("pip line", line.strip("`"))] if line else [])
    return [
        f"{name} {fid}: {problem}: {command}"
        for fid, command in commands
        for problem in shell_problems(command) + pip_problems(command, python)
    ]


def test_the_checks_see_each_kind_of_bad_command() -> None:
    """The old commands, each caught: a bare `python`, an unpinned package, a cuDNN wheel PyPI
    never had, a zsh glob, a placeholder that bash reads as a redirect."""
    assert pip_problems("python -m pip install paddlepaddle-gpu", None) == [
        "interpreter 'python', not the judged None",
        "paddlepaddle-gpu: not pinned",
    ]
    assert pip_problems("/v/bin/python -m pip install nvidia-cudnn-cu10==7.6.5.32", "/v/bin/python")
    assert shell_problems("python -m pip install nvidia-cudnn-cu11==8.*") == [
        "unquoted glob 'nvidia-cudnn-cu11==8.*' (zsh: no matches found)"
    ]
    assert "a <placeholder> (a redirect in a shell)" in shell_problems(
        "sudo nvidia-smi mig -i 0 -cgi <profile> -C"
    )
    assert shell_problems("echo 'unclosed")[0].startswith("bash -n:")
    assert shutil.which("zsh"), "zsh is needed (scripts/dev setup installs it)"


def test_the_recorded_list_is_dated_and_holds_what_the_matrix_installs() -> None:
    known = known_packages()
    assert known.refreshed >= "2026-11-24"
    assert "nvidia-cudnn-cu10" not in known.pypi and known.exists("nvidia-cudnn-cu11", "8.6.0.163")
    matrix = load_matrix()
    for build in matrix.builds:
        assert pip_problems(build.pip.replace("python", "/p/python", 1), "/p/python") == [], build


@pytest.mark.parametrize(
    "name", [*JUDGE_HOSTS, *EXTRA_HOSTS, *recorded_hosts()], ids=lambda n: n.replace(".", "-")
)
@pytest.mark.parametrize("expect_gpu", [False, True], ids=["plain", "expect-gpu"])
def test_every_judged_command_runs_as_printed(name: str, expect_gpu: bool) -> None:
    doc = {**JUDGE_HOSTS, **EXTRA_HOSTS, **recorded_hosts()}[name]
    if not (doc.get("paddle") or {}).get("python"):  # a doctor's report always records it
        doc = doc | {"paddle": (doc.get("paddle") or {}) | {"python": "/home/u/train/bin/python"}}
    assert _problems(name, judged(doc, expect_gpu)) == []


@pytest.mark.fakegpu
def test_every_fake_hosts_command_runs_as_printed(
    profile_hosts: dict[str, dict[str, Any]],
) -> None:
    found = [
        problem
        for name, doc in profile_hosts.items()
        for expect in (False, True)
        for problem in _problems(name, judged(doc, expect))
    ]
    assert found == [], "\n".join(sorted(set(found)))


@pytest.mark.fakegpu
@pytest.mark.parametrize(
    ("profile", "args"),
    [
        ("h100-580", ["--in-process"]),
        ("h100-580", ["--in-process", "--python", NO_PADDLE]),
        ("t4-470", ["--in-process", "--expect-gpu"]),
        ("rtx5090-570", ["--in-process", "--expect-gpu"]),
        ("no-driver", ["--in-process", "--python", NO_PADDLE]),
    ],
    ids=["h100-cpu-wheel", "h100-no-paddle", "t4-expect-gpu", "rtx5090-expect-gpu", "no-driver"],
)
def test_the_smokes_commands_run_as_printed(
    fake_nvidia: Callable[[str], dict[str, str]], profile: str, args: list[str]
) -> None:
    _, doc, _ = doctor_process(_env(fake_nvidia(profile)), *args, "--smoke-timeout", "120")
    python = doc["host"]["paddle"]["python"]
    found = [
        f"{fid}: {problem}: {command}"
        for fid, command in commands_of(doc["findings"])
        for problem in shell_problems(command) + pip_problems(command, python)
    ]
    assert found == [], "\n".join(found)


def test_a_cuda10_build_gets_no_cudnn_wheel_pypi_never_had() -> None:
    fix = {f.id: f.fix for f in judged(EXTRA_HOSTS["t4-cu102-wheel-no-cudnn"]).findings}
    assert "cudnn-cu10" not in (fix["cudnn.missing"] or "")
    assert "install cuDNN 7.6.5 for CUDA 10" in (fix["cudnn.missing"] or "")


def test_both_distributions_are_removed_before_the_one_build_is_installed() -> None:
    report = judged(EXTRA_HOSTS["a100-both-distributions"])
    remedy = next(f.remedy for f in report.findings if f.id == "paddle.both-installed")
    assert remedy is not None
    first, second, then = (c.shell() for c in remedy.commands[:3])
    assert first == "/srv/venv/bin/python -m pip uninstall -y paddlepaddle"  # the wrong one first
    assert second == "/srv/venv/bin/python -m pip uninstall -y paddlepaddle-gpu"
    assert then.startswith("/srv/venv/bin/python -m pip install paddlepaddle-gpu==3.3.1 -i ")


def test_a_host_without_gpu_is_offered_the_cpu_build_the_image_line_shows() -> None:
    """`paddle.missing` said `pip install paddlepaddle-gpu` where the image section said CPU."""
    report = judged(EXTRA_HOSTS["laptop-no-paddle"])
    fix = next(f.fix for f in report.findings if f.id == "paddle.missing")
    assert fix == pip_line(report)
    assert fix == (
        "`/home/u/train/bin/python -m pip install paddlepaddle==3.3.1 "
        "-i https://www.paddlepaddle.org.cn/packages/stable/cpu/`"
    )


@pytest.mark.fakegpu
def test_the_cpu_fallback_removes_the_cpu_wheel_before_the_gpu_one(
    fake_nvidia: Callable[[str], dict[str, str]],
) -> None:
    """The fake H100 with this venv's CPU wheel: every GPU install (the static check's, the
    smoke's, the pip line) uninstalls `paddlepaddle` first, in this venv's interpreter."""
    import sys

    _, doc, _ = doctor_process(
        _env(fake_nvidia("h100-580")), "--in-process", "--expect-gpu", "--smoke-timeout", "120"
    )
    remedies = [f["remedy"] for f in doc["findings"] if f["remedy"]]
    argvs = [[s.get("argv") for s in r["steps"]] for r in remedies]
    installs = [
        (a[i - 1] if i else None)
        for a in argvs
        for i, argv in enumerate(a)
        if argv and any(w.startswith("paddlepaddle-gpu==") for w in argv)
    ]
    assert installs
    assert all(
        before == [sys.executable, "-m", "pip", "uninstall", "-y", "paddlepaddle"]
        for before in installs
    )


@pytest.mark.fakegpu
def test_the_smoke_on_a_gpu_host_without_paddle_offers_the_gpu_build(
    fake_nvidia: Callable[[str], dict[str, str]],
) -> None:
    """`smoke.not-run` on an H100 told the user to install the CPU wheel."""
    _, doc, _ = doctor_process(_env(fake_nvidia("h100-580")), "--in-process", "--python", NO_PADDLE)
    fixes = {f["id"]: f["fix"] or "" for f in doc["findings"]}
    assert fixes["smoke.not-run"] == "resolved by the fix for paddle.missing"
    assert fixes["paddle.missing"].startswith(f"`{NO_PADDLE} -m pip install paddlepaddle-gpu==")

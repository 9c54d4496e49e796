"""Machines Paddle publishes for (linux/amd64 images; x86_64 and aarch64 wheels) and the ones it
does not (ppc64le, s390x, 32-bit ARM): the image choice, the finding and the exit code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from envcheck.contracts.facts import host_from_document
from envcheck.contracts.host_report import Report
from envcheck.image.choice import select_image
from envcheck.matrix.compat import oci_platform, unpublished_platform
from envcheck.matrix.load import load_matrix
from envcheck.matrix.location import REPO_DIR
from envcheck.verdict.judge import Context, judge
from tests import scenarios as s
from tests.inprocess import run_envcheck

MATRIX = load_matrix(str(REPO_DIR))
V100 = {"index": 0, "name": "Tesla V100-SXM2-16GB", "compute_capability": "7.0"}


def machine(arch: str) -> dict[str, str]:
    return {"hostname": "h", "os": "Ubuntu 22.04", "arch": arch}


def doctor(doc: dict[str, Any]) -> Report:
    host = host_from_document(doc)
    image = select_image(host, MATRIX)
    return Report(host, tuple(judge(Context(host=host, matrix=MATRIX, image=image))), image)


@pytest.mark.parametrize(
    ("arch", "platform"),
    [
        ("x86_64", "linux/amd64"),
        ("AMD64", "linux/amd64"),
        ("aarch64", "linux/arm64"),
        ("ppc64le", "linux/ppc64le"),
        ("s390x", "linux/s390x"),
        ("armv7l", "linux/arm"),
        ("", None),
        (None, None),
        ("x86_64\x1b[2J", None),  # a hostile saved report: unknown, never echoed
    ],
)
def test_the_machine_as_an_oci_platform(arch: str | None, platform: str | None) -> None:
    assert oci_platform(arch) == platform


@pytest.mark.parametrize("arch", ["ppc64le", "s390x", "armv7l"])
@pytest.mark.parametrize("gpu", [False, True], ids=["cpu", "gpu"])
def test_a_machine_paddle_publishes_nothing_for_gets_no_amd64_image(arch: str, gpu: bool) -> None:
    """They got the linux/amd64 image and the x86 wheel, with exit 0 (a POWER9 with V100s too)."""
    layers: dict[str, Any] = {"machine": machine(arch), "paddle": {"status": "absent"}}
    if gpu:
        layers |= {"driver": s.driver("535.104.05", "12.2"), "gpus": [V100]}
    report = doctor(s.host(**layers))
    platform = unpublished_platform(arch)
    assert report.image is not None and report.image.ref is None
    assert report.image.pip_command is None and report.image.kind == ("gpu" if gpu else "cpu")
    [finding] = [f for f in report.findings if f.layer == "image"]
    assert finding.id == "image.no-official-build" and finding.severity == "fail"
    assert finding.message == (
        f"no official build of Paddle for {platform}: Paddle publishes its images for "
        "linux/amd64 only and its wheels for x86_64 and aarch64 only"
    )
    assert (finding.fix or "").startswith("build Paddle from source on this machine")
    assert int(report.exit_status) == 1
    missing = next(f for f in report.findings if f.id == "paddle.missing")
    assert "pip install" not in (missing.fix or "")  # no x86 wheel offered


def test_on_the_command_line_a_ppc64le_host_is_exit_1_without_an_image(tmp_path: Path) -> None:
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps(s.host(machine=machine("ppc64le"), paddle={"status": "absent"})))
    r = run_envcheck(["doctor", "--facts", str(facts), "--no-smoke"], cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert "image.no-official-build" in r.stdout and "linux/ppc64le" in r.stdout
    assert "docker.io/paddlepaddle" not in r.stdout and "stable/cpu" not in r.stdout


def test_a_ppc64le_host_with_paddle_built_from_source_is_judged_by_that_build(
    tmp_path: Path,
) -> None:
    # no official build: the installed one (built from source) is what trains, and it decides
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps(s.host(machine=machine("ppc64le"), paddle=s.PADDLE_331_CPU)))
    r = run_envcheck(["doctor", "--facts", str(facts), "--no-smoke"], cwd=tmp_path)
    assert r.returncode == 0, r.stdout
    assert "WARN  image.no-official-build" in r.stdout and "advice only" in r.stdout


def test_an_aarch64_cpu_host_hears_of_a_real_release_and_the_aarch64_wheel() -> None:
    """It failed on "no CPU image of Paddle 3.4.0": a release of the matrix that has no image at
    all (a nightly, reported but unconfirmed) spoke for the whole search instead of the newest
    release that has CPU images."""
    report = doctor(s.host(machine=machine("aarch64"), paddle=s.PADDLE_331_CPU))
    assert report.image is not None and report.image.ref is None
    newest_with_cpu_images = max(
        (r.version for r in MATRIX.releases if MATRIX.images_for(r.version, "cpu")), key=Version
    )
    assert report.image.paddle == newest_with_cpu_images
    reason = report.image.reason or ""
    assert f"no CPU image of Paddle {newest_with_cpu_images} for linux/arm64" in reason
    assert "install Paddle's CPU wheel from PyPI with pip instead" in reason
    assert "GPU build" not in reason and "`" not in reason  # no unpinned command
    image = next(f for f in report.findings if f.layer == "image")
    assert image.id == "image.none" and image.message.startswith(
        f"no image of Paddle {newest_with_cpu_images} can run on this host: "
    )
    # the installed CPU wheel trains here: no image is advice, and the advice is not to install
    # the wheel it already has
    assert image.severity == "warn" and image.remedy is None and int(report.exit_status) == 0


def test_an_x86_64_cpu_host_still_gets_the_cpu_image() -> None:
    report = doctor(s.host(paddle=s.PADDLE_331_CPU))
    assert report.image is not None and report.image.ref is not None
    assert report.image.kind == "cpu" and int(report.exit_status) == 0


@pytest.mark.parametrize("arch", ["aarch64", "ppc64le", "s390x", "armv7l"])
@pytest.mark.parametrize("paddle", ["cpu", "absent"])
def test_every_command_they_are_given_runs_as_printed(arch: str, paddle: str) -> None:
    """No unpinned `pip install` and no x86 wheel: what a fix names is pinned and exists."""
    from tests.fix_commands import commands_of, pip_problems, shell_problems

    build = s.PADDLE_331_CPU | {"python": "/home/u/bin/python"} if paddle == "cpu" else {}
    report = doctor(s.host(machine=machine(arch), paddle=build or {"status": "absent"}))
    commands = commands_of(
        [{"id": f.id, "message": f.message, "fix": f.fix} for f in report.findings]
    )
    problems = [
        f"{fid}: {problem}: {command}"
        for fid, command in commands
        for problem in shell_problems(command) + pip_problems(command, report.host.paddle.python)
    ]
    assert problems == [] and not any("paddlepaddle==" in c for _, c in commands)

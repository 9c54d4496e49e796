"""`envcheck fix`'s plan, pure: the recorded real H100 (tests/data), every build of the matrix,
and the rollback's commands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from envcheck.contracts.facts import host_from_document
from envcheck.contracts.host_report import Report
from envcheck.fix.plan import plan_fix
from envcheck.image.choice import select_image
from envcheck.matrix.load import load_matrix
from envcheck.matrix.mirror import PADDLE_INDEX
from envcheck.verdict.fixes import cudnn_install, target_python
from envcheck.verdict.judge import Context, judge
from tests import fix_env
from tests.paths import DATA

MATRIX = load_matrix(None, {})
PY = "/srv/venv/bin/python"


def report_of(path: Path) -> Report:
    doc = json.loads(path.read_text())
    host = host_from_document(doc)
    image = select_image(host, MATRIX)
    return Report(host=host, findings=tuple(judge(Context(host, MATRIX, image))), image=image)


@pytest.mark.parametrize(
    ("recorded", "first"),
    [
        (
            "real-h100/c-static-cpu-paddle.json",
            [PY, "-m", "pip", "uninstall", "-y", "paddlepaddle"],
        ),
        ("hosts/h100-580-nopaddle.host.json", None),
    ],
)
def test_the_real_h100_gets_the_gpu_build_of_its_image_from_its_index(
    recorded: str, first: list[str] | None
) -> None:
    """Driver 580 (CUDA 13.0), sm_90: the build of the image the doctor chose there (recorded:
    3.3.1-gpu-cuda12.9-cudnn9.9), from Paddle's cu129 index."""
    plan = plan_fix(report_of(DATA / recorded), PY)
    runs = [list(s.argv) for s in plan.runs]
    install = [PY, "-m", "pip", "install", "paddlepaddle-gpu==3.3.1", "-i"]
    assert runs[-1] == [*install, f"{PADDLE_INDEX}/packages/stable/cu129/"]
    assert runs[:-1] == ([first] if first else [])
    assert plan.expect == "gpu" and plan.wheel is not None and plan.wheel.cuda == "12.9"


def test_a_mirror_replaces_paddles_index_in_every_build_and_nothing_else() -> None:
    """ENVCHECK_PADDLE_INDEX rebases each row's command as the matrix loads: the doctor and the
    plan read the same rows, so both name the mirror (PyPI's builds keep pip's own index)."""
    mirrored = load_matrix(None, {"ENVCHECK_PADDLE_INDEX": "https://mirror.example/paddle/"})
    for ours, theirs in zip(MATRIX.builds, mirrored.builds, strict=True):
        assert theirs.pip == ours.pip.replace(PADDLE_INDEX, "https://mirror.example/paddle"), ours
        assert PADDLE_INDEX not in theirs.pip
    assert any(
        "-i https://mirror.example/paddle/packages/stable/cu126/" in b.pip for b in mirrored.builds
    )


def test_root_work_is_manual_in_order_and_advice_is_not_a_step() -> None:
    from envcheck.contracts.facts import HostFacts
    from envcheck.contracts.findings import fail, warn

    findings = (
        warn(
            "engine.no-nvidia-runtime",
            "no NVIDIA runtime",
            fix="install the toolkit",
            layer="engine",
        ),
        warn("driver.minor-compat", "minor compat", fix="upgrade for full support", layer="driver"),
        fail("driver.version-mismatch", "module older", fix="reboot", layer="driver"),
    )
    plan = plan_fix(Report(host=HostFacts(), findings=findings), PY)
    assert [(s.kind, s.why, s.argv) for s in plan.steps] == [
        ("manual", "driver.version-mismatch", ()),
        ("manual", "engine.no-nvidia-runtime", ()),
    ]
    assert plan.expect is None and not plan.runs


def test_a_2x_gpu_build_gets_the_cudnn_it_does_not_bundle() -> None:
    """Paddle 2.6's GPU wheels load the system's cuDNN: none here, so NVIDIA's cuDNN wheel of the
    build's major for its CUDA major comes after Paddle (3.x wheels bring theirs through pip)."""
    from tests import scenarios as s

    host = host_from_document(
        s.host(driver=s.driver("535.104.05", "12.2"), gpus=[s.A100], paddle={"status": "absent"})
    )
    image = select_image(host, MATRIX, paddle="2.6.2")
    report = Report(host=host, findings=tuple(judge(Context(host, MATRIX, image))), image=image)
    plan = plan_fix(report, PY)
    assert image.cuda and image.cudnn and image.pip_command
    cudnn = cudnn_install(PY, image.cudnn, image.cuda)  # the doctor's own pin, the same words
    assert cudnn is not None and cudnn.requirements[0].startswith(
        f"nvidia-cudnn-cu{image.cuda.split('.')[0]}=={image.cudnn.split('.')[0]}."
    )
    assert [s.argv[3:5] for s in plan.runs] == [
        ("install", image.pip_command.split()[4]),  # the doctor's own pin, the same words
        ("install", cudnn.requirements[0]),
    ]
    assert {s.why for s in plan.runs} == {"paddle.missing"}


# -- the doctor's advice and the plan: one derivation -----------------------------------------

MIRROR = "http://127.0.0.1:9/paddle-mirror"
RECORDED = sorted((DATA / "hosts").glob("*.json")) + sorted(
    (DATA / "real-h100").glob("[a-f]-*.json")
)


def _cpu_host() -> dict[str, Any]:
    from tests import scenarios as s

    return s.host(
        driver={"status": "absent", "reason": "no libnvidia-ml"}, paddle={"status": "absent"}
    )


@pytest.mark.parametrize("base", [None, MIRROR], ids=["paddle-index", "mirror"])
@pytest.mark.parametrize("host", [*RECORDED, "cpu"], ids=[*(p.name for p in RECORDED), "cpu-host"])
def test_the_doctors_advice_and_the_plan_name_the_same_build_and_index(
    host: Path | str, base: str | None
) -> None:
    """Every recorded GPU host and a CPU host, with Paddle's index and with a mirror: the build
    the doctor tells the user to install is the one the plan installs, from the same URL."""
    doc = _cpu_host() if host == "cpu" else json.loads(Path(host).read_text())
    matrix = load_matrix(None, {"ENVCHECK_PADDLE_INDEX": base} if base else {})
    facts = host_from_document(doc)
    image = select_image(facts, matrix)
    report = Report(facts, tuple(judge(Context(facts, matrix, image))), image)
    plan = plan_fix(report, target_python(facts))
    said = fix_env.advised(f.fix for f in report.findings)
    assert said == fix_env.planned(s.to_json() for s in plan.steps)
    if plan.wheel is not None:  # something to install: both name it, from the base in use
        assert said == {(plan.wheel.requirement, plan.wheel.index or plan.wheel.find_links)}
        where = plan.wheel.index or plan.wheel.find_links  # None: PyPI's build (2.6 cu118)
        assert where is None or where.startswith(f"{base or PADDLE_INDEX}/packages/"), where
    assert host != "cpu" or (plan.wheel is not None and plan.wheel.kind == "cpu")


def test_the_dry_run_says_one_exit_code_not_the_static_doctors_too() -> None:
    """Before: `doctor: fail (exit 1)` right after `envcheck doctor` had said exit 6 (its smoke
    fell back to the CPU; the fix's doctor runs none), then `result: … (exit 1)`."""
    from envcheck.render.fix import render_fix

    finding = {"severity": "fail", "id": "paddle.cpu-build", "message": "the CPU build"}
    doc = {
        "plan": {"python": "/v/bin/python", "steps": [], "expect": None},
        "doctor": {"verdict": "fail", "exit_code": 1, "findings": [finding]},
        "outcome": "manual-only",
        "exit_code": 1,
    }
    text = render_fix(doc)
    assert text.count("(exit ") == 1 and text.splitlines()[-1].endswith("(exit 1)")
    assert "doctor, static checks (no smoke): fail" in text.splitlines()

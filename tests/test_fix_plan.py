"""`envcheck fix`'s plan, pure: the recorded real H100 (tests/data), every build of the matrix,
and the rollback's commands (issue #25)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from envcheck.facts import host_from_document
from envcheck.fix.apply import restore_commands
from envcheck.fix.plan import PADDLE_INDEX, paddle_index_base, paddle_wheel, plan_fix
from envcheck.fixes import cudnn_install
from envcheck.judge import Context, judge
from envcheck.matrix.load import load_matrix
from envcheck.report import Report
from envcheck.select import select_image

DATA = Path(__file__).parent / "data"
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
    install = [PY, "-m", "pip", "install", "paddlepaddle-gpu==3.3.1", "--index-url"]
    assert runs[-1] == [*install, f"{PADDLE_INDEX}/packages/stable/cu129/"]
    assert runs[:-1] == ([first] if first else [])
    assert plan.expect == "gpu" and plan.wheel is not None and plan.wheel.cuda == "12.9"


def test_every_matrix_build_is_derived_as_its_row_says() -> None:
    """The pip command each matrix row cites and the requirement + index derived from the row's
    data (release, CUDA) name the same thing: no string of the matrix is parsed by `fix`."""
    for build in MATRIX.builds:
        wheel = paddle_wheel(build.paddle, build.cuda)
        words = build.pip.split()
        requirement = next(w for w in words if w.startswith("paddlepaddle"))
        where = re.search(r"(?:-i|-f)\s+(\S+)", build.pip)
        assert wheel.requirement == requirement, build
        assert (wheel.index or wheel.find_links) == (where.group(1) if where else None), build


def test_a_mirror_replaces_the_index_base() -> None:
    base = paddle_index_base({"ENVCHECK_PADDLE_INDEX": "https://mirror.example/paddle/"})
    wheel = paddle_wheel("3.3.1", "12.6", base)
    assert wheel.index == "https://mirror.example/paddle/packages/stable/cu126/"
    assert paddle_index_base({}) == PADDLE_INDEX


def test_the_rollback_removes_what_came_and_brings_back_what_went() -> None:
    before = "numpy==1.26.4\npaddlepaddle-gpu==3.3.1\npip==24.0\nsix @ file:///w/six.whl\n"
    after = "numpy==2.4.6\npaddlepaddle==3.3.1\npip==24.0\nprotobuf==7.36.2\n"
    source = paddle_wheel("3.3.1", "12.6", "https://m.example")
    pip = (PY, "-m", "pip")
    assert restore_commands(PY, before, after, paddle_source=source) == [
        (*pip, "uninstall", "-y", "numpy", "paddlepaddle", "protobuf"),
        (*pip, "install", "--no-deps", "numpy==1.26.4", "six @ file:///w/six.whl"),
        (
            *pip,
            "install",
            "--no-deps",
            "paddlepaddle-gpu==3.3.1",
            "--index-url",
            "https://m.example/packages/stable/cu126/",
        ),
    ]
    assert restore_commands(PY, before, before, paddle_source=source) == []


def test_root_work_is_manual_in_order_and_advice_is_not_a_step() -> None:
    from envcheck.facts import HostFacts
    from envcheck.findings import fail, warn

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
    assert image.cuda and image.cudnn
    cudnn = cudnn_install(PY, image.cudnn, image.cuda)  # the doctor's own pin, the same words
    assert cudnn is not None and cudnn.requirements[0].startswith(
        f"nvidia-cudnn-cu{image.cuda.split('.')[0]}=={image.cudnn.split('.')[0]}."
    )
    assert [s.argv[3:5] for s in plan.runs] == [
        ("install", paddle_wheel("2.6.2", image.cuda).requirement),
        ("install", cudnn.requirements[0]),
    ]
    assert {s.why for s in plan.runs} == {"paddle.missing"}

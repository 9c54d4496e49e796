"""The environment in front of the doctor decides its verdict: the installed build, judged with the
facts as known. The image for this host and newer releases are advice unless an image is the run's
subject; a fact a saved document lacks is unverified (a warning), never absent; an unconfirmed fact
can warn, never fail. Each host here trains today, or is broken, as its comment says."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from envcheck.contracts.facts import host_from_document
from envcheck.contracts.host_report import Report
from envcheck.image.choice import select_image
from envcheck.matrix.load import load_matrix
from envcheck.matrix.location import REPO_DIR
from envcheck.verdict.judge import Context, judge
from tests import scenarios as s
from tests.inprocess import run_envcheck

MATRIX = load_matrix()
GTX980 = {
    "index": 0,
    "name": "NVIDIA GeForce GTX 980",
    "compute_capability": "5.2",
    "memory_total_mib": 4096,
}
# Paddle 2.5.2's CUDA 10.2 wheel: the 2.5 line is documented for compute capability 3.5 and newer
PADDLE_252_CU102 = {
    "status": "ok",
    "package": "paddlepaddle-gpu",
    "version": "2.5.2.post102",
    "cuda": "10.2",
    "cudnn": "7.6.5",
    "compiled_cuda_archs": None,
}
AARCH64 = {"hostname": "arm-01", "os": "Ubuntu 22.04", "arch": "aarch64"}


def doctor(doc: dict[str, Any], *, saved: bool = True, image_subject: bool = False) -> Report:
    host = host_from_document(doc)
    image = select_image(host, MATRIX)
    ctx = Context(host, MATRIX, image, saved=saved, image_subject=image_subject)
    return Report(host, tuple(judge(ctx)), image)


def severities(report: Report) -> dict[str, str]:
    return {f.id: f.severity for f in report.findings}


def fails(report: Report) -> list[str]:
    return [f.id for f in report.findings if f.severity == "fail"]


def said(report: Report) -> str:
    """Every word the findings say: messages, fixes, details."""
    return "\n".join(
        f"{f.message} {f.fix or ''} {f.observed.get('detail', '')}" for f in report.findings
    )


# -- the installed build, not the newest release's image -------------------------------------------


def test_an_aarch64_cpu_host_training_on_its_cpu_wheel_passes() -> None:
    # No image of Paddle for linux/arm64 exists; the CPU wheel from PyPI is installed and trains.
    report = doctor(s.host(machine=AARCH64, paddle=s.PADDLE_331_CPU))
    assert fails(report) == [] and int(report.exit_status) == 0
    image = next(f for f in report.findings if f.layer == "image")
    assert image.id == "image.none" and image.severity == "warn" and "advice only" in image.message
    assert image.remedy is None  # never "install the CPU wheel" to a host that has it


def test_the_same_host_with_an_image_as_its_subject_still_fails() -> None:
    report = doctor(s.host(machine=AARCH64, paddle=s.PADDLE_331_CPU), image_subject=True)
    assert severities(report)["image.none"] == "fail" and int(report.exit_status) == 1


def test_without_paddle_no_image_for_the_host_is_still_a_failure() -> None:
    # nothing installed can train, and no image can: the host is not ready
    report = doctor(s.host(machine=AARCH64, paddle={"status": "absent"}))
    assert severities(report)["image.none"] == "fail"


@pytest.mark.parametrize(
    "driver",
    [
        s.driver("470.82.01", "11.4"),
        {"status": "ok", "cuda": "11.4"},  # a saved report that kept the CUDA level only
        {"status": "ok"},  # neither the version nor the level
    ],
    ids=["driver-recorded", "version-not-recorded", "nothing-recorded"],
)
def test_a_maxwell_card_training_on_a_2x_build_is_not_failed_by_the_newest_release(
    driver: dict[str, Any],
) -> None:
    # Paddle 3.x needs compute capability 6.0; the installed 2.5.2 (cu102) is documented from 3.5
    report = doctor(
        s.host(driver=driver, gpus=[GTX980], paddle=PADDLE_252_CU102, cudnn=s.cudnn("7.6.5"))
    )
    assert fails(report) == [], said(report)
    assert int(report.exit_status) == 0
    low = [f for f in report.findings if f.id == "gpu.cc-too-low"]
    # where the newest release is still the image's, its floor is advice about that release
    assert all(f.severity == "warn" and "advice only" in f.message for f in low)
    assert "None" not in said(report)


def test_a_gpu_the_newest_release_dropped_still_fails_without_a_build_installed() -> None:
    # nothing installed: the release the doctor would install is the question
    report = doctor(s.host(driver={"status": "ok"}, gpus=[GTX980], paddle={"status": "absent"}))
    assert severities(report)["gpu.cc-too-low"] == "fail"


# -- unknown is not absent -------------------------------------------------------------------------


def test_a_saved_report_without_cudnn_is_unverified_not_missing() -> None:
    report = doctor(
        s.host(driver=s.driver("535.104.05", "12.2"), gpus=[s.A100], paddle=s.PADDLE_262_CU118)
    )
    found = severities(report)
    assert "cudnn.missing" not in found and found["cudnn.unverified"] == "warn"
    assert int(report.exit_status) == 0
    fix = next(f.fix for f in report.findings if f.id == "cudnn.unverified") or ""
    assert "on the host this document describes" in fix and "--no-smoke" not in fix


def test_a_live_probe_that_found_no_cudnn_still_fails() -> None:
    report = doctor(
        s.host(
            driver=s.driver("535.104.05", "12.2"),
            gpus=[s.A100],
            paddle=s.PADDLE_262_CU118,
            cudnn=s.cudnn(None),
        ),
        saved=False,
    )
    assert severities(report)["cudnn.missing"] == "fail"


def test_a_2x_build_that_links_cudart_is_unverified_where_the_runtime_is_not_recorded() -> None:
    report = doctor(
        s.host(
            driver=s.driver("470.82.01", "11.4"),
            gpus=[s.T4],
            paddle=PADDLE_252_CU102,
            cudnn=s.cudnn("7.6.5"),
        )
    )
    assert severities(report)["cuda.runtime-unverified"] == "warn"
    assert "cuda.runtime-missing" not in severities(report)


def test_a_driver_line_with_the_cuda_level_but_no_version_still_gets_an_image() -> None:
    # a driver reporting CUDA 12.2 runs any 12.x build through minor-version compatibility
    report = doctor(
        s.host(
            driver={"status": "ok", "cuda": "12.2"},
            gpus=[s.A100],
            paddle=s.PADDLE_331_CU126,
            cudnn=s.cudnn("9.5.1"),
        )
    )
    assert report.image is not None and report.image.ref is not None
    assert report.image.cuda is not None and report.image.cuda.startswith("12.")
    assert fails(report) == [] and "None" not in said(report)
    assert severities(report)["driver.minor-compat"] == "warn"


def test_the_text_never_prints_none_for_a_driver_without_its_version(tmp_path: Path) -> None:
    facts = s.write(tmp_path, s.host(driver={"status": "ok", "cuda": "12.2"}, gpus=[s.A100]))
    r = run_envcheck(["doctor", "--facts", facts, "--no-smoke"], cwd=tmp_path)
    assert "None" not in r.stdout
    assert "NVIDIA driver: version not recorded (CUDA 12.2)" in r.stdout


# -- confidence is part of a fact ------------------------------------------------------------------


def _matrix_with_release_unconfirmed(tmp_path: Path, version: str) -> Path:
    """The shipped matrix with one release's row kept `confirmed = false`."""
    folder = tmp_path / "matrix"
    shutil.copytree(REPO_DIR, folder)
    path = folder / "paddle.toml"
    text = path.read_text()
    head = f'version = "{version}"\n'
    start = text.index(head)
    end = text.index("confirmed = true", start)
    path.write_text(text[:end] + "confirmed = false" + text[end + len("confirmed = true") :])
    return folder


def test_an_unconfirmed_floor_warns_where_a_confirmed_one_fails(tmp_path: Path) -> None:
    # Tesla M40 (5.2) on an installed 3.0.0: the 3.x floor 6.0 fails it (Paddle says "not
    # compatible"); kept unconfirmed, the same floor can only warn
    host = s.host(
        driver=s.driver("535.104.05", "12.2"),
        gpus=[GTX980],
        paddle=s.PADDLE_331_CU126 | {"version": "3.0.0", "cuda": "11.8", "cudnn": "8.6.0"},
        cudnn=s.cudnn("8.6.0"),
    )
    facts = s.write(tmp_path, host)
    sure = run_envcheck(["doctor", "--facts", facts, "--no-smoke", "--json"], cwd=tmp_path)
    doubtful = run_envcheck(
        [
            "doctor",
            "--facts",
            facts,
            "--no-smoke",
            "--json",
            "--matrix",
            str(_matrix_with_release_unconfirmed(tmp_path, "3.0.0")),
        ],
        cwd=tmp_path,
    )

    def floor(r: Any) -> dict[str, Any]:
        return next(f for f in json.loads(r.stdout)["findings"] if f["id"] == "paddle.cc-too-low")

    assert floor(sure)["severity"] == "fail"
    assert floor(doubtful)["severity"] == "warn" and "unconfirmed" in floor(doubtful)["message"]


# -- words that hold -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(s.JUDGE_HOSTS | s.REMEDY_HOSTS))
def test_words_that_hold(name: str, tmp_path: Path) -> None:
    doc = (s.JUDGE_HOSTS | s.REMEDY_HOSTS)[name]
    facts = s.write(tmp_path, doc)
    r = run_envcheck(
        ["doctor", "--facts", facts, "--no-smoke"], cwd=tmp_path, env={"COLUMNS": "500"}
    )
    text = r.stdout
    assert "needs more than" not in text
    assert "or instead: or instead" not in text
    assert "without --no-smoke" not in text  # a saved document: no smoke can run here
    assert "None" not in text
    report = doctor(doc)
    if report.image is None or report.image.ref is None:
        assert "pull-image" not in said(report)


def test_the_builds_own_list_outranks_the_release_floor() -> None:
    # a 3.0.0 build whose own paddle/version record lists sm_52: the documented floor (6.0) is a
    # fact about the release; the build's own evidence says more
    build = s.PADDLE_331_CU126 | {"version": "3.0.0", "cuda": "11.8", "cudnn": "8.6.0"}
    host = s.host(
        driver=s.driver("535.104.05", "12.2"),
        gpus=[GTX980],
        paddle=build | {"compiled_cuda_archs": [52, 61, 70, 75, 80, 86]},
        cudnn=s.cudnn("8.6.0"),
    )
    floor = next(f for f in doctor(host).findings if f.id == "paddle.cc-too-low")
    assert floor.severity == "warn" and "outranks the floor" in floor.message
    without = s.host(
        driver=s.driver("535.104.05", "12.2"),
        gpus=[GTX980],
        paddle=build | {"compiled_cuda_archs": [61, 70, 75, 80, 86]},
        cudnn=s.cudnn("8.6.0"),
    )
    assert severities(doctor(without))["paddle.cc-too-low"] == "fail"


def test_a_cpu_wheel_on_a_gpu_host_makes_no_image_a_failure_again() -> None:
    # the installed CPU build cannot train on the T4 (paddle.cpu-build): what to move to is the
    # question, and the driver upgrade that no image for this host needs is part of the answer
    report = doctor(
        s.host(driver=s.driver("418.87.01", "10.1"), gpus=[s.T4], paddle=s.PADDLE_331_CPU)
    )
    found = severities(report)
    assert found["paddle.cpu-build"] == "fail" and found["image.none"] == "fail"

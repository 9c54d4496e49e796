"""A CUDA forward-compatibility libcuda on the loader's path, judged by its own note against the
host driver over saved facts: the toolkit's decision (NVIDIA/nvidia-container-toolkit
cuda-elf-header_test.go's cases), the GeForce GPU that meets error 804, and the CUDA 13.0
images' defect class (a compat library older than the host driver) without its fixed row."""

from __future__ import annotations

from typing import Any

import pytest

from envcheck.contracts.facts import CompatNote, host_from_document
from envcheck.contracts.findings import Finding
from envcheck.image.choice import select_image
from envcheck.matrix.load import load_matrix
from envcheck.verdict.judge import Context, judge
from envcheck.verdict.rules.cuda_compat import compat_refusal
from tests import scenarios as s

MATRIX = load_matrix()
DEVICES = [1, 2, 7, 8, 9, 10, 11, 12, 13, 14]
NOTE_575 = {"format": 1, "cuda": "12.9", "drivers": [535, 550, 560, 565, 570, 575]}
NOTE_590 = {"format": 1, "cuda": "13.1", "drivers": [535, 550, 570, 575, 580, 590]}
COMPAT = "/usr/local/cuda/compat"


def compat_findings(
    driver: str, cuda: str, gpu: dict[str, Any], lib: dict[str, Any], path: str = COMPAT
) -> list[Finding]:
    host = host_from_document(
        s.host(
            driver=s.driver(driver, cuda, kernel_module=driver),
            gpus=[gpu],
            paddle=s.PADDLE_331_CU126,
            env={"LD_LIBRARY_PATH": f"{path}:/opt/other/lib"},
            cuda_compat=[lib],
        )
    )
    found = judge(Context(host=host, matrix=MATRIX, image=select_image(host, MATRIX)))
    return [f for f in found if f.id.startswith("cuda.compat")]


def lib(version: str, note: dict[str, Any] | None, loaded: bool = True) -> dict[str, Any]:
    doc: dict[str, Any] = {"path": f"{COMPAT}/libcuda.so.{version}", "version": version}
    if note is not None:
        doc["note"] = note | {"devices": DEVICES}
    return doc | {"loaded": loaded}


def test_a_note_that_excludes_the_host_branch_fails_with_the_path_fix() -> None:
    (f,) = compat_findings("580.65.06", "13.0", s.H100, lib("575.57.08", NOTE_575))
    assert f.id == "cuda.compat-mismatch" and f.severity == "fail"
    assert "535, 550, 560, 565, 570, 575" in f.message and "branch 580" in f.message
    assert "`export LD_LIBRARY_PATH=/opt/other/lib`" in (f.fix or "")
    assert "note lists the driver branch 580" in (f.fix or "")


def test_a_note_that_includes_the_host_branch_passes_on_a_data_center_gpu() -> None:
    (f,) = compat_findings("535.104.05", "12.2", s.A100, lib("590.44.01", NOTE_590))
    assert (f.id, f.severity) == ("cuda.compat", "pass")
    assert "runs on the host driver 535.104.05" in f.message


def test_forward_compatibility_on_a_geforce_gpu_is_error_804() -> None:
    (f,) = compat_findings("570.124.06", "12.8", s.RTX5090, lib("590.44.01", NOTE_590))
    assert f.id == "cuda.compat-unsupported-gpu" and f.severity == "fail"
    assert "forward compatibility was attempted on non supported HW" in f.message
    assert "`export LD_LIBRARY_PATH=/opt/other/lib`" in (f.fix or "")


def test_a_compat_library_older_than_the_driver_is_the_cuda13_image_defect_class() -> None:
    """Paddle#76558: the 13.0 image's compat libcuda first on the path, a newer host driver."""
    note = {"format": 1, "cuda": "13.0", "drivers": [535, 550, 570, 575, 580]}
    (f,) = compat_findings("580.95.05", "13.0", s.A100, lib("580.82.07", note))
    assert f.id == "cuda.compat-mismatch"
    assert "not newer than the host driver 580.95.05" in f.message
    assert "note lists" not in (f.fix or "")  # the branch is listed: no other package is needed


def test_a_compat_library_nothing_loads_adds_no_line() -> None:
    assert compat_findings("580.65.06", "13.0", s.H100, lib("575.57.08", NOTE_575, False)) == []


def test_a_compat_library_on_the_loader_configuration_gets_words_not_an_export() -> None:
    (f,) = compat_findings(
        "580.65.06", "13.0", s.H100, lib("575.57.08", NOTE_575), path="/elsewhere"
    )
    assert "/etc/ld.so.conf.d" in (f.fix or "") and "export" not in (f.fix or "")


# The toolkit's own cases (cuda-elf-header_test.go): (compat, host driver, host CUDA) -> used
TOOLKIT_CASES = [
    ("575.57.08", "590.44.01", None, False),  # host branch not in the note
    ("575.57.08", "570.211.01", None, True),  # branch listed, compat newer
    ("575.57.08", "575.10.10", None, True),  # same branch, compat newer
    ("575.57.08", "575.57.08", None, False),  # same driver
    ("575.57.08", "575.99.99", None, False),  # same branch, compat older
]


@pytest.mark.parametrize(("compat", "host", "cuda", "used"), TOOLKIT_CASES)
def test_the_decision_is_the_container_toolkits(
    compat: str, host: str, cuda: str | None, used: bool
) -> None:
    note = CompatNote(cuda="12.9", drivers=(535, 550, 560, 565, 570, 575), format=1)
    assert (compat_refusal(note, compat, host, cuda) is None) is used


@pytest.mark.parametrize(("host_cuda", "used"), [("12.8", True), ("12.9", False), ("12.10", False)])
def test_without_a_driver_list_the_cuda_versions_decide(host_cuda: str, used: bool) -> None:
    note = CompatNote(cuda="12.9", format=1)
    assert (compat_refusal(note, "575.57.08", "570.1.1", host_cuda) is None) is used

"""The rules over saved facts: one scenario per real failure, asserting verdict, id, fix and tag."""

from __future__ import annotations

from typing import Any

import pytest

from envcheck.contracts.facts import HostFacts, host_from_document
from envcheck.contracts.host_report import Report
from envcheck.image.choice import select_image
from envcheck.matrix.load import load_matrix
from envcheck.verdict.judge import Context, judge
from tests import scenarios as s

MATRIX = load_matrix()


def doctor(host_doc: dict[str, Any], expect_gpu: bool = False, paddle: str | None = None) -> Report:
    host: HostFacts = host_from_document(host_doc)
    image = select_image(host, MATRIX, paddle=paddle)
    findings = judge(Context(host=host, matrix=MATRIX, image=image, expect_gpu=expect_gpu))
    return Report(host=host, findings=tuple(findings), image=image)


def finding(report: Report, id_: str) -> Any:
    matches = [f for f in report.findings if f.id == id_]
    assert matches, f"{id_} not in {[f.id for f in report.findings]}"
    return matches[0]


def test_healthy_a100_on_535_passes_and_gets_a_cuda12_gpu_tag() -> None:
    r = doctor(
        s.host(
            driver=s.driver("535.104.05", "12.2", kernel_module="535.104.05"),
            gpus=[s.A100, s.A100 | {"index": 1}],
            paddle=s.PADDLE_331_CU126,
            cudnn=s.cudnn("9.5.1"),
            engine=s.ENGINE_NVIDIA,
        )
    )
    assert r.image is not None and r.image.ref is not None
    assert r.image.kind == "gpu" and r.image.cuda is not None and r.image.cuda.startswith("12.")
    assert "-gpu-cuda12" in r.image.ref
    # 535 reports CUDA 12.2 < the wheel's 12.6: runs through minor-version compatibility
    assert finding(r, "driver.minor-compat").severity == "warn"
    assert r.verdict == "warn" and int(r.exit_status) == 0


@pytest.mark.parametrize(
    ("error", "finding_id", "fix_word"),
    [
        ("NVML_ERROR_LIB_RM_VERSION_MISMATCH", "driver.version-mismatch", "reboot"),
        ("NVML_ERROR_DRIVER_NOT_LOADED", "driver.not-loaded", "modprobe nvidia"),
        ("NVML_ERROR_NO_PERMISSION", "driver.no-permission", "/dev/nvidia"),
        ("NVML_ERROR_UNKNOWN", "driver.error", "nvidia-smi"),
    ],
    ids=[
        "upgraded-driver-without-reboot",
        "module-not-loaded",
        "no-permission",
        "unknown-nvml-error",
    ],
)
def test_nvml_init_errors_are_failures_with_their_fix(
    error: str, finding_id: str, fix_word: str
) -> None:
    r = doctor(
        s.host(
            driver={"status": "error", "error": error, "kernel_module": "535.54.03", "reason": "x"},
            paddle=s.PADDLE_331_CU126,
        )
    )
    f = finding(r, finding_id)
    assert f.severity == "fail" and fix_word in (f.fix or "")
    assert r.verdict == "fail" and int(r.exit_status) == 1


def test_kernel_module_older_than_user_space_is_a_mismatch() -> None:
    r = doctor(
        s.host(
            driver=s.driver("550.54.14", "12.4", kernel_module="535.104.05"),
            gpus=[s.A100],
            paddle=s.PADDLE_331_CU126,
            cudnn=s.cudnn("9.5.1"),
        )
    )
    f = finding(r, "driver.version-mismatch")
    assert "535.104.05" in f.message and "550.54.14" in f.message and "reboot" in (f.fix or "")


def test_driver_418_too_old_for_cu118_wheel() -> None:
    # Paddle: "CUDA error(35), CUDA driver version is insufficient for CUDA runtime version."
    r = doctor(
        s.host(
            driver=s.driver("418.87.01", "10.1"),
            gpus=[s.T4],
            paddle=s.PADDLE_262_CU118,
            cudnn=s.cudnn("8.6.0"),
        ),
        paddle="2.6.2",
    )
    f = finding(r, "driver.too-old")
    assert f.severity == "fail" and "450.80.02" in (f.fix or "")
    assert r.verdict == "fail"


def test_t4_on_470_runs_cu118_through_minor_version_compatibility() -> None:
    r = doctor(
        s.host(
            driver=s.driver("470.82.01", "11.4"),
            gpus=[s.T4],
            paddle=s.PADDLE_262_CU118,
            cudnn=s.cudnn("8.6.0"),
        ),
        paddle="2.6.2",
    )
    assert finding(r, "driver.minor-compat").severity == "warn"
    assert r.image is not None and r.image.ref is not None and "cuda11" in r.image.ref


@pytest.mark.parametrize(
    ("paddle_doc", "compiled"),
    [
        (s.PADDLE_31_CU126, "75 80 86 89"),
        (
            s.PADDLE_331_CU126 | {"compiled_cuda_archs": [60, 61, 70, 75, 80, 86]},
            "60 61 70 75 80 86",
        ),
    ],
    ids=["paddle31-cu126-on-rtx5090-issue73687", "wheel-without-sm120-issue76037"],
)
def test_rtx5090_with_a_wheel_lacking_sm120_is_no_kernel_image(
    paddle_doc: dict[str, Any], compiled: str
) -> None:
    r = doctor(
        s.host(
            driver=s.driver("570.124.06", "12.8"),
            gpus=[s.RTX5090],
            paddle=paddle_doc,
            cudnn=s.cudnn("9.5.1"),
        )
    )
    f = finding(r, "paddle.arch-missing")
    assert "sm_120" in f.message and compiled in f.message and "no kernel image" in f.message
    # the fix installs a build that has sm_120: CUDA 12.8+ (the cu129 index)
    assert r.image is not None and r.image.pip_command and "cu129" in r.image.pip_command
    assert "cu129" in (f.fix or "")


def test_cpu_wheel_on_a_gpu_host_fails_with_the_gpu_install_command() -> None:
    r = doctor(s.host(driver=s.driver("580.65.06", "13.0"), gpus=[s.H100], paddle=s.PADDLE_331_CPU))
    f = finding(r, "paddle.cpu-build")
    assert f.severity == "fail"
    assert "pip uninstall -y paddlepaddle" in (f.fix or "") and "paddlepaddle-gpu" in (f.fix or "")


@pytest.mark.parametrize(
    ("distributions", "reason", "flagged"),
    [
        (["paddlepaddle", "paddlepaddle-gpu"], None, True),
        (["paddlepaddle-gpu"], "both builds were seen before: this reason is only words", False),
        ([], "both", False),
    ],
    ids=["both-recorded", "reason-mentions-both", "saved-before-the-field"],
)
def test_both_distributions_installed_is_decided_from_the_recorded_distributions(
    distributions: list[str], reason: str | None, flagged: bool
) -> None:
    paddle = s.PADDLE_331_CU126 | {"distributions": distributions, "reason": reason}
    r = doctor(s.host(driver=s.driver("580.65.06", "13.0"), gpus=[s.H100], paddle=paddle))
    ids = [f.id for f in r.findings]
    assert ("paddle.both-installed" in ids) is flagged, ids
    if flagged:
        f = finding(r, "paddle.both-installed")
        assert f.severity == "fail" and "overwrite each other's files" in f.message
        assert "pip uninstall -y paddlepaddle`; then " in (f.fix or "")  # the wrong one first
        assert "pip uninstall -y paddlepaddle-gpu`; then " in (f.fix or "")


def test_cudnn_missing_for_a_262_wheel() -> None:
    # §7 row 18: "Cannot load cudnn shared library"
    r = doctor(
        s.host(
            driver=s.driver("535.104.05", "12.2"),
            gpus=[s.A100],
            paddle=s.PADDLE_262_CU118,
            cudnn=s.cudnn(None),
        ),
        paddle="2.6.2",
    )
    f = finding(r, "cudnn.missing")
    assert f.severity == "fail" and "nvidia-cudnn-cu11" in (f.fix or "")


def test_cudnn_older_than_compiled_warns_like_paddle() -> None:
    # §7 row 17: "compiled with CUDNN 8.6, but CUDNN version in your machine is 8.0"
    r = doctor(
        s.host(
            driver=s.driver("535.104.05", "12.2"),
            gpus=[s.A100],
            paddle=s.PADDLE_262_CU118,
            cudnn=s.cudnn("8.0.5"),
        ),
        paddle="2.6.2",
    )
    assert finding(r, "cudnn.too-old").severity == "warn"


def test_cudnn9_under_a_cudnn8_build_fails() -> None:
    # §7 row 27: CUDNN_STATUS_NOT_SUPPORTED with 2.6.2 on cuDNN 9
    r = doctor(
        s.host(
            driver=s.driver("535.104.05", "12.2"),
            gpus=[s.A100],
            paddle=s.PADDLE_262_CU118,
            cudnn=s.cudnn("9.1.0"),
        ),
        paddle="2.6.2",
    )
    assert finding(r, "cudnn.major-mismatch").severity == "fail"


@pytest.mark.parametrize(
    "value", ["", "-1", "NoDevFiles", "4"], ids=["empty", "minus-one", "garbage", "beyond-count"]
)
def test_cuda_visible_devices_hiding_every_gpu(value: str) -> None:
    # §7 row 7: "CUDA_VISIBLE_DEVICES is set to be empty. No GPU detected."
    r = doctor(
        s.host(
            driver=s.driver("580.65.06", "13.0"),
            gpus=[s.H100],
            paddle=s.PADDLE_331_CU126,
            cudnn=s.cudnn("9.5.1"),
            env={"CUDA_VISIBLE_DEVICES": value},
        )
    )
    f = finding(r, "env.cuda-visible-devices")
    assert f.severity == "fail" and "unset CUDA_VISIBLE_DEVICES" in (f.fix or "")


def test_cuda_visible_devices_selecting_a_gpu_passes() -> None:
    r = doctor(
        s.host(
            driver=s.driver("580.65.06", "13.0"),
            gpus=[s.H100],
            paddle=s.PADDLE_331_CU126,
            cudnn=s.cudnn("9.5.1"),
            env={"CUDA_VISIBLE_DEVICES": "0"},
        )
    )
    assert finding(r, "env.cuda-visible-devices").severity == "pass"


def test_mig_enabled_without_instances() -> None:
    r = doctor(
        s.host(
            driver=s.driver("535.104.05", "12.2"),
            gpus=[s.A100 | {"mig_mode": True, "mig_instances": 0}],
            paddle=s.PADDLE_331_CU126,
            cudnn=s.cudnn("9.5.1"),
        )
    )
    f = finding(r, "gpu.mig-no-instances")
    assert f.severity == "fail" and "nvidia-smi mig" in (f.fix or "")


def test_k80_below_paddle_minimum_compute_capability() -> None:
    r = doctor(
        s.host(
            driver=s.driver("470.82.01", "11.4"),
            gpus=[s.K80],
            paddle=s.PADDLE_262_CU118,
            cudnn=s.cudnn("8.6.0"),
        ),
        paddle="2.6.2",
    )
    assert finding(r, "gpu.cc-too-low").severity == "fail"


def test_laptop_without_gpu_passes_with_the_cpu_tag() -> None:
    r = doctor(
        s.host(
            driver={"status": "absent", "reason": "NVML Shared Library Not Found"},
            paddle=s.PADDLE_331_CPU,
        )
    )
    assert r.verdict == "pass" and int(r.exit_status) == 0
    assert r.image is not None and r.image.kind == "cpu" and r.image.ref is not None
    assert r.image.ref.endswith(":3.3.1")


def test_expect_gpu_without_driver_fails() -> None:
    r = doctor(s.host(driver={"status": "absent"}, paddle=s.PADDLE_331_CPU), expect_gpu=True)
    assert finding(r, "driver.missing").severity == "fail"
    assert r.verdict == "fail"


def test_docker_without_nvidia_runtime_on_a_gpu_host() -> None:
    r = doctor(
        s.host(
            driver=s.driver("580.65.06", "13.0"),
            gpus=[s.H100],
            paddle=s.PADDLE_331_CU126,
            cudnn=s.cudnn("9.5.1"),
            engine=s.ENGINE_PLAIN,
        )
    )
    f = finding(r, "engine.no-nvidia-runtime")
    assert f.severity == "warn" and "nvidia-ctk runtime configure" in (f.fix or "")


def test_v100_is_not_given_a_cuda13_image() -> None:
    # CUDA 13.0 removed Volta (sm_70): NV-RN §2.6.2
    r = doctor(
        s.host(
            driver=s.driver("580.65.06", "13.0"),
            gpus=[s.V100],
            paddle=s.PADDLE_331_CU126,
            cudnn=s.cudnn("9.5.1"),
        )
    )
    assert r.image is not None and r.image.ref is not None and "cuda13" not in r.image.ref
    assert any("cuda13" in rej.ref for rej in r.image.rejected)


def test_h100_on_580_gets_the_cuda13_image() -> None:
    r = doctor(
        s.host(
            driver=s.driver("580.65.06", "13.0"),
            gpus=[s.H100],
            paddle=s.PADDLE_331_CU126,
            cudnn=s.cudnn("9.5.1"),
        )
    )
    assert r.image is not None and r.image.ref is not None and "cuda13.0" in r.image.ref


def test_driver_too_old_for_every_image_gives_no_tag() -> None:
    r = doctor(
        s.host(
            driver=s.driver("418.87.01", "10.1"),
            gpus=[s.A100],
            paddle=s.PADDLE_331_CU126,
            cudnn=s.cudnn("9.5.1"),
        )
    )
    assert r.image is not None and r.image.ref is None
    # the installed build is the subject: the driver that runs none of it fails the host; no image
    # for this host is advice on top
    assert finding(r, "image.none").severity == "warn"
    assert finding(r, "driver.too-old").severity == "fail" and int(r.exit_status) == 1


def test_expect_gpu_on_facts_without_a_driver_layer_fails() -> None:
    r = doctor(s.host(paddle=s.PADDLE_331_CPU), expect_gpu=True)
    assert finding(r, "gpu.expected").severity == "fail" and r.verdict == "fail"


def test_pypi_262_wheel_on_h100_has_no_sm90_kernels() -> None:
    # §4b (measured): the 2.6.2 cu118 PyPI wheel carries SASS for 61 70 75 80 86 only; 2.x
    # records no archs in its version file, so the matrix's measured list is used
    r = doctor(
        s.host(
            driver=s.driver("535.104.05", "12.2"),
            gpus=[s.H100],
            paddle=s.PADDLE_262_CU118,
            cudnn=s.cudnn("8.6.0"),
        ),
        paddle="2.6.2",
    )
    f = finding(r, "paddle.arch-missing")
    assert "sm_90" in f.message and "61 70 75 80 86" in f.message

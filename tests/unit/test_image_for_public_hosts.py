"""Wrong matrix answers, one scenario each: a real host from a public issue (cited) -> verdict,
exit code and the image line. Saved facts only; the matrix is the shipped one."""

from __future__ import annotations

from typing import Any

from envcheck.contracts.facts import host_from_document
from envcheck.contracts.host_report import Report
from envcheck.image.choice import select_image
from envcheck.matrix.load import load_matrix
from envcheck.verdict.judge import Context, judge
from tests import scenarios as s

MATRIX = load_matrix()
HUB = "docker.io/paddlepaddle/paddle"
CCR = "ccr-2vdh3abv-pub.cnc.bj.baidubce.com/paddlepaddle/paddle"

GTX1080, RTX4090 = s.GTX1080, s.RTX4090
ORIN = {"index": 0, "name": "Orin (nvgpu)", "compute_capability": "8.7", "memory_total_mib": 15656}
PADDLE_252_CU117 = {
    "status": "ok",
    "package": "paddlepaddle-gpu",
    "version": "2.5.2",
    "cuda": "11.7",
    "cudnn": "8.4.1",
    "compiled_cuda_archs": None,
}
PADDLE_300_CU126 = {
    "status": "ok",
    "package": "paddlepaddle-gpu",
    "version": "3.0.0",
    "cuda": "12.6",
    "cudnn": "9.5.1",
    "compiled_cuda_archs": [],
    "with_pip_cuda_libraries": True,
}


def doctor(
    host_doc: dict[str, Any], paddle: str | None = None, registry: str = "dockerhub"
) -> Report:
    host = host_from_document(host_doc)
    image = select_image(host, MATRIX, paddle=paddle, registry=registry)
    return Report(
        host=host,
        findings=tuple(judge(Context(host=host, matrix=MATRIX, image=image))),
        image=image,
    )


def ids(report: Report) -> dict[str, str]:
    return {f.id: f.severity for f in report.findings}


def text(report: Report) -> str:
    return "\n".join(f"{f.message} {f.fix or ''}" for f in report.findings)


def test_gtx1080_never_gets_the_320_cu129_image_paddlex4682() -> None:
    # PaddleX#4682: GTX 1080 + 3.2.0 cu129 -> "CUDA error(209), no kernel image is available";
    # the same card runs 3.2.0 cu118 (the variant known to hold sm_61 is preferred
    # over cu126, whose list is unknown).
    r = doctor(s.host(driver=s.driver("570.124.06", "12.8"), gpus=[GTX1080]), paddle="3.2.0")
    assert r.image is not None and r.image.ref == f"{HUB}:3.2.0-gpu-cuda11.8-cudnn8.9"
    assert any("sm_61 missing" in x.reason for x in r.image.rejected)
    cu126 = next(x for x in r.image.rejected if "cuda12.6" in x.ref)
    assert "nothing known shows Paddle 3.2.0 cu126 holds sm_61" in cu126.reason
    assert r.image.arch_known is True and r.image.arch_note is None
    assert "image.arch-unverified" not in ids(r) and int(r.exit_status) == 0


def test_k80_gets_the_only_252_build_with_kepler_paddle55715() -> None:
    # Paddle#55715: 2.5 CUDA 11 wheels are compiled for 70 75 80 86; Kepler is CUDA 10 only.
    r = doctor(s.host(driver=s.driver("470.82.01", "11.4"), gpus=[s.K80]), paddle="2.5.2")
    assert r.image is not None and r.image.ref == f"{HUB}:2.5.2-gpu-cuda10.2-cudnn7.6-trt7.0"
    assert any("minimum compute capability 7.0" in x.reason for x in r.image.rejected)
    assert int(r.exit_status) == 0


def test_h100_with_the_252_cu117_wheel_cannot_train_paddle58971() -> None:
    # Paddle#58971: 2.5.2 post117 on an H100: "compute capability ... 90, which is not supported".
    r = doctor(
        s.host(
            driver=s.driver("535.104.05", "12.2"),
            gpus=[s.H100],
            paddle=PADDLE_252_CU117,
            cudnn=s.cudnn("8.4.1"),
        )
    )
    arch = [f for f in r.findings if f.id == "paddle.arch-missing"]
    assert arch and arch[0].severity == "fail" and "sm_90" in arch[0].message
    assert r.verdict == "fail" and int(r.exit_status) == 1


def test_cu126_on_a_cuda122_driver_runs_by_nvidia_rule_with_paddles_note_paddle78036() -> None:
    # Paddle#78036: 3.0.0 cu126 installs and imports on a CUDA 12.2 driver (535); Paddle's docs
    # ask for >= 550.54.14, NVIDIA's minor-version compatibility for 12.x needs 525.60.13.
    r = doctor(
        s.host(
            driver=s.driver("535.104.05", "12.2"),
            gpus=[s.A100],
            paddle=PADDLE_300_CU126,
            cudnn=s.cudnn("9.5.1"),
        ),
        paddle="3.0.0",
    )
    minor = [f for f in r.findings if f.id == "driver.minor-compat"]
    assert minor and minor[0].severity == "warn" and "550.54.14" in minor[0].message
    assert "driver.too-old" not in ids(r) and int(r.exit_status) == 0
    # the image: 3.0.0 cu118, whose Linux list holds sm_80 (Paddle#74088: 60 61 70 75 80 86),
    # over cu126, whose list nothing shows
    assert r.image is not None and r.image.ref == f"{HUB}:3.0.0-gpu-cuda11.8-cudnn8.9-trt8.6"
    assert r.image.arch_known is True


def test_the_331_cuda13_image_is_on_the_baidu_mirror_paddle78924() -> None:
    # Paddle#78924 pulls ccr-…/paddle:3.3.1-gpu-cuda13.0-cudnn9.13 (the matrix had Docker Hub only).
    r = doctor(
        s.host(driver=s.driver("580.65.06", "13.0"), gpus=[s.H100]),
        paddle="3.3.1",
        registry="baidu",
    )
    assert r.image is not None and r.image.ref == f"{CCR}:3.3.1-gpu-cuda13.0-cudnn9.13"
    assert int(r.exit_status) == 0


def test_jetson_orin_aarch64_never_gets_an_x86_image_paddleocr17327() -> None:
    # PaddleOCR#17327: Jetson Orin (JetPack 6, arm64): no GPU wheel or image for arm64.
    doc = s.host(driver=s.driver("540.4.0", "12.6"), gpus=[ORIN])
    doc["machine"] = {"hostname": "orin", "os": "Ubuntu 22.04", "arch": "aarch64"}
    r = doctor(doc)
    assert r.image is not None and r.image.ref is None
    assert all("this host is linux/arm64" in x.reason for x in r.image.rejected)
    assert "linux/arm64" in (r.image.reason or "") and "Paddle Inference" in (r.image.reason or "")
    assert ids(r)["image.none"] == "fail" and int(r.exit_status) == 1


def test_cuda13_image_is_avoided_on_a_newer_driver_paddle78924_paddle76558() -> None:
    # Paddle#78924: RTX 4090-class (CC 8.9) host, driver API 13.2: the 13.0 image silently ran on
    # the CPU. Paddle#76558: 580.95.05 and newer fail, 580.82.07 works.
    r = doctor(s.host(driver=s.driver("595.58.03", "13.2"), gpus=[RTX4090]), paddle="3.3.1")
    assert r.image is not None and r.image.ref == f"{HUB}:3.3.1-gpu-cuda12.9-cudnn9.9"
    cu130 = [x for x in r.image.rejected if "cuda13.0" in x.ref]
    assert cu130 and "known defect" in cu130[0].reason and "Paddle#76558" in cu130[0].reason
    ok = doctor(s.host(driver=s.driver("580.82.07", "13.0"), gpus=[RTX4090]), paddle="3.3.1")
    assert ok.image is not None and ok.image.tag == "3.3.1-gpu-cuda13.0-cudnn9.13"


def test_a_gpu_without_a_probed_cc_is_named_paddlex4682() -> None:
    # The same GTX 1080 when NVML gave no compute capability: gpus.toml names it (6.1).
    r = doctor(
        s.host(
            driver=s.driver("570.124.06", "12.8"), gpus=[GTX1080 | {"compute_capability": None}]
        ),
        paddle="3.2.0",
    )
    assert r.image is not None and r.image.tag == "3.2.0-gpu-cuda11.8-cudnn8.9"


def test_v100_on_470_gets_the_newest_release_that_runs_and_the_driver_alternative() -> None:
    # No image of the newest release runs on a V100 with driver 470.
    r = doctor(s.host(driver=s.driver("470.82.01", "11.4"), gpus=[s.V100]))
    assert r.image is not None and r.image.ref == f"{HUB}:3.2.2-gpu-cuda11.8-cudnn8.9"
    reason = r.image.reason or ""
    assert "Paddle 3.3.1 (the newest release) has no image" in reason
    assert "upgrade the NVIDIA driver to >= 525.60.13" in reason
    assert "image.none" not in ids(r) and int(r.exit_status) == 0
    # With --paddle the user's choice stands: a FAIL with the fix.
    mine = doctor(s.host(driver=s.driver("470.82.01", "11.4"), gpus=[s.V100]), paddle="3.3.1")
    assert mine.image is not None and mine.image.ref is None and int(mine.exit_status) == 1


def test_user_facing_text_has_no_source_keys() -> None:
    # 3P-only tag on a 12.2 driver: the messages say "reported by users", the keys stay in JSON.
    r = doctor(
        s.host(
            driver=s.driver("535.104.05", "12.2"),
            gpus=[s.A100],
            paddle=s.PADDLE_331_CU126,
            cudnn=s.cudnn("9.5.1"),
        ),
        paddle="3.3.1",
    )
    messages = text(r)
    for key in ("[NV-RN", "NV-MVC", "3P", "D-2.6", "OCR-3"):
        assert key not in messages
    assert "reported by users, not in the official docs" in messages
    assert r.image is not None and r.image.source == "3P"  # --json keeps the key

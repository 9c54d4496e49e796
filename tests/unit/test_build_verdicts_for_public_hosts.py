"""Wrong verdicts of the matrix, one test per class, each built from its own public evidence
(cited): a saved host -> the verdict, the finding, the image line. The matrix is the shipped one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from envcheck.contracts.facts import host_from_document
from envcheck.contracts.host_report import Report
from envcheck.image.choice import select_image
from envcheck.matrix.load import load_matrix
from envcheck.verdict.judge import Context, judge
from tests import scenarios as s
from tests.inprocess import run_envcheck

MATRIX = load_matrix()
HUB = "docker.io/paddlepaddle/paddle"

GTX1080, H20 = s.GTX1080, s.H20


def paddle(version: str, cuda: str, cudnn: str, archs: list[int] | None = None) -> dict[str, Any]:
    """An installed GPU build as the probe reads its version file (3.x writes `[]` when its CI set
    no COMPILED_CUDA_ARCHS, like the 3.3.1 wheel, W-331; 2.x writes no field at all)."""
    return {
        "status": "ok",
        "package": "paddlepaddle-gpu",
        "version": version,
        "cuda": cuda,
        "cudnn": cudnn,
        "compiled_cuda_archs": archs,
        "with_pip_cuda_libraries": version.startswith("3"),
    }


def doctor(host_doc: dict[str, Any], paddle: str | None = None) -> Report:
    host = host_from_document(host_doc)
    image = select_image(host, MATRIX, paddle=paddle)
    return Report(host, tuple(judge(Context(host=host, matrix=MATRIX, image=image))), image)


def found(report: Report) -> dict[str, str]:
    return {f.id: f.severity for f in report.findings}


def message(report: Report, id_: str) -> str:
    return next(f"{f.message} {f.fix or ''}" for f in report.findings if f.id == id_)


# -- an arch list applies only on the platform it was seen on --------------------------------------


def test_the_windows_cu129_list_of_311_does_not_decide_a_linux_rtx5090_paddlex4473() -> None:
    # PaddleX#4473 / Paddle#73687: "compiled for 75 80 86 89" was printed by the Windows cu129
    # wheel; that list says nothing of the Linux wheel. What speaks of a Linux Blackwell host is
    # the 3.1 line's own fact (no 3.1 build holds sm_120: the Linux cu129 nightly of July 2025
    # lacks it too, Paddle#73937; maintainers send RTX 50 users to 3.2.0 cu129, Paddle#76037).
    # That fact is kept unconfirmed (no report of the Linux 3.1.x stable wheel itself): it can
    # warn, never fail a host that may train with that build.
    build = paddle("3.1.1", "12.9", "9.9.0", archs=[])
    linux = doctor(
        s.host(driver=s.driver("575.57.08", "12.9"), gpus=[s.RTX5090], paddle=build),
        paddle="3.1.1",
    )
    assert "paddle.arch-missing" not in found(linux)
    assert found(linux)["paddle.arch-unverified"] == "warn"
    assert linux.verdict != "fail"
    text = message(linux, "paddle.arch-unverified")
    assert "sm_120 missing" in text and "unconfirmed" in text and "75 80 86 89" not in text
    facts = next(f for f in linux.findings if f.id == "paddle.arch-unverified").observed["facts"]
    assert any("release line 3.1.x, CUDA 12.9 builds" in f for f in facts)
    # the same facts from the Windows wheel's platform: its own list applies and fails it
    windows = doctor(
        s.host(
            driver=s.driver("576.57", "12.9"),
            gpus=[s.RTX5090],
            paddle=build,
            machine={"os": "Windows 11", "arch": "AMD64"},
        ),
        paddle="3.1.1",
    )
    assert found(windows)["paddle.arch-missing"] == "fail"
    assert "75 80 86 89" in message(windows, "paddle.arch-missing")


def test_the_310_cu129_image_is_rejected_by_the_31_line_fact_not_a_windows_list() -> None:
    # The image holds the Linux wheel: the Windows list says nothing about it; the 3.1 line's
    # "no sm_120" (Paddle#73937 on Linux among its sources) does.
    r = doctor(s.host(driver=s.driver("575.57.08", "12.9"), gpus=[s.RTX5090]), paddle="3.1.0")
    assert r.image is not None and r.image.ref is None
    cu129 = next(x for x in r.image.rejected if x.ref.endswith("3.1.0-gpu-cuda12.9-cudnn9.9"))
    assert "sm_120 missing" in cu129.reason and "75 80 86 89" not in cu129.reason


def test_a_list_without_its_platform_is_refused_by_the_loader(tmp_path: Path) -> None:
    from envcheck.contracts.errors import MatrixError

    folder = tmp_path / "m"
    folder.mkdir()
    for f in Path(MATRIX.path).glob("*.toml"):
        (folder / f.name).write_text(f.read_text())
    paddle_toml = folder / "paddle.toml"
    paddle_toml.write_text(
        paddle_toml.read_text().replace('archs_platform = "windows/amd64"\n', "", 1)
    )
    try:
        load_matrix(str(folder))
    except MatrixError as e:
        assert "archs_platform: missing" in str(e)
    else:  # pragma: no cover - the assertion below says what went wrong
        raise AssertionError("a list without its platform was accepted")


# -- old GPUs get the variant known to hold their arch ---------------------------------------------


def test_a_gtx1080_gets_the_320_cu118_image_and_wheel_paddlex4682() -> None:
    # PaddleX#4682: the GTX 1080 fails on 3.2.0 cu129 ("no kernel image") and runs cu118.
    r = doctor(s.host(driver=s.driver("570.124.06", "12.8"), gpus=[GTX1080]), paddle="3.2.0")
    assert r.image is not None and r.image.tag == "3.2.0-gpu-cuda11.8-cudnn8.9"
    assert r.image.pip_command is not None and "/stable/cu118/" in r.image.pip_command
    assert r.image.arch_known is True
    assert "a report shows every GPU's arch running on Paddle 3.2.0 cu118" in (r.image.reason or "")
    passed_over = {x.ref.rsplit(":", 1)[1]: x.reason for x in r.image.rejected}
    assert "sm_61 missing" in passed_over["3.2.0-gpu-cuda12.9-cudnn9.9"]
    assert "preferred: 3.2.0-gpu-cuda11.8-cudnn8.9" in passed_over["3.2.0-gpu-cuda12.6-cudnn9.5"]


def test_nothing_known_is_said_on_the_image_line_not_as_a_warning() -> None:
    # Paddle 3.3.1: no list and no report of any variant on sm_61. Said once, on the image line.
    r = doctor(s.host(driver=s.driver("570.124.06", "12.8"), gpus=[GTX1080]), paddle="3.3.1")
    assert r.image is not None and r.image.ref is not None and r.image.arch_known is False
    assert "image.arch-unverified" not in found(r)
    line = message(r, "image.selected")
    assert "nothing known shows Paddle 3.3.1" in line and "holds sm_61" in line
    assert "only the smoke training can prove it" in line


# -- Hopper on the cu118 builds of 3.x -------------------------------------------------------------


def test_h20_with_a_3x_cu118_wheel_lacks_sm90_paddleocr15791() -> None:
    # PaddleMIX#312, a maintainer: "h100/h800 need the CUDA 12 Paddle build".
    # PaddleOCR#15791: an H20 outputs no text with the cu118 wheel and works with cu126;
    # PaddleX#3853 (H800, 3.0.0rc0 cu118) and PaddleOCR#16198 (H100, 3.1 + CUDA 11.8) the same.
    r = doctor(
        s.host(
            driver=s.driver("535.161.08", "12.2"),
            gpus=[H20],
            paddle=paddle("3.0.0", "11.8", "8.9.6", archs=[]),
        ),
        paddle="3.0.0",
    )
    assert found(r)["paddle.arch-missing"] == "fail"
    text = message(r, "paddle.arch-missing")
    # the 3.0.0 cu118 Linux list (Paddle#74088: 60 61 70 75 80 86) has no sm_90
    assert "sm_90" in text and "60 61 70 75 80 86" in text and "/stable/cu126/" in text
    assert int(r.exit_status) == 1


# -- a 2.x GPU build without its CUDA runtime ------------------------------------------------------


def test_a_260_wheel_without_libcudart_fails_even_with_cudnn_paddle60906() -> None:
    # Paddle#60906: 2.5.2 and 2.6.0 -> "ImportError: libcudart.so.11.0: cannot open shared object
    # file"; cuDNN being there does not help.
    r = doctor(
        s.host(
            driver=s.driver("535.104.05", "12.2"),
            gpus=[s.T4],
            paddle=paddle("2.6.0", "11.8", "8.6.0"),
            cudnn=s.cudnn("8.6.0"),
            cuda_runtime={"status": "absent", "reason": "no libcudart.so found"},
        ),
        paddle="2.6.0",
    )
    assert found(r)["cuda.runtime-missing"] == "fail" and found(r)["cudnn.ok"] == "pass"
    text = message(r, "cuda.runtime-missing")
    # pinned to a release PyPI has, no glob for zsh to expand
    assert (
        "libcudart.so.11.0" in text and "-m pip install nvidia-cuda-runtime-cu11==11.8.89`" in text
    )
    assert int(r.exit_status) == 1


def test_a_cuda12_runtime_is_not_the_cuda11_one_a_252_build_loads_paddle49280() -> None:
    runtime = {
        "status": "ok",
        "version": "12.2",
        "path": "/usr/local/cuda/lib64/libcudart.so.12",
        "candidates": [{"path": "/usr/local/cuda/lib64/libcudart.so.12", "version": "12.2"}],
    }
    r = doctor(
        s.host(
            driver=s.driver("535.104.05", "12.2"),
            gpus=[s.T4],
            paddle=paddle("2.5.2", "11.7", "8.4.1"),
            cudnn=s.cudnn("8.4.1"),
            cuda_runtime=runtime,
        ),
        paddle="2.5.2",
    )
    assert found(r)["cuda.runtime-missing"] == "fail"
    assert "found only CUDA 12.2" in message(r, "cuda.runtime-missing")


def test_the_262_pypi_wheel_links_its_runtime_statically_w262() -> None:
    # MEASURED (readelf -d on the cp311 wheel): libpaddle.so/libphi.so NEED no libcudart.
    r = doctor(
        s.host(
            driver=s.driver("535.104.05", "12.2"),
            gpus=[s.T4],
            paddle=paddle("2.6.2", "11.8", "8.6.0"),
            cudnn=s.cudnn("8.6.0"),
            cuda_runtime={"status": "absent"},
        ),
        paddle="2.6.2",
    )
    assert "cuda.runtime-missing" not in found(r)


# -- an unknown or nightly build on a new architecture ---------------------------------------------

NIGHTLY = paddle("3.1.0.dev20250626", "12.8", "9.7.1", archs=[])


def nightly_host() -> dict[str, Any]:
    # PaddleX#4268: a cu128 nightly on an RTX 5090 D warns "compute capability … 120, which is not
    # supported" and yet "PaddlePaddle works well on 1 GPU": only running it tells.
    return s.host(
        driver=s.driver("575.57.08", "12.9"),
        gpus=[s.RTX5090],
        paddle=NIGHTLY,
        cudnn=s.cudnn(
            "9.7.1", "/opt/venv/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn.so.9"
        ),
    )


def test_a_nightly_on_a_gpu_newer_than_every_known_build_is_unverified_paddlex4268() -> None:
    r = doctor(nightly_host())
    assert found(r)["paddle.arch-unverified"] == "warn" and "paddle.arch-missing" not in found(r)
    text = message(r, "paddle.arch-unverified")
    assert "newer than every arch in its lists of Paddle 3.1.0 builds (up to sm_89)" in text
    assert "only the smoke training can prove it" in text


def test_under_expect_gpu_a_static_verdict_is_not_a_pass(tmp_path: Path) -> None:
    facts = tmp_path / "nightly.json"
    facts.write_text(json.dumps(nightly_host()))
    run = run_envcheck(
        ["doctor", "--facts", str(facts), "--expect-gpu", "--no-smoke", "--json"], cwd=tmp_path
    )
    doc = json.loads(run.stdout)
    unproven = [f for f in doc["findings"] if f["id"] == "smoke.gpu-unproven"]
    assert unproven and unproven[0]["severity"] == "fail", doc["findings"]
    assert doc["proof"] == "static" and run.returncode != 0
    # without --expect-gpu the same facts stay a warning
    plain = run_envcheck(["doctor", "--facts", str(facts), "--no-smoke", "--json"], cwd=tmp_path)
    assert json.loads(plain.stdout)["verdict"] == "warn" and plain.returncode == 0


# -- a current matrix ------------------------------------------------------------------------------


def test_340_has_its_cuda13_builds_and_drops_python_39_pr79378_pr79269() -> None:
    from envcheck.matrix.builds import build_for

    cudas = {b.cuda for b in MATRIX.builds_for("3.4.0") if b.package == "paddlepaddle-gpu"}
    assert cudas == {"12.6", "12.9", "13.0", "13.2"}
    cu132 = build_for(MATRIX, "3.4.0", "13.2")
    assert cu132 is not None and "/stable/cu132/" in cu132.pip and "PR79154" in cu132.source
    release = MATRIX.release("3.4.0")
    assert release is not None and release.python == ">=3.10,<3.14"  # PaddleFleet#1995, PR79269


def test_the_322_cuda13_image_has_a_build_and_a_pip_command_paddle76558() -> None:
    # Paddle#76558: the 3.2.2-gpu-cuda13.0-cudnn9.13 image runs on driver 580.65.06.
    host = host_from_document(s.host(driver=s.driver("580.65.06", "13.0"), gpus=[s.A100]))
    choice = select_image(host, MATRIX, paddle="3.2.2", registry="baidu")
    assert choice.tag == "3.2.2-gpu-cuda13.0-cudnn9.13"
    assert choice.pip_command == (
        "python -m pip install paddlepaddle-gpu==3.2.2 "
        "-i https://www.paddlepaddle.org.cn/packages/stable/cu130/"
    )


def test_330_is_confirmed_by_its_install_docs_docs7684() -> None:
    from envcheck.matrix.builds import build_for

    for cuda in ("12.6", "12.9", "13.0"):
        build = build_for(MATRIX, "3.3.0", cuda)
        assert build is not None and build.confirmed and "DOCS#7684" in build.source


def test_explain_says_how_current_the_matrix_is(tmp_path: Path) -> None:
    facts = tmp_path / "host.json"
    facts.write_text(json.dumps(s.host(driver=s.driver("535.104.05", "12.2"), gpus=[s.A100])))
    run = run_envcheck(
        ["doctor", "--facts", str(facts), "--no-smoke", "--explain", "--no-color"], cwd=tmp_path
    )
    assert "the newest source it has read is from 2026-09-08" in run.stdout, run.stdout
    doc = json.loads(
        run_envcheck(["doctor", "--facts", str(facts), "--no-smoke", "--json"], cwd=tmp_path).stdout
    )
    assert doc["meta"]["matrix_newest_source"] == "2026-09-08"


# -- aarch64 ---------------------------------------------------------------------------------------

ARM64 = {"hostname": "arm", "os": "Ubuntu 22.04", "arch": "aarch64"}


def test_a_gb10_gets_no_jetson_advice_paddle79186() -> None:
    # GB10 (DGX Spark, sm_121, aarch64): no arm64 CUDA build of Paddle exists (Paddle#79186 asks).
    gb10 = {"index": 0, "name": "NVIDIA GB10", "compute_capability": "12.1"}
    r = doctor(s.host(driver=s.driver("580.95.05", "13.0"), gpus=[gb10], machine=ARM64))
    reason = (r.image.reason or "") if r.image else ""
    assert "no GPU build of Paddle exists" in reason and "Paddle#79186" in reason
    assert "Jetson" not in reason and "JetPack" not in reason


def test_an_orin_hears_which_jetpack_has_a_wheel_paddle72578_paddle74126() -> None:
    orin = {"index": 0, "name": "Orin (nvgpu)", "compute_capability": "8.7"}
    r = doctor(s.host(driver=s.driver("540.4.0", "12.6"), gpus=[orin], machine=ARM64))
    reason = (r.image.reason or "") if r.image else ""
    assert "for JetPack 5.1.2 there is Paddle Inference's Paddle 3.0.0 wheel" in reason
    assert "jetpack5.1.2_gcc9.4/all/paddlepaddle_gpu-3.0.0-cp38-cp38-linux_aarch64.whl" in reason
    assert "for JetPack 6 no GPU build of Paddle exists (Paddle#74126)" in reason

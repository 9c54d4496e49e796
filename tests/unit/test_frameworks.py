"""Paddle beside torch in one environment: the NVIDIA wheels and pins read from real dist-info
folders (tests/framework_pins.py), judged against the Paddle variant's pins."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envcheck.contracts.facts import NvidiaWheels, host_from_document, to_dict
from envcheck.contracts.findings import Finding
from envcheck.image.choice import select_image
from envcheck.matrix.load import load_matrix
from envcheck.probe.nvidia_wheels import probe_nvidia_wheels
from envcheck.verdict.judge import Context, judge
from tests import framework_pins as fp
from tests import scenarios as s

MATRIX = load_matrix()
PADDLE_320_CU126 = s.PADDLE_331_CU126 | {"version": "3.2.0"}


def judged(wheels: NvidiaWheels, paddle: dict[str, Any] = PADDLE_320_CU126) -> list[Finding]:
    host = host_from_document(
        s.host(
            driver=s.driver("570.124.06", "12.8"),
            gpus=[s.A100],
            paddle=paddle,
            nvidia_wheels=to_dict(wheels),
        )
    )
    found = judge(Context(host=host, matrix=MATRIX, image=select_image(host, MATRIX)))
    return [f for f in found if f.id.startswith("paddle.framework")]


def test_the_probe_reads_the_wheels_and_who_pins_them(tmp_path: Path) -> None:
    site = fp.environment(tmp_path / "site-packages", fp.PADDLE_320_CU126)
    wheels = probe_nvidia_wheels([str(site)])
    assert wheels.installed == fp.PADDLE_320_CU126  # nvidia-ml-py is no CUDA wheel
    assert {p.by for p in wheels.pins} == {"torch", "paddlepaddle-gpu"}
    assert "nvidia-cudnn-cu12==8.9.2.26" + fp.LINUX_X86 in {
        p.requirement for p in wheels.pins
    }  # the description's "Requires-Dist" line is no field
    assert all(p.by_version in ("2.3.0", "3.2.0") for p in wheels.pins)


def test_without_a_cuda_wheel_no_metadata_is_read(tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    fp.dist_info(site, "torch", "2.3.0", fp.pins(fp.TORCH_230))
    assert probe_nvidia_wheels([str(site)]) == NvidiaWheels()


def test_paddles_wheels_installed_last_break_torchs_pins(tmp_path: Path) -> None:
    """pip installed Paddle after torch (Paddle#71867): Paddle is whole, torch is not."""
    site = fp.environment(tmp_path / "site-packages", fp.PADDLE_320_CU126)
    (f,) = judged(probe_nvidia_wheels([str(site)]))
    assert (f.id, f.severity) == ("paddle.framework-conflict", "warn")
    assert "torch 2.3.0 and paddlepaddle-gpu 3.2.0" in f.message
    assert "nvidia-cudnn-cu12 (torch: ==8.9.2.26, Paddle: ==9.5.1.17; installed 9.5.1.17)" in (
        f.message
    )
    assert "so torch runs with a library it was not built with" in f.message
    # torch's CUDA 12.1 has no Paddle 3.2.0 build: an environment each
    assert "an environment each" in (f.fix or "") and "CUDA 12.1" not in (f.fix or "")


def test_torchs_wheels_installed_last_break_paddle(tmp_path: Path) -> None:
    site = fp.environment(tmp_path / "site-packages", fp.TORCH_230)
    (f,) = judged(probe_nvidia_wheels([str(site)]))
    assert (f.id, f.severity) == ("paddle.framework-conflict", "fail")
    assert "installed 8.9.2.26" in f.message and "so Paddle runs" in f.message


def test_a_cuda_family_mix_names_the_matching_paddle_variant(tmp_path: Path) -> None:
    """Paddle's cu13 build beside a framework of CUDA 12.6: the Paddle build for 12.6 exists."""
    site = tmp_path / "site-packages"
    cu13 = {"nvidia-cudnn-cu13": "9.13.0.50"}
    fp.dist_info(site, "paddlepaddle-gpu", "3.3.1", fp.pins(cu13))
    fp.dist_info(site, "torch", "2.6.0", fp.pins(fp.PADDLE_320_CU126))
    for name, version in (cu13 | fp.PADDLE_320_CU126).items():
        fp.dist_info(site, name, version)
    paddle = s.PADDLE_331_CU126 | {"cuda": "13.0", "cudnn": "9.13.0"}
    (f,) = judged(probe_nvidia_wheels([str(site)]), paddle)
    assert (f.id, f.severity) == ("paddle.framework-cuda-family", "warn")
    assert "torch 2.6.0 pins the CUDA 12 wheels, paddlepaddle-gpu 3.3.1 the CUDA 13 ones" in (
        f.message
    )
    assert "the Paddle build for CUDA 12.6" in (f.fix or "")
    assert "paddlepaddle-gpu==3.3.1 -i https://www.paddlepaddle.org.cn/packages/stable/cu126/" in (
        f.fix or ""
    )


def test_pins_of_another_platform_or_an_extra_not_installed_do_not_count(tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    arm = '; platform_system == "Linux" and platform_machine == "aarch64"'
    fp.dist_info(site, "paddlepaddle-gpu", "3.2.0", fp.pins(fp.PADDLE_320_CU126))
    fp.dist_info(
        site,
        "jax-cuda12-plugin",
        "0.4.35",
        [*fp.pins(fp.TORCH_230, arm), 'nvidia-nccl-cu12==2.21.5; extra == "with-cuda"'],
    )
    for name, version in fp.PADDLE_320_CU126.items():
        fp.dist_info(site, name, version)
    assert judged(probe_nvidia_wheels([str(site)])) == []


def test_frameworks_that_agree_add_no_line(tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    fp.dist_info(site, "paddlepaddle-gpu", "3.2.0", fp.pins(fp.PADDLE_320_CU126))
    fp.dist_info(site, "torch", "2.6.0", fp.pins({"nvidia-cudnn-cu12": "9.5.1.17"}))
    for name, version in fp.PADDLE_320_CU126.items():
        fp.dist_info(site, name, version)
    assert judged(probe_nvidia_wheels([str(site)])) == []

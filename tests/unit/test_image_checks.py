"""Refusing, before a pull, an image this host cannot run: platform and CUDA."""

from __future__ import annotations

import pytest

from envcheck.contracts.facts import DriverFacts, HostFacts
from envcheck.image.checks import CudaClaim, cuda_claims, cuda_refusal, platform_refusal
from envcheck.image.platforms import Platform
from envcheck.matrix.load import load_matrix

MATRIX = load_matrix(None)
AMD64 = Platform("linux", "amd64")
# NVIDIA's own CUDA 12.9 images carry these two variables in their config.
CUDA_129_ENV = {
    "CUDA_VERSION": "12.9.1",
    "NVIDIA_REQUIRE_CUDA": "cuda>=12.9 brand=tesla,driver>=535,driver<536",
}


def host(version: str | None, cuda: str | None) -> HostFacts:
    if version is None:
        return HostFacts(driver=DriverFacts(status="absent", reason="libnvidia-ml.so.1 not found"))
    return HostFacts(driver=DriverFacts(status="ok", version=version, cuda=cuda))


def test_claims_come_from_config_then_tag() -> None:
    claims = cuda_claims("3.3.1-gpu-cuda12.9-cudnn9.9", CUDA_129_ENV)
    assert [c.cuda for c in claims] == ["12.9", "12.9", "12.9"]
    assert claims[0].source.startswith("config NVIDIA_REQUIRE_CUDA=")
    assert cuda_claims("2.6.2-gpu-cuda11.7-cudnn8.4-trt8.4") == (
        CudaClaim("11.7", "tag 2.6.2-gpu-cuda11.7-cudnn8.4-trt8.4"),
    )
    assert cuda_claims("3.3.1") == ()
    assert cuda_claims("latest", {"PATH": "/bin"}) == ()


@pytest.mark.parametrize(
    ("driver", "driver_cuda", "refused"),
    [
        (None, None, True),  # this machine: CUDA toolkit, no driver
        ("470.82.01", "11.4", True),  # CUDA 12 needs >= 525.60.13 even with minor-version compat
        ("535.104.05", "12.2", False),  # 12.9 runs on 12.2's driver via minor-version compatibility
        ("575.51.03", "12.9", False),
    ],
    ids=["no-driver", "r470", "r535-minor-compat", "r575"],
)
def test_cuda_refusal(driver: str | None, driver_cuda: str | None, refused: bool) -> None:
    reason = cuda_refusal(
        cuda_claims("3.3.1-gpu-cuda12.9-cudnn9.9", CUDA_129_ENV), host(driver, driver_cuda), MATRIX
    )
    assert (reason is not None) == refused
    if reason:
        assert "CUDA 12.9" in reason


def test_a_cpu_image_is_never_refused_for_cuda() -> None:
    assert cuda_refusal(cuda_claims("3.3.1", {}), host(None, None), MATRIX) is None


def test_platform_refusal_names_what_is_offered() -> None:
    arm = (Platform("linux", "arm64", "v8"),)
    assert (
        platform_refusal(arm, AMD64)
        == "the image has no linux/amd64 variant (it offers: linux/arm64/v8)"
    )
    assert platform_refusal(arm + (AMD64,), AMD64) is None
    assert platform_refusal((), AMD64) is None  # nothing known: the engine decides

"""Doctor reports built by hand from facts and findings, one per real failure a CI gate guards.

Shared by the renderer, drift and fleet tests; no probing, no container.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from envcheck.contracts.facts import (
    DriverFacts,
    GpuFacts,
    HostFacts,
    LibraryFacts,
    MachineFacts,
    PaddleFacts,
)
from envcheck.contracts.findings import Finding, fail, passed, warn
from envcheck.contracts.host_report import ImageChoice, Report
from envcheck.contracts.record import replace
from envcheck.contracts.smoke_report import SmokeDocument

IMAGE = ImageChoice(
    ref="ccr-2vdh3abv-pub.cnc.bj.baidubce.com/paddlepaddle/paddle:3.0.0-gpu-cuda12.6-cudnn9.5-trt10.5",
    tag="3.0.0-gpu-cuda12.6-cudnn9.5-trt10.5",
    kind="gpu",
    cuda="12.6",
    cudnn="9.5",
    paddle="3.0.0",
    digest="sha256:" + "ab" * 32,
)


# The smoke section the samples carry: where it ran; its runs are the smoke tests' business.
SMOKE = SmokeDocument(
    mode="container",
    image=IMAGE.ref,
    gpu_expected=True,
    gpu_expected_reason="2 usable GPU(s) and a CUDA build of Paddle that the matrix says fits",
    gpu_request=("all",),
    exit_code=0,
    duration_s=6.4,
)


def host(hostname: str = "gpu-node-1", **changes: Any) -> HostFacts:
    """A healthy two-A100 host; `changes` replace whole layers (`driver=DriverFacts(...)`)."""
    base = HostFacts(
        driver=DriverFacts(
            status="ok", version="535.104.05", cuda="12.2", kernel_module="535.104.05"
        ),
        gpus=(
            GpuFacts(index=0, name="NVIDIA A100-SXM4-80GB", compute_capability="8.0"),
            GpuFacts(index=1, name="NVIDIA A100-SXM4-80GB", compute_capability="8.0"),
        ),
        cuda_runtime=LibraryFacts(
            status="ok", version="12.6", path="/usr/local/cuda/lib64/libcudart.so.12"
        ),
        cudnn=LibraryFacts(
            status="ok", version="9.5.1", path="/usr/lib/x86_64-linux-gnu/libcudnn.so.9"
        ),
        paddle=PaddleFacts(
            status="ok", package="paddlepaddle-gpu", version="3.0.0", cuda="12.6", cudnn="9.5"
        ),
        machine=MachineFacts(
            hostname=hostname, os="Ubuntu 22.04", kernel="5.15.0-105-generic", arch="x86_64"
        ),
    )
    return replace(base, **changes)


HEALTHY_FINDINGS: tuple[Finding, ...] = (
    passed("driver.ok", "driver 535.104.05 supports CUDA 12.2", layer="driver"),
    passed(
        "gpu.supported",
        "2 × NVIDIA A100-SXM4-80GB (sm 8.0) are supported by Paddle 3.0.0",
        layer="gpu",
    ),
    passed("paddle.gpu-build", "Paddle 3.0.0 is a GPU build (CUDA 12.6)", layer="paddle"),
    passed("smoke.trained", "60 steps on cuda:0, loss 2.31 → 0.42", layer="smoke"),
)


def report(
    findings: tuple[Finding, ...] = HEALTHY_FINDINGS,
    hostname: str = "gpu-node-1",
    meta: dict[str, Any] | None = None,
    **host_changes: Any,
) -> Report:
    return Report(
        host=host(hostname, **host_changes),
        findings=findings,
        image=IMAGE,
        smoke=SMOKE,
        meta={
            "envcheck_version": "0.1.0",
            "finished_at": "2026-03-01T10:00:00+00:00",
            **(meta or {}),
        },
    )


def healthy(hostname: str = "gpu-node-1", **kw: Any) -> Report:
    return report(hostname=hostname, **kw)


def unconfirmed_image_tag(hostname: str = "gpu-node-2", **kw: Any) -> Report:
    return report(
        HEALTHY_FINDINGS
        + (
            warn(
                "image.unconfirmed",
                "tag 3.3.1-gpu-cuda12.9-cudnn9.9 is not in the official docs",
                fix="pin a tag from the official list, e.g. 3.2.0-gpu-cuda12.6-cudnn9.5",
                layer="image",
            ),
        ),
        hostname=hostname,
        **kw,
    )


def driver_upgraded_without_reboot(hostname: str = "gpu-node-3", **kw: Any) -> Report:
    return report(
        (
            fail(
                "driver.version-mismatch",
                "NVML: Driver/library version mismatch (user space 550.54.14, kernel module 535.104.05)",
                fix="reboot the machine (or reload the nvidia kernel modules) after a driver upgrade",
                layer="driver",
                error="NVML_ERROR_LIB_RM_VERSION_MISMATCH",
            ),
            passed("paddle.gpu-build", "Paddle 3.0.0 is a GPU build (CUDA 12.6)", layer="paddle"),
        ),
        hostname=hostname,
        **({"driver": MISMATCHED_DRIVER} | kw),
    )


# What NVML says after `apt upgrade` replaced the user-space driver under a loaded kernel module.
MISMATCHED_DRIVER = DriverFacts(
    status="error",
    kernel_module="535.104.05",
    error="NVML_ERROR_LIB_RM_VERSION_MISMATCH",
    reason="Driver/library version mismatch",
)


def cpu_wheel_in_image(hostname: str = "gpu-node-4", **kw: Any) -> Report:
    return report(
        (
            passed("driver.ok", "driver 535.104.05 supports CUDA 12.2", layer="driver"),
            fail(
                "paddle.cpu-build",
                "paddlepaddle 3.3.1 is a CPU build",
                fix="pip install paddlepaddle-gpu==3.0.0 "
                "-i https://www.paddlepaddle.org.cn/packages/stable/cu126/",
                layer="paddle",
            ),
            fail(
                "smoke.cpu-fallback",
                "the smoke trained on Place(cpu): the GPU was never used",
                fix="install the GPU build of Paddle in the image",
                layer="smoke",
            ),
        ),
        hostname=hostname,
        **kw,
    )


def smoke_crashed(hostname: str = "gpu-node-5", **kw: Any) -> Report:
    return report(
        HEALTHY_FINDINGS[:3]
        + (
            fail(
                "smoke.crashed",
                "the smoke exited with signal 11 after step 3",
                fix="see the smoke log",
                layer="smoke",
            ),
        ),
        hostname=hostname,
        **kw,
    )


# One per verdict: (id, builder, verdict, exit code).
Builder = Callable[..., Report]  # a sample's function: the report, given a hostname

BY_VERDICT: list[tuple[str, Builder, str, int]] = [
    ("pass", healthy, "pass", 0),
    ("warn", unconfirmed_image_tag, "warn", 0),
    ("fail", driver_upgraded_without_reboot, "fail", 1),
    ("cpu-fallback", cpu_wheel_in_image, "cpu-fallback", 6),
]


# One host each of the common cases, in the order a fleet of identical nodes repeats them: what a
# fleet's dashboard and job summary are measured on (tests/unit/test_fleet.py,
# bench/bench_markdown.py).
FLEET_MIX = (
    healthy,
    driver_upgraded_without_reboot,
    healthy,
    cpu_wheel_in_image,
    healthy,
    unconfirmed_image_tag,
    smoke_crashed,
)

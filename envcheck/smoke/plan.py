"""Where and how the smoke runs (`Plan`), decided from the host facts, the image choice and the
options; and what a run came back with (`Outcome`), the other input of the verdict and the report.

Pure: planning never probes, so the unit tests plan for saved hosts without an engine.
"""

from __future__ import annotations

import sys
from typing import Literal

from envcheck.contracts.facts import HostFacts, unlisted_gpus, usable_gpus
from envcheck.contracts.host_report import ImageChoice
from envcheck.contracts.record import record, replace
from envcheck.contracts.remedy import Remedy
from envcheck.contracts.smoke_report import Mode, NvmlSummary
from envcheck.contracts.smoke_result import SmokeResult
from envcheck.smoke.options import SmokeOptions
from envcheck.smoke.parse import RawRun
from envcheck.verdict.fixes import PipInstall, engine_fix, paddle_install

FallbackKind = Literal["no-engine", "no-image", "image-unavailable"]


@record
class Fallback:
    """Why the smoke is not the container run the doctor wanted: `kind` decides (the fix),
    `reason` tells (the message)."""

    kind: FallbackKind
    reason: str
    detail: str | None = None  # the whole error, for --explain and --json


@record
class Plan:
    """Where and how the smoke runs, decided before anything runs."""

    mode: Mode
    gpu_expected: bool
    gpu_reason: str  # why a GPU is (not) expected, in words
    device_args: tuple[str, ...]  # the workload's --device values
    image: str | None = None
    python: str | None = None
    gpu_ids: tuple[str, ...] | None = None  # the container's GPU request; None: none
    host_gpus: tuple[int, ...] | None = None  # NVML index of Paddle's gpu:i; None: unknown
    fallback: Fallback | None = None  # why this is not the container run the doctor wanted
    gpu_refused: str | None = None  # the engine's refusal, when the GPU request failed
    pip_command: PipInstall | None = None  # the doctor's GPU install, for fixes
    install_command: PipInstall | None = None  # the doctor's Paddle install (GPU or CPU)
    gpu_image: str | None = None  # a GPU image the doctor would use, for fixes
    engine_fix: Remedy | None = None  # how to reach the engine, when it could not be reached


@record
class Outcome:
    raw: RawRun
    result: SmokeResult | None  # the validated JSON line, None if there is none
    problem: str | None  # why `result` is None
    nvml: NvmlSummary


def plan_smoke(host: HostFacts, image: ImageChoice | None, options: SmokeOptions) -> Plan:
    ref = options.image or (image.ref if image else None)
    if options.in_process:
        return in_process_plan(host, image, options, fallback=None)
    if host.engine.status not in ("ok", "unknown"):
        plan = in_process_plan(
            host,
            image,
            options,
            fallback=Fallback("no-engine", f"no container engine: {host.engine.reason}"),
        )
        return replace(plan, engine_fix=engine_fix(host.engine))
    if not ref:
        return in_process_plan(
            host, image, options, Fallback("no-image", "the doctor chose no image for this host")
        )
    expected, reason = gpu_expectation(host, options, _matrix_build_is_gpu(ref, image, options))
    # None (unknown) where the driver lists no GPU: a reboot pending
    listed = tuple(sorted(options.gpus or [g.index for g in usable_gpus(host)])) or None
    plan = Plan(
        mode="container",
        gpu_expected=expected,
        gpu_reason=reason,
        device_args=("gpu:all",) if expected else ("cpu",),
        image=ref,
        gpu_ids=_gpu_request(options) if expected else None,
        host_gpus=listed if expected else None,
    )
    return _fix_sources(plan, host, image)


def in_process_plan(
    host: HostFacts, image: ImageChoice | None, options: SmokeOptions, fallback: Fallback | None
) -> Plan:
    python = options.python or host.paddle.python or sys.executable
    expected, reason = gpu_expectation(host, options, host.paddle.cuda is not None)
    devices = tuple(f"gpu:{i}" for i in options.gpus) if options.gpus else ("gpu:all",)
    # With PCI order (set for the child) Paddle's gpu:i is NVML's GPU i, unless the user's
    # CUDA_VISIBLE_DEVICES renumbers them.
    count = max([len(host.gpus), *[i + 1 for i in options.gpus or ()]])
    host_gpus = None if "CUDA_VISIBLE_DEVICES" in host.env else tuple(range(count))
    plan = Plan(
        # no Paddle, or none judged (--no-host-paddle: the host's interpreter is not the one
        # that trains): nothing to train with here
        mode="not-run" if host.paddle.status in ("absent", "unknown") else "in-process",
        gpu_expected=expected,
        gpu_reason=reason,
        device_args=devices if expected else ("cpu",),
        python=python,
        host_gpus=host_gpus if expected else None,
        fallback=fallback,
    )
    return _fix_sources(plan, host, image)


def gpu_expectation(
    host: HostFacts, options: SmokeOptions, gpu_build: bool | None
) -> tuple[bool, str]:
    """Whether the smoke must train on a GPU, from the host and the build's own facts: a host
    with a usable GPU expects it whatever the build (a CPU build there is a CPU fallback).

    `gpu_build` None: nothing but a name is known of the build (a named --image), so a host with
    usable GPUs expects them, and the workload's own `is_compiled_with_cuda()` decides whether a
    CPU run is a CPU build (cpu-fallback, cause cpu-build).
    """
    if options.expect_gpu:
        return True, "--expect-gpu"
    gpus = usable_gpus(host)
    if not gpus and unlisted_gpus(host):  # the GPUs are there; the driver must be fixed first
        return True, (
            f"{unlisted_gpus(host)} NVIDIA GPU(s) on the PCI bus, which the driver cannot use yet"
            f" ({host.driver.error or host.driver.reason})"
        )
    if not gpus:
        return False, "the host has no usable NVIDIA GPU"
    if gpu_build is None:
        return True, f"{len(gpus)} usable GPU(s) on the host, and an image named with --image"
    if not gpu_build:  # a CPU build beside a usable GPU is the fallback itself
        return True, f"{len(gpus)} usable GPU(s) on the host"
    return True, f"{len(gpus)} usable GPU(s) and a CUDA build of Paddle that the matrix says fits"


def _matrix_build_is_gpu(ref: str, image: ImageChoice | None, options: SmokeOptions) -> bool | None:
    """The matrix row of the doctor's own choice; None for an image named with --image, whose
    tag is only a name (`trainer:2024-05` may hold either build)."""
    if options.image is None and image is not None and image.ref == ref and image.kind:
        return image.kind == "gpu"
    return None


def _gpu_request(options: SmokeOptions) -> tuple[str, ...]:
    return tuple(str(i) for i in options.gpus) if options.gpus else ("all",)


def _fix_sources(plan: Plan, host: HostFacts, image: ImageChoice | None) -> Plan:
    """The doctor's GPU image and install commands (the judge's own), quoted in the fixes."""
    if image is None:
        return plan
    gpu_image = image.ref if image.kind == "gpu" else None
    gpu = paddle_install(host, image, gpu=True, python=plan.python)
    any_build = paddle_install(host, image, python=plan.python)
    return replace(
        plan,
        pip_command=gpu,
        install_command=any_build,
        gpu_image=gpu_image,
    )

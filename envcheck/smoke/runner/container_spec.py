"""What the smoke container is made with: the workload's image and arguments, the limits, the
binds, the GPU request, the labels that prove it ours — every restriction of the smoke in one
place, as the `containers.create` arguments, and described for the report.

The workload runs as `python /envcheck/workload.py ARGS` with: the script bind-mounted read-only,
no network, a read-only root file system with a small tmpfs on /tmp, uid 1000, no new privileges,
every capability dropped, memory/pids/shm limits, and the GPUs requested with `device_requests`
(the SDK's `--gpus`). Creating and running it is `envcheck.smoke.runner.container`'s job.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from envcheck.contracts.record import field, record
from envcheck.contracts.smoke_report import ContainerLimits
from envcheck.engine.docker_adapter import LABEL
from envcheck.smoke.runner import ownership
from envcheck.smoke.runner.ownership import DEADLINE_LABEL, MARK_LABEL, OWNER_LABEL
from envcheck.smoke.runner.payload import COMPANIONS

SCRIPT_TARGET = "/envcheck/workload.py"
SWEEP_GRACE_S = 30.0  # past the smoke's timeout, before its owner stops waiting for it


@record
class Limits:
    """Resource bounds. Memory is generous: a CUDA process maps GBs of cuDNN/cuBLAS."""

    memory: str = "8g"
    pids: int = 1024  # OpenMP starts a thread per core, and threads count as pids
    shm: str = "256m"
    tmpfs: str = "256m"  # /tmp: HOME, the --export model (~3 MB), Paddle's caches
    user: str = "1000:1000"


@record
class ContainerSpec:
    image: str  # what the engine creates from: a reference, or the id of the image checked
    args: tuple[str, ...]  # the workload's arguments
    script: Path  # host file, mounted read-only at SCRIPT_TARGET
    timeout: float
    gpu_ids: tuple[str, ...] | None = None  # None: no GPU request; ("all",): every GPU
    environment: Mapping[str, str] = field(default_factory=dict)
    # More (host path, target) read-only binds: tests' fake driver.
    binds: tuple[tuple[str, str], ...] = ()
    limits: Limits = field(default_factory=Limits)
    # False only when an NVIDIA hook must write the root (hook_needs_writable_root).
    read_only: bool = True
    label: str | None = None  # the reference `image` was resolved from, for people to read


BASE_ENVIRONMENT = {
    "HOME": "/tmp",  # uid 1000 may have no home, and / is read-only
    "TMPDIR": "/tmp",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONUNBUFFERED": "1",  # the log arrives live, so a killed run still shows its last lines
    # CUDA numbers devices fastest-first by default; PCI order matches NVML and nvidia-smi:
    # https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#env-vars
    "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
}


def create_kwargs(spec: ContainerSpec, run_id: str, key: bytes) -> dict[str, Any]:
    """The `containers.create` arguments: every restriction of the smoke in one place."""
    from docker.types import DeviceRequest, LogConfig, Mount

    limits = spec.limits
    kwargs: dict[str, Any] = {
        "image": spec.image,
        "name": ownership.container_name(run_id),
        "entrypoint": ["python", SCRIPT_TARGET],  # no image entrypoint banner on our stdout
        "command": list(spec.args),
        "labels": labels(run_id, spec.timeout, key),
        "environment": {**BASE_ENVIRONMENT, **spec.environment},
        "user": limits.user,
        "working_dir": "/tmp",
        "network_mode": "none",
        "read_only": spec.read_only,
        "tmpfs": {"/tmp": f"rw,nosuid,nodev,size={limits.tmpfs},mode=1777"},
        "security_opt": ["no-new-privileges"],
        "cap_drop": ["ALL"],
        "mem_limit": limits.memory,
        "memswap_limit": limits.memory,  # no swap: an OOM is reported, not crawled through
        "pids_limit": limits.pids,
        "shm_size": limits.shm,
        "mounts": [
            Mount(target, source, type="bind", read_only=True)
            for source, target in (
                (str(spec.script.resolve()), SCRIPT_TARGET),
                *((str(source), _beside_script(placed)) for source, placed in COMPANIONS),
                *spec.binds,
            )
        ],
        # The engine keeps its own copy of the output; megabytes of it must not fill the disk.
        "log_config": LogConfig(type="json-file", config={"max-size": "1m", "max-file": "1"}),
    }
    if spec.gpu_ids is not None:
        every = spec.gpu_ids == ("all",)
        kwargs["device_requests"] = [
            DeviceRequest(
                count=-1 if every else None,
                device_ids=None if every else list(spec.gpu_ids),
                capabilities=[["gpu"]],
            )
        ]
    return kwargs


def describe(spec: ContainerSpec) -> ContainerLimits:
    """The restrictions, for the report."""
    limits = spec.limits
    return ContainerLimits(
        network="none",
        read_only_rootfs=spec.read_only,
        no_new_privileges=True,
        cap_drop=("ALL",),
        timeout_s=spec.timeout,
        gpu_request=spec.gpu_ids,
        memory=limits.memory,
        pids=limits.pids,
        shm=limits.shm,
        tmpfs=limits.tmpfs,
        user=limits.user,
    )


def hook_needs_writable_root(message: str) -> bool:
    """Did an NVIDIA OCI hook fail because the container's root is read-only? Some toolkit
    versions write into it at create time (ldcache, application profiles):
    https://github.com/NVIDIA/nvidia-container-toolkit/issues/2026,
    https://github.com/kserve/kserve/pull/5711"""
    text = message.lower()
    return "read-only file system" in text and "hook" in text


def labels(run_id: str, timeout: float, key: bytes, now: float | None = None) -> dict[str, str]:
    """`key`: the user's owner key (`ownership.owner_key`), which marks the container as ours."""
    now = time.time() if now is None else now
    owner = f"{socket.gethostname()}:{os.getpid()}"
    deadline = str(int(now + timeout + SWEEP_GRACE_S))
    return {
        LABEL: run_id,
        OWNER_LABEL: owner,
        DEADLINE_LABEL: deadline,
        MARK_LABEL: ownership.mark(key, run_id, owner, deadline),
    }


def _beside_script(placed: str) -> str:
    return str(PurePosixPath(SCRIPT_TARGET).with_name(placed))

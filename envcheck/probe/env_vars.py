"""GPU-related environment variables and the machine itself (`env | grep CUDA`, `uname -a`)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from envcheck.contracts.facts import MachineFacts

# What changes which GPUs and libraries a Paddle process sees.
GPU_VARIABLES = (
    "CUDA_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES",
    "NVIDIA_REQUIRE_CUDA",
    "CUDA_HOME",
    "CUDA_PATH",
    "LD_LIBRARY_PATH",
    "LD_PRELOAD",
    "FLAGS_selected_gpus",
    "FLAGS_cudnn_dir",
    "FLAGS_cuda_dir",
    "FLAGS_cublas_dir",
    "FLAGS_nccl_dir",
    "CUDA_MODULE_LOADING",
    "DOCKER_HOST",
)


def probe_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The GPU-related variables of `environ`, the command's (its `Environment.env`)."""
    return {name: environ[name] for name in GPU_VARIABLES if name in environ}


def probe_machine() -> MachineFacts:
    uname = os.uname()
    return MachineFacts(
        hostname=uname.nodename,
        os=_os_release(),
        kernel=uname.release,
        arch=uname.machine,
        python=f"{_implementation()} {sys.version.split()[0]}",
    )


def _os_release() -> str | None:
    try:
        with open("/etc/os-release", encoding="utf-8") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        return None
    return None


def _implementation() -> str:
    """`platform.python_implementation()` without importing `platform`."""
    name = sys.implementation.name
    if name in _IMPLEMENTATIONS:
        return _IMPLEMENTATIONS[name]
    import platform

    return platform.python_implementation()


_IMPLEMENTATIONS = {"cpython": "CPython", "pypy": "PyPy"}

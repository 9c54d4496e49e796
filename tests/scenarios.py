"""Saved host facts, one per real failure (compat_facts §7 and the public issues it cites).

Each is the `host` object a user would attach to a bug report (`envcheck doctor --json`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from envcheck.contracts.facts import REQUIRED_SECTIONS, HostFacts, to_dict

A100 = {
    "index": 0,
    "name": "NVIDIA A100-SXM4-80GB",
    "compute_capability": "8.0",
    "memory_total_mib": 81920,
}
T4 = {"index": 0, "name": "Tesla T4", "compute_capability": "7.5", "memory_total_mib": 15360}
H100 = {
    "index": 0,
    "name": "NVIDIA H100 80GB HBM3",
    "compute_capability": "9.0",
    "memory_total_mib": 81559,
}
RTX5090 = {
    "index": 0,
    "name": "NVIDIA GeForce RTX 5090",
    "compute_capability": "12.0",
    "memory_total_mib": 32607,
}
V100 = {
    "index": 0,
    "name": "Tesla V100-SXM2-32GB",
    "compute_capability": "7.0",
    "memory_total_mib": 32768,
}
K80 = {"index": 0, "name": "Tesla K80", "compute_capability": "3.7", "memory_total_mib": 11441}
P40 = {"index": 0, "name": "Tesla P40", "compute_capability": "6.1", "memory_total_mib": 24576}
GTX1080 = {
    "index": 0,
    "name": "NVIDIA GeForce GTX 1080",
    "compute_capability": "6.1",
    "memory_total_mib": 8192,
}
RTX4090 = {
    "index": 0,
    "name": "NVIDIA GeForce RTX 4090",
    "compute_capability": "8.9",
    "memory_total_mib": 24564,
}
H20 = {"index": 0, "name": "NVIDIA H20", "compute_capability": "9.0", "memory_total_mib": 97871}

PADDLE_331_CU126 = {
    "status": "ok",
    "package": "paddlepaddle-gpu",
    "version": "3.3.1",
    "cuda": "12.6",
    "cudnn": "9.5.1",
    "compiled_cuda_archs": [75, 80, 86, 89, 90],
    "with_pip_cuda_libraries": True,
}
PADDLE_331_CPU: dict[str, Any] = {
    "status": "ok",
    "package": "paddlepaddle",
    "version": "3.3.1",
    "cuda": None,
    "cudnn": None,
    "compiled_cuda_archs": [],
    "with_pip_cuda_libraries": True,
}
PADDLE_262_CU118 = {
    "status": "ok",
    "package": "paddlepaddle-gpu",
    "version": "2.6.2",
    "cuda": "11.8",
    "cudnn": "8.6.0",
    "compiled_cuda_archs": None,
}
# PaddleX #4285 / Paddle #73687: "compiled for 75 80 86 89, but your current GPU is 120"
PADDLE_31_CU126 = {
    "status": "ok",
    "package": "paddlepaddle-gpu",
    "version": "3.1.0",
    "cuda": "12.6",
    "cudnn": "9.5.1",
    "compiled_cuda_archs": [75, 80, 86, 89],
    "with_pip_cuda_libraries": True,
}

ENGINE_NVIDIA = {
    "status": "ok",
    "version": "24.0.7",
    "runtimes": ["nvidia", "runc"],
    "nvidia_runtime": True,
}
ENGINE_PLAIN = {
    "status": "ok",
    "version": "20.10.24",
    "runtimes": ["io.containerd.runc.v2", "runc"],
    "nvidia_runtime": False,
}


def driver(version: str, cuda: str, **extra: Any) -> dict[str, Any]:
    return {"status": "ok", "version": version, "cuda": cuda, **extra}


def cudnn(
    version: str | None, path: str = "/usr/lib/x86_64-linux-gnu/libcudnn.so.8"
) -> dict[str, Any]:
    if version is None:
        return {"status": "absent"}
    return {"status": "ok", "version": version, "path": path}


def write(tmp_path: Path, doc: Any, name: str = "facts.json") -> str:
    """A facts document (or any text) saved for `--facts`; its path."""
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return str(path)


def host(**layers: Any) -> dict[str, Any]:
    """A facts document: the layers given, the rest as a host where nothing was seen (the
    sections every facts document holds, at their defaults: unknown)."""
    base: dict[str, Any] = {
        **{name: to_dict(getattr(HostFacts(), name)) for name in REQUIRED_SECTIONS},
        "machine": {"hostname": "gpu-01", "os": "Ubuntu 22.04", "arch": "x86_64"},
    }
    return base | layers


# Hosts from the judge's scenarios: each a real failure the judge has a fix for.
JUDGE_HOSTS: dict[str, dict[str, Any]] = {
    "a100-535-cpu-wheel": host(
        driver=driver("535.104.05", "12.2"),
        gpus=[A100],
        paddle=PADDLE_331_CPU,
        engine=ENGINE_PLAIN,
    ),
    "t4-470-cu126-wheel": host(
        driver=driver("470.82.01", "11.4"), gpus=[T4], paddle=PADDLE_331_CU126
    ),
    "k80-old-gpu": host(driver=driver("470.82.01", "11.4"), gpus=[K80], paddle=PADDLE_262_CU118),
    "rtx5090-262-wheel": host(
        driver=driver("570.124.06", "12.8"),
        gpus=[RTX5090],
        paddle=PADDLE_262_CU118,
        cudnn=cudnn(None),
    ),
    "v100-31-wheel": host(
        driver=driver("535.104.05", "12.2"),
        gpus=[V100],
        paddle=PADDLE_31_CU126,
        engine=ENGINE_NVIDIA,
    ),
    "laptop-no-gpu": host(paddle=PADDLE_331_CPU),
}


# Hosts whose remedies take more than one step (the remedy tests): a CUDA-variant switch, a T4 on
# driver 418 with the CPU wheel.
REMEDY_HOSTS: dict[str, dict[str, Any]] = {
    "h100-575-331-cu130": host(
        driver=driver("575.51.03", "12.9"),
        gpus=[H100],
        paddle=PADDLE_331_CU126
        | {"cuda": "13.0", "cudnn": "9.13.0", "python": "/srv/venv/bin/python"},
    ),
    "t4-418-cpu-wheel": host(
        driver=driver("418.87.01", "10.1"),
        gpus=[T4],
        paddle=PADDLE_331_CPU | {"python": "/srv/venv/bin/python"},
    ),
    # three remedies at once: the pip fix, a reboot (or the module reload), the Toolkit
    "a100-reboot-toolkit-cpu-wheel": host(
        driver=driver("535.104.05", "12.2", kernel_module="530.30.02"),
        gpus=[A100],
        paddle=PADDLE_331_CPU | {"python": "/srv/venv/bin/python"},
        engine=ENGINE_PLAIN,
    ),
    "t4-418-gpu-wheel": host(
        driver=driver("418.87.01", "10.1"),
        gpus=[T4],
        paddle=PADDLE_331_CU126 | {"python": "/srv/venv/bin/python"},
    ),
}

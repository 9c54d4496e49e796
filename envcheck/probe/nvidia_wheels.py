"""NVIDIA's CUDA wheels (`nvidia-cudnn-cu12`, …) of the judged interpreter, and the
distributions that pin them (Paddle, torch, vLLM, JAX): `pip list | grep nvidia-` plus each
one's `Requires-Dist`, read from that interpreter's site-packages, never by importing a framework
and never from envcheck's own environment unless it is the judged one.

The dist-info folders are read as the core metadata specification lays them out
(`<name>-<version>.dist-info/METADATA`, https://packaging.python.org/en/latest/specifications/
recording-installed-packages/), with `os` alone: `importlib.metadata` would cost the doctor the
import of `email` and `zipfile` (0.4 s measured on a busy two-core machine) for the same lines.

The frameworks pin exact versions (`torch 2.3.0 requires nvidia-cudnn-cu12==8.9.2.26`,
Paddle#71867) and pip keeps one version of each wheel: the judge
(envcheck/verdict/rules/frameworks.py) says whose pin the installed one breaks.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from envcheck.contracts.facts import NvidiaPin, NvidiaWheels

# NVIDIA's CUDA library wheels: nvidia-<library>-cu<major> (not nvidia-ml-py, NVML's bindings)
CUDA_WHEEL = re.compile(r"nvidia-[a-z0-9-]+-cu\d+$")
_REQUIREMENT = re.compile(r"\s*(nvidia[-_.][A-Za-z0-9._-]+)")
_REQUIRES = "Requires-Dist:"
_HEADER_BYTES = 1 << 16  # the fields come before the description; 64 KiB is far more than they take


def probe_nvidia_wheels(site_packages: Iterable[str]) -> NvidiaWheels:
    """The CUDA wheels and their pins in these site-packages folders (the first folder that has
    a distribution wins, as an import would)."""
    installed: dict[str, str] = {}
    others: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    for folder in site_packages:
        for name, version, metadata in _dist_infos(folder):
            if name not in seen:
                seen.add(name)
                if CUDA_WHEEL.match(name):
                    installed[name] = version
                else:
                    others.append((name, version, metadata))
    if not installed:  # no CUDA wheel: nothing a pin can break, and no METADATA is read
        return NvidiaWheels()
    pins = [NvidiaPin(n, r, v) for n, v, metadata in others for r in _cuda_requires(metadata)]
    return NvidiaWheels(installed=installed, pins=tuple(pins))


def canonical(name: str) -> str:
    """PEP 503's normal form: `nvidia_cudnn_cu12` -> `nvidia-cudnn-cu12`."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _dist_infos(folder: str) -> list[tuple[str, str, str]]:
    """(canonical name, version, METADATA path) of each `<name>-<version>.dist-info` here."""
    try:
        entries = sorted(os.listdir(folder))
    except OSError:
        return []
    found = []
    for entry in entries:
        stem, dot, _ = entry.rpartition(".dist-info")
        name, dash, version = stem.partition("-")
        if dot and dash and name:
            found.append((canonical(name), version, os.path.join(folder, entry, "METADATA")))
    return found


def _cuda_requires(metadata: str) -> list[str]:
    """The `Requires-Dist:` lines of a METADATA file that name a CUDA wheel, as written."""
    try:
        with open(metadata, encoding="utf-8", errors="replace") as f:
            header = f.read(_HEADER_BYTES).split("\n\n", 1)[0]
    except OSError:
        return []
    found = []
    for line in header.splitlines():
        if not line.startswith(_REQUIRES):
            continue
        value = line[len(_REQUIRES) :].strip()
        m = _REQUIREMENT.match(value)
        if m and CUDA_WHEEL.match(canonical(m.group(1))):
            found.append(value)
    return found

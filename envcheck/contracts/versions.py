"""Pure version parsers. Each keeps the raw text next to the parsed `Version`.

`packaging` normalises `535.104.05` to `535.104.5`: users must see what their driver printed,
so every parsed value here carries its raw string. Every parser raises only `VersionParseError`.
"""

from __future__ import annotations

import re
from typing import Literal

from packaging.version import InvalidVersion, Version

from envcheck.contracts.record import record


class VersionParseError(ValueError):
    """The text is not a version of the expected kind."""


@record
class RawVersion:
    """A parsed version that remembers exactly what the system printed."""

    raw: str
    version: Version

    def __str__(self) -> str:
        return self.raw


_DOTTED = re.compile(r"\d{1,9}(\.\d{1,9}){0,3}", re.ASCII)  # `١٢.٦` is not a version


def parse_dotted(text: str) -> RawVersion:
    """`'535.104.05'` -> RawVersion('535.104.05', Version('535.104.5'))."""
    if not isinstance(text, str):
        raise VersionParseError(f"expected a version string, got {type(text).__name__}")
    raw = text.strip()
    if not _DOTTED.fullmatch(raw):
        raise VersionParseError(f"not a dotted version: {text!r}")
    try:
        return RawVersion(raw, Version(raw))
    except InvalidVersion as e:  # pragma: no cover - the regex admits only valid versions
        raise VersionParseError(f"not a dotted version: {text!r}") from e


def cuda_version_from_int(value: int) -> str:
    """CUDA's integer encoding (`cudaRuntimeGetVersion`, `cuDriverGetVersion`,
    `nvmlSystemGetCudaDriverVersion`): 1000*major + 10*minor, e.g. 12040 -> '12.4'."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0 or value >= 1_000_000:
        raise VersionParseError(f"not a CUDA version integer: {value!r}")
    return f"{value // 1000}.{(value % 1000) // 10}"


def cudnn_version_from_int(value: int) -> str:
    """`cudnnGetVersion()`: cuDNN 8 encodes 1000*major + 100*minor + patch (8906 -> 8.9.6);
    cuDNN 9 changed to 10000*major + 100*minor + patch (90501 -> 9.5.1).

    https://docs.nvidia.com/deeplearning/cudnn/latest/api/cudnn-graph-library.html#cudnngetversion
    """
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0 or value >= 10_000_000:
        raise VersionParseError(f"not a cuDNN version integer: {value!r}")
    if value >= 90000:
        major, rest = divmod(value, 10000)
    else:
        major, rest = divmod(value, 1000)
    minor, patch = divmod(rest, 100)
    return f"{major}.{minor}.{patch}"


_CC = re.compile(r"(\d{1,2})\.(\d)", re.ASCII)


def parse_compute_capability(text: str) -> tuple[int, int]:
    """`'8.6'` -> (8, 6)."""
    if not isinstance(text, str):
        raise VersionParseError(f"expected a compute capability string, got {type(text).__name__}")
    m = _CC.fullmatch(text.strip())
    if not m:
        raise VersionParseError(f"not a compute capability: {text!r}")
    return int(m.group(1)), int(m.group(2))


def sm_of(compute_capability: str) -> int:
    """`'8.6'` -> 86, `'12.0'` -> 120: the form in Paddle's `compiled_cuda_archs`."""
    major, minor = parse_compute_capability(compute_capability)
    return major * 10 + minor


_ARCH_NAME = re.compile(r"(?:sm_|compute_)?(\d{2,3})([af]?)")


def parse_arch_name(name: object) -> int:
    """An arch as a build string writes it -> its sm number: `86`, `"86"`, `"sm_90a"`,
    `"100a"` (arch-specific: that exact GPU), `"120f"` (the family: 12.x GPUs of that minor and
    up) -> 86, 90, 100, 120. CUDA 12.9+ build strings carry the suffixes."""
    if isinstance(name, int) and not isinstance(name, bool):
        return name
    m = _ARCH_NAME.fullmatch(str(name).strip().lower()) if isinstance(name, str) else None
    if not m:
        raise VersionParseError(f"not a CUDA arch: {name!r}")
    return int(m.group(1))


def release_of(text: str) -> tuple[int, ...]:
    """`'12.6'` -> (12, 6, 0), `'535.104.05'` -> (535, 104, 5): at least three parts, for
    comparing majors and minors (`release_of(cuda)[:2]`)."""
    return (*parse_dotted(text).version.release, 0, 0)[: max(3, len(text.split(".")))]


_KERNEL_MODULE = re.compile(r"Kernel Module(?: for \S+)?\s+(\d+\.\d+(?:\.\d+)?)\s")


KernelModuleFlavor = Literal["open", "proprietary"]


def parse_kernel_module_flavor(text: str) -> KernelModuleFlavor | None:
    """Which kernel module the version file names: `NVIDIA UNIX Open Kernel Module for x86_64`
    (the open modules: Turing and newer only) or `NVIDIA UNIX x86_64 Kernel Module` (the
    proprietary ones: none of Blackwell); None when it names neither."""
    if "Open Kernel Module" in text:
        return "open"
    return "proprietary" if "Kernel Module" in text else None


def parse_kernel_module_version(text: str) -> str:
    """The module version from `/proc/driver/nvidia/version`, e.g.
    `NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 …` or
    `NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  575.57.08  Release Build …`."""
    if not isinstance(text, str):
        raise VersionParseError("expected text")
    m = _KERNEL_MODULE.search(text + " ")
    if not m:
        raise VersionParseError("no kernel module version in /proc/driver/nvidia/version")
    return m.group(1)

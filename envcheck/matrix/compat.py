"""Pure compatibility rules shared by the judge and the image selection.

- A driver runs CUDA X.Y fully when the CUDA it reports (`nvidia-smi` header,
  `nvmlSystemGetCudaDriverVersion`) is >= X.Y, i.e. it is at least that toolkit's driver
  (NV-RN Table 3). Below that, CUDA 11+ runs through *minor-version compatibility* when the
  driver is at least the major's floor (NV-RN Table 2, NV-MVC: 450.80.02 for 11.x, 525.60.13 for
  12.x, 580 for 13.x) — except PTX JIT and APIs newer than the driver.
- A GPU runs a build when its exact sm, or its major*10, is among the compiled archs: Paddle's own
  check in gpu_resources.cc (compat_facts §2a note, GPURES).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

from envcheck.contracts.record import record
from envcheck.contracts.versions import (
    VersionParseError,
    parse_compute_capability,
    parse_dotted,
    release_of,
)
from envcheck.matrix.model import Defect, ImageTag, Matrix, MinorCompat

SupportLevel = Literal["full", "minor-compat", "none"]


@record
class DriverSupport:
    """How well a driver runs a CUDA build, and the drivers that would run it fully or at all."""

    level: SupportLevel
    reason: str
    full_driver: str | None  # the toolkit driver for full compatibility
    minimum_driver: str | None  # the lowest driver that runs it at all


def driver_support(
    driver: str | None, driver_cuda: str | None, cuda: str, matrix: Matrix
) -> DriverSupport:
    """Can a driver (`535.104.05`, reporting CUDA `12.2`) run a build of CUDA `cuda`? A saved
    document may hold the CUDA level without the version: `driver_support_by_level`."""
    toolkit = matrix.toolkit_min_driver(cuda)
    floor = matrix.minor_compat_for(cuda)
    full = toolkit.min_driver if toolkit else None
    minimum = floor.min_driver if floor else full
    if driver is None:
        return driver_support_by_level(driver_cuda, cuda, full, minimum, floor)
    try:
        have = parse_dotted(driver).version
    except VersionParseError:
        return DriverSupport("none", f"unreadable driver version {driver!r}", full, minimum)
    if _at_least(driver_cuda, cuda) or (full and have >= parse_dotted(full).version):
        # CUDA 13.4 on: no toolkit driver to name; the driver's own CUDA says it
        said = f"CUDA {cuda} needs >= {full}" if full else f"the driver supports CUDA {driver_cuda}"
        return DriverSupport("full", said, full, minimum)
    if floor and have >= parse_dotted(floor.min_driver).version:
        return DriverSupport(
            "minor-compat",
            f"CUDA {floor.cuda_major}.x runs on >= {floor.min_driver}, per NVIDIA's minor-version "
            "compatibility",
            full,
            minimum,
        )
    need = minimum or full or "a newer driver"
    return DriverSupport("none", f"CUDA {cuda} needs driver >= {need}", full, minimum)


def driver_support_by_level(
    driver_cuda: str | None,
    cuda: str,
    full: str | None,
    minimum: str | None,
    floor: MinorCompat | None,
) -> DriverSupport:
    """The driver's version is not known, its CUDA level is: that level bounds its branch. A
    driver reporting CUDA 12.2 runs CUDA <= 12.2 fully, and any 12.x through minor-version
    compatibility, whose floor is the first driver of that major (12.0's 525.60.13, 13.0's 580)."""
    if not driver_cuda:
        return DriverSupport("none", "no driver version or CUDA level known", full, minimum)
    level = f"the driver reports CUDA {driver_cuda} (its version was not recorded)"
    if _at_least(driver_cuda, cuda):
        return DriverSupport("full", level, full, minimum)
    try:
        same_major = release_of(driver_cuda)[0] == release_of(cuda)[0]
    except VersionParseError:
        same_major = False
    if floor is not None and same_major:
        return DriverSupport(
            "minor-compat",
            f"{level}: a CUDA {floor.cuda_major}.x driver is at least {floor.min_driver}, "
            "the floor of NVIDIA's minor-version compatibility",
            full,
            minimum,
        )
    need = minimum or full or "a newer driver"
    return DriverSupport("none", f"{level}; CUDA {cuda} needs driver >= {need}", full, minimum)


def _at_least(have: str | None, want: str) -> bool:
    if not have:
        return False
    try:
        return parse_dotted(have).version >= parse_dotted(want).version
    except VersionParseError:
        return False


def arch_supported(compute_capability: str, archs: Iterable[int]) -> bool:
    """`'8.6'` runs on builds with 86, or with 80 (same major, lower minor: binary compatible)."""
    try:
        major, minor = parse_compute_capability(compute_capability)
    except VersionParseError:
        return False
    compiled = set(archs)
    return major * 10 + minor in compiled or major * 10 in compiled


def cc_below(cc: str, minimum: str) -> bool:
    """`'3.7'` below `'6.0'`, compared as (major, minor); unreadable values are never below."""
    try:
        return parse_compute_capability(cc) < parse_compute_capability(minimum)
    except VersionParseError:
        return False


def defects_for(image: ImageTag, driver: str | None, matrix: Matrix) -> tuple[Defect, ...]:
    """The known defects (defects.toml) of this image on this host driver: same CUDA major.minor
    and a driver newer than the defect's bound. An unreadable or unknown driver matches none."""
    if not driver or not image.cuda:
        return ()
    try:
        have = parse_dotted(driver).version
        cuda = release_of(image.cuda)[:2]
        return tuple(
            d
            for d in matrix.defects
            if release_of(d.image_cuda)[:2] == cuda and have > parse_dotted(d.driver_above).version
        )
    except VersionParseError:
        return ()


_OCI_ARCH = {
    "x86_64": "amd64",
    "amd64": "amd64",
    "aarch64": "arm64",
    "arm64": "arm64",
    "armv7l": "arm",
    "armv6l": "arm",
    "i386": "386",
    "i686": "386",
}
# Where Paddle publishes official builds: its images for linux/amd64 (matrix/images.toml), its
# wheels for x86_64 and aarch64 (PyPI's paddlepaddle has manylinux x86_64 and aarch64 wheels and
# none for ppc64le, s390x or 32-bit ARM: `pip index versions paddlepaddle --platform
# manylinux2014_ppc64le` finds no distribution, measured 2026-11).
PUBLISHED_PLATFORMS = ("linux/amd64", "linux/arm64")
_MACHINE = re.compile(r"[a-z0-9_]{1,32}")


def oci_platform(machine_arch: str | None) -> str | None:
    """`uname -m` -> the OCI platform of its images: x86_64 -> linux/amd64, aarch64 -> linux/arm64,
    ppc64le -> linux/ppc64le, armv7l -> linux/arm. None when the machine is unknown."""
    arch = (machine_arch or "").strip().lower()
    if not _MACHINE.fullmatch(arch):  # absent, or not a `uname -m` word (a hostile saved report)
        return None
    return f"linux/{_OCI_ARCH.get(arch, arch)}"


def unpublished_platform(machine_arch: str | None) -> str | None:
    """The machine's OCI platform when Paddle publishes no official build for it (no image, no
    wheel: ppc64le, s390x, 32-bit ARM); None for amd64, arm64 and an unknown machine."""
    platform = oci_platform(machine_arch)
    return platform if platform and platform not in PUBLISHED_PLATFORMS else None


def wheel_platform(os_name: str | None, machine_arch: str | None) -> str | None:
    """Where an installed wheel was built for, as the matrix's `archs_platform` spells it: the
    host's machine under its OS (`linux/amd64`; a saved report from Windows `windows/amd64`).
    None when the machine is unknown: no list measured elsewhere applies to it."""
    windows = "windows" in (os_name or "").lower()
    platform = oci_platform(machine_arch)
    if platform is None:
        # Paddle publishes its Windows wheels for win_amd64 only: a saved Windows report that
        # left out the machine still holds an amd64 wheel
        return "windows/amd64" if windows and not machine_arch else None
    if windows:
        return platform.replace("linux/", "windows/", 1)
    return platform

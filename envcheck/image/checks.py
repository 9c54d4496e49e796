"""Can this host run an image, judged before pulling it: pure functions of what the registry says
(platforms, config env), the tag, the host's facts and the matrix.

- Platform: the engine would refuse with "no matching manifest for linux/amd64"; we say so
  before any byte is downloaded.
- CUDA: NVIDIA's images declare what they need in their config: `CUDA_VERSION=12.9.1`, and
  `NVIDIA_REQUIRE_CUDA=cuda>=12.9 brand=…,driver>=…` which the NVIDIA container runtime enforces
  at start (https://github.com/NVIDIA/nvidia-container-toolkit, "NVIDIA_REQUIRE_*"). Paddle's GPU
  tags also say it: `3.3.1-gpu-cuda12.9-cudnn9.9`. A driver that cannot run that CUDA (fully, or
  through minor-version compatibility: `envcheck.matrix.compat.driver_support`) gets a refusal.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from envcheck.contracts.errors import EnvcheckError
from envcheck.contracts.exitcodes import ExitStatus
from envcheck.contracts.record import record
from envcheck.image.platforms import Platform, platform_runs

if TYPE_CHECKING:  # the facts and matrix modules cost ~40 ms to import: a plain pull needs neither
    from envcheck.contracts.facts import HostFacts
    from envcheck.matrix.model import Matrix

_TAG_CUDA = re.compile(r"(?:^|[-_.])cuda[-_]?(\d+)\.(\d+)", re.IGNORECASE)
_REQUIRE_CUDA = re.compile(r"(?:^|\s)cuda>=(\d+)\.(\d+)")
_VERSION_CUDA = re.compile(r"^(\d+)\.(\d+)")


class ImageRefused(EnvcheckError):
    """This host cannot run the image (exit 1); `--force` pulls it anyway where that makes sense."""

    status = ExitStatus.INCOMPATIBLE


@record
class CudaClaim:
    cuda: str  # "12.9"
    source: str  # "tag 3.3.1-gpu-cuda12.9-cudnn9.9", "config CUDA_VERSION=12.9.1"


def cuda_claims(tag: str | None, env: Mapping[str, str] | None = None) -> tuple[CudaClaim, ...]:
    """Every statement of the CUDA an image needs, strictest source first."""
    claims: list[CudaClaim] = []
    env = env or {}
    require = env.get("NVIDIA_REQUIRE_CUDA", "")
    if m := _REQUIRE_CUDA.search(require):
        claims.append(CudaClaim(f"{m[1]}.{m[2]}", f"config NVIDIA_REQUIRE_CUDA={require}"))
    if m := _VERSION_CUDA.match(env.get("CUDA_VERSION", "")):
        claims.append(CudaClaim(f"{m[1]}.{m[2]}", f"config CUDA_VERSION={env['CUDA_VERSION']}"))
    if tag and (m := _TAG_CUDA.search(tag)):
        claims.append(CudaClaim(f"{m[1]}.{m[2]}", f"tag {tag}"))
    return tuple(claims)


def cuda_refusal(claims: tuple[CudaClaim, ...], host: HostFacts, matrix: Matrix) -> str | None:
    """Why the host's driver cannot run the image's CUDA, or None when it can (or none is claimed)."""
    if not claims:
        return None
    from envcheck.matrix.compat import driver_support

    driver = host.driver
    if driver.status != "ok" or not driver.version:
        claim = claims[0]
        why = driver.reason or f"driver status: {driver.status}"
        return f"the image needs CUDA {claim.cuda} ({claim.source}) but this host has no usable NVIDIA driver ({why})"
    for claim in claims:
        support = driver_support(driver.version, driver.cuda, claim.cuda, matrix)
        if support.level == "none":
            return (
                f"the image needs CUDA {claim.cuda} ({claim.source}); driver {driver.version} "
                f"(CUDA {driver.cuda or '?'}) cannot run it: {support.reason}"
            )
    return None


def platform_refusal(platforms: tuple[Platform, ...], want: Platform) -> str | None:
    if not platforms or platform_runs(platforms, want):
        return None
    offered = ", ".join(str(p) for p in platforms)
    return f"the image has no {want.os}/{want.architecture} variant (it offers: {offered})"

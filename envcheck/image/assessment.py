"""Whether one GPU image tag of the matrix can run on a host: a pure function of (facts, matrix).

A tag is ruled out, with the reason, when

- the driver cannot run its CUDA: neither full compatibility (the driver's CUDA >= the image's)
  nor minor-version compatibility (driver >= the floor of that CUDA major, NV-RN Table 2 / NV-MVC),
  or no driver version is known (`envcheck.matrix.compat.driver_support`);
- a GPU is below the build's minimum compute capability (its own, or its lowest compiled arch,
  or the release's documented floor), or its architecture is not among the archs the build was
  compiled for (when the matrix knows them, §4b), is among those a report shows missing
  (`archs_absent`), or is beyond what the CUDA toolkit can target (§2a: sm_120 needs CUDA >= 12.8,
  Volta is gone in 13.0; a build with unknown archs cannot contain more). Paddle accepts a device
  whose exact sm or major*10 is compiled in (GPURES, `envcheck.matrix.compat.arch_supported`);
- the tag is not published for this machine's platform (an aarch64 host never gets an amd64 tag);
- a known defect hits this image on this driver (defects.toml: the CUDA 13.0 images on drivers
  newer than their compat libcuda fall back to the CPU, Paddle#76558 / Paddle#78924);
- the tag is not published on the requested registry.
"""

from __future__ import annotations

from collections.abc import Iterable

from envcheck.contracts.facts import GpuFacts, HostFacts
from envcheck.contracts.record import record
from envcheck.contracts.versions import VersionParseError, parse_compute_capability, sm_of
from envcheck.matrix.builds import ArchSource, build_for, runnable_archs
from envcheck.matrix.compat import (
    DriverSupport,
    arch_supported,
    cc_below,
    defects_for,
    driver_support,
    oci_platform,
)
from envcheck.matrix.model import ImageTag, Matrix, PaddleRelease
from envcheck.verdict.gpu_groups import index_span


@record
class Assessment:
    """One GPU image tag against the host: what rules it out, or why it runs."""

    image: ImageTag
    driver: DriverSupport | None  # None: neither the driver's version nor its CUDA level known
    driver_problem: str | None
    gpu_problems: tuple[str, ...]
    registry_problem: str | None
    reason: str  # why it is fine, when it has no problems
    platform_problem: str | None = None
    defect_problems: tuple[str, ...] = ()
    # Evidence that the build holds every GPU's arch (its list, or a report of it running): the
    # choice prefers such a tag; without it, `arch_note` says what is not known.
    arch_known: bool = False
    arch_note: str | None = None
    arch_facts: tuple[str, ...] = ()  # the facts applied, with their scope

    @property
    def problems(self) -> tuple[str, ...]:
        return tuple(
            p
            for p in (
                self.platform_problem,
                self.driver_problem,
                *self.gpu_problems,
                *self.defect_problems,
                self.registry_problem,
            )
            if p
        )


def assess_image(
    host: HostFacts,
    gpus: tuple[GpuFacts, ...],
    image: ImageTag,
    matrix: Matrix,
    release: PaddleRelease,
    registry: str,
) -> Assessment:
    """`image` (a GPU tag of `release`) against the host's driver, GPUs, platform and `registry`."""
    cuda = image.cuda or ""
    d = host.driver
    support = driver_support(d.version, d.cuda, cuda, matrix) if d.version or d.cuda else None
    driver_ok, driver_text = _driver_text(host, cuda, support)
    platform = image_wheel_platform(host, image)
    archs = runnable_archs(matrix, release.version, cuda, platform)
    floor = _build_floor(matrix, release, cuda, platform)
    gpu_problems = tuple(_gpu_problems(gpus, matrix, release, floor, archs))
    defects = tuple(
        f"known defect on driver {host.driver.version}: {d.message} [{d.source}]"
        for d in defects_for(image, host.driver.version, matrix)
    )
    registry_problem = None
    if registry not in image.registries:
        registry_problem = f"not published on {registry} (known on: {', '.join(image.registries)})"
    unknown = _unknown_archs(gpus, matrix, archs)
    arch_text = _arch_text(gpus, matrix, archs)
    if archs is not None and not archs.verified and not unknown:
        arch_text = (
            f"a report shows every GPU's arch running on Paddle {release.version} "
            f"cu{cuda.replace('.', '')} (its full list is unknown)"
        )
    return Assessment(
        image,
        support,
        None if driver_ok else driver_text,
        gpu_problems,
        registry_problem,
        f"CUDA {cuda}: {driver_text}; {arch_text}",
        _platform_problem(host, image),
        defects,
        arch_known=archs is not None and not unknown,
        arch_note=_arch_note(release, cuda, unknown) if unknown else None,
        arch_facts=archs.facts if archs is not None else (),
    )


def _unknown_archs(
    gpus: tuple[GpuFacts, ...], matrix: Matrix, archs: ArchSource | None
) -> list[str]:
    """The GPUs' archs (`sm_61`) nothing shows this build holds; every GPU when its CC is unknown."""
    groups = _gpu_groups(gpus, matrix)
    if archs is None or not groups:
        return ["the GPUs' archs"]
    return [f"sm_{sm_of(cc)}" for cc, _, _ in groups if not archs.known_to_run(cc)]


def _arch_note(release: PaddleRelease, cuda: str, unknown: list[str]) -> str:
    return (
        f"nothing known shows Paddle {release.version} cu{cuda.replace('.', '')} holds "
        f"{', '.join(unknown)} (no list of its archs, no report of it running there): only the "
        "smoke training can prove it"
    )


def image_wheel_platform(host: HostFacts, image: ImageTag) -> str:
    """The platform of the Linux wheel inside `image` on this host: the image is Linux whatever
    the host's OS, on the host's machine (else the image's first platform)."""
    return oci_platform(host.machine.arch) or image.platforms[0]


def _build_floor(
    matrix: Matrix, release: PaddleRelease, cuda: str, platform: str
) -> tuple[str, str]:
    """(minimum compute capability, whose) for the build of `release` with CUDA `cuda`."""
    build = build_for(matrix, release.version, cuda)
    if build is None:
        return release.min_compute_capability, f"Paddle {release.version}'s"
    return build.floor(release, platform), f"Paddle {release.version} cu{cuda.replace('.', '')}'s"


def _platform_problem(host: HostFacts, image: ImageTag) -> str | None:
    platform = oci_platform(host.machine.arch)
    if platform is None or platform in image.platforms:
        return None
    return f"published for {', '.join(image.platforms)} only; this host is {platform}"


def _arch_text(gpus: tuple[GpuFacts, ...], matrix: Matrix, archs: ArchSource | None) -> str:
    if archs is None or not any(gpu_compute_capability(g, matrix) for g in gpus):
        return "GPU architectures not checked (unknown)"
    return archs.covered


def _driver_text(host: HostFacts, cuda: str, support: DriverSupport | None) -> tuple[bool, str]:
    d = host.driver
    if support is None:
        return False, f"no driver version known: cannot tell whether the driver runs CUDA {cuda}"
    if d.version is None:  # a saved document with the driver's CUDA level only
        ok = support.level != "none"
        return ok, f"{support.reason}: {'runs' if ok else 'cannot run'} CUDA {cuda}"
    have = f"driver {d.version} (CUDA {d.cuda or '?'})"
    if support.level == "full":
        return True, f"{have} runs CUDA {cuda} with full compatibility ({support.reason})"
    if support.level == "minor-compat":
        return (
            True,
            f"{have} runs CUDA {cuda} through minor-version compatibility ({support.reason})",
        )
    return False, f"{have} cannot run CUDA {cuda}: {support.reason}"


def _gpu_problems(
    gpus: tuple[GpuFacts, ...],
    matrix: Matrix,
    release: PaddleRelease,
    floor: tuple[str, str],
    archs: ArchSource | None,
) -> Iterable[str]:
    minimum, whose = floor
    for cc, indices, name in _gpu_groups(gpus, matrix):
        label = f"GPU {index_span(tuple(map(int, indices)))} {name} (sm_{sm_of(cc)})"
        if cc_below(cc, minimum):
            yield f"{label} is below {whose} minimum compute capability {minimum}"
        elif archs is not None and sm_of(cc) in archs.absent:
            yield f"{label}: {_missing_fact(sm_of(cc), archs)}"
        elif archs is not None and not arch_supported(cc, archs.archs):
            listed = " ".join(map(str, archs.archs))
            yield f"{label} is not among the archs {archs.origin}: {listed}"


def _missing_fact(sm: int, archs: ArchSource) -> str:
    """ "a public report shows sm_61 missing (fact of release 3.2.0 cu129; …)": the fact and its
    scope, else the build's origin."""
    said = next((f for f in archs.facts if f.startswith(f"sm_{sm} missing ")), None)
    return (
        f"a public report shows {said}"
        if said
        else (f"a report shows sm_{sm} missing from {archs.origin}")
    )


def _gpu_groups(gpus: tuple[GpuFacts, ...], matrix: Matrix) -> list[tuple[str, list[str], str]]:
    """(cc, indices, name) per distinct GPU model; a GPU of unknown CC is left to the judge."""
    groups: dict[tuple[str, str], list[str]] = {}
    for g in gpus:
        cc = gpu_compute_capability(g, matrix)
        if cc is not None:
            groups.setdefault((cc, g.name or "?"), []).append(str(g.index))
    return [(cc, indices, name) for (cc, name), indices in groups.items()]


def gpu_compute_capability(gpu: GpuFacts, matrix: Matrix) -> str | None:
    """What the probe read, else the matrix's entry for the GPU's name (gpus.toml); None if neither
    is a readable `major.minor`."""
    cc = gpu.compute_capability
    if cc is None and gpu.name:
        model = matrix.gpu_model(gpu.name)
        cc = model.compute_capability if model else None
    if cc is None:
        return None
    try:
        parse_compute_capability(cc)
    except VersionParseError:
        return None
    return cc

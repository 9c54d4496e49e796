"""Choose the Paddle Docker image a host can run: a pure function of (facts, matrix).

For the requested release (default: the newest in the matrix) every GPU tag is tried, newest CUDA
first and confirmed before unconfirmed at the same CUDA. A tag is rejected, with the reason, when

- the driver cannot run its CUDA: neither full compatibility (the driver's CUDA >= the image's)
  nor minor-version compatibility (driver >= the floor of that CUDA major, NV-RN Table 2 / NV-MVC),
  or no driver version is known (`envcheck.compat.driver_support`);
- a GPU is below the build's minimum compute capability (its own, or its lowest compiled arch,
  or the release's documented floor), or its architecture is not among the archs the build was
  compiled for (when the matrix knows them, §4b), is among those a report shows missing
  (`archs_absent`), or is beyond what the CUDA toolkit can target (§2a: sm_120 needs CUDA >= 12.8,
  Volta is gone in 13.0; a build with unknown archs cannot contain more). Paddle accepts a device
  whose exact sm or major*10 is compiled in (GPURES, `envcheck.compat.arch_supported`);
- the tag is not published for this machine's platform (an aarch64 host never gets an amd64 tag);
- a known defect hits this image on this driver (defects.toml: the CUDA 13.0 images on drivers
  newer than their compat libcuda fall back to the CPU, Paddle#76558 / Paddle#78924);
- the tag is not published on the requested registry.

The first survivor wins. No usable GPU -> the release's CPU tag. GPUs but every tag rejected ->
`ImageChoice(ref=None)` whose `reason` says what would fix it (the judge shows it as the fix).
Without `--paddle`, when no tag of the newest release runs here, the newest release that does run
is chosen and the reason says why and what driver would run the newest one (issue 10.9).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from envcheck.compat import (
    DriverSupport,
    arch_supported,
    cc_below,
    defects_for,
    driver_support,
    oci_platform,
)
from envcheck.errors import UsageError
from envcheck.facts import GpuFacts, HostFacts, usable_gpus
from envcheck.matrix.model import ImageTag, Matrix, PaddleBuild, PaddleRelease
from envcheck.matrix.provenance import plain_source
from envcheck.report import ImageChoice, Rejected
from envcheck.versions import VersionParseError, parse_compute_capability, release_of, sm_of


def select_image(
    host: HostFacts, matrix: Matrix, paddle: str | None = None, registry: str = "dockerhub"
) -> ImageChoice:
    """The image of Paddle `paddle` (default: the newest release that runs here) on `registry`."""
    release = _release(matrix, paddle)
    if registry not in matrix.registries:
        known = ", ".join(matrix.registries)
        raise UsageError(
            f"unknown registry {registry!r} (known: {known})", hint=f"use one of: {known}"
        )
    choice = _select_release(host, matrix, release, registry)
    if paddle is not None or choice.ref is not None:
        return choice
    return _newest_that_runs(host, matrix, release, registry, choice)


def _newest_that_runs(
    host: HostFacts, matrix: Matrix, newest: PaddleRelease, registry: str, first: ImageChoice
) -> ImageChoice:
    """No `--paddle` and nothing of the newest release runs: the newest older release that does,
    saying why, with the newest release's own fix as the alternative."""
    older = sorted(
        (r for r in matrix.releases if Version(r.version) < Version(newest.version)),
        key=lambda r: Version(r.version),
        reverse=True,
    )
    failures = [first]
    for release in older:
        choice = _select_release(host, matrix, release, registry)
        if choice.ref is not None:
            why = (
                f"Paddle {newest.version} (the newest release) has no image this host can run; "
                f"Paddle {release.version} is the newest release that runs here ({choice.reason}). "
                f"Alternatively: {_alternative(failures, newest)}"
            )
            return dataclasses.replace(
                choice, reason=why, rejected=first.rejected + choice.rejected
            )
        failures.append(choice)
    # Nothing runs: the newest release that has images says what would fix it.
    return next((f for f in failures if f.rejected), first)


def _alternative(failures: list[ImageChoice], newest: PaddleRelease) -> str:
    """The newest release's own fix (a driver upgrade, usually); for a pip-only newest release,
    the fix of the newest release that has images, or pip."""
    with_images = next((f for f in failures if f.rejected), None)
    if with_images is None:
        return f"install Paddle {newest.version} with pip instead of an image"
    fix = (with_images.reason or "").removeprefix(
        f"no GPU image of Paddle {with_images.paddle} runs on this host: "
    )
    return f"{fix} (then --paddle {with_images.paddle})"


def _select_release(
    host: HostFacts, matrix: Matrix, release: PaddleRelease, registry: str
) -> ImageChoice:
    gpus = usable_gpus(host)
    if not gpus:
        return _cpu_choice(matrix, release, registry, _why_no_gpu(host), host)
    candidates = gpu_candidates(matrix, release.version)
    assessed = [_assess(host, gpus, image, matrix, release, registry) for image in candidates]
    rejected: list[Rejected] = []
    for a in assessed:
        if not a.problems:
            return _choice(matrix, a.image, registry, a.reason, rejected)
        rejected.append(Rejected(matrix.image_ref(a.image, registry), "; ".join(a.problems)))
    return ImageChoice(
        ref=None,
        registry=registry,
        kind="gpu",
        paddle=release.version,
        reason=_what_would_fix(
            assessed, matrix, release, registry, oci_platform(host.machine.arch)
        ),
        rejected=tuple(rejected),
    )


# -- public pure helpers (the judge reuses them) ---------------------------------------------------


def gpu_candidates(matrix: Matrix, paddle: str) -> tuple[ImageTag, ...]:
    """A release's GPU tags in trial order: newest CUDA first, confirmed first at equal CUDA."""

    def key(image: ImageTag) -> tuple[int, int, bool]:
        major, minor = _major_minor(image.cuda or "0")
        return -major, -minor, not image.confirmed

    return tuple(sorted(matrix.images_for(paddle, "gpu"), key=key))


def build_for(matrix: Matrix, paddle: str, cuda: str | None) -> PaddleBuild | None:
    """The wheel flavour of `paddle` for CUDA `cuda` (compared as major.minor), or its CPU wheel
    when `cuda` is None. Confirmed rows win over unconfirmed ones."""
    want = _major_minor(cuda) if cuda else None
    builds = [
        b for b in matrix.builds_for(paddle) if (_major_minor(b.cuda) if b.cuda else None) == want
    ]
    return min(builds, key=lambda b: not b.confirmed, default=None)


@dataclass(frozen=True)
class ArchSource:
    """The archs a Paddle build can run on, and where the matrix learnt them."""

    archs: tuple[int, ...]
    origin: str  # "compiled into Paddle 3.1.0 cu126 (reported by users, …)"
    verified: bool = True  # False: only the toolkit's reach is known, not the build's own list
    absent: tuple[int, ...] = ()  # archs a report shows missing from the build
    source: str = ""  # the source keys, for --json / --explain


def runnable_archs(matrix: Matrix, paddle: str, cuda: str) -> ArchSource | None:
    """The build's own compiled archs when known (§4b, measured or observed); otherwise every arch
    the CUDA toolkit can target (§2a), the most a build of that CUDA could contain, minus the
    archs a report shows missing, marked unverified."""
    build = build_for(matrix, paddle, cuda)
    label = f"Paddle {paddle} cu{cuda.replace('.', '')}"
    if build is not None and build.archs:
        source = build.archs_source or build.source
        return ArchSource(
            build.archs,
            f"compiled into {label} ({plain_archs_source(source)})",
            source=source,
        )
    toolkit = matrix.archs_for_cuda(cuda)
    if toolkit is None:
        return None
    absent = build.archs_absent if build else ()
    return ArchSource(
        tuple(a for a in toolkit.archs if a not in absent),
        f"CUDA {cuda} can target ({plain_source(toolkit.source, toolkit.confirmed)}); "
        f"{label}'s own list is unknown: arch coverage unverified",
        verified=False,
        absent=absent,
        source=toolkit.source,
    )


def plain_archs_source(source: str) -> str:
    """How an arch list is known, in plain words: measured, or seen in a report."""
    if source.startswith("MEASURED"):
        return "measured from the wheel"
    if source.startswith("3P"):
        return "reported by a user, not in the official docs"
    return "seen in Paddle's issue tracker"


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


# -- one image against the host --------------------------------------------------------------------


@dataclass(frozen=True)
class _Assessment:
    image: ImageTag
    driver: DriverSupport | None  # None: no driver version known
    driver_problem: str | None
    gpu_problems: tuple[str, ...]
    registry_problem: str | None
    reason: str  # why it is fine, when it has no problems
    platform_problem: str | None = None
    defect_problems: tuple[str, ...] = ()

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


def _assess(
    host: HostFacts,
    gpus: tuple[GpuFacts, ...],
    image: ImageTag,
    matrix: Matrix,
    release: PaddleRelease,
    registry: str,
) -> _Assessment:
    cuda = image.cuda or ""
    support = (
        driver_support(host.driver.version, host.driver.cuda, cuda, matrix)
        if host.driver.version
        else None
    )
    driver_ok, driver_text = _driver_text(host, cuda, support)
    archs = runnable_archs(matrix, release.version, cuda)
    floor = _build_floor(matrix, release, cuda)
    gpu_problems = tuple(_gpu_problems(gpus, matrix, release, floor, archs))
    defects = tuple(
        f"known defect on driver {host.driver.version}: {d.message} [{d.source}]"
        for d in defects_for(image, host.driver.version, matrix)
    )
    registry_problem = None
    if registry not in image.registries:
        registry_problem = f"not published on {registry} (known on: {', '.join(image.registries)})"
    arch_text = _arch_text(gpus, matrix, archs)
    return _Assessment(
        image,
        support,
        None if driver_ok else driver_text,
        gpu_problems,
        registry_problem,
        f"CUDA {cuda}: {driver_text}; {arch_text}",
        _platform_problem(host, image),
        defects,
    )


def _build_floor(matrix: Matrix, release: PaddleRelease, cuda: str) -> tuple[str, str]:
    """(minimum compute capability, whose) for the build of `release` with CUDA `cuda`."""
    build = build_for(matrix, release.version, cuda)
    if build is None:
        return release.min_compute_capability, f"Paddle {release.version}'s"
    return build.floor(release), f"Paddle {release.version} cu{cuda.replace('.', '')}'s"


def _platform_problem(host: HostFacts, image: ImageTag) -> str | None:
    platform = oci_platform(host.machine.arch)
    if platform is None or platform in image.platforms:
        return None
    return f"published for {', '.join(image.platforms)} only; this host is {platform}"


def _arch_text(gpus: tuple[GpuFacts, ...], matrix: Matrix, archs: ArchSource | None) -> str:
    if archs is None or not any(gpu_compute_capability(g, matrix) for g in gpus):
        return "GPU architectures not checked (unknown)"
    return f"every GPU's arch is among the archs {archs.origin}"


def _driver_text(host: HostFacts, cuda: str, support: DriverSupport | None) -> tuple[bool, str]:
    d = host.driver
    if support is None:
        return False, f"no driver version known: cannot tell whether the driver runs CUDA {cuda}"
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
        label = f"GPU {','.join(indices)} {name} (sm_{sm_of(cc)})"
        if cc_below(cc, minimum):
            yield f"{label} is below {whose} minimum compute capability {minimum}"
        elif archs is not None and sm_of(cc) in archs.absent:
            yield f"{label}: a report shows sm_{sm_of(cc)} missing from {archs.origin}"
        elif archs is not None and not arch_supported(cc, archs.archs):
            listed = " ".join(map(str, archs.archs))
            yield f"{label} is not among the archs {archs.origin}: {listed}"


def _gpu_groups(gpus: tuple[GpuFacts, ...], matrix: Matrix) -> list[tuple[str, list[str], str]]:
    """(cc, indices, name) per distinct GPU model; a GPU of unknown CC is left to the judge."""
    groups: dict[tuple[str, str], list[str]] = {}
    for g in gpus:
        cc = gpu_compute_capability(g, matrix)
        if cc is not None:
            groups.setdefault((cc, g.name or "?"), []).append(str(g.index))
    return [(cc, indices, name) for (cc, name), indices in groups.items()]


# -- results ---------------------------------------------------------------------------------------


def _choice(
    matrix: Matrix, image: ImageTag, registry: str, reason: str, rejected: Iterable[Rejected]
) -> ImageChoice:
    build = build_for(matrix, image.paddle, image.cuda)
    return ImageChoice(
        ref=matrix.image_ref(image, registry),
        registry=registry,
        tag=image.tag,
        kind=image.kind,
        cuda=image.cuda,
        cudnn=image.cudnn,
        paddle=image.paddle,
        pip_command=build.pip if build else None,
        reason=reason,
        confirmed=image.confirmed,
        source=image.source,
        digest=image.digest,
        rejected=tuple(rejected),
    )


def _cpu_choice(
    matrix: Matrix, release: PaddleRelease, registry: str, why: str, host: HostFacts
) -> ImageChoice:
    images = sorted(matrix.images_for(release.version, "cpu"), key=lambda i: not i.confirmed)
    platform = oci_platform(host.machine.arch)
    runnable = [i for i in images if platform is None or platform in i.platforms]
    for image in runnable:
        if registry in image.registries:
            return _choice(matrix, image, registry, f"{why}: the CPU image", ())
    if images and not runnable:
        where = f" for {platform} ({_what_exists_for(platform)})"
    elif images:
        where = f" on {registry} (known on: {', '.join(images[0].registries)})"
    else:
        where = " in the matrix"
    return ImageChoice(
        ref=None,
        registry=registry,
        kind="cpu",
        paddle=release.version,
        reason=f"{why}, and there is no CPU image of Paddle {release.version}{where}",
    )


def _why_no_gpu(host: HostFacts) -> str:
    d = host.driver
    if d.status != "ok":
        detail = d.reason or d.error or "not found"
        return f"no usable NVIDIA driver ({d.status}: {detail})"
    return "the NVIDIA driver reports no GPU"


def _what_exists_for(platform: str | None) -> str:
    """What an arm64 (Jetson, DGX Spark/GB10, Thor) host can use instead of an image."""
    return (
        f"Paddle publishes its images for linux/amd64 only, none for {platform}; on Jetson use "
        "Paddle Inference's aarch64 wheel (paddle-inference-lib, Paddle#72578) or build Paddle "
        "from source"
    )


def _what_would_fix(
    assessed: list[_Assessment],
    matrix: Matrix,
    release: PaddleRelease,
    registry: str,
    platform: str | None,
) -> str:
    """The smallest change that would make one tag runnable, as the judge's fix text."""
    head = f"no GPU image of Paddle {release.version} runs on this host"
    if not assessed:
        return f"{head}: the matrix has no GPU image for it; choose another release with --paddle"
    if all(a.platform_problem for a in assessed):
        return f"{head}: {_what_exists_for(platform)}"
    if all(a.driver is None for a in assessed):
        return f"{head}: the driver version is unknown; check that `nvidia-smi` prints it"
    # Tags held back by the driver alone: the lowest driver that would run one of them.
    floors = [
        (a.driver.minimum_driver, a.image)
        for a in assessed
        if a.problems == (a.driver_problem,) and a.driver and a.driver.minimum_driver
    ]
    if floors:
        driver, image = min(floors, key=lambda floor: Version(floor[0]))
        ref = matrix.image_ref(image, registry)
        return f"{head}: upgrade the NVIDIA driver to >= {driver} to run {ref}"
    registry_only = [a for a in assessed if a.problems == (a.registry_problem,)]
    if registry_only:
        image = registry_only[0].image
        others = " or ".join(f"--registry {r}" for r in image.registries)
        return f"{head}: use {others} ({matrix.image_ref(image, image.registries[0])})"
    return f"{head}: choose another release with --paddle, or a GPU its builds support"


# -- small parsing helpers -------------------------------------------------------------------------


def _release(matrix: Matrix, paddle: str | None) -> PaddleRelease:
    if paddle is None:
        return matrix.newest_release()
    try:
        found = matrix.release(paddle)
    except InvalidVersion:
        found = None
    if found is None:
        known = ", ".join(
            r.version for r in sorted(matrix.releases, key=lambda r: Version(r.version))
        )
        raise UsageError(
            f"unknown Paddle version {paddle!r} (known: {known})",
            hint=f"choose one of: {known}, or add it to the matrix (matrix/README.md)",
        )
    return found


def _major_minor(cuda: str) -> tuple[int, ...]:
    return release_of(cuda)[:2]

"""Choose the Paddle Docker image a host can run: a pure function of (facts, matrix).

For the requested release (default: the newest in the matrix) every GPU tag is tried, newest CUDA
first and confirmed before unconfirmed at the same CUDA, and ruled out with the reason when it
cannot run here (`envcheck.image.assessment`: the driver, the GPUs' archs, the platform, known
defects, the registry).

The first survivor wins. No usable GPU -> the release's CPU tag. GPUs but every tag rejected ->
`ImageChoice(ref=None)` whose `reason` says what would fix it (the judge shows it as the fix).
Without `--paddle`, when no tag of the newest release runs here, the newest release that does run
is chosen and the reason says why and what driver would run the newest one.
"""

from __future__ import annotations

from collections.abc import Iterable

from packaging.version import InvalidVersion, Version

from envcheck.contracts.errors import UsageError
from envcheck.contracts.facts import HostFacts, unlisted_gpus, usable_gpus
from envcheck.contracts.host_report import ImageChoice, Rejected
from envcheck.contracts.record import replace
from envcheck.contracts.versions import release_of, sm_of
from envcheck.image.assessment import Assessment, assess_image, gpu_compute_capability
from envcheck.matrix.builds import build_for
from envcheck.matrix.compat import oci_platform, unpublished_platform
from envcheck.matrix.model import Arm64Build, ImageTag, Matrix, PaddleRelease


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
    platform = unpublished_platform(host.machine.arch)
    if platform is not None:
        return _unpublished(host, matrix, release if paddle else None, registry, platform)
    choice = _select_release(host, matrix, release, registry)
    if paddle is not None:
        return choice
    if choice.ref is not None:
        return _known_arch_over_contradicted(host, matrix, release, registry, choice)
    choice = _newest_that_runs(host, matrix, release, registry, choice)
    return _with_reported(host, matrix, release, registry, choice)


def _with_reported(
    host: HostFacts, matrix: Matrix, newest: PaddleRelease, registry: str, choice: ImageChoice
) -> ImageChoice:
    """Releases newer than the default that no first-party source confirms (3.4.0: nightlies and
    third-party pins) are said as reported, never chosen: `--paddle` targets them. Said only
    where they are the question: no image of a confirmed release runs here and one of theirs
    would (a driver too old, a platform without images, an unknown driver is not helped)."""
    if choice.ref is not None:
        return choice
    reported = sorted(
        (
            r.version
            for r in matrix.releases
            if Version(r.version) > Version(newest.version)
            and _select_release(host, matrix, r, registry).ref is not None
        ),
        key=Version,
    )
    if not reported:
        return choice
    said = ", ".join(f"Paddle {v} (--paddle {v})" for v in reported)
    note = f"reported but not confirmed by a first-party source, so not the default: {said}"
    return replace(choice, reason=f"{choice.reason}; {note}" if choice.reason else note)


def _known_arch_over_contradicted(
    host: HostFacts, matrix: Matrix, newest: PaddleRelease, registry: str, choice: ImageChoice
) -> ImageChoice:
    """No `--paddle`, and nothing shows the chosen variant holds a GPU's arch while a public
    report shows that arch missing from the same CUDA variant of another release of its major
    (PaddleX#4682: sm_61 on 3.2.0 cu129; 3.3.1 cu129 would be offered to the same GTX 1080): the
    newest release with a variant known to hold every GPU's arch wins, and the reason says why."""
    if choice.kind != "gpu" or choice.arch_known or not choice.cuda:
        return choice
    reports = _reported_missing(host, matrix, newest, choice.cuda)
    if not reports:
        return choice
    older = sorted(
        (
            r
            for r in matrix.releases
            if r.confirmed and Version(r.version) < Version(newest.version)
        ),
        key=lambda r: Version(r.version),
        reverse=True,
    )
    for release in older:
        other = _select_release(host, matrix, release, registry)
        if other.ref is not None and other.arch_known:
            why = (
                f"nothing shows Paddle {newest.version} cu{choice.cuda.replace('.', '')} holds "
                f"every GPU's arch, and a public report shows {reports}; Paddle {release.version} "
                f"is the newest release with a variant known to hold it ({other.reason}). "
                f"Alternatively, unverified: --paddle {newest.version} ({choice.tag})"
            )
            return replace(other, reason=why, rejected=choice.rejected + other.rejected)
    return choice


def _reported_missing(host: HostFacts, matrix: Matrix, newest: PaddleRelease, cuda: str) -> str:
    """ "sm_61 missing from Paddle 3.2.0 cu129": GPUs' archs a report shows missing from the same
    CUDA variant of another release of the same major; "" when none."""
    want = release_of(cuda)[:2]
    major = Version(newest.version).major
    sms = {sm_of(cc) for g in usable_gpus(host) if (cc := gpu_compute_capability(g, matrix))}
    said = []
    for b in matrix.builds:
        if not b.cuda or release_of(b.cuda)[:2] != want or Version(b.paddle).major != major:
            continue
        for sm in sorted(sms & set(b.archs_absent)):
            said.append(f"sm_{sm} missing from Paddle {b.paddle} cu{b.cuda.replace('.', '')}")
    return ", ".join(said)


def _unpublished(
    host: HostFacts, matrix: Matrix, release: PaddleRelease | None, registry: str, platform: str
) -> ImageChoice:
    """A machine Paddle publishes nothing for (ppc64le, s390x, 32-bit ARM): no image, and no
    wheel either, never the amd64 image and the x86 wheel."""
    kind = "gpu" if usable_gpus(host) or unlisted_gpus(host) else "cpu"
    shown = release or _newest_with_images(matrix, kind) or matrix.newest_release()
    return ImageChoice(
        ref=None,
        registry=registry,
        kind=kind,
        paddle=shown.version,
        reason=(
            f"no official build of Paddle for {platform}: build Paddle from source on this "
            "machine (Paddle's install docs, compiling on Linux), or use an x86_64 or aarch64 "
            "machine"
        ),
    )


def _newest_with_images(matrix: Matrix, kind: str) -> PaddleRelease | None:
    """The newest release the matrix holds images of `kind` for (the newest release may be
    pip-only: no image tag of it seen)."""
    with_images = [r for r in matrix.releases if matrix.images_for(r.version, kind)]
    return max(with_images, key=lambda r: Version(r.version), default=None)


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
            return replace(choice, reason=why, rejected=first.rejected + choice.rejected)
        failures.append(choice)
    # Nothing runs: the newest release that has images says what would fix it (a CPU choice
    # rejects no GPU tag, so its images are looked up: never a release without any image).
    return next(
        (f for f in failures if f.rejected or _has_images(matrix, f)),
        first,
    )


def _has_images(matrix: Matrix, choice: ImageChoice) -> bool:
    return bool(choice.paddle and choice.kind and matrix.images_for(choice.paddle, choice.kind))


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
    if not gpus and not unlisted_gpus(host):  # GPUs the driver cannot list keep the GPU plan
        return _cpu_choice(matrix, release, registry, _why_no_gpu(host), host)
    candidates = gpu_candidates(matrix, release.version)
    assessed = [assess_image(host, gpus, image, matrix, release, registry) for image in candidates]
    runnable = [a for a in assessed if not a.problems]
    if runnable:
        chosen = next((a for a in runnable if a.arch_known), runnable[0])
        return _choice(matrix, chosen, registry, _passed_over(assessed, chosen, matrix, registry))
    rejected = [
        Rejected(matrix.image_ref(a.image, registry), "; ".join(a.problems)) for a in assessed
    ]
    return ImageChoice(
        ref=None,
        registry=registry,
        kind="gpu",
        paddle=release.version,
        reason=_what_would_fix(assessed, matrix, release, registry, host),
        rejected=tuple(rejected),
        min_driver=floor[0] if (floor := _driver_floor(assessed)) else None,
    )


def gpu_candidates(matrix: Matrix, paddle: str) -> tuple[ImageTag, ...]:
    """A release's GPU tags in trial order: newest CUDA first, confirmed first at equal CUDA."""

    def key(image: ImageTag) -> tuple[int, int, bool]:
        major, minor = release_of(image.cuda or "0")[:2]
        return -major, -minor, not image.confirmed

    return tuple(sorted(matrix.images_for(paddle, "gpu"), key=key))


# -- results ---------------------------------------------------------------------------------------


def _passed_over(
    assessed: list[Assessment], chosen: Assessment, matrix: Matrix, registry: str
) -> list[Rejected]:
    """The tags tried before the chosen one, each with why: its problems, or, for a tag that runs
    here, that nothing shows its build holds the GPU's arch while the chosen one's does
    (a Pascal card on a CUDA 12 variant that dropped sm_61)."""
    passed: list[Rejected] = []
    for a in assessed[: assessed.index(chosen)]:
        why = "; ".join(a.problems) or (
            f"{a.arch_note}; preferred: {chosen.image.tag}, whose build is known to hold it"
        )
        passed.append(Rejected(matrix.image_ref(a.image, registry), why))
    return passed


def _choice(
    matrix: Matrix, chosen: Assessment, registry: str, rejected: Iterable[Rejected]
) -> ImageChoice:
    return replace(
        image_choice(matrix, chosen.image, registry, chosen.reason, rejected),
        arch_known=chosen.arch_known,
        arch_note=chosen.arch_note,
        arch_facts=chosen.arch_facts,
    )


def image_choice(
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
            return image_choice(matrix, image, registry, f"{why}: the CPU image", ())
    if images and not runnable and platform == "linux/arm64":
        # PyPI's paddlepaddle has manylinux aarch64 CPU wheels (2.6.2 to 3.2.2 for CPython 3.11,
        # `pip index versions paddlepaddle --platform manylinux2014_aarch64`, measured 2026-11).
        # Said in words: the matrix records no aarch64 wheel to pin, and a fix names only pinned
        # releases it knows (tests/fix_commands.py).
        where = (
            f" for {platform} (Paddle publishes its images for linux/amd64 only); install Paddle's "
            "CPU wheel from PyPI with pip instead (paddlepaddle has manylinux aarch64 CPU wheels)"
        )
    elif images and not runnable:
        where = f" for {platform} ({_what_exists_for(platform, host, matrix)})"
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
    if d.status == "unknown":  # a saved document that does not say
        return "no NVIDIA driver recorded"
    if d.status != "ok":
        detail = d.reason or d.error or "not found"
        return f"no usable NVIDIA driver ({d.status}: {detail})"
    return "the NVIDIA driver reports no GPU"


def _what_exists_for(platform: str | None, host: HostFacts, matrix: Matrix) -> str:
    """What an arm64 host (Jetson, DGX Spark/GB10, GH200, Thor) can use instead of an image: the
    Jetson wheels per JetPack for its GPU, or plainly that none exists (arm64.toml)."""
    head = f"Paddle publishes its images for linux/amd64 only, none for {platform}"
    rows = _arm64_rows_for(host, matrix)
    if not rows:
        return f"{head}; build Paddle from source"
    said = []
    for row in rows:
        where = f"JetPack {row.jetpack}" if row.jetpack else "this arm64 GPU"
        if row.pip:
            said.append(
                f"for {where} there is Paddle Inference's Paddle {row.paddle} wheel (CUDA "
                f"{row.cuda}, Python {row.python} only): `{row.pip}` ({row.source})"
            )
        else:
            said.append(f"for {where} no GPU build of Paddle exists ({row.source})")
    return f"{head}; {'; '.join(said)}; otherwise build Paddle from source"


def _arm64_rows_for(host: HostFacts, matrix: Matrix) -> list[Arm64Build]:
    """The arm64.toml rows for the host's GPUs: those naming their sm, else the catch-all one."""
    sms = set()
    for gpu in usable_gpus(host):
        cc = gpu_compute_capability(gpu, matrix)
        if cc is not None:
            sms.add(sm_of(cc))
    named = [r for r in matrix.arm64_builds if sms & set(r.sm)]
    return named or [r for r in matrix.arm64_builds if not r.sm]


def _what_would_fix(
    assessed: list[Assessment],
    matrix: Matrix,
    release: PaddleRelease,
    registry: str,
    host: HostFacts,
) -> str:
    """The smallest change that would make one tag runnable, as the judge's fix text."""
    head = f"no GPU image of Paddle {release.version} runs on this host"
    platform = oci_platform(host.machine.arch)
    if not assessed:
        return f"{head}: the matrix has no GPU image for it; choose another release with --paddle"
    if all(a.platform_problem for a in assessed):
        return f"{head}: {_what_exists_for(platform, host, matrix)}"
    if all(a.driver is None for a in assessed):
        return f"{head}: the driver version is unknown; check that `nvidia-smi` prints it"
    floor = _driver_floor(assessed)
    if floor:
        driver, image = floor
        ref = matrix.image_ref(image, registry)
        return f"{head}: upgrade the NVIDIA driver to >= {driver} to run {ref}"
    registry_only = [a for a in assessed if a.problems == (a.registry_problem,)]
    if registry_only:
        image = registry_only[0].image
        others = " or ".join(f"--registry {r}" for r in image.registries)
        return f"{head}: use {others} ({matrix.image_ref(image, image.registries[0])})"
    return f"{head}: choose another release with --paddle, or a GPU its builds support"


def _driver_floor(assessed: list[Assessment]) -> tuple[str, ImageTag] | None:
    """Of the tags held back by the driver alone, the lowest driver that would run one."""
    floors = [
        (a.driver.minimum_driver, a.image)
        for a in assessed
        if a.problems == (a.driver_problem,) and a.driver and a.driver.minimum_driver
    ]
    return min(floors, key=lambda floor: Version(floor[0]), default=None)


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

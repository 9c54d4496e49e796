"""The compatibility matrix as typed, validated data, with the queries the rules need.

Loaded from `matrix/*.toml` by `envcheck.matrix.load`. Every row cites its source (a tag from
`docs/facts/compat_facts.md` §0) and says whether that source confirms it.
"""

from __future__ import annotations

from packaging.version import Version

from envcheck.contracts.record import record
from envcheck.contracts.versions import parse_dotted, release_of


def release_version(text: str) -> Version:
    """The release a wheel version belongs to: `2.5.2.post117` -> 2.5.2 (Paddle numbers its CUDA
    variants as post releases), `3.0.0b1` stays 3.0.0b1, a `+local` part is dropped."""
    v = Version(text)
    pre = f"{v.pre[0]}{v.pre[1]}" if v.pre else ""
    dev = f".dev{v.dev}" if v.dev is not None else ""
    return Version(f"{v.base_version}{pre}{dev}")


@record
class ToolkitDriver:
    """CUDA toolkit release -> minimum Linux x86_64 driver (full compatibility), NV-RN Table 3."""

    cuda: str  # "12.2.2"
    label: str  # "12.2 Update 2"
    min_driver: str  # "535.104.05"
    source: str
    confirmed: bool = True


@record
class MinorCompat:
    """The floor for running any build of a CUDA major through minor-version compatibility."""

    cuda_major: int
    min_driver: str
    source: str
    confirmed: bool = True
    note: str | None = None


@record
class ArchSet:
    """Real (SASS) architectures a CUDA toolkit can build, e.g. 11.8 -> 35 … 90."""

    cuda: str  # "11.8": applies to this and later minors until the next row
    archs: tuple[int, ...]
    source: str
    confirmed: bool = True


@record
class GpuModel:
    """A GPU family (matched by name) and its compute capability."""

    names: tuple[str, ...]  # substrings matched against the NVML name, e.g. ("A100", "A800")
    compute_capability: str  # "8.0"
    architecture: str  # "Ampere"
    source: str
    confirmed: bool = True


@record
class PaddleRelease:
    """A Paddle release: its compute capability floor and the Pythons it supports."""

    version: str
    min_compute_capability: str  # "6.0" (docs: "超过 6.0")
    python: str | None  # a SpecifierSet, e.g. ">=3.9,<3.14"
    source: str
    confirmed: bool = True


@record
class PaddleBuild:
    """One GPU (or CPU) wheel flavour of a Paddle release.

    A GPU build says what it was compiled for: `archs` (measured or observed, with `archs_source`
    and the `archs_platform` it was seen on) or `archs_unknown` (why not), never silence. A list
    seen on one platform says nothing of the other platforms' wheels (the 3.1.x cu129 lists come
    from Windows; Linux RTX 50 hosts run the Linux wheel). `archs_absent` / `archs_present` list
    archs a public report shows missing / running even where the full list is unknown (3.2.0
    cu129 has no sm_61, its cu118 build runs a GTX 1080: PaddleX#4682).
    """

    paddle: str
    package: str  # "paddlepaddle-gpu" | "paddlepaddle"
    cuda: str | None  # None for CPU
    cudnn: str | None
    archs: tuple[int, ...] | None  # compiled SASS archs where known
    pip: str  # the exact install command
    source: str
    confirmed: bool = True
    archs_source: str | None = None  # how `archs` is known: "MEASURED W-262", "Paddle#55715"
    archs_unknown: str | None = None  # the explicit marker: why the list is not known
    archs_absent: tuple[int, ...] = ()  # archs a public report shows missing
    archs_present: tuple[int, ...] = ()  # archs a public report shows running
    archs_platform: str | None = None  # where `archs` was seen: "linux/amd64", "windows/amd64"
    min_compute_capability: str | None = (
        None  # this build's floor, where it differs (Kepler: cu102)
    )
    paddle_min_driver: str | None = None  # Paddle docs' own (stricter) floor, a note only
    cudart_static: bool = False  # measured: the CUDA runtime is linked in (no libcudart needed)

    def archs_on(self, platform: str | None) -> tuple[int, ...] | None:
        """The compiled archs where they were seen on `platform` (`"linux/amd64"`), else None:
        elsewhere the build's coverage is unverified."""
        return self.archs if self.archs and self.archs_platform == platform else None

    def floor(self, release: PaddleRelease, platform: str | None) -> str:
        """The lowest compute capability this build runs on `platform`: its own, else its lowest
        compiled arch seen there, else the release's documented floor."""
        if self.min_compute_capability:
            return self.min_compute_capability
        archs = self.archs_on(platform)
        if archs:
            low = min(archs)
            return f"{low // 10}.{low % 10}"
        return release.min_compute_capability


@record
class ArchFact:
    """A fact about the archs of every build it covers, not of one row: a release line (`==2.5.*`:
    2.5.0, 2.5.1, 2.5.2, their `.postNNN` wheels), a major (`==3.*`: 3.0.0b1, rcs, nightlies),
    a CUDA variant family (`11` = every CUDA 11 build, `11.8` = the cu118 builds) and optionally
    a platform. A member's own row overrides it where the two disagree (`envcheck.matrix.scope`).
    """

    id: str  # "2.5-cuda11-list"
    releases: str  # a PEP 440 specifier: "==2.5.*", "==3.*"
    cuda: str  # "11" (the CUDA 11 family) or "11.8" (that variant)
    source: str
    confirmed: bool = True
    archs: tuple[int, ...] | None = None  # the full compiled list
    absent: tuple[int, ...] = ()  # archs a report shows missing
    present: tuple[int, ...] = ()  # archs a report shows running
    platform: str | None = None  # where it was seen; None: every platform
    note: str | None = None


@record
class ImageTag:
    """A Paddle image tag in the registries, with its CUDA and platforms."""

    paddle: str
    tag: str
    kind: str  # "gpu" | "cpu"
    cuda: str | None
    cudnn: str | None
    registries: tuple[str, ...]  # names in Matrix.registries
    source: str
    confirmed: bool = True
    digest: str | None = None  # pinned "sha256:…" when known
    platforms: tuple[str, ...] = ("linux/amd64",)  # "linux/amd64", "linux/arm64"


@record
class Arm64Build:
    """What exists for a linux/arm64 GPU: Paddle publishes no arm64 image and no arm64 GPU wheel on
    its indexes; a Jetson wheel exists per JetPack (Paddle#72578), or nothing (`pip` None:
    Paddle#74126 for JetPack 6, the server GPUs such as GB10)."""

    device: str  # "jetson" | "server"
    source: str
    confirmed: bool = True
    jetpack: str | None = None  # "5.1.2"
    sm: tuple[int, ...] = ()  # the GPUs it is for (87: Orin); () = every other arm64 GPU
    paddle: str | None = None
    cuda: str | None = None
    python: str | None = None  # "3.8"
    pip: str | None = None  # the exact install command; None: no build exists


@record
class Defect:
    """A known runtime defect of some images on some drivers: the choice avoids it.

    Paddle#76558 / Paddle#78924: the CUDA 13.0 images put their bundled compatibility libcuda
    first on LD_LIBRARY_PATH; on a host driver newer than that library Paddle silently runs on
    the CPU.
    """

    id: str  # "cuda13.0-compat-libcuda"
    image_cuda: str  # images of this CUDA (major.minor) are affected
    driver_above: str  # ... on host drivers newer than this
    message: str
    fix: str
    source: str
    confirmed: bool = True


@record
class Matrix:
    """The whole compatibility matrix, every table of `matrix/*.toml` validated."""

    toolkit_drivers: tuple[ToolkitDriver, ...]
    minor_compat: tuple[MinorCompat, ...]
    arch_sets: tuple[ArchSet, ...]
    gpus: tuple[GpuModel, ...]
    releases: tuple[PaddleRelease, ...]
    builds: tuple[PaddleBuild, ...]
    images: tuple[ImageTag, ...]
    registries: dict[str, str]  # "dockerhub" -> "docker.io/paddlepaddle/paddle"
    path: str = ""
    defects: tuple[Defect, ...] = ()
    newest_source: str | None = None  # "2026-09-08": the newest source the matrix has read
    arm64_builds: tuple[Arm64Build, ...] = ()
    arch_facts: tuple[ArchFact, ...] = ()

    # -- CUDA and drivers -------------------------------------------------------------------
    def toolkit_min_driver(self, cuda: str) -> ToolkitDriver | None:
        """The GA row of a CUDA minor (`"12.2"` -> 12.2 GA, `>=535.54.03`): full compatibility."""
        want = release_of(cuda)[:2]
        rows = [r for r in self.toolkit_drivers if release_of(r.cuda)[:2] == want]
        return min(rows, key=lambda r: parse_dotted(r.min_driver).version, default=None)

    def minor_compat_for(self, cuda: str) -> MinorCompat | None:
        major = release_of(cuda)[0]
        return next((r for r in self.minor_compat if r.cuda_major == major), None)

    def archs_for_cuda(self, cuda: str) -> ArchSet | None:
        """The arch set of the newest row not newer than `cuda`."""
        v = Version(cuda)
        rows = [r for r in self.arch_sets if Version(r.cuda) <= v]
        return max(rows, key=lambda r: Version(r.cuda), default=None)

    # -- GPUs --------------------------------------------------------------------------------
    def gpu_model(self, name: str) -> GpuModel | None:
        """The longest matching name wins ("RTX 4090" over "RTX 40")."""
        upper = name.upper()
        best: tuple[int, GpuModel] | None = None
        for g in self.gpus:
            for n in g.names:
                if n.upper() in upper and (best is None or len(n) > best[0]):
                    best = (len(n), g)
        return best[1] if best else None

    # -- Paddle ------------------------------------------------------------------------------
    def release(self, version: str) -> PaddleRelease | None:
        v = Version(version)
        return next((r for r in self.releases if Version(r.version) == v), None)

    def newest_release(self) -> PaddleRelease:
        """The newest release a first-party source confirms: the default target. A release only
        third parties or nightlies show (3.4.0) is a target only when asked for (`--paddle`)."""
        confirmed = [r for r in self.releases if r.confirmed] or list(self.releases)
        return max(confirmed, key=lambda r: Version(r.version))

    def builds_for(self, paddle: str) -> tuple[PaddleBuild, ...]:
        """The rows of release `paddle`; a `.postNNN` wheel (Paddle's CUDA marker: 2.5.2.post117)
        or a `+local` one is a wheel of its release."""
        v = release_version(paddle)
        return tuple(b for b in self.builds if Version(b.paddle) == v)

    def images_for(self, paddle: str, kind: str | None = None) -> tuple[ImageTag, ...]:
        v = Version(paddle)
        return tuple(
            i for i in self.images if Version(i.paddle) == v and (kind is None or i.kind == kind)
        )

    def image_ref(self, image: ImageTag, registry: str) -> str:
        return f"{self.registries[registry]}:{image.tag}"

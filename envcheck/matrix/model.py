"""The compatibility matrix as typed, validated data, with the queries the rules need.

Loaded from `matrix/*.toml` by `envcheck.matrix.load`. Every row cites its source (a tag from
`docs/facts/compat_facts.md` §0) and says whether that source confirms it.
"""

from __future__ import annotations

from packaging.version import Version

from envcheck.contracts.libraries import DYNLOAD_STEMS
from envcheck.contracts.record import field, record
from envcheck.contracts.versions import parse_dotted, release_of
from envcheck.matrix import fields as check

# A post number this large is a date: Paddle's develop nightlies (`3.3.1.post20260403+ef0820a64e9`,
# PaddleFleet#729), not a CUDA marker (`2.5.2.post117`, at most three digits).
NIGHTLY_POST = 10_000_000


def is_nightly_post(v: Version) -> bool:
    """`X.Y.Z.postYYYYMMDD+sha`: a develop nightly, which precedes the next release although PEP
    440 orders it after X.Y.Z."""
    return v.post is not None and v.post >= NIGHTLY_POST


def release_version(text: str) -> Version:
    """The release a wheel version belongs to: `2.5.2.post117` -> 2.5.2 (Paddle numbers its CUDA
    variants as post releases), `3.0.0b1` stays 3.0.0b1, a `+local` part is dropped. A develop
    nightly (`3.3.1.post20260403+ef0820a64e9`) is no wheel of 3.3.1: it keeps its date and
    belongs to no release's rows (its release line judges it)."""
    v = Version(text)
    pre = f"{v.pre[0]}{v.pre[1]}" if v.pre else ""
    dev = f".dev{v.dev}" if v.dev is not None else ""
    post = f".post{v.post}" if is_nightly_post(v) else ""
    return Version(f"{v.base_version}{pre}{post}{dev}")


# Each row record is its table's schema: a field without a default must be written in the TOML, one
# with a default may be left out; its metadata names its check (`envcheck.matrix.fields`), and
# `ident` marks the fields that name a row in messages (unique together), `gpu_only` the fields a
# CPU build or image must leave out. `envcheck.matrix.schema` derives the tables from them.


@record
class ToolkitDriver:
    """CUDA toolkit release -> minimum Linux x86_64 driver (full compatibility), NV-RN Table 3."""

    cuda: str = field(metadata={"check": check.dotted, "ident": True})  # "12.2.2"
    label: str = field(metadata={"check": check.text})  # "12.2 Update 2"
    source: str = field(metadata={"check": check.text})
    confirmed: bool = field(metadata={"check": check.boolean})
    # "535.104.05"; None: no Linux driver is bundled with this toolkit (13.4 and later), where
    # minor-version compatibility decides
    min_driver: str | None = field(default=None, metadata={"check": check.dotted})
    note: str | None = field(default=None, metadata={"check": check.text})


@record
class MinorCompat:
    """The floor for running any build of a CUDA major through minor-version compatibility."""

    cuda_major: int = field(metadata={"check": check.integer, "ident": True})
    min_driver: str = field(metadata={"check": check.dotted})
    source: str = field(metadata={"check": check.text})
    confirmed: bool = field(metadata={"check": check.boolean})
    note: str | None = field(default=None, metadata={"check": check.text})


@record
class ArchSet:
    """Real (SASS) architectures a CUDA toolkit can build, e.g. 11.8 -> 35 … 90."""

    # "11.8": applies to this and later minors until the next row
    cuda: str = field(metadata={"check": check.dotted, "ident": True})
    archs: tuple[int, ...] = field(metadata={"check": check.archs})
    source: str = field(metadata={"check": check.text})
    confirmed: bool = field(metadata={"check": check.boolean})
    note: str | None = field(default=None, metadata={"check": check.text})


@record
class GpuModel:
    """A GPU family (matched by name) and its compute capability."""

    # substrings matched against the NVML name, e.g. ("A100", "A800")
    names: tuple[str, ...] = field(metadata={"check": check.texts, "ident": True})
    compute_capability: str = field(metadata={"check": check.cc})  # "8.0"
    architecture: str = field(metadata={"check": check.text})  # "Ampere"
    source: str = field(metadata={"check": check.text})
    confirmed: bool = field(metadata={"check": check.boolean})
    note: str | None = field(default=None, metadata={"check": check.text})


@record
class PaddleRelease:
    """A Paddle release: its compute capability floor and the Pythons it supports."""

    version: str = field(metadata={"check": check.pep440, "ident": True})
    min_compute_capability: str = field(metadata={"check": check.cc})  # "6.0" (docs: "超过 6.0")
    source: str = field(metadata={"check": check.text})
    confirmed: bool = field(metadata={"check": check.boolean})
    python: str | None = field(default=None, metadata={"check": check.specifier})  # ">=3.9,<3.14"
    note: str | None = field(default=None, metadata={"check": check.text})


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

    paddle: str = field(metadata={"check": check.pep440, "ident": True})
    package: str = field(  # "paddlepaddle-gpu" | "paddlepaddle"
        metadata={"check": check.one_of("paddlepaddle-gpu", "paddlepaddle"), "ident": True}
    )
    pip: str = field(metadata={"check": check.text})  # the exact install command
    source: str = field(metadata={"check": check.text})
    confirmed: bool = field(metadata={"check": check.boolean})
    cuda: str | None = field(  # None for CPU
        default=None, metadata={"check": check.dotted, "ident": True, "gpu_only": True}
    )
    cudnn: str | None = field(default=None, metadata={"check": check.dotted, "gpu_only": True})
    # compiled SASS archs where known
    archs: tuple[int, ...] | None = field(
        default=None, metadata={"check": check.archs, "gpu_only": True}
    )
    # how `archs` is known: "MEASURED W-262", "Paddle#55715"
    archs_source: str | None = field(default=None, metadata={"check": check.text, "gpu_only": True})
    # the explicit marker: why the list is not known
    archs_unknown: str | None = field(
        default=None, metadata={"check": check.text, "gpu_only": True}
    )
    # archs a public report shows missing / running
    archs_absent: tuple[int, ...] = field(
        default=(), metadata={"check": check.archs, "gpu_only": True}
    )
    archs_present: tuple[int, ...] = field(
        default=(), metadata={"check": check.archs, "gpu_only": True}
    )
    # where `archs` was seen: "linux/amd64", "windows/amd64"
    archs_platform: str | None = field(
        default=None, metadata={"check": check.wheel_platform, "gpu_only": True}
    )
    # this build's floor, where it differs (Kepler: cu102)
    min_compute_capability: str | None = field(default=None, metadata={"check": check.cc})
    # Paddle docs' own (stricter) floor, a note only
    paddle_min_driver: str | None = field(default=None, metadata={"check": check.dotted})
    # measured: the CUDA runtime is linked in (no libcudart needed)
    cudart_static: bool = field(default=False, metadata={"check": check.boolean, "gpu_only": True})
    note: str | None = field(default=None, metadata={"check": check.text})

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

    id: str = field(metadata={"check": check.row_id, "ident": True})  # "2.5-cuda11-list"
    releases: str = field(metadata={"check": check.specifier})  # PEP 440: "==2.5.*", "==3.*"
    # "11" (the CUDA 11 family) or "11.8" (that variant)
    cuda: str = field(metadata={"check": check.dotted})
    source: str = field(metadata={"check": check.text})
    confirmed: bool = field(metadata={"check": check.boolean})
    # the full compiled list
    archs: tuple[int, ...] | None = field(default=None, metadata={"check": check.archs})
    absent: tuple[int, ...] = field(default=(), metadata={"check": check.archs})  # shown missing
    present: tuple[int, ...] = field(default=(), metadata={"check": check.archs})  # shown running
    # where it was seen; None: every platform
    platform: str | None = field(default=None, metadata={"check": check.wheel_platform})
    note: str | None = field(default=None, metadata={"check": check.text})


@record
class ImageTag:
    """A Paddle image tag in the registries, with its CUDA and platforms."""

    paddle: str = field(metadata={"check": check.pep440})
    tag: str = field(metadata={"check": check.docker_tag, "ident": True})
    kind: str = field(metadata={"check": check.one_of("gpu", "cpu")})  # "gpu" | "cpu"
    # names in Matrix.registries
    registries: tuple[str, ...] = field(metadata={"check": check.texts})
    source: str = field(metadata={"check": check.text})
    confirmed: bool = field(metadata={"check": check.boolean})
    # "linux/amd64", "linux/arm64": every row names them
    platforms: tuple[str, ...] = field(metadata={"check": check.platforms})
    cuda: str | None = field(default=None, metadata={"check": check.dotted, "gpu_only": True})
    cudnn: str | None = field(default=None, metadata={"check": check.dotted, "gpu_only": True})
    digest: str | None = field(default=None, metadata={"check": check.digest})  # pinned "sha256:…"
    note: str | None = field(default=None, metadata={"check": check.text})


@record
class Arm64Build:
    """What exists for a linux/arm64 GPU: Paddle publishes no arm64 image and no arm64 GPU wheel on
    its indexes; a Jetson wheel exists per JetPack (Paddle#72578), or nothing (`pip` None:
    Paddle#74126 for JetPack 6, the server GPUs such as GB10)."""

    # "jetson" | "server"
    device: str = field(metadata={"check": check.one_of("jetson", "server"), "ident": True})
    source: str = field(metadata={"check": check.text})
    confirmed: bool = field(metadata={"check": check.boolean})
    # "5.1.2"
    jetpack: str | None = field(default=None, metadata={"check": check.text, "ident": True})
    # the GPUs it is for (87: Orin); () = every other arm64 GPU
    sm: tuple[int, ...] = field(default=(), metadata={"check": check.archs})
    paddle: str | None = field(default=None, metadata={"check": check.pep440})
    cuda: str | None = field(default=None, metadata={"check": check.dotted})
    python: str | None = field(default=None, metadata={"check": check.text})  # "3.8"
    # the exact install command; None: no build exists
    pip: str | None = field(default=None, metadata={"check": check.text})
    note: str | None = field(default=None, metadata={"check": check.text})


@record
class Defect:
    """A known runtime defect of some images on some drivers: the choice avoids it.

    Paddle#76558 / Paddle#78924: the CUDA 13.0 images put their bundled compatibility libcuda
    first on LD_LIBRARY_PATH; on a host driver newer than that library Paddle silently runs on
    the CPU.
    """

    id: str = field(metadata={"check": check.row_id, "ident": True})  # "cuda13.0-compat-libcuda"
    # images of this CUDA (major.minor) are affected on host drivers newer than `driver_above`
    image_cuda: str = field(metadata={"check": check.dotted})
    driver_above: str = field(metadata={"check": check.dotted})
    message: str = field(metadata={"check": check.text})
    fix: str = field(metadata={"check": check.text})
    source: str = field(metadata={"check": check.text})
    confirmed: bool = field(metadata={"check": check.boolean})
    note: str | None = field(default=None, metadata={"check": check.text})


@record
class GpuGeneration:
    """A GPU generation, the PCI device ids of its GPUs (vendor 10de) and which kernel module
    flavour runs it: the open modules need a GSP (Turing and newer), Blackwell needs them."""

    name: str = field(metadata={"check": check.text, "ident": True})  # "Pascal"
    # {"1b80": "GeForce GTX 1080"}: the ids a source names, not a guessed range
    devices: dict[str, str] = field(metadata={"check": check.pci_devices})
    # the open kernel modules: "unsupported" (no GSP), "supported", "required" (Blackwell)
    open_module: str = field(
        metadata={"check": check.one_of("unsupported", "supported", "required")}
    )
    source: str = field(metadata={"check": check.text})
    confirmed: bool = field(metadata={"check": check.boolean})
    note: str | None = field(default=None, metadata={"check": check.text})


@record
class DriverBranch:
    """An NVIDIA driver branch (R580): the GPU generations it drives, when it ends, and the
    distributions' packages of it. A driver of a branch with no row is judged by the nearest
    older row (a 600 driver as R595)."""

    branch: int = field(metadata={"check": check.integer, "ident": True})  # 580
    kind: str = field(metadata={"check": check.text})  # "LTSB", "production", "new feature"
    # the generations it supports (names of [[gpu_generation]] rows)
    generations: tuple[str, ...] = field(metadata={"check": check.texts})
    source: str = field(metadata={"check": check.text})
    confirmed: bool = field(metadata={"check": check.boolean})
    end_of_life: str | None = field(default=None, metadata={"check": check.year_month})
    # {"Ubuntu": "nvidia-driver-580"}: the proprietary kernel module's package
    packages: dict[str, str] | None = field(default=None, metadata={"check": check.packages})
    # {"Ubuntu": "nvidia-driver-580-open"}: the open kernel module's package
    open_packages: dict[str, str] | None = field(default=None, metadata={"check": check.packages})
    note: str | None = field(default=None, metadata={"check": check.text})


@record
class Registry:
    """One `[[registry]]` entry: a name for an image repository (`Matrix.registries`)."""

    name: str = field(metadata={"check": check.text, "ident": True})  # "dockerhub"
    ref: str = field(metadata={"check": check.repository})  # "docker.io/paddlepaddle/paddle"
    source: str = field(metadata={"check": check.text})
    confirmed: bool = field(metadata={"check": check.boolean})
    note: str | None = field(default=None, metadata={"check": check.text})


@record
class CudaLibrary:
    """The names one CUDA library is opened by (`dlopen`, the first that loads wins) in the builds
    of a release range and a CUDA family (`11` every CUDA 11 build, `12.0` the cu120 ones; the
    longest that covers a build wins), with or without Paddle's pip CUDA libraries, and the
    package of NVIDIA's CUDA apt repository that holds those names (`{cuda}`: the build's CUDA
    as `11-8`)."""

    library: str = field(metadata={"check": check.one_of(*DYNLOAD_STEMS), "ident": True})
    releases: str = field(metadata={"check": check.specifier, "ident": True})  # "==2.*"
    cuda: str = field(metadata={"check": check.dotted, "ident": True})  # "11", "12.0"
    pip_cuda_libraries: bool = field(metadata={"check": check.boolean, "ident": True})
    sonames: tuple[str, ...] = field(metadata={"check": check.texts})  # ("libcublas.so",)
    toolkit_package: str = field(
        metadata={"check": check.matching(r"[a-z0-9][a-z0-9.+-]*(\{cuda\})?", "a package name")}
    )
    source: str = field(metadata={"check": check.text})
    confirmed: bool = field(metadata={"check": check.boolean})
    note: str | None = field(default=None, metadata={"check": check.text})


@record
class Matrix:
    """The whole compatibility matrix, every table of `matrix/*.toml` validated.

    A field with a `table` in its metadata holds the rows of `[[table]]` entries, in file order:
    the row record is the tuple's, or `row` for a table kept in another shape."""

    toolkit_drivers: tuple[ToolkitDriver, ...] = field(metadata={"table": "toolkit"})
    minor_compat: tuple[MinorCompat, ...] = field(metadata={"table": "minor_compat"})
    arch_sets: tuple[ArchSet, ...] = field(metadata={"table": "arch_set"})
    gpus: tuple[GpuModel, ...] = field(metadata={"table": "gpu"})
    releases: tuple[PaddleRelease, ...] = field(metadata={"table": "release"})
    builds: tuple[PaddleBuild, ...] = field(metadata={"table": "build"})
    images: tuple[ImageTag, ...] = field(metadata={"table": "image"})
    # "dockerhub" -> "docker.io/paddlepaddle/paddle"
    registries: dict[str, str] = field(metadata={"table": "registry", "row": Registry})
    path: str = ""
    defects: tuple[Defect, ...] = field(default=(), metadata={"table": "defect"})
    newest_source: str | None = None  # "2026-09-08": the newest source the matrix has read
    arm64_builds: tuple[Arm64Build, ...] = field(default=(), metadata={"table": "arm64_build"})
    arch_facts: tuple[ArchFact, ...] = field(default=(), metadata={"table": "arch_fact"})
    gpu_generations: tuple[GpuGeneration, ...] = field(
        default=(), metadata={"table": "gpu_generation"}
    )
    driver_branches: tuple[DriverBranch, ...] = field(
        default=(), metadata={"table": "driver_branch"}
    )
    cuda_libraries: tuple[CudaLibrary, ...] = field(default=(), metadata={"table": "cuda_library"})

    # -- CUDA and drivers -------------------------------------------------------------------
    def toolkit_min_driver(self, cuda: str) -> ToolkitDriver | None:
        """The GA row of a CUDA minor (`"12.2"` -> 12.2 GA, `>=535.54.03`): full compatibility."""
        want = release_of(cuda)[:2]
        rows = [
            (r, r.min_driver)
            for r in self.toolkit_drivers
            if release_of(r.cuda)[:2] == want and r.min_driver
        ]
        return min(rows, key=lambda r: parse_dotted(r[1]).version, default=(None, ""))[0]

    def minor_compat_for(self, cuda: str) -> MinorCompat | None:
        major = release_of(cuda)[0]
        return next((r for r in self.minor_compat if r.cuda_major == major), None)

    def archs_for_cuda(self, cuda: str) -> ArchSet | None:
        """The arch set of the newest row not newer than `cuda`."""
        v = Version(cuda)
        rows = [r for r in self.arch_sets if Version(r.cuda) <= v]
        return max(rows, key=lambda r: Version(r.cuda), default=None)

    # -- GPU generations and driver branches ------------------------------------------------
    def generation_of(self, device_id: str) -> tuple[GpuGeneration, str] | None:
        """The generation a PCI device id (`1b80`) belongs to, with the product's name."""
        want = device_id.lower().removeprefix("0x")
        for g in self.gpu_generations:
            if want in g.devices:
                return g, g.devices[want]
        return None

    def driver_branch(self, branch: int) -> DriverBranch | None:
        """The row of `branch`, else of the nearest older branch with one (a 600 driver is
        judged as R595: a branch inherits what the one before it dropped)."""
        older = [b for b in self.driver_branches if b.branch <= branch]
        return max(older, key=lambda b: b.branch, default=None)

    def last_branch_for(self, generation: str) -> DriverBranch | None:
        """The newest branch that still drives `generation` (R580 for Pascal)."""
        rows = [b for b in self.driver_branches if generation in b.generations]
        return max(rows, key=lambda b: b.branch, default=None)

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

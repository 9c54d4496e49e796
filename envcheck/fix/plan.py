"""The repair plan (pure): the doctor's report → ordered steps for the target interpreter.

Each step is an argv (a list, never a shell string) naming the target by absolute path, the
finding it resolves, and what it changes. The Paddle build comes from the doctor's image choice
as data (release, kind, CUDA variant): `paddle_wheel` derives the pinned requirement and the
index from them. What needs root or a reboot (driver, kernel module, docker group, the NVIDIA
Container Toolkit) is never a command we run: it is a manual step, in the report's layer order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from packaging.version import Version

from envcheck.facts import PaddleFacts, usable_gpus
from envcheck.findings import LAYERS, Finding
from envcheck.fixes import cudnn_install
from envcheck.report import ImageChoice, Report

PADDLE_INDEX = "https://www.paddlepaddle.org.cn"  # Paddle's own index (a mirror may replace it)
PADDLE_INDEX_ENV = "ENVCHECK_PADDLE_INDEX"  # the base URL of a mirror of Paddle's index
PIP_OVERRIDE = "--break-system-packages"  # pip's own PEP 668 override, the user's to give

StepKind = Literal["uninstall", "install", "pull", "manual"]
Expect = Literal["gpu", "cpu"]

# What a new Paddle build resolves, most specific first: the first present is the step's "why".
PADDLE_FINDINGS = (
    "paddle.both-installed",
    "paddle.cpu-build",
    "paddle.missing",
    "paddle.unreadable",
    "driver.too-old",  # the installed build's CUDA is too new: the chosen build's runs
    "paddle.arch-missing",  # the chosen build was checked against every GPU's arch
)
CUDNN_FINDINGS = ("cudnn.missing", "cudnn.major-mismatch")
# Warnings that are still a person's job: the container path needs them (docker group or a
# started engine, the NVIDIA Container Toolkit); other warnings are advice, not repairs.
MANUAL_WARNINGS = ("engine.unreachable", "engine.no-nvidia-runtime")
NOT_MANUAL = ("smoke", "drift", "fleet")  # judged again by the verification, or not the host's
_BOTH = ("paddlepaddle", "paddlepaddle-gpu")


@dataclass(frozen=True)
class Wheel:
    """One pinned Paddle build and where pip finds it (`index` None: pip's configured index)."""

    package: str  # "paddlepaddle" | "paddlepaddle-gpu"
    version: str  # as pip pins it: "3.3.1", "2.6.2.post112"
    kind: Expect
    cuda: str | None = None
    index: str | None = None  # --index-url
    find_links: str | None = None  # -f (Paddle 2.5 and older publish a links page)

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"

    @property
    def pip_args(self) -> tuple[str, ...]:
        if self.index:
            return (self.requirement, "--index-url", self.index)
        if self.find_links:
            return (self.requirement, "--find-links", self.find_links)
        return (self.requirement,)


@dataclass(frozen=True)
class Step:
    kind: StepKind
    why: str  # the finding id it resolves
    changes: str  # what it changes, in words
    argv: tuple[str, ...] = ()  # the exact command; () for a manual step

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "why": self.why,
            "changes": self.changes,
            "argv": list(self.argv),
        }


@dataclass(frozen=True)
class FixPlan:
    python: str  # the target interpreter, by absolute path
    steps: tuple[Step, ...]
    wheel: Wheel | None = None  # the Paddle build the target holds afterwards, when it changes
    expect: Expect | None = None  # what the verification smoke must prove (None: nothing applied)

    @property
    def runs(self) -> tuple[Step, ...]:
        return tuple(s for s in self.steps if s.kind != "manual")

    @property
    def manual(self) -> tuple[Step, ...]:
        return tuple(s for s in self.steps if s.kind == "manual")

    def to_json(self) -> dict[str, Any]:
        wheel = self.wheel
        return {
            "python": self.python,
            "expect": self.expect,
            "wheel": None
            if wheel is None
            else {
                "requirement": wheel.requirement,
                "kind": wheel.kind,
                "cuda": wheel.cuda,
                "index": wheel.index,
                "find_links": wheel.find_links,
            },
            "steps": [s.to_json() for s in self.steps],
        }


def paddle_index_base(variables: Mapping[str, str]) -> str:
    return (variables.get(PADDLE_INDEX_ENV) or PADDLE_INDEX).rstrip("/")


def cuda_tag(cuda: str) -> str:
    """ "12.6" → "126", the CUDA variant in Paddle's index paths and `.post` versions."""
    return "".join(cuda.split(".")[:2])


def paddle_wheel(paddle: str, cuda: str | None, base: str = PADDLE_INDEX) -> Wheel:
    """The build of Paddle `paddle` for CUDA `cuda` (None: the CPU build), as Paddle publishes it:
    3.x under `{base}/packages/stable/{cpu,cuXYZ}/`; 2.6 likewise with `.postXYZ` versions except
    its CUDA 11.8 build (PyPI's paddlepaddle-gpu); 2.5 and older on the links page."""
    release = Version(paddle)
    if cuda is None:
        index = f"{base}/packages/stable/cpu/" if release.major >= 3 else None
        return Wheel("paddlepaddle", paddle, "cpu", index=index)
    cu = cuda_tag(cuda)
    if release.major >= 3:
        return Wheel(
            "paddlepaddle-gpu", paddle, "gpu", cuda, index=f"{base}/packages/stable/cu{cu}/"
        )
    if cu == "118":
        return Wheel("paddlepaddle-gpu", paddle, "gpu", cuda)
    version = f"{paddle}.post{cu}"
    if release >= Version("2.6"):
        return Wheel(
            "paddlepaddle-gpu", version, "gpu", cuda, index=f"{base}/packages/stable/cu{cu}/"
        )
    links = f"{base}/whl/linux/mkl/avx/stable.html"
    return Wheel("paddlepaddle-gpu", version, "gpu", cuda, find_links=links)


def wanted_wheel(image: ImageChoice | None, base: str) -> Wheel | None:
    """The build the doctor chose for this host: its GPU build, the CPU build where no GPU is
    usable; None when no build runs here (the image choice's reason says what would fix it)."""
    if image is None or not image.paddle:
        return None
    if image.kind == "gpu":
        return paddle_wheel(image.paddle, image.cuda, base) if image.ref and image.cuda else None
    return paddle_wheel(image.paddle, None, base)


def plan_fix(
    report: Report,
    python: str,
    *,
    index_base: str = PADDLE_INDEX,
    pip_flags: Sequence[str] = (),
    pull: Sequence[str] = (),
) -> FixPlan:
    """The plan for `report`'s host: Paddle's removals then its install (then cuDNN where the
    build does not bring it), the container's pull (`pull`: the pull-image argv prefix, empty for
    none), then the manual steps. `pip_flags`: pip's own flags for every pip command
    (`--break-system-packages`)."""
    bad = {f.id: f for f in report.findings if f.severity != "pass"}
    wheel = wanted_wheel(report.image, index_base)
    why = next((i for i in PADDLE_FINDINGS if i in bad), None)
    pip = (python, "-m", "pip")
    steps: list[Step] = []
    resolved: set[str] = set()
    if why is not None and wheel is not None:
        resolved |= {i for i in PADDLE_FINDINGS if i in bad}
        steps += _removals(report.host.paddle, wheel, why, pip, pip_flags)
        steps.append(
            Step(
                "install",
                why,
                f"installs {wheel.requirement} ({_build_words(wheel)}) "
                f"from {wheel.index or wheel.find_links or 'pip’s configured index'}",
                (*pip, "install", *pip_flags, *wheel.pip_args),
            )
        )
    cudnn = _cudnn_step(report, wheel if why else None, bad, pip, pip_flags, why)
    if cudnn is not None:
        steps.append(cudnn)
        resolved.add(cudnn.why)
    if pull and report.image is not None and report.image.ref:
        steps.append(
            Step(
                "pull",
                "image.selected",
                f"pulls {report.image.ref} (the image the doctor chose) into the engine",
                (*pull, "--image", report.image.ref),
            )
        )
    steps += _manual(report.findings, resolved)
    expect: Expect | None = None
    if any(s.kind != "manual" for s in steps):
        expect = wheel.kind if wheel is not None and why else _expected(report)
    return FixPlan(python, tuple(steps), wheel if why else None, expect)


def _removals(
    paddle: PaddleFacts, wheel: Wheel, why: str, pip: tuple[str, ...], flags: Sequence[str]
) -> list[Step]:
    """Every installed Paddle distribution goes before the new build comes: the wrong one first
    (two of them overwrite each other's files; one of the right name may be another CUDA
    variant of the same version, which pip would keep)."""
    installed = list(paddle.distributions) or ([paddle.package] if paddle.package else [])
    if paddle.status == "absent":
        installed = []
    order = sorted(set(installed) & set(_BOTH), key=lambda d: d == wheel.package)
    return [
        Step(
            "uninstall",
            why,
            f"removes {dist}"
            + (
                " (the wrong build for this host)"
                if dist != wheel.package
                else " (reinstalled below as the build this host needs)"
            ),
            (*pip, "uninstall", "-y", *flags, dist),
        )
        for dist in order
    ]


def _cudnn_step(
    report: Report,
    wheel: Wheel | None,
    bad: dict[str, Finding],
    pip: tuple[str, ...],
    flags: Sequence[str],
    paddle_why: str | None,
) -> Step | None:
    """NVIDIA's cuDNN wheel where a 2.x GPU build (which bundles no CUDA libraries) finds none of
    its major. A 3.x build brings its own through pip's dependencies."""
    why = next((i for i in CUDNN_FINDINGS if i in bad), None)
    p, image = report.host.paddle, report.image
    if wheel is not None:  # the new build: its cuDNN, unless it bundles it
        if wheel.kind != "gpu" or Version(wheel.version).major >= 3 or image is None:
            return None
        cudnn, cuda = image.cudnn, wheel.cuda
        have = report.host.cudnn.version if report.host.cudnn.status == "ok" else None
        if have and cudnn and have.split(".")[0] == cudnn.split(".")[0]:
            return None
        why = why or paddle_why
    else:
        if why is None or p.with_pip_cuda_libraries:
            return None
        cudnn, cuda = p.cudnn, p.cuda
    # the doctor's own pin: a release PyPI has (envcheck/known_packages.toml), none for CUDA 10
    if not (why and cudnn and cuda):
        return None
    install = cudnn_install(pip[0], cudnn, cuda)
    if install is None:
        return None
    return Step(
        "install",
        why,
        f"installs cuDNN {cudnn.split('.')[0]} for CUDA {cuda.split('.')[0]} "
        f"({' '.join(install.requirements)}), which this Paddle build loads but does not bring",
        (*pip, "install", *flags, *install.args),
    )


def _manual(findings: Sequence[Finding], resolved: set[str]) -> list[Step]:
    """What a person must fix (root, a reboot), in the report's layer order: the driver (and its
    kernel module) before the GPUs before the engine (docker group, then the toolkit)."""
    rank = {layer: i for i, (layer, _) in enumerate(LAYERS)}
    todo = [
        f
        for f in findings
        if (f.severity == "fail" or f.id in MANUAL_WARNINGS)
        and f.fix
        and f.id not in resolved
        and f.family not in NOT_MANUAL
    ]
    todo.sort(key=lambda f: rank.get(f.layer, len(rank)))
    return [Step("manual", f.id, f.fix or "") for f in todo]


def _expected(report: Report) -> Expect:
    return "gpu" if usable_gpus(report.host) else "cpu"


def _build_words(wheel: Wheel) -> str:
    return f"the CUDA {wheel.cuda} build" if wheel.cuda else "the CPU build"

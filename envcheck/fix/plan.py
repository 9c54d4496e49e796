"""The repair plan (pure): the doctor's report → ordered steps for the target interpreter.

Each step is an argv (a list, never a shell string) naming the target by absolute path, the
finding it resolves, and what it changes. The Paddle build is the doctor's own advice: the
install command of the matrix row its image choice names (`envcheck.verdict.fixes.paddle_install`),
so the plan and the doctor name the same package==version and index. What needs root or a reboot
(driver, kernel module, docker group, the NVIDIA Container Toolkit) is never a command we run: it is
a manual step, in the report's layer order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from packaging.version import Version

from envcheck.contracts.facts import PaddleFacts, usable_gpus
from envcheck.contracts.findings import LAYERS, Finding
from envcheck.contracts.host_report import Report
from envcheck.contracts.record import record, replace
from envcheck.verdict.fixes import NO_GPU_BUILD_YET, PipInstall, cudnn_install, paddle_install

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
RUNTIME_MISSING = "engine.no-nvidia-runtime"
MANUAL_WARNINGS = ("engine.unreachable", RUNTIME_MISSING)
NOT_MANUAL = ("smoke", "drift", "fleet")  # judged again by the verification, or not the host's
_BOTH = ("paddlepaddle", "paddlepaddle-gpu")


@record
class Wheel:
    """One pinned Paddle build and where pip finds it: the doctor's own install command (the
    matrix row's, `envcheck.verdict.fixes.paddle_install`) read as data, never derived a second
    time."""

    install: PipInstall
    kind: Expect
    cuda: str | None = None

    @classmethod
    def of(cls, install: PipInstall, cuda: str | None) -> Wheel:
        gpu = "paddlepaddle-gpu" in install.names
        return cls(install, "gpu" if gpu else "cpu", cuda if gpu else None)

    @property
    def requirement(self) -> str:
        return self.install.requirements[0]

    @property
    def package(self) -> str:
        return self.install.names[0]

    @property
    def version(self) -> str:
        return self.requirement.split("==", 1)[1]

    @property
    def index(self) -> str | None:  # --index-url
        return self.install.option("-i", "--index-url")

    @property
    def find_links(self) -> str | None:  # -f (Paddle 2.5 and older publish a links page)
        return self.install.option("-f", "--find-links")

    @property
    def pip_args(self) -> tuple[str, ...]:
        """What follows `pip install`: the requirement, then where pip finds it."""
        return self.install.args


@record
class Step:
    kind: StepKind
    why: str  # the finding id it resolves
    changes: str  # what it changes, in words
    argv: tuple[str, ...] = ()  # the exact command; () for a manual step
    packages: tuple[str, ...] = ()  # the distributions a pip step removes or installs

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "why": self.why,
            "changes": self.changes,
            "argv": list(self.argv),
        }


@record
class ImageState:
    """What the engine said of the image the doctor chose (asked at the edge, commands/fix.py):
    `present` None when it could not be asked (no engine answered, or the user said --no-pull)."""

    ref: str
    present: bool | None
    why: str  # in words: what the engine said, or why it was not asked

    def to_json(self) -> dict[str, Any]:
        return {"ref": self.ref, "present": self.present, "why": self.why}


@record
class FixPlan:
    python: str  # the target interpreter, by absolute path
    steps: tuple[Step, ...]
    wheel: Wheel | None = None  # the Paddle build the target holds afterwards, when it changes
    expect: Expect | None = None  # what the verification smoke must prove (None: nothing applied)
    image: ImageState | None = None  # the doctor's image, as the engine has it (None: no image)

    @property
    def runs(self) -> tuple[Step, ...]:
        return tuple(s for s in self.steps if s.kind != "manual")

    @property
    def pulled(self) -> str | None:
        """The image a step pulls: the verification smoke runs in it too."""
        return next((s.argv[-1] for s in self.steps if s.kind == "pull"), None)

    @property
    def pip(self) -> bool:
        """Whether a step changes the target interpreter."""
        return any(s.kind in ("install", "uninstall") for s in self.steps)

    @property
    def packages(self) -> frozenset[str]:
        """Every distribution the pip steps remove or install."""
        return frozenset(p for s in self.steps for p in s.packages)

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
            "image": None if self.image is None else self.image.to_json(),
        }


def wanted_wheel(report: Report, python: str) -> Wheel | None:
    """The build the doctor chose for this host, as its advice names it: its GPU build, the CPU
    build where no GPU is usable; None when no build runs here (the image choice's reason says
    what would fix it)."""
    image = report.image
    if image is None or (image.kind == "gpu" and not (image.ref and image.cuda)):
        return None
    install = paddle_install(report.host, image, python=python)
    return Wheel.of(install, image.cuda) if install is not None else None


def plan_fix(
    report: Report,
    python: str,
    *,
    pip_flags: Sequence[str] = (),
    pull: Sequence[str] = (),
    image: ImageState | None = None,
) -> FixPlan:
    """The plan for `report`'s host: Paddle's removals then its install (then cuDNN where the
    build does not bring it), the pull of the doctor's image where the engine said it does not
    have it (`image`; `pull`: the pull-image argv prefix), then the manual steps. `pip_flags`:
    pip's own flags for every pip command (`--break-system-packages`)."""
    bad = {f.id: f for f in report.findings if f.severity != "pass"}
    wheel = wanted_wheel(report, python)
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
                wheel.install.names,
            )
        )
    cudnn = _cudnn_step(report, wheel if why else None, bad, pip, pip_flags, why)
    if cudnn is not None:
        steps.append(cudnn)
        resolved.add(cudnn.why)
    blocked = _pull_blocked(report, bad) if image is not None else None
    if image is not None and image.present is False and blocked:
        image = replace(image, why=f"{image.why}; not pulled: {blocked}")
    elif pull and image is not None and image.present is False:
        steps.append(
            Step(
                "pull",
                "image.selected",
                f"pulls {image.ref} (the image the doctor chose; {image.why}) into the engine",
                (*pull, "--image", image.ref),
            )
        )
    steps += _manual(report, resolved)
    expect: Expect | None = None
    if any(s.kind != "manual" for s in steps):
        expect = wheel.kind if wheel is not None and why else _expected(report)
    return FixPlan(python, tuple(steps), wheel if why else None, expect, image)


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
            (dist,),
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
    # the doctor's own pin: a release PyPI has (envcheck/verdict/known_packages.toml), none for CUDA
    # 10
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
        install.names,
    )


def _manual(report: Report, resolved: set[str]) -> list[Step]:
    """What a person must fix (root, a reboot), in the order to do it: the driver (and its kernel
    module) before the GPUs before the engine (docker group, then the toolkit). "No image runs
    until the driver is upgraded" is the driver's work; "no GPU build yet: fix the rest, then run
    the doctor again" comes after everything else."""
    rank = {layer: i for i, (layer, _) in enumerate(LAYERS)}
    driver_floor = report.image is not None and report.image.min_driver is not None

    def order(f: Finding) -> int:
        if f.fix == NO_GPU_BUILD_YET:
            return len(rank) + 1
        if f.id == "image.none" and driver_floor:
            return rank["driver"]
        return rank.get(f.layer, len(rank))

    findings = report.findings
    todo = [
        f
        for f in findings
        if (f.severity == "fail" or f.id in MANUAL_WARNINGS)
        and f.fix
        and f.id not in resolved
        and f.family not in NOT_MANUAL
    ]
    todo.sort(key=order)
    return [Step("manual", f.id, f.fix or "") for f in todo]


def _pull_blocked(report: Report, bad: dict[str, Finding]) -> str | None:
    """Why a pull of the doctor's image is not planned though the engine lacks it: a GPU image
    on an engine that cannot give a container a GPU could never pass its verification smoke (and
    its failure would roll back a good interpreter fix)."""
    if report.image is not None and report.image.kind == "gpu" and RUNTIME_MISSING in bad:
        return (
            "this engine cannot give a container a GPU until the NVIDIA Container Toolkit is "
            "installed (a manual step); run `envcheck fix` again after it"
        )
    return None


def _expected(report: Report) -> Expect:
    return "gpu" if usable_gpus(report.host) else "cpu"


def _build_words(wheel: Wheel) -> str:
    return f"the CUDA {wheel.cuda} build" if wheel.cuda else "the CPU build"

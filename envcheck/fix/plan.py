"""The repair plan (pure): the doctor's report → ordered steps for the target interpreter.

The plan is read from the findings' remedies, never derived a second time: each pip command a
finding's remedy gives the target interpreter (`envcheck.contracts.remedy`) is a step here, the
same `Command` object, with pip's own flags the user gave (`--break-system-packages`) added to its
argv. What needs root, a reboot or the person's own shell (driver, kernel module, docker group,
the NVIDIA Container Toolkit) is never a command we run: it is a manual step, in the report's
layer order, carrying the remedy's remaining steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from envcheck.contracts.facts import usable_gpus
from envcheck.contracts.findings import LAYERS, Finding
from envcheck.contracts.host_report import Report
from envcheck.contracts.record import record, replace
from envcheck.contracts.remedy import Command, Remedy, envcheck_line
from envcheck.verdict.fixes import (
    NO_GPU_BUILD_YET,
    PADDLE_DISTRIBUTIONS,
    PipInstall,
)
from envcheck.verdict.subject import subject_python

PIP_OVERRIDE = "--break-system-packages"  # pip's own PEP 668 override, the user's to give

StepKind = Literal["uninstall", "install", "pull", "manual"]
Expect = Literal["gpu", "cpu"]

# Warnings that are still a person's job: the container path needs them (docker group or a
# started engine, the NVIDIA Container Toolkit); other warnings are advice, not repairs.
RUNTIME_MISSING = "engine.no-nvidia-runtime"
MANUAL_WARNINGS = ("engine.unreachable", RUNTIME_MISSING)
NOT_MANUAL = ("smoke", "drift", "fleet")  # judged again by the verification, or not the host's


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


@record
class Step:
    kind: StepKind
    why: str  # the finding id it resolves
    changes: str  # what it changes, in words
    argv: tuple[str, ...] = ()  # the exact command; () for a manual step
    packages: tuple[str, ...] = ()  # the distributions a pip step removes or installs
    # The finding's own command a pip step runs (its argv, before pip's flags are added); None
    # for a pull or a manual step.
    command: Command | None = None
    # A manual step: the steps a person takes, in order (commands as root or in their shell, and
    # words); None for a step envcheck runs.
    remedy: Remedy | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "why": self.why,
            "changes": self.changes,
            "argv": list(self.argv),
            "remedy": self.remedy.to_json() if self.remedy is not None else None,
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


def plan_fix(
    report: Report,
    python: str,
    *,
    pip_flags: Sequence[str] = (),
    pull: Sequence[str] = (),
    image: ImageState | None = None,
) -> FixPlan:
    """The plan for `report`'s host: the target's pip commands of the findings' remedies, in the
    report's order, each once (a Paddle build's removals, its install, the cuDNN a 2.x build
    needs); the pull of the doctor's image where the engine said it does not have it (`image`;
    `pull`: the pull-image argv prefix); then the manual steps. `pip_flags`: pip's own flags for
    every pip command (`--break-system-packages`)."""
    bad = [f for f in report.findings if f.severity != "pass"]
    steps: list[Step] = []
    resolved: set[str] = set()
    for f in bad:
        for c in pip_commands(f):
            if all(s.command != c for s in steps):
                steps.append(_pip_step(c, f.id, python, pip_flags))
            resolved.add(f.id)
    wheel = _installed_wheel(report, python, steps)
    blocked = _pull_blocked(report, {f.id for f in bad}) if image is not None else None
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
        expect = wheel.kind if wheel is not None else _expected(report)
    return FixPlan(python, tuple(steps), wheel, expect, image)


def pip_commands(f: Finding) -> tuple[Command, ...]:
    """The commands of a finding's remedy that `envcheck fix` runs: the target's pip, not an
    alternative to another step."""
    if f.severity == "pass" or f.remedy is None:
        return ()
    return tuple(c for c in f.remedy.pip if not c.alternative)


def _pip_step(c: Command, why: str, python: str, flags: Sequence[str]) -> Step:
    """A remedy's pip command as a step for the target `python` (`envcheck fix` judges that
    interpreter, so the report's commands name it already; a saved report may name another):
    `uninstall -y DIST…` or `install ARGS…`, with pip's own flags after the verb."""
    verb, rest = c.argv[3], c.argv[4:]
    argv = (python, *c.argv[1:4], *flags, *rest)
    if verb == "uninstall":
        packages = tuple(a for a in rest if not a.startswith("-"))
        return Step("uninstall", why, c.changes, argv, packages, c)
    return Step("install", why, c.changes, argv, PipInstall(python, rest).names, c)


def _installed_wheel(report: Report, python: str, steps: list[Step]) -> Wheel | None:
    """The Paddle build the target holds after the plan: the one a pip step installs."""
    for s in steps:
        if s.command is not None and s.kind == "install":
            install = PipInstall(python, s.command.argv[4:])
            if set(install.names) & set(PADDLE_DISTRIBUTIONS):
                return Wheel.of(install, report.image.cuda if report.image else None)
    return None


def _manual(report: Report, resolved: set[str]) -> list[Step]:
    """What a person must fix (root, a reboot), in the order to do it: the driver (and its kernel
    module) before the GPUs before the engine (docker group, then the toolkit). "No image runs
    until the driver is upgraded" is the driver's work; "no GPU build yet: fix the rest, then run
    envcheck fix again" comes after everything else. A finding whose pip commands the plan runs
    keeps the steps that are not pip's (its library folder on LD_LIBRARY_PATH), never their
    alternatives."""
    rank = {layer: i for i, (layer, _) in enumerate(LAYERS)}
    driver_floor = report.image is not None and report.image.min_driver is not None

    def order(f: Finding) -> int:
        # its words, not the whole remedy: the doctor carries the subject's --python into it
        if f.remedy is not None and f.remedy.steps[:1] == NO_GPU_BUILD_YET.steps[:1]:
            return len(rank) + 1
        if f.id == "image.none" and driver_floor:
            return rank["driver"]
        return rank.get(f.layer, len(rank))

    todo: list[tuple[Finding, Remedy]] = []
    for f in report.findings:
        if not (f.severity == "fail" or f.id in MANUAL_WARNINGS) or f.family in NOT_MANUAL:
            continue
        left = _by_hand(f.remedy, f.id in resolved)
        if left is not None:
            todo.append((f, left))
    todo.sort(key=lambda item: order(item[0]))
    return [Step("manual", f.id, left.prose(), remedy=left) for f, left in todo]


def _by_hand(remedy: Remedy | None, ran: bool) -> Remedy | None:
    """The steps of a remedy a person takes: all of them, or, where the plan runs its pip
    commands, the rest without the alternatives; None when nothing is left."""
    if remedy is None or remedy.resolved_by is not None or not remedy.steps:
        return None
    if not ran:
        return remedy
    left = tuple(s for s in remedy.steps if not s.alternative and not _is_pip(s))
    return Remedy(left) if left else None


def _is_pip(step: object) -> bool:
    return isinstance(step, Command) and step.runner == "pip"


def _pull_blocked(report: Report, bad: set[str]) -> str | None:
    """Why a pull of the doctor's image is not planned though the engine lacks it: a GPU image
    on an engine that cannot give a container a GPU could never pass its verification smoke (and
    its failure would roll back a good interpreter fix)."""
    if report.image is not None and report.image.kind == "gpu" and RUNTIME_MISSING in bad:
        return (
            "this engine cannot give a container a GPU until the NVIDIA Container Toolkit is "
            "installed (a manual step); run "
            f"`{envcheck_line(subject_python(report.host), 'fix')}` again after it"
        )
    return None


def _expected(report: Report) -> Expect:
    return "gpu" if usable_gpus(report.host) else "cpu"

"""One plan per report: where the fix of the root cause replaces the Paddle build,
the findings that go away with the old build say "resolved by the fix for <id>" instead of
their own command (on the real H100 with Paddle 2.6.2, `cudnn.major-mismatch` offered NVIDIA's
cuDNN 8 wheel while `paddle.arch-missing`, the cause, offered Paddle 3.3.1). Pure."""

from __future__ import annotations

from collections.abc import Iterable

from envcheck.contracts.findings import RESOLVED_BY, Finding
from envcheck.contracts.record import replace
from envcheck.contracts.remedy import Remedy
from envcheck.verdict.fixes import PADDLE_DISTRIBUTIONS

# The causes whose fix replaces the build, most fundamental first: what is installed at all,
# then which build it is, then what it was compiled for, then what its CUDA needs.
ROOTS = (
    "paddle.both-installed",
    "paddle.missing",
    "paddle.unreadable",
    "paddle.cpu-build",
    "paddle.gpu-build-no-gpu",
    "paddle.arch-missing",
    "driver.too-old",
)
# Problems of the installed build itself: another build brings its own libraries.
WITH_THE_BUILD = (
    "cudnn.missing",
    "cudnn.major-mismatch",
    "cudnn.too-old",
    "smoke.loaded-cudnn-mismatch",  # the libraries the installed build loaded
    "smoke.loaded-cuda-mismatch",
    "smoke.not-run",  # no Paddle to train with: the root installs it
)

__all__ = ["RESOLVED_BY", "resolved_by", "settle"]


def resolved_by(root_id: str) -> str:
    return RESOLVED_BY + root_id


def settle(findings: Iterable[Finding]) -> list[Finding]:
    """The findings with one plan: the root's remedy stands, the ones it subsumes point at it."""
    found = _one_driver_target(list(findings))
    root = _root(found)
    if root is None:
        return found
    pointer = Remedy(resolved_by=root.id)
    gone = {f.id for f in found if _subsumed(f, root)}
    return [replace(f, remedy=pointer) if f.id in gone or _follows(f, gone) else f for f in found]


def _follows(f: Finding, gone: set[str]) -> bool:
    """A finding made of others' reasons (`--expect-gpu`: nothing trained, because no smoke
    ran), each of which the root's fix resolves."""
    reasons = f.observed.get("reasons")
    return (
        f.severity != "pass"
        and isinstance(reasons, list)
        and bool(reasons)
        and all(r in gone for r in reasons)
    )


def _one_driver_target(found: list[Finding]) -> list[Finding]:
    """Where the driver runs no GPU build of the release (its finding names every variant's
    floor), "no image runs" is the same upgrade: it points at the driver's finding."""
    driver = next((f for f in found if f.id == "driver.too-old" and "floors" in f.observed), None)
    if driver is None:
        return found
    pointer = Remedy(resolved_by=driver.id)
    return [replace(f, remedy=pointer) if f.id == "image.none" and f.remedy else f for f in found]


def _root(findings: list[Finding]) -> Finding | None:
    problems = [f for f in findings if f.severity != "pass" and _installs_paddle(f.remedy)]
    ranked = sorted(
        problems,
        key=lambda f: (
            f.severity != "fail",
            ROOTS.index(f.id) if f.id in ROOTS else len(ROOTS),
        ),
    )
    return ranked[0] if ranked else None


def _subsumed(f: Finding, root: Finding) -> bool:
    if f is root or f.severity == "pass" or f.remedy is None or f.remedy.resolved_by:
        return False
    if f.id in WITH_THE_BUILD:
        return True
    commands = f.remedy.commands
    return bool(commands) and all(c.runner == "pip" for c in commands)


def _installs_paddle(remedy: Remedy | None) -> bool:
    return remedy is not None and any(
        c.argv[3:4] == ("install",)
        and any(a.split("==")[0] in PADDLE_DISTRIBUTIONS for a in c.argv)
        for c in remedy.pip
        if not c.alternative
    )

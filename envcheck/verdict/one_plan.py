"""One plan per report (issue 21.5): where the fix of the root cause replaces the Paddle build,
the findings that go away with the old build say "resolved by the fix for <id>" instead of
their own command (on the real H100 with Paddle 2.6.2, `cudnn.major-mismatch` offered NVIDIA's
cuDNN 8 wheel while `paddle.arch-missing`, the cause, offered Paddle 3.3.1). Pure."""

from __future__ import annotations

import shlex
from collections.abc import Iterable

from envcheck.contracts.findings import RESOLVED_BY, Finding
from envcheck.contracts.record import replace
from envcheck.verdict.fixes import PADDLE_DISTRIBUTIONS, and_list, commands_in

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
WITH_THE_BUILD = ("cudnn.missing", "cudnn.major-mismatch", "cudnn.too-old")

__all__ = ["RESOLVED_BY", "resolved_by", "settle"]


def resolved_by(root_id: str) -> str:
    return RESOLVED_BY + root_id


def settle(findings: Iterable[Finding]) -> list[Finding]:
    """The findings with one plan: the root's fix stands, the ones it subsumes point at it."""
    found = list(findings)
    root = _root(found)
    if root is None:
        return found
    return [replace(f, fix=resolved_by(root.id)) if _subsumed(f, root) else f for f in found]


def _root(findings: list[Finding]) -> Finding | None:
    problems = [f for f in findings if f.severity != "pass" and _installs_paddle(f.fix or "")]
    ranked = sorted(
        problems,
        key=lambda f: (
            f.severity != "fail",
            ROOTS.index(f.id) if f.id in ROOTS else len(ROOTS),
        ),
    )
    return ranked[0] if ranked else None


def _subsumed(f: Finding, root: Finding) -> bool:
    if f is root or f.severity == "pass" or not f.fix:
        return False
    if f.id in WITH_THE_BUILD:
        return True
    commands = commands_in(f.fix)
    return bool(commands) and all(_pip(c) for c in commands)


def _pip(command: str) -> list[list[str]]:
    """The pip invocations of a command line (`P -m pip uninstall … && P -m pip install …`);
    [] when any part of it is something else."""
    try:
        words = shlex.split(command)
    except ValueError:
        return []
    parts = and_list(words)
    if all(p[1:3] == ["-m", "pip"] and len(p) > 3 for p in parts):
        return parts
    return []


def _installs_paddle(fix: str) -> bool:
    return any(
        p[3] == "install" and any(a.split("==")[0] in PADDLE_DISTRIBUTIONS for a in p[4:])
        for c in commands_in(fix)
        for p in _pip(c)
    )

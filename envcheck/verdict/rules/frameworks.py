"""Paddle beside torch, vLLM or JAX in one environment: their pinned NVIDIA wheels
(`NvidiaWheels`, read from the judged interpreter's dist-info folders) against Paddle's.

pip keeps one version of each wheel, so two frameworks that pin different versions leave one of
them with a library it was not built with: pip says so only at install time ("torch 2.3.0
requires nvidia-cudnn-cu12==8.9.2.26, … but you have nvidia-cudnn-cu12 9.1.1.17 which is
incompatible", Paddle#71867; Paddle#74894, Paddle#75926), and the process that imports both
loads whichever library comes first. Two CUDA families (cu12 beside cu13) load two CUDA runtimes
into one process. Paddle changed a cuDNN pin for JAX's sake once (Paddle PR#69349); otherwise
the resolution is a Paddle build of the other framework's CUDA, or one environment per framework.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from packaging.version import InvalidVersion, Version

from envcheck.contracts.facts import HostFacts, NvidiaPin
from envcheck.contracts.findings import Finding, fail, warn
from envcheck.contracts.remedy import Instruction, Remedy, steps
from envcheck.matrix.model import Matrix
from envcheck.verdict.fixes import PADDLE_DISTRIBUTIONS

if TYPE_CHECKING:
    from packaging.requirements import Requirement

    from envcheck.verdict.judge import Context

_FAMILY = re.compile(r"-cu(\d+)$")
_RUNTIME = re.compile(r"nvidia-cuda-runtime-cu\d+$")


def check_frameworks(ctx: Context) -> Iterable[Finding]:
    wheels = ctx.host.nvidia_wheels
    if wheels is None or not wheels.pins:
        return
    pins = _active(ctx.host, wheels.pins, wheels.installed)
    paddle = [(p, r) for p, r in pins if p.by in PADDLE_DISTRIBUTIONS]
    if not paddle:
        return
    by_framework: dict[str, list[tuple[NvidiaPin, Requirement]]] = {}
    for p, r in pins:
        if p.by not in PADDLE_DISTRIBUTIONS:
            by_framework.setdefault(p.by, []).append((p, r))
    for framework, theirs in by_framework.items():
        yield from _judge(ctx, paddle, theirs, wheels.installed, framework)


def _judge(
    ctx: Context,
    paddle: list[tuple[NvidiaPin, Requirement]],
    theirs: list[tuple[NvidiaPin, Requirement]],
    installed: dict[str, str],
    framework: str,
) -> Iterable[Finding]:
    own = {_name(r): r for _, r in paddle}
    who = _who(theirs[0][0])
    paddle_who = _who(paddle[0][0])
    clashes, paddle_broken = [], False
    for _, r in theirs:
        mine = own.get(_name(r))
        if mine is None or not _clash(mine, r, installed.get(_name(r))):
            continue
        have = installed.get(_name(r))
        paddle_broken |= have is not None and not _allows(mine, have)
        got = f"; installed {have}" if have else ""
        clashes.append(f"{_name(r)} ({framework}: {r.specifier}, Paddle: {mine.specifier}{got})")
    fix = _resolution(ctx, theirs, framework)
    if clashes:
        sev = fail if paddle_broken else warn
        yield sev(
            "paddle.framework-conflict",
            f"{who} and {paddle_who} pin different NVIDIA wheels in one environment: "
            f"{'; '.join(clashes)}: pip keeps one version, so "
            f"{'Paddle' if paddle_broken else framework} runs with a library it was not built "
            "with, and a process importing both loads whichever comes first",
            fix=fix,
            layer="paddle",
            framework=framework,
            conflicts=clashes,
        )
        return
    mine_families = {_family(n) for n in own} - {None}
    their_families = {_family(_name(r)) for _, r in theirs} - {None}
    if mine_families and their_families and not mine_families & their_families:
        yield warn(
            "paddle.framework-cuda-family",
            f"{who} pins the CUDA {_families(their_families)} wheels, {paddle_who} the CUDA "
            f"{_families(mine_families)} ones: a process that imports both loads two CUDA "
            "runtimes and cuDNNs, and the one loaded first serves both",
            fix=fix,
            layer="paddle",
            framework=framework,
        )


def _active(
    host: HostFacts, pins: tuple[NvidiaPin, ...], installed: dict[str, str]
) -> list[tuple[NvidiaPin, Requirement]]:
    """The pins that apply here: readable, their markers true for the judged machine, and an
    extra's pin only where its wheel is installed (which extras were chosen is not recorded)."""
    # imported here: packaging.requirements brings packaging.utils and logging, which a doctor
    # without NVIDIA wheels never needs
    from packaging.markers import UndefinedComparison, UndefinedEnvironmentName, default_environment
    from packaging.requirements import InvalidRequirement, Requirement

    env = default_environment() | {"platform_system": "Linux", "sys_platform": "linux"}
    if host.machine.arch:
        env["platform_machine"] = host.machine.arch
    found = []
    for pin in pins:
        try:
            req = Requirement(pin.requirement)
        except InvalidRequirement:
            continue
        marker = req.marker
        if marker is not None and "extra" in str(marker):
            if _name(req) not in installed:
                continue
        elif marker is not None:
            try:
                if not marker.evaluate(env):  # type: ignore[arg-type]
                    continue
            except (UndefinedComparison, UndefinedEnvironmentName):
                continue  # a marker pip could not decide either: the pin was never installed
        found.append((pin, req))
    return found


def _clash(mine: Requirement, theirs: Requirement, have: str | None) -> bool:
    """The installed wheel breaks one of the two pins; with none installed, Paddle's exact pin
    is outside the other's range."""
    if have is not None:
        return not (_allows(mine, have) and _allows(theirs, have))
    exact = [s.version for s in mine.specifier if s.operator == "=="]
    return bool(exact) and not _allows(theirs, exact[0])


def _allows(req: Requirement, version: str) -> bool:
    try:
        return req.specifier.contains(Version(version), prereleases=True)
    except InvalidVersion:
        return True  # a version pip itself could not order: not ours to call broken


def _resolution(
    ctx: Context, theirs: list[tuple[NvidiaPin, Requirement]], framework: str
) -> Remedy:
    separate = Instruction(
        f"give Paddle and {framework} an environment each (python3 -m venv, one per "
        "framework), so that each gets the NVIDIA wheels it pins",
        alternative=True,
    )
    cuda = _their_cuda(theirs)
    build = _matching_build(ctx.matrix, ctx.host, cuda) if cuda else None
    if build is None:
        return steps(Instruction(separate.text))
    return steps(
        Instruction(
            f"install the Paddle build for CUDA {cuda}, the CUDA of {framework}'s pins "
            f"({build}), then check that pip reports no conflict (python -m pip check)"
        ),
        separate,
    )


def _their_cuda(theirs: list[tuple[NvidiaPin, Requirement]]) -> str | None:
    """The CUDA of a framework's pins: its nvidia-cuda-runtime pin, `==12.4.127` -> "12.4"."""
    for _, r in theirs:
        if _RUNTIME.match(_name(r)):
            exact = [s.version for s in r.specifier if s.operator == "=="]
            if exact:
                return ".".join(exact[0].split(".")[:2])
    return None


def _matching_build(matrix: Matrix, host: HostFacts, cuda: str) -> str | None:
    """This Paddle release's build for that CUDA, as its package and index; None where the
    matrix has none, or it is the one installed."""
    paddle = host.paddle
    if not paddle.version or paddle.cuda == cuda:
        return None
    for b in matrix.builds:
        if b.paddle == paddle.version and b.cuda == cuda and b.package == "paddlepaddle-gpu":
            return b.pip.removeprefix("python -m pip install ")
    return None


def _name(req: Requirement) -> str:
    return re.sub(r"[-_.]+", "-", req.name).lower()


def _who(pin: NvidiaPin) -> str:
    return f"{pin.by} {pin.by_version}" if pin.by_version else pin.by


def _family(name: str) -> str | None:
    m = _FAMILY.search(name)
    return m.group(1) if m else None


def _families(families: set[str | None]) -> str:
    return "/".join(sorted(f for f in families if f))

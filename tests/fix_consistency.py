"""No report may give contradicting fixes: one package (paddlepaddle vs
paddlepaddle-gpu), one package index, one image, one way to reach the engine; and one plan:
a report that replaces the Paddle build installs no library for the old one."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

_PIP = re.compile(r"pip install\s+(?P<args>[^`;]+)")
_INDEX = re.compile(r"(?:-i|--index-url)\s+(\S+)")
_PACKAGE = re.compile(r"(?<![\w/.-])(paddlepaddle(?:-gpu)?)(?:==[\w.]+)?(?![\w-])")
_IMAGE = re.compile(
    r"(?:docker\.io/|registry\.baidubce\.com/|ccr-[\w.-]+/)?paddlepaddle/paddle:[\w.-]+"
)
_NVIDIA = re.compile(r"(?<![\w-])(nvidia-[\w-]+)")
_ENGINE_WAYS = {
    "start": re.compile(r"start Docker|systemctl start docker"),
    "group": re.compile(r"docker group|usermod -aG docker"),
}


def contradictions(findings: Iterable[Mapping[str, Any]]) -> list[str]:
    """Every pair of fixes in one report that tell the user opposite things."""
    fixes = [(f["id"], f.get("fix") or "") for f in findings if f.get("severity") != "pass"]
    seen: dict[str, dict[str, str]] = {"package": {}, "index": {}, "image": {}, "engine": {}}
    for fid, fix in fixes:
        for m in _PIP.finditer(fix):
            args = m.group("args")
            for pkg in _PACKAGE.findall(args):
                seen["package"].setdefault(pkg, fid)
            for index in _INDEX.findall(args):
                seen["index"].setdefault(index.rstrip("`.,)"), fid)
        for image in _IMAGE.findall(fix):
            seen["image"].setdefault(image.rstrip("`.,)"), fid)
        for way, pattern in _ENGINE_WAYS.items():
            if pattern.search(fix):
                seen["engine"].setdefault(way, fid)
    found = [f"{kind}: {dict(values)}" for kind, values in seen.items() if len(values) > 1]
    found += _two_plans(fixes, seen["package"])
    return found + [problem for fid, fix in fixes for problem in _self_contradictions(fid, fix)]


def _two_plans(fixes: list[tuple[str, str]], paddle: dict[str, str]) -> list[str]:
    """A new Paddle build brings its own CUDA libraries: NVIDIA's wheels offered beside it are
    for the build being replaced (cuDNN 8 for 2.6.2 beside "install 3.3.1")."""
    if not paddle:
        return []
    libraries = {
        lib: fid
        for fid, fix in fixes
        for m in _PIP.finditer(fix)
        for lib in _NVIDIA.findall(m["args"])
    }
    return [f"two plans: {lib} ({fid}) beside Paddle {paddle}" for lib, fid in libraries.items()]


def _self_contradictions(fid: str, fix: str) -> list[str]:
    """One fix at odds with itself: "the GPU build" that installs the CPU package. (A removal of
    the package it then installs is no contradiction: it is how another CUDA variant of the same
    version replaces the installed one, which pip would keep as "already satisfied".)"""
    problems = []
    installs = [pkg for m in _PIP.finditer(fix) for pkg in _PACKAGE.findall(m.group("args"))]
    if "GPU build" in fix and "paddlepaddle" in installs:
        problems.append(f"{fid}: offers the CPU package as the GPU build: {fix}")
    return problems

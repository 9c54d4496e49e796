"""Checks across rows and files of the matrix (pure): duplicates, a build's kind against its
CUDA, arch markers, tags against their rows. Each problem in the loader's words."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from envcheck.matrix.fields import cached_version
from envcheck.matrix.schema import TABLES, Row


def cross_check(rows: list[Row]) -> list[str]:
    problems = _duplicates(rows)
    releases = {
        cached_version(r.values["version"]) for r in _of(rows, "release") if "version" in r.values
    }
    registries = {r.values["name"] for r in _of(rows, "registry") if "name" in r.values}
    for row in _of(rows, "build", "image"):
        paddle = row.values.get("paddle")
        if paddle is not None and cached_version(paddle) not in releases:
            problems.append(f"{row.where}: paddle: no [[release]] with version {paddle}")
        problems += [f"{row.where}: {p}" for p in _kind_problems(row)]
    for row in _of(rows, "image"):
        unknown = [r for r in row.values.get("registries", ()) if r not in registries]
        if unknown:
            known = ", ".join(sorted(registries)) or "none"
            problems.append(f"{row.where}: registries: unknown {unknown!r} (known: {known})")
        problems += [f"{row.where}: tag: {p}" for p in _tag_problems(row.values)]
    return problems + _generation_problems(rows)


def _generation_problems(rows: list[Row]) -> list[str]:
    """A branch names only generations the matrix has, and a PCI device id is one generation's."""
    problems: list[str] = []
    owner: dict[str, Row] = {}
    for row in _of(rows, "gpu_generation"):
        for device in row.values.get("devices", {}):
            if device in owner:
                problems.append(f"{row.where}: devices: {device} is also in {owner[device].where}")
            owner.setdefault(device, row)
    names = {r.values["name"] for r in _of(rows, "gpu_generation") if "name" in r.values}
    for row in _of(rows, "driver_branch"):
        unknown = [g for g in row.values.get("generations", ()) if g not in names]
        if unknown:
            known = ", ".join(sorted(names)) or "none"
            problems.append(f"{row.where}: generations: unknown {unknown!r} (known: {known})")
    return problems


def _of(rows: list[Row], *tables: str) -> Iterator[Row]:
    return (r for r in rows if r.table in tables)


def _duplicates(rows: list[Row]) -> list[str]:
    problems: list[str] = []
    first: dict[tuple[str, Any], Row] = {}
    for row in rows:
        for key in _keys(row):
            if (row.table, key) in first:
                other = first[(row.table, key)]
                problems.append(f"{row.where}: duplicate of {other.where}")
            else:
                first[(row.table, key)] = row
    return problems


def _keys(row: Row) -> list[Any]:
    """The identities that must be unique within a table (versions compared normalised)."""
    v = row.values
    table = TABLES[row.table]
    ident = table.ident
    if any(k not in v for k in ident if k in table.required):
        return []
    if row.table == "gpu":
        return [n.upper() for n in v["names"]]
    if row.table == "arm64_build":
        return [(v["device"], v.get("jetpack"))]
    if row.table == "build":
        cuda = (*cached_version(v["cuda"]).release, 0)[:2] if "cuda" in v else None
        return [(cached_version(v["paddle"]), v["package"], cuda)]
    if row.table in ("toolkit", "arch_set", "release"):
        return [cached_version(v[ident[0]])]
    return [tuple(v.get(k) for k in ident)]


def _kind_problems(row: Row) -> list[str]:
    v = row.values
    gpu = v.get("kind") == "gpu" or v.get("package") == "paddlepaddle-gpu"
    cpu = v.get("kind") == "cpu" or v.get("package") == "paddlepaddle"
    if gpu and "cuda" not in row.given:
        return ["cuda: missing (required for a GPU " + row.table + ")"]
    if cpu:
        gpu_only = TABLES[row.table].gpu_only
        return [f"{k}: must be absent for a CPU {row.table}" for k in gpu_only if k in v]
    if gpu and row.table == "build":
        return _arch_marker_problems(row)
    return []


def _arch_marker_problems(row: Row) -> list[str]:
    """A GPU build states its compiled archs (with how they are known) or says, in
    `archs_unknown`, why not: an unstated list must never read as "every arch" the toolkit can
    target, which would pass a GPU the wheel was never compiled for."""
    given = row.given
    if "archs" in given and "archs_unknown" in given:
        return ["archs_unknown: give either archs or archs_unknown, not both"]
    if "archs" not in given and "archs_unknown" not in given:
        return [
            'archs: missing (give the compiled archs with archs_source, or archs_unknown = "why")'
        ]
    if "archs" in given and "archs_source" not in given:
        return ["archs_source: missing (how the archs are known: measured, issue, docs)"]
    if "archs" in given and "archs_platform" not in given:
        return ['archs_platform: missing (where the list was seen: "linux/amd64", "windows/amd64")']
    return []


def _tag_problems(v: dict[str, Any]) -> list[str]:
    """Catch copy-paste slips: `3.3.1-gpu-cuda12.9-cudnn9.9` must name its paddle and CUDA."""
    tag = v.get("tag")
    if tag is None:
        return []
    problems = []
    if "paddle" in v and not tag.startswith(v["paddle"]):
        problems.append(f"{tag!r} does not start with its paddle version {v['paddle']}")
    for key in ("cuda", "cudnn"):
        if key in v and f"-{key}{v[key]}" not in tag:
            problems.append(f"{tag!r} does not contain -{key}{v[key]}")
    if v.get("kind") == "cpu" and "-gpu" in tag:
        problems.append(f'{tag!r} looks like a GPU tag but kind = "cpu"')
    return problems

"""The matrix files' schema (pure): each table's fields with their checkers, the fields that name
a row, the model class a row becomes; and `Row`, one entry as read."""

from __future__ import annotations

import functools
from typing import Any

from envcheck.contracts.record import field, record
from envcheck.matrix.fields import (
    Check,
    archs,
    boolean,
    cc,
    dotted,
    integer,
    matching,
    one_of,
    pep440,
    platforms,
    specifier,
    text,
    texts,
)
from envcheck.matrix.model import (
    ArchFact,
    ArchSet,
    Arm64Build,
    Defect,
    GpuModel,
    ImageTag,
    MinorCompat,
    PaddleBuild,
    PaddleRelease,
    ToolkitDriver,
)


@record
class Field:
    """One field of a table: how its value is checked, and whether it must be given."""

    check: Check
    required: bool = True


COMMON = {"source": Field(text), "confirmed": Field(boolean), "note": Field(text, False)}


@record
class Table:
    """One table of the matrix files: its fields, what names a row, the model it makes."""

    own: dict[str, Field]
    ident: tuple[str, ...]  # fields that name a row in messages and must be unique together
    make: type  # the model record (a dict entry for registries)

    @functools.cached_property
    def fields(self) -> dict[str, Field]:
        return self.own | COMMON


WHEEL_PLATFORMS = ("linux/amd64", "linux/arm64", "windows/amd64")  # where a wheel's list was seen
_DOCKER_TAG = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
_REPOSITORY = r"[a-z0-9]+([.-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)+"


@record
class Registry:
    """One `[[registry]]` entry: a name for an image repository."""

    name: str
    ref: str
    source: str
    confirmed: bool


TABLES: dict[str, Table] = {
    "toolkit": Table(
        {"cuda": Field(dotted), "label": Field(text), "min_driver": Field(dotted)},
        ("cuda",),
        ToolkitDriver,
    ),
    "minor_compat": Table(
        {"cuda_major": Field(integer), "min_driver": Field(dotted)}, ("cuda_major",), MinorCompat
    ),
    "arch_set": Table({"cuda": Field(dotted), "archs": Field(archs)}, ("cuda",), ArchSet),
    "gpu": Table(
        {"names": Field(texts), "compute_capability": Field(cc), "architecture": Field(text)},
        ("names",),
        GpuModel,
    ),
    "release": Table(
        {
            "version": Field(pep440),
            "min_compute_capability": Field(cc),
            "python": Field(specifier, False),
        },
        ("version",),
        PaddleRelease,
    ),
    "build": Table(
        {
            "paddle": Field(pep440),
            "package": Field(one_of("paddlepaddle-gpu", "paddlepaddle")),
            "cuda": Field(dotted, False),
            "cudnn": Field(dotted, False),
            "archs": Field(archs, False),
            "archs_source": Field(text, False),
            "archs_unknown": Field(text, False),
            "archs_absent": Field(archs, False),
            "archs_present": Field(archs, False),
            "archs_platform": Field(one_of(*WHEEL_PLATFORMS), False),
            "min_compute_capability": Field(cc, False),
            "pip": Field(text),
            "paddle_min_driver": Field(dotted, False),
            "cudart_static": Field(boolean, False),
        },
        ("paddle", "package", "cuda"),
        PaddleBuild,
    ),
    "image": Table(
        {
            "paddle": Field(pep440),
            "tag": Field(matching(_DOCKER_TAG, "a Docker tag")),
            "kind": Field(one_of("gpu", "cpu")),
            "cuda": Field(dotted, False),
            "cudnn": Field(dotted, False),
            "registries": Field(texts),
            "digest": Field(matching(r"sha256:[0-9a-f]{64}", "a sha256:<64 hex> digest"), False),
            "platforms": Field(platforms),
        },
        ("tag",),
        ImageTag,
    ),
    "arm64_build": Table(
        {
            "device": Field(one_of("jetson", "server")),
            "jetpack": Field(text, False),
            "sm": Field(archs, False),
            "paddle": Field(pep440, False),
            "cuda": Field(dotted, False),
            "python": Field(text, False),
            "pip": Field(text, False),
        },
        ("device", "jetpack"),
        Arm64Build,
    ),
    "defect": Table(
        {
            "id": Field(matching(r"[a-z0-9][a-z0-9.-]{0,63}", "a lower-case id")),
            "image_cuda": Field(dotted),
            "driver_above": Field(dotted),
            "message": Field(text),
            "fix": Field(text),
        },
        ("id",),
        Defect,
    ),
    "arch_fact": Table(
        {
            "id": Field(matching(r"[a-z0-9][a-z0-9.-]{0,63}", "a lower-case id")),
            "releases": Field(specifier),
            "cuda": Field(dotted),
            "archs": Field(archs, False),
            "absent": Field(archs, False),
            "present": Field(archs, False),
            "platform": Field(one_of(*WHEEL_PLATFORMS), False),
        },
        ("id",),
        ArchFact,
    ),
    "registry": Table(
        {"name": Field(text), "ref": Field(matching(_REPOSITORY, "an image repository"))},
        ("name",),
        Registry,
    ),
}
REQUIRED_TABLES = ("release", "registry")  # select_image cannot answer without them


@record(frozen=False)
class Row:
    """A matrix file entry being validated: the keys given, the values that checked out."""

    file: str
    table: str
    index: int  # 1-based within (file, table)
    ident: str
    given: frozenset[str]  # the keys written, valid or not (no cascading "missing" problems)
    values: dict[str, Any] = field(default_factory=dict)  # only the fields that checked out

    @property
    def where(self) -> str:
        return f"{self.file}: {self.table} entry {self.index} ({self.ident})"

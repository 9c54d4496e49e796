"""Read `matrix/*.toml` into a `Matrix`, validating every row and reporting ALL problems at once.

Where the matrix comes from, first match wins:
`--matrix DIR` > `$ENVCHECK_MATRIX` > the copy shipped in the wheel (`envcheck/_matrix`,
force-included from the top-level `matrix/` by pyproject.toml) > the repo's `matrix/` (editable
installs and source checkouts, where the wheel copy does not exist).

Every problem reads `file: table entry N (id): field: problem`, so a broken override points at
the line to fix. Only `tomllib`, `packaging` and dataclasses: the doctor's whole run has ~150 ms,
and loading the shipped matrix takes a few of them.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from envcheck.errors import MatrixError
from envcheck.matrix.cache import read_toml
from envcheck.matrix.location import matrix_dir
from envcheck.matrix.model import (
    ArchSet,
    Defect,
    GpuModel,
    ImageTag,
    Matrix,
    MinorCompat,
    PaddleBuild,
    PaddleRelease,
    ToolkitDriver,
)
from envcheck.matrix.toml import tomllib
from envcheck.versions import VersionParseError, parse_compute_capability, parse_dotted


def load_matrix(path: str | None = None) -> Matrix:
    """Load and validate the matrix; raise `MatrixError` listing every problem found."""
    root, origin = matrix_dir(path)
    return _load(root, origin)


def _load(root: Path, origin: str) -> Matrix:
    problems: list[str] = []
    rows = list(_read_rows(root, origin, problems))
    problems += _cross_check(rows)
    if problems:
        raise MatrixError(problems)
    return _build(rows, root)


# -- field checkers: value -> converted value, or raise _Bad(problem) ------------------------------


class _Bad(ValueError):
    pass


Check = Callable[[Any], Any]


def _type_name(value: Any) -> str:
    return {bool: "boolean", int: "integer", float: "float", list: "array", dict: "table"}.get(
        type(value), type(value).__name__
    )


def _text(value: Any) -> str:
    if isinstance(value, float):  # cuda = 12.10 would silently become 12.1
        raise _Bad(f'expected a quoted string, got float {value!r} (write "{value}")')
    if not isinstance(value, str):
        raise _Bad(f"expected a string, got {_type_name(value)} {value!r}")
    if not value.strip():
        raise _Bad("empty string")
    return value


def _dotted(value: Any) -> str:
    try:
        _parse_dotted(_text(value))
    except VersionParseError as e:
        raise _Bad(str(e)) from e
    return str(value)


def _pep440(value: Any) -> str:
    try:
        _version(_text(value))
    except InvalidVersion as e:
        raise _Bad(f"not a PEP 440 version: {value!r}") from e
    return str(value)


# The same few strings ("NV-RN", "12.9", "3.3.1") recur hundreds of times: parse each once.
_parse_dotted = functools.lru_cache(maxsize=1024)(parse_dotted)
_version = functools.lru_cache(maxsize=1024)(Version)


def _cc(value: Any) -> str:
    try:
        parse_compute_capability(_text(value))
    except VersionParseError as e:
        raise _Bad(f'{e} (expected "major.minor", e.g. "8.6")') from e
    return str(value)


# One clause of a PEP 440 specifier on release numbers (">=3.9", "<3.14", "==3.10.*"). Checked by
# pattern: building packaging's SpecifierSet would import packaging.tags and sysconfig (~10 ms) on
# every start-up just to validate a field nothing compares at run time.
_SPEC_CLAUSE = re.compile(r"\s*(~=|===|==|!=|<=|>=|<|>)\s*\d+(\.\d+)*(\.\*)?\s*")


def _specifier(value: Any) -> str:
    text = _text(value)
    if not all(_SPEC_CLAUSE.fullmatch(clause) for clause in text.split(",")):
        raise _Bad(f"not a version specifier: {value!r}")
    return str(value)


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _Bad(f"expected true or false, got {_type_name(value)} {value!r}")
    return value


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise _Bad(f"expected a positive integer, got {_type_name(value)} {value!r}")
    return value


def _archs(value: Any) -> tuple[int, ...]:
    """`[61, 70, 75]`: the sm numbers as Paddle prints them (`compiled for 75 80 86 89`)."""
    if not isinstance(value, list) or not value:
        raise _Bad(f"expected a non-empty array of sm numbers, got {value!r}")
    bad = [v for v in value if isinstance(v, bool) or not isinstance(v, int) or not 10 <= v <= 999]
    if bad:
        raise _Bad(f"not sm numbers (e.g. 86 for sm_86): {bad!r}")
    return tuple(value)


_PLATFORMS = ("linux/amd64", "linux/arm64")


def _platforms(value: Any) -> tuple[str, ...]:
    """`["linux/amd64"]`: the OCI platforms the tag is published for."""
    platforms = _texts(value)
    bad = [p for p in platforms if p not in _PLATFORMS]
    if bad:
        raise _Bad(f"unknown platforms {bad!r} (known: {', '.join(_PLATFORMS)})")
    return platforms


def _texts(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise _Bad(f"expected a non-empty array of strings, got {value!r}")
    return tuple(_text(v) for v in value)


def _one_of(*choices: str) -> Check:
    def check(value: Any) -> str:
        if value not in choices:
            raise _Bad(f"expected one of {', '.join(choices)}, got {value!r}")
        return str(value)

    return check


def _matching(pattern: str, what: str) -> Check:
    regex = re.compile(pattern)

    def check(value: Any) -> str:
        if not regex.fullmatch(_text(value)):
            raise _Bad(f"not {what}: {value!r}")
        return str(value)

    return check


# -- tables ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Field:
    check: Check
    required: bool = True


_COMMON = {"source": _Field(_text), "confirmed": _Field(_bool), "note": _Field(_text, False)}


@dataclass(frozen=True)
class _Table:
    own: dict[str, _Field]
    ident: tuple[str, ...]  # fields that name a row in messages and must be unique together
    make: type  # the model dataclass (a dict entry for registries)

    @functools.cached_property
    def fields(self) -> dict[str, _Field]:
        return self.own | _COMMON


_DOCKER_TAG = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
_REPOSITORY = r"[a-z0-9]+([.-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)+"


@dataclass(frozen=True)
class _Registry:
    name: str
    ref: str
    source: str
    confirmed: bool


TABLES: dict[str, _Table] = {
    "toolkit": _Table(
        {"cuda": _Field(_dotted), "label": _Field(_text), "min_driver": _Field(_dotted)},
        ("cuda",),
        ToolkitDriver,
    ),
    "minor_compat": _Table(
        {"cuda_major": _Field(_int), "min_driver": _Field(_dotted)}, ("cuda_major",), MinorCompat
    ),
    "arch_set": _Table({"cuda": _Field(_dotted), "archs": _Field(_archs)}, ("cuda",), ArchSet),
    "gpu": _Table(
        {"names": _Field(_texts), "compute_capability": _Field(_cc), "architecture": _Field(_text)},
        ("names",),
        GpuModel,
    ),
    "release": _Table(
        {
            "version": _Field(_pep440),
            "min_compute_capability": _Field(_cc),
            "python": _Field(_specifier, False),
        },
        ("version",),
        PaddleRelease,
    ),
    "build": _Table(
        {
            "paddle": _Field(_pep440),
            "package": _Field(_one_of("paddlepaddle-gpu", "paddlepaddle")),
            "cuda": _Field(_dotted, False),
            "cudnn": _Field(_dotted, False),
            "archs": _Field(_archs, False),
            "archs_source": _Field(_text, False),
            "archs_unknown": _Field(_text, False),
            "archs_absent": _Field(_archs, False),
            "min_compute_capability": _Field(_cc, False),
            "pip": _Field(_text),
            "paddle_min_driver": _Field(_dotted, False),
        },
        ("paddle", "package", "cuda"),
        PaddleBuild,
    ),
    "image": _Table(
        {
            "paddle": _Field(_pep440),
            "tag": _Field(_matching(_DOCKER_TAG, "a Docker tag")),
            "kind": _Field(_one_of("gpu", "cpu")),
            "cuda": _Field(_dotted, False),
            "cudnn": _Field(_dotted, False),
            "registries": _Field(_texts),
            "digest": _Field(_matching(r"sha256:[0-9a-f]{64}", "a sha256:<64 hex> digest"), False),
            "platforms": _Field(_platforms),
        },
        ("tag",),
        ImageTag,
    ),
    "defect": _Table(
        {
            "id": _Field(_matching(r"[a-z0-9][a-z0-9.-]{0,63}", "a lower-case id")),
            "image_cuda": _Field(_dotted),
            "driver_above": _Field(_dotted),
            "message": _Field(_text),
            "fix": _Field(_text),
        },
        ("id",),
        Defect,
    ),
    "registry": _Table(
        {"name": _Field(_text), "ref": _Field(_matching(_REPOSITORY, "an image repository"))},
        ("name",),
        _Registry,
    ),
}
REQUIRED_TABLES = ("release", "registry")  # select_image cannot answer without them


@dataclass
class _Row:
    file: str
    table: str
    index: int  # 1-based within (file, table)
    ident: str
    given: frozenset[str]  # the keys written, valid or not (no cascading "missing" problems)
    values: dict[str, Any] = field(default_factory=dict)  # only the fields that checked out

    @property
    def where(self) -> str:
        return f"{self.file}: {self.table} entry {self.index} ({self.ident})"


# -- reading ---------------------------------------------------------------------------------------


def _read_rows(root: Path, origin: str, problems: list[str]) -> Iterator[_Row]:
    if not root.is_dir():
        problems.append(f"{root} (from {origin}): no such directory")
        return
    files = sorted(root.glob("*.toml"))
    if not files:
        problems.append(f"{root} (from {origin}): no *.toml files")
        return
    seen: set[str] = set()
    for path in files:
        doc = _read_toml(path, problems)
        for key, entries in doc.items():
            if _check_table(path.name, key, entries, problems):
                seen.add(key)
                for index, raw in enumerate(entries, start=1):
                    yield _parse_row(path.name, key, index, raw, problems)
    problems += [
        f"{root}: no [[{t}]] entries in any file" for t in REQUIRED_TABLES if t not in seen
    ]


def _read_toml(path: Path, problems: list[str]) -> dict[str, Any]:
    try:
        return read_toml(path)  # parsed TOML cached as JSON; validation below always runs
    except tomllib.TOMLDecodeError as e:  # the message ends "(at line L, column C)"
        problems.append(f"{path.name}: TOML syntax error: {e}")
    except (OSError, UnicodeDecodeError) as e:
        problems.append(f"{path.name}: cannot read: {e}")
    return {}


def _check_table(file: str, key: str, entries: Any, problems: list[str]) -> bool:
    if key not in TABLES:
        problems.append(f"{file}: {key}: unknown table{_did_you_mean(key, TABLES)}")
        return False
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        problems.append(f"{file}: {key}: expected [[{key}]] entries, got {_type_name(entries)}")
        return False
    return True


def _parse_row(file: str, table: str, index: int, raw: dict[str, Any], problems: list[str]) -> _Row:
    spec = TABLES[table]
    fields = spec.fields
    ident = " ".join(str(raw[k]) for k in spec.ident if k in raw) or "?"
    row = _Row(file, table, index, ident, frozenset(raw))
    for key in sorted(raw.keys() - fields.keys()):
        problems.append(f"{row.where}: {key}: unknown field{_did_you_mean(key, fields)}")
    for name, spec_field in fields.items():
        if name not in raw:
            if spec_field.required:
                problems.append(f"{row.where}: {name}: missing")
            continue
        try:
            row.values[name] = spec_field.check(raw[name])
        except _Bad as e:
            problems.append(f"{row.where}: {name}: {e}")
    return row


def _did_you_mean(key: str, known: dict[str, Any]) -> str:
    import difflib  # only on a bad key

    close = difflib.get_close_matches(key, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else f" (known: {', '.join(known)})"


# -- checks across rows and files ------------------------------------------------------------------


def _cross_check(rows: list[_Row]) -> list[str]:
    problems = _duplicates(rows)
    releases = {
        _version(r.values["version"]) for r in _of(rows, "release") if "version" in r.values
    }
    registries = {r.values["name"] for r in _of(rows, "registry") if "name" in r.values}
    for row in _of(rows, "build", "image"):
        paddle = row.values.get("paddle")
        if paddle is not None and _version(paddle) not in releases:
            problems.append(f"{row.where}: paddle: no [[release]] with version {paddle}")
        problems += [f"{row.where}: {p}" for p in _kind_problems(row)]
    for row in _of(rows, "image"):
        unknown = [r for r in row.values.get("registries", ()) if r not in registries]
        if unknown:
            known = ", ".join(sorted(registries)) or "none"
            problems.append(f"{row.where}: registries: unknown {unknown!r} (known: {known})")
        problems += [f"{row.where}: tag: {p}" for p in _tag_problems(row.values)]
    return problems


def _of(rows: list[_Row], *tables: str) -> Iterator[_Row]:
    return (r for r in rows if r.table in tables)


def _duplicates(rows: list[_Row]) -> list[str]:
    problems: list[str] = []
    first: dict[tuple[str, Any], _Row] = {}
    for row in rows:
        for key in _keys(row):
            if (row.table, key) in first:
                other = first[(row.table, key)]
                problems.append(f"{row.where}: duplicate of {other.where}")
            else:
                first[(row.table, key)] = row
    return problems


def _keys(row: _Row) -> list[Any]:
    """The identities that must be unique within a table (versions compared normalised)."""
    v = row.values
    ident = TABLES[row.table].ident
    if any(k not in v for k in ident if TABLES[row.table].fields[k].required):
        return []
    if row.table == "gpu":
        return [n.upper() for n in v["names"]]
    if row.table == "build":
        cuda = (*_version(v["cuda"]).release, 0)[:2] if "cuda" in v else None
        return [(_version(v["paddle"]), v["package"], cuda)]
    if row.table in ("toolkit", "arch_set", "release"):
        return [_version(v[ident[0]])]
    return [v[ident[0]]]


def _kind_problems(row: _Row) -> list[str]:
    v = row.values
    gpu = v.get("kind") == "gpu" or v.get("package") == "paddlepaddle-gpu"
    cpu = v.get("kind") == "cpu" or v.get("package") == "paddlepaddle"
    if gpu and "cuda" not in row.given:
        return ["cuda: missing (required for a GPU " + row.table + ")"]
    if cpu:
        return [
            f"{k}: must be absent for a CPU {row.table}"
            for k in ("cuda", "cudnn", "archs", "archs_source", "archs_unknown", "archs_absent")
            if k in v
        ]
    if gpu and row.table == "build":
        return _arch_marker_problems(row)
    return []


def _arch_marker_problems(row: _Row) -> list[str]:
    """A GPU build states its compiled archs (with how they are known) or says, in
    `archs_unknown`, why not: an unstated list must never read as "every arch" (issue 10.1)."""
    given = row.given
    if "archs" in given and "archs_unknown" in given:
        return ["archs_unknown: give either archs or archs_unknown, not both"]
    if "archs" not in given and "archs_unknown" not in given:
        return ["archs: missing (give the compiled archs with archs_source, or archs_unknown = \"why\")"]
    if "archs" in given and "archs_source" not in given:
        return ["archs_source: missing (how the archs are known: measured, issue, docs)"]
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


# -- building the typed matrix ---------------------------------------------------------------------


def _build(rows: list[_Row], root: Path) -> Matrix:
    made: dict[str, list[Any]] = {t: [] for t in TABLES}
    for row in rows:
        made[row.table].append(_make(TABLES[row.table].make, row.values))
    return Matrix(
        toolkit_drivers=tuple(made["toolkit"]),
        minor_compat=tuple(made["minor_compat"]),
        arch_sets=tuple(made["arch_set"]),
        gpus=tuple(made["gpu"]),
        releases=tuple(made["release"]),
        builds=tuple(made["build"]),
        images=tuple(made["image"]),
        registries={r.name: r.ref for r in made["registry"]},
        path=str(root),
        defects=tuple(made["defect"]),
    )


def _make(cls: type, values: dict[str, Any]) -> Any:
    """Absent optional fields become None; `note` is for people reading the TOML and is kept only
    where the model has a field for it."""
    names, required = _plan(cls)
    return cls(**{n: values.get(n) for n in names if n in values or n in required})


@functools.cache
def _plan(cls: type) -> tuple[tuple[str, ...], frozenset[str]]:
    fields = dataclasses.fields(cls)
    missing = dataclasses.MISSING
    required = {f.name for f in fields if f.default is missing and f.default_factory is missing}
    return tuple(f.name for f in fields), frozenset(required)

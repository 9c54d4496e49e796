"""Read `matrix/*.toml` into a `Matrix`, validating every row and reporting ALL problems at once.

Where the matrix comes from, first match wins:
`--matrix DIR` > `$ENVCHECK_MATRIX` > the copy shipped in the wheel (`envcheck/_matrix`,
force-included from the top-level `matrix/` by pyproject.toml) > the repo's `matrix/` (editable
installs and source checkouts, where the wheel copy does not exist).

Every problem reads `file: table entry N (id): field: problem`, so a broken override points at
the line to fix. Only `tomllib`, `packaging` and records: the doctor's whole run has ~150 ms,
and loading the shipped matrix takes a few of them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

from envcheck.contracts.errors import MatrixError
from envcheck.contracts.record import MISSING, fields
from envcheck.matrix.cache import read_toml
from envcheck.matrix.crossrows import cross_check
from envcheck.matrix.fields import Bad, type_name
from envcheck.matrix.location import matrix_dir
from envcheck.matrix.mirror import index_of, on_index
from envcheck.matrix.model import (
    ArchFact,
    ArchSet,
    Arm64Build,
    Defect,
    GpuModel,
    ImageTag,
    Matrix,
    MinorCompat,
    PaddleBuild,
    PaddleRelease,
    ToolkitDriver,
)
from envcheck.matrix.schema import REQUIRED_TABLES, TABLES, Registry, Row

T = TypeVar("T")


def load_matrix(
    path: str | None = None, environ: Mapping[str, str] = MappingProxyType({})
) -> Matrix:
    """Load and validate the matrix (`environ`: the command's variables, where ENVCHECK_MATRIX
    and ENVCHECK_PADDLE_INDEX are read; none given: the shipped matrix); raise `MatrixError`
    listing every problem found."""
    root, origin = matrix_dir(path, environ)
    return on_index(_load(root, origin, environ), index_of(environ))


def _load(root: Path, origin: str, environ: Mapping[str, str]) -> Matrix:
    problems: list[str] = []
    rows = list(_read_rows(root, origin, problems, environ))
    problems += cross_check(rows)
    if problems:
        raise MatrixError(problems)
    return _build(rows, root)


# -- reading ---------------------------------------------------------------------------------------


def _read_rows(
    root: Path, origin: str, problems: list[str], environ: Mapping[str, str]
) -> Iterator[Row]:
    if not root.is_dir():
        problems.append(f"{root} (from {origin}): no such directory")
        return
    files = sorted(root.glob("*.toml"))
    if not files:
        problems.append(f"{root} (from {origin}): no *.toml files")
        return
    seen: set[str] = set()
    for path in files:
        doc = _read_toml(path, problems, environ)
        for key, entries in doc.items():
            if _check_table(path.name, key, entries, problems):
                seen.add(key)
                for index, raw in enumerate(entries, start=1):
                    yield _parse_row(path.name, key, index, raw, problems)
    problems += [
        f"{root}: no [[{t}]] entries in any file" for t in REQUIRED_TABLES if t not in seen
    ]


def _read_toml(path: Path, problems: list[str], environ: Mapping[str, str]) -> dict[str, Any]:
    try:
        return read_toml(path, environ)  # parsed TOML cached as JSON; validation below always runs
    except (OSError, UnicodeDecodeError) as e:
        problems.append(f"{path.name}: cannot read: {e}")
    except ValueError as e:  # tomllib.TOMLDecodeError, the one other read_toml raises; its
        # message ends "(at line L, column C)"; tomllib is imported by a cache miss only
        problems.append(f"{path.name}: TOML syntax error: {e}")
    return {}


def _check_table(file: str, key: str, entries: Any, problems: list[str]) -> bool:
    if key not in TABLES:
        problems.append(f"{file}: {key}: unknown table{_did_you_mean(key, TABLES)}")
        return False
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        problems.append(f"{file}: {key}: expected [[{key}]] entries, got {type_name(entries)}")
        return False
    return True


def _parse_row(file: str, table: str, index: int, raw: dict[str, Any], problems: list[str]) -> Row:
    spec = TABLES[table]
    fields = spec.fields
    ident = " ".join(str(raw[k]) for k in spec.ident if k in raw) or "?"
    row = Row(file, table, index, ident, frozenset(raw))
    for key in sorted(raw.keys() - fields.keys()):
        problems.append(f"{row.where}: {key}: unknown field{_did_you_mean(key, fields)}")
    for name, spec_field in fields.items():
        if name not in raw:
            if spec_field.required:
                problems.append(f"{row.where}: {name}: missing")
            continue
        try:
            row.values[name] = spec_field.check(raw[name])
        except Bad as e:
            problems.append(f"{row.where}: {name}: {e}")
    return row


def _did_you_mean(key: str, known: dict[str, Any]) -> str:
    import difflib  # only on a bad key

    close = difflib.get_close_matches(key, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else f" (known: {', '.join(known)})"


# -- building the typed matrix ---------------------------------------------------------------------


def _build(rows: list[Row], root: Path) -> Matrix:
    made: dict[str, list[object]] = {t: [] for t in TABLES}
    for row in rows:
        made[row.table].append(_make(TABLES[row.table].make, row.values))
    return Matrix(
        toolkit_drivers=_rows(made, "toolkit", ToolkitDriver),
        minor_compat=_rows(made, "minor_compat", MinorCompat),
        arch_sets=_rows(made, "arch_set", ArchSet),
        gpus=_rows(made, "gpu", GpuModel),
        releases=_rows(made, "release", PaddleRelease),
        builds=_rows(made, "build", PaddleBuild),
        images=_rows(made, "image", ImageTag),
        registries={r.name: r.ref for r in _rows(made, "registry", Registry)},
        path=str(root),
        defects=_rows(made, "defect", Defect),
        newest_source=newest_source_read(root),
        arm64_builds=_rows(made, "arm64_build", Arm64Build),
        arch_facts=_rows(made, "arch_fact", ArchFact),
    )


def _rows(made: dict[str, list[object]], table: str, model: type[T]) -> tuple[T, ...]:
    """The rows of `table`, typed as its model (schema.TABLES makes each table's rows so)."""
    typed = tuple(row for row in made[table] if isinstance(row, model))
    assert len(typed) == len(made[table]), f"{table}: TABLES makes another type than {model}"
    return typed


_NEWEST = re.compile(r"^Newest source read: (\d{4}-\d{2}-\d{2})", re.MULTILINE)


def newest_source_read(root: Path) -> str | None:
    """The date `README.md` beside the TOML files gives for the newest source the matrix has read
    (issue 22.11): how current a verdict can be. None when it says none."""
    try:
        text = (root / "README.md").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    found = _NEWEST.search(text)
    return found.group(1) if found else None


def _make(cls: type[T], values: dict[str, Any]) -> T:
    """Absent optional fields become None; `note` is for people reading the TOML and is kept only
    where the model has a field for it."""
    model: type = cls  # a class, hashable: the key of _plan's cache
    names, required = _plan(model)
    return cls(**{n: values.get(n) for n in names if n in values or n in required})


@functools.cache
def _plan(cls: type) -> tuple[tuple[str, ...], frozenset[str]]:
    found = fields(cls)
    required = {f.name for f in found if f.default is MISSING and f.default_factory is MISSING}
    return tuple(f.name for f in found), frozenset(required)

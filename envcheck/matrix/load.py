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

import re
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from envcheck.contracts.errors import MatrixError
from envcheck.contracts.facts import read_fields
from envcheck.contracts.record import fields
from envcheck.matrix.cache import MAX_MATRIX_FILE, read_toml
from envcheck.matrix.crossrows import cross_check
from envcheck.matrix.fields import type_name
from envcheck.matrix.location import matrix_dir
from envcheck.matrix.mirror import index_of, on_index
from envcheck.matrix.model import Matrix, Registry
from envcheck.matrix.schema import REQUIRED_TABLES, TABLES, Row
from envcheck.regular import read_regular


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
    except OSError as e:  # "not a regular file: a FIFO", "larger than … bytes", …
        problems.append(f"{path.name}: cannot read: {e.strerror or e}")
    except UnicodeDecodeError as e:
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
    ident = " ".join(str(raw[k]) for k in spec.ident if k in raw) or "?"
    row = Row(file, table, index, ident, frozenset(raw))
    for key in sorted(raw.keys() - spec.keys):
        problems.append(f"{row.where}: {key}: unknown field{_did_you_mean(key, spec.keys)}")
    row.values, found = read_fields(spec.row, raw, row.where)
    problems += found
    return row


def _did_you_mean(key: str, known: Collection[str]) -> str:
    import difflib  # only on a bad key

    close = difflib.get_close_matches(key, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else f" (known: {', '.join(known)})"


# -- building the typed matrix ---------------------------------------------------------------------


def _build(rows: list[Row], root: Path) -> Matrix:
    """Each row made its table's record; each table's rows the `Matrix` field that names it."""
    made: dict[str, list[Any]] = {t: [] for t in TABLES}
    for row in rows:
        made[row.table].append(TABLES[row.table].row(**row.values))
    tables: dict[str, Any] = {
        f.name: tuple(made[f.metadata["table"]]) for f in fields(Matrix) if "table" in f.metadata
    }
    registries: tuple[Registry, ...] = tables["registries"]
    tables["registries"] = {r.name: r.ref for r in registries}
    return Matrix(**tables, path=str(root), newest_source=newest_source_read(root))


_NEWEST = re.compile(r"^Newest source read: (\d{4}-\d{2}-\d{2})", re.MULTILINE)


def newest_source_read(root: Path) -> str | None:
    """The date `README.md` beside the TOML files gives for the newest source the matrix has read:
    how current a verdict can be (a verdict from a matrix months old says so). None when it says
    none."""
    try:
        text = read_regular(root / "README.md", MAX_MATRIX_FILE).decode("utf-8", "replace")
    except OSError:
        return None
    found = _NEWEST.search(text)
    return found.group(1) if found else None

"""The matrix files' tables (pure), derived from the records of `envcheck.matrix.model`: which
`[[table]]` makes which row record, the keys a row may and must have, the fields that name it;
and `Row`, one entry as read.

The records are the schema: a table is a `Matrix` field with `table` in its metadata, its row
record's fields are the table's keys (a field without a default must be written), each checked
as its metadata says. Nothing here repeats a field.
"""

from __future__ import annotations

import typing
from typing import Any

from envcheck.contracts.record import MISSING, field, fields, record
from envcheck.matrix import model


@record
class Table:
    """One table of the matrix files: the row record it makes, and what its fields say."""

    name: str  # "build": the TOML's `[[build]]`
    row: type  # the row record, e.g. PaddleBuild
    keys: tuple[str, ...]  # the keys a row may have, in the record's order
    required: frozenset[str]  # ... and those it must have
    ident: tuple[str, ...]  # fields that name a row in messages and must be unique together
    gpu_only: tuple[str, ...]  # fields a CPU build or image must leave out


def table_of(name: str, row: type) -> Table:
    """The table `[[name]]` whose entries make `row` records: what its fields say."""
    found = fields(row)
    return Table(
        name,
        row,
        tuple(f.name for f in found),
        frozenset(f.name for f in found if f.default is MISSING and f.default_factory is MISSING),
        tuple(f.name for f in found if f.metadata.get("ident")),
        tuple(f.name for f in found if f.metadata.get("gpu_only")),
    )


def _tables() -> dict[str, Table]:
    """One table per `Matrix` field that names one; its row record is the field's metadata's
    `row`, else the element type of its tuple (`tuple[PaddleBuild, ...]`)."""
    hints = typing.get_type_hints(model.Matrix)
    tables = {}
    for f in fields(model.Matrix):
        name = f.metadata.get("table")
        if name is not None:
            row = f.metadata.get("row") or typing.get_args(hints[f.name])[0]
            tables[name] = table_of(name, row)
    return tables


TABLES: dict[str, Table] = _tables()
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

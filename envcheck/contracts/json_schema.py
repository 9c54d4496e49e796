"""JSON Schema (draft 2020-12) made from records: their annotations are the JSON types, their
fields' metadata the rest, the class's docstring the object's description. The published
schemas (schema/*.json) are assembled from these by scripts/json_schema.py; a test fails when a
committed one is not what the records give.

What a field's metadata adds (the reader's own rules, envcheck/contracts/facts.py):
- no default, and not `optional`: a `required` key (what `from_dict` needs to read it back);
  every other key may be missing, as in a report an older envcheck wrote;
- `check`: "count" is an integer >= 0, "archs" a list of CUDA archs (0-999);
- `description`: the property's description.
Objects stay open (`additionalProperties` unset): the reader ignores keys it does not know, and
a newer envcheck may add some. Pure: types in, plain dicts out.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal

from envcheck.contracts.facts import is_required
from envcheck.contracts.record import Field, fields, is_record

Schema = dict[str, Any]
JSON_TYPES: Mapping[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    type(None): "null",
}


class Defs:
    """The `$defs` of one document: a definition per record class (by its name), and per named
    enum; each made once, referred to everywhere else."""

    def __init__(self, named: Mapping[Any, tuple[str, str]] | None = None) -> None:
        # a Literal type -> (its definition's name, its description)
        self.named = dict(named or {})
        self.defs: dict[str, Schema] = {}

    def ref(self, name: str) -> Schema:
        return {"$ref": f"#/$defs/{name}"}

    def add(self, name: str, schema: Schema) -> Schema:
        """Define `name` (once) and refer to it."""
        self.defs.setdefault(name, schema)
        return self.ref(name)

    def of(self, tp: Any) -> Schema:
        """The schema of the type `tp` (a resolved annotation)."""
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if tp is Any:
            return {}
        if tp in JSON_TYPES:
            return {"type": JSON_TYPES[tp]}
        if origin is Literal:
            if tp in self.named:
                name, description = self.named[tp]
                return self.add(name, {"description": description, "enum": list(args)})
            return {"enum": list(args)}
        if origin in (typing.Union, types.UnionType):
            return _union([self.of(a) for a in args])
        if origin is tuple:
            if len(args) == 2 and args[1] is Ellipsis:
                return {"type": "array", "items": self.of(args[0])}
            items = [self.of(a) for a in args]
            return {
                "type": "array",
                "prefixItems": items,
                "minItems": len(items),
                "maxItems": len(items),
            }
        if origin is dict:
            values = self.of(args[1])
            return {"type": "object", **({"additionalProperties": values} if values else {})}
        if isinstance(tp, type) and is_record(tp):
            return self.record(tp)
        raise TypeError(f"no JSON Schema for {tp!r}")

    def record(
        self,
        cls: type,
        *,
        extra: Mapping[str, Schema] | None = None,
        also_required: tuple[str, ...] = (),
    ) -> Schema:
        """A reference to the record's object, defined (once, by the class's name) from its
        fields; `extra`: the keys its JSON adds beyond its fields (computed ones), after them,
        `also_required` of them always written."""
        name = cls.__name__
        if name not in self.defs:
            self.defs[name] = {}  # a record that holds itself refers to this definition
            self.defs[name] = self.object_of(cls, extra=extra, also_required=also_required)
        return self.ref(name)

    def object_of(
        self,
        cls: type,
        *,
        extra: Mapping[str, Schema] | None = None,
        also_required: tuple[str, ...] = (),
    ) -> Schema:
        """The record's object, inline."""
        hints = typing.get_type_hints(cls)
        properties = {f.name: self.field(f, hints[f.name]) for f in fields(cls)}
        properties.update(extra or {})
        required = [f.name for f in fields(cls) if is_required(f)] + list(also_required)
        schema: Schema = {"description": _words(cls.__doc__)} if cls.__doc__ else {}
        schema |= {"type": "object", "properties": properties}
        if required:
            schema["required"] = required
        return schema

    def field(self, f: Field, tp: Any) -> Schema:
        schema = dict(self.of(tp))
        check = f.metadata.get("check")
        if check == "count":
            schema["minimum"] = 0
        elif check == "archs":
            schema["items"] = {"type": "integer", "minimum": 0, "maximum": 999}
        if f.metadata.get("description"):
            schema = {"description": f.metadata["description"], **schema}
        return schema


def _union(members: list[Schema]) -> Schema:
    """`X | None` as one schema where X is one JSON type (`{"type": ["string", "null"]}`), else
    any of the members."""
    null = {"type": "null"}
    others = [m for m in members if m != null]
    if len(others) == 1 and null in members:
        only = others[0]
        if isinstance(only.get("type"), str):
            return {**only, "type": [only["type"], "null"]}
        if "enum" in only and "$ref" not in only:
            return {**only, "enum": [*only["enum"], None]}
    return {"anyOf": members}


def _words(doc: str) -> str:
    """A docstring as one paragraph of plain words (the first, where it has several)."""
    first = inspect.cleandoc(doc).split("\n\n")[0]
    return " ".join(first.split())

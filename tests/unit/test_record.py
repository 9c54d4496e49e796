"""envcheck/contracts/record.py against the standard `dataclasses`, side by side: the same class
bodies decorated both ways must build, compare, hash, print, copy and refuse alike."""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from envcheck.contracts import record as rec
from envcheck.contracts.record import field, record
from tests.paths import ROOT

Decorate = Callable[[type], Any]
FROZEN: dict[str, Decorate] = {
    "record": rec.record,
    "dataclass": dataclasses.dataclass(frozen=True),
}
MUTABLE: dict[str, Decorate] = {
    "record": rec.record(frozen=False),
    "dataclass": dataclasses.dataclass,
}
# each implementation's field(), fields(), replace(), asdict(), and the error a frozen one raises
API: dict[str, Any] = {"record": rec, "dataclass": dataclasses}


def _row(decorate: Decorate, field: Callable[..., Any]) -> Any:
    class Row:
        """A matrix row's shape: required, plain defaults, a factory, metadata, a ClassVar."""

        kind: ClassVar[str] = "row"
        name: str
        count: int = 0
        tags: tuple[str, ...] = ()
        notes: list[str] = field(default_factory=list)
        check: str | None = field(default=None, metadata={"check": "dotted"})

        def __str__(self) -> str:  # its own method is kept
            return f"row {self.name}"

    return decorate(Row)


def _pair(decorate: Decorate) -> tuple[Any, Any]:
    class Inner:
        """A record inside a record."""

        value: int
        label: str = "x"

    class Outer:
        """Holds one, a tuple of them and a dict of them."""

        inner: Inner
        many: tuple[Inner, ...] = ()
        by_name: dict[str, Inner] | None = None

    inner = decorate(Inner)
    return inner, decorate(Outer)


def _both(make: Callable[[Decorate, Callable[..., Any]], Any]) -> dict[str, Any]:
    return {name: make(FROZEN[name], API[name].field) for name in FROZEN}


def test_fields_defaults_and_metadata_are_the_dataclass_ones() -> None:
    made = _both(_row)

    def shown(value: Any, api: Any) -> Any:
        return "MISSING" if value is api.MISSING else value

    seen = {
        name: [
            (f.name, f.type, shown(f.default, api), shown(f.default_factory, api), dict(f.metadata))
            for f in api.fields(cls)
        ]
        for name, cls in made.items()
        for api in [API[name]]
    }
    assert seen["record"] == seen["dataclass"]
    assert [f[0] for f in seen["record"]] == ["name", "count", "tags", "notes", "check"]
    for cls in made.values():  # what the class attributes are left as
        assert (cls.count, cls.check, hasattr(cls, "notes"), cls.kind) == (0, None, False, "row")
        assert cls.__match_args__ == ("name", "count", "tags", "notes", "check")


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (("a",), {}),
        (("a", 2, ("t",), ["n"], "1.2"), {}),
        ((), {"name": "a", "check": "1"}),
        (("a",), {"notes": ["x"], "count": 3}),
    ],
    ids=["required-only", "all-positional", "by-name", "mixed"],
)
def test_instances_build_compare_hash_and_print_alike(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    made = {name: cls(*args, **kwargs) for name, cls in _both(_row).items()}
    ours, theirs = made["record"], made["dataclass"]
    assert repr(ours) == repr(theirs)
    assert str(ours) == str(theirs) == f"row {ours.name}"
    assert vars(ours) == vars(theirs) and ours != theirs  # equal values, not the same class
    twin = type(ours)(*args, **kwargs)
    assert twin == ours and twin is not ours and twin != type(ours)("other")
    for made_one in (ours, theirs):  # frozen, but it holds a list
        with pytest.raises(TypeError, match="unhashable type: 'list'"):
            hash(made_one)
    assert ours.notes is not type(ours)("b").notes  # a factory's value per instance


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        ((), {}),
        (("a", 1, (), [], None, "extra"), {}),
        (("a",), {"name": "b"}),
        (("a",), {"nope": 1}),
    ],
    ids=["missing", "too-many", "twice", "unknown"],
)
def test_bad_arguments_are_type_errors_alike(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    said = {}
    for name, cls in _both(_row).items():
        with pytest.raises(TypeError) as raised:
            cls(*args, **kwargs)
        said[name] = str(raised.value).partition("__init__()")[2]  # the function's name differs
    # the same words; a newer Python may add to its own ("Did you mean 'notes'?", 3.13)
    assert said["record"] and said["dataclass"].startswith(said["record"])


def test_missing_arguments_are_listed_as_python_lists_them() -> None:
    three: Any = rec.record(
        type("Three", (), {"__annotations__": {"a": "int", "b": "int", "c": "int"}})
    )
    with pytest.raises(TypeError, match=r"Three.__init__\(\) missing 3 required positional "):
        three()
    with pytest.raises(TypeError, match=r"arguments: 'a', 'b', and 'c'$"):
        three()


def test_frozen_refuses_assignment_and_deletion_alike() -> None:
    for name, cls in _both(_row).items():
        row = cls("a")
        frozen_error = API[name].FrozenInstanceError
        with pytest.raises(frozen_error, match="cannot assign to field 'count'"):
            row.count = 2
        with pytest.raises(frozen_error, match="cannot assign to field 'other'"):
            row.other = 2
        with pytest.raises(frozen_error, match="cannot delete field 'name'"):
            del row.name
        assert issubclass(frozen_error, AttributeError) and row.count == 0


def test_replace_and_asdict_alike() -> None:
    results = {}
    for name, decorate in FROZEN.items():
        inner, outer = _pair(decorate)
        api = API[name]
        one = outer(inner(1), (inner(2, "y"),), {"k": inner(3)})
        changed = api.replace(one, inner=api.replace(one.inner, label="z"))
        assert changed.many is one.many and changed.inner.value == 1
        with pytest.raises(TypeError):
            api.replace(one, nope=1)
        with pytest.raises(TypeError):
            api.asdict(outer)  # the class, not an instance
        results[name] = api.asdict(changed)
        assert hash(one.inner) == hash((1, "x")) == hash(inner(1)) and inner(1) != inner(2)
    assert results["record"] == results["dataclass"]
    assert results["record"] == {
        "inner": {"value": 1, "label": "z"},
        "many": ({"value": 2, "label": "y"},),
        "by_name": {"k": {"value": 3, "label": "x"}},
    }


def test_is_record_names_records_only() -> None:
    inner, _ = _pair(rec.record)
    plain, _ = _pair(dataclasses.dataclass(frozen=True))
    assert (rec.is_record(inner), rec.is_record(inner(1))) == (True, True)
    assert (rec.is_record(plain), rec.is_record(plain(1)), rec.is_record(1)) == (False,) * 3
    with pytest.raises(TypeError):
        rec.fields(plain)


def test_match_reads_the_fields_by_position() -> None:
    for decorate in FROZEN.values():
        inner, _ = _pair(decorate)
        match inner(7, "q"):
            case inner(value, label) if value == 7:
                assert label == "q"
            case _:
                pytest.fail("the positional pattern did not match")


def test_mutable_records_assign_and_are_unhashable_alike() -> None:
    for name, decorate in MUTABLE.items():
        cls = _row(decorate, API[name].field)
        row = cls("a")
        row.count = 5
        row.notes.append("n")
        assert (row.count, row.notes, cls.__hash__) == (5, ["n"], None)
        with pytest.raises(TypeError, match="unhashable"):
            hash(row)


@pytest.mark.parametrize(
    "body",
    [
        {"__annotations__": {"items": "list[int]"}, "items": []},
        {"__annotations__": {"a": "int", "b": "int"}, "a": 1},
    ],
    ids=["a-mutable-default", "no-default-after-a-default"],
)
def test_bad_class_bodies_are_refused_alike(body: dict[str, Any]) -> None:
    errors = []
    for decorate in FROZEN.values():
        with pytest.raises((ValueError, TypeError)) as raised:
            decorate(type("Bad", (), dict(body)))
        errors.append((type(raised.value), str(raised.value)))
    (ours, ours_said), (theirs, theirs_said) = errors
    # the same words; Python 3.13's dataclasses also name the field with the default
    assert ours is theirs and theirs_said.startswith(ours_said)


def test_what_records_do_not_support_is_refused_at_definition() -> None:
    inner, _ = _pair(rec.record)
    with pytest.raises(TypeError, match="cannot inherit from a record"):
        rec.record(type("Child", (inner,), {"__annotations__": {"extra": "int"}, "extra": 0}))
    with pytest.raises(TypeError, match="InitVar fields are not supported"):
        rec.record(type("Init", (), {"__annotations__": {"seed": "InitVar[int]"}}))
    with pytest.raises(TypeError, match="cannot define __setattr__"):
        rec.record(type("Own", (), {"__setattr__": lambda self, name, value: None}))
    with pytest.raises(ValueError, match="both default and default_factory"):
        rec.field(default=1, default_factory=int)


def test_a_class_s_own_eq_repr_and_hash_are_kept() -> None:
    @rec.record
    class Loose:
        """Equal to everything, printed and hashed its own way."""

        a: int

        def __eq__(self, other: object) -> bool:
            return True

        def __hash__(self) -> int:
            return 7

        def __repr__(self) -> str:
            return "loose"

    made = Loose(1)
    assert (made == object(), hash(made), repr(made)) == (True, 7, "loose")


def test_post_init_runs_after_the_fields_are_set() -> None:
    seen: list[int] = []

    @rec.record
    class Checked:
        """Calls back with its field once built."""

        a: int

        def __post_init__(self) -> None:
            seen.append(self.a)

    Checked(4)
    assert seen == [4]


values = st.one_of(st.none(), st.integers(), st.text(max_size=5), st.tuples(st.integers()))


@given(a=values, b=values, c=values, d=values)
def test_equality_and_hash_follow_the_values_as_a_dataclass_s(
    a: Any, b: Any, c: Any, d: Any
) -> None:
    made = {}
    for name, decorate in FROZEN.items():
        cls = decorate(type("P", (), {"__annotations__": {"x": "object", "y": "object"}}))
        made[name] = (cls(a, b), cls(c, d))
    (r1, r2), (d1, d2) = made["record"], made["dataclass"]
    assert (r1 == r2) == (d1 == d2)
    assert hash(r1) == hash(d1) and repr(r1) == repr(d1)


def test_envcheck_makes_its_classes_with_records_only() -> None:
    """One way to make a data class in the product (the workload that travels into the container
    imports no dataclasses either): `dataclasses` would bring back its cost and a second set of
    rules for equality, hashing and copying."""
    package = ROOT / "envcheck"
    found = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            if "dataclasses" in names:
                found.append(f"{path.relative_to(package)}:{node.lineno}")
    assert found == []


# ----------------------------------------------------- copies, pickles and newer Pythons


@record
class _Kept:
    name: str
    sizes: tuple[int, ...] = ()


@record(frozen=False)
class _Open:
    name: str
    items: list[int] = field(default_factory=list)


@pytest.mark.parametrize("value", [_Kept("a", (1, 2)), _Open("b", [3])], ids=["frozen", "open"])
def test_a_record_survives_copy_deepcopy_and_pickle(value: object) -> None:
    import copy
    import pickle

    for made in (copy.copy(value), copy.deepcopy(value), pickle.loads(pickle.dumps(value))):
        assert made == value and type(made) is type(value)


def test_copy_replace_works_as_on_a_dataclass() -> None:
    """`copy.replace` (Python 3.13) calls `__replace__`; on older Pythons the method is there."""
    kept = _Kept("a", (1,))
    assert kept.__replace__(name="b") == _Kept("b", (1,))  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        kept.__replace__(colour="red")  # type: ignore[attr-defined]

"""`@record`: the classes of envcheck's data model, `@dataclasses.dataclass(frozen=True)` for the
part of it envcheck uses, made without compiling code.

Every fact, finding, report and matrix row is a record. On the Python 3.11 of envcheck's own
machines the standard `dataclasses` writes six methods of each frozen class as source text and
compiles them with `exec` (~0.55 ms a class), and it imports `inspect` (with `ast`, `dis` and
`tokenize`, 1.3 MB). A doctor without a driver makes 38 classes on its way to a verdict: that
was 22-28 ms of its 0.12 s, and most of its memory above the NVML floor. Here every method
is a closure or a shared function: making a class costs a few microseconds.

For what it supports, a record behaves as the dataclass would (tests/unit/test_record.py holds
the two side by side):
- its fields are the class's own annotations, in order (`ClassVar` ones are not fields); a
  default is the class attribute, or `field(default=..., default_factory=..., metadata=...)`; an
  unhashable default (a list, a dict) is refused, and so is a field without a default after one
  with a default;
- `__init__` takes the fields by position or by name, with the errors Python gives for a
  function of that signature, then calls `__post_init__()` if the class has one;
- `__eq__` compares the fields in order, with an instance of the very same class only; `__hash__`
  hashes them; `__repr__` reads `Name(a=1, b='x')`; a method the class writes itself is kept;
- frozen (the default): assigning or deleting an attribute raises `FrozenInstanceError`;
  `@record(frozen=False)` makes a mutable one, unhashable as a mutable dataclass is;
- `fields()`, `replace()`, `asdict()` and `is_record()` are `dataclasses`' functions of the
  same names.
- `copy.copy`, `copy.deepcopy`, `pickle` and `copy.replace` (Python 3.13) work as on a dataclass.
What envcheck does not use is refused where a class asks for it rather than half done: a record
inheriting from a record, and `InitVar` fields. Where `dataclasses` differs:
- no `slots`, `kw_only`, `order`, `unsafe_hash`, `match_args=False` or `init=False` options, and
  no inheritance: the first record that needs one of them goes back to `dataclasses`, rather than
  this growing;
- the methods are shared functions, not generated source: a traceback shows `record.py`, and
  `inspect.signature(Record)` reads `(*args, **kwargs)`;
- a field's type is the annotation as written (a string: every module has `from __future__
  import annotations`, which ruff's required-imports rule keeps so).
"""

from __future__ import annotations

import operator
import reprlib
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, get_origin, overload

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform  # typing's own from Python 3.11
else:

    def dataclass_transform(**_: object) -> Callable[[Any], Any]:
        """Type checkers' marker only (PEP 681): nothing to do at run time."""
        return lambda decorator: decorator


T = TypeVar("T")


class _Missing:
    """The type of `MISSING`."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()  # no default was given (dataclasses.MISSING)


class FrozenInstanceError(AttributeError):
    """An attribute of a frozen record was assigned or deleted (dataclasses.FrozenInstanceError)."""


class Field:
    """One field of a record, as `fields()` returns it (dataclasses.Field's attributes)."""

    __slots__ = ("default", "default_factory", "metadata", "name", "type")

    def __init__(
        self, default: Any, default_factory: Any, metadata: Mapping[str, Any] | None
    ) -> None:
        self.name = ""
        self.type: Any = None  # the annotation, as written (a string under PEP 563)
        self.default = default
        self.default_factory = default_factory
        self.metadata: Mapping[str, Any] = MappingProxyType(dict(metadata or {}))

    def __repr__(self) -> str:
        return (
            f"Field(name={self.name!r}, type={self.type!r}, default={self.default!r},"
            f" default_factory={self.default_factory!r}, metadata={dict(self.metadata)!r})"
        )


def field(
    *,
    default: Any = MISSING,
    default_factory: Callable[[], Any] | Any = MISSING,
    metadata: Mapping[str, Any] | None = None,
) -> Any:
    """A field's default and metadata, where a plain class attribute cannot say them."""
    if default is not MISSING and default_factory is not MISSING:
        raise ValueError("cannot specify both default and default_factory")
    return Field(default, default_factory, metadata)


@overload
def record(cls: type[T], /) -> type[T]: ...


@overload
def record(*, frozen: bool = True) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def record(cls: type[T] | None = None, /, *, frozen: bool = True) -> Any:
    """`@record` (frozen) or `@record(frozen=False)`: make the class a record."""

    def make(cls: type[T]) -> type[T]:
        return _make(cls, frozen)

    return make if cls is None else make(cls)


def is_record(obj: object) -> bool:
    """A record class or instance (dataclasses.is_dataclass)."""
    return hasattr(obj if isinstance(obj, type) else type(obj), "__record_fields__")


def fields(class_or_instance: object) -> tuple[Field, ...]:
    """The fields, in order (dataclasses.fields)."""
    try:
        found: tuple[Field, ...] = class_or_instance.__record_fields__  # type: ignore[attr-defined]
    except AttributeError:
        raise TypeError("fields() takes a record class or instance") from None
    return found


def replace(obj: T, /, **changes: Any) -> T:
    """A copy of `obj` with `changes` (dataclasses.replace); an unknown name is a TypeError."""
    if isinstance(obj, type) or not is_record(obj):
        raise TypeError("replace() takes a record instance")
    for f in fields(obj):
        if f.name not in changes:
            changes[f.name] = getattr(obj, f.name)
    return type(obj)(**changes)


def asdict(obj: object) -> dict[str, Any]:
    """The record as a dict, recursively (dataclasses.asdict): records inside become dicts, lists,
    tuples and dicts are copied, anything else deep-copied."""
    if isinstance(obj, type) or not is_record(obj):
        raise TypeError("asdict() takes a record instance")
    made: dict[str, Any] = _asdict(obj)
    return made


def _asdict(value: Any) -> Any:
    if is_record(value) and not isinstance(value, type):
        return {f.name: _asdict(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a namedtuple
        return type(value)(*(_asdict(v) for v in value))
    if isinstance(value, (list, tuple)):
        return type(value)(_asdict(v) for v in value)
    if isinstance(value, dict):
        return type(value)((_asdict(k), _asdict(v)) for k, v in value.items())
    import copy  # only for a value no record here holds: the standard library's own rule

    return copy.deepcopy(value)


# -- making the class ------------------------------------------------------------------------


def _make(cls: type[T], frozen: bool) -> type[T]:
    if any(is_record(base) for base in cls.__mro__[1:]):
        raise TypeError(f"{cls.__qualname__}: a record cannot inherit from a record")
    found = tuple(_fields_of(cls))
    names = tuple(f.name for f in found)
    own = cls.__dict__
    type.__setattr__(cls, "__record_fields__", found)
    _add(cls, "__match_args__", names)
    _add(cls, "__init__", _init(cls.__qualname__, found, hasattr(cls, "__post_init__")))
    values = _values(names)
    _add(cls, "__repr__", _repr(names))
    _add(cls, "__eq__", _eq(values))
    _add(cls, "__replace__", replace)  # copy.replace (Python 3.13), as a dataclass has it
    class_hash = own.get("__hash__", MISSING)
    explicit_hash = not (class_hash is MISSING or (class_hash is None and "__eq__" in own))
    if not explicit_hash:  # the defaults of a dataclass with eq=True and unsafe_hash=False
        type.__setattr__(cls, "__hash__", _hash(values) if frozen else None)
    if frozen:
        for name in ("__setattr__", "__delattr__"):
            if name in own:
                raise TypeError(f"{cls.__qualname__}: a frozen record cannot define {name}")
        type.__setattr__(cls, "__setattr__", _frozen_setattr)
        type.__setattr__(cls, "__delattr__", _frozen_delattr)
    return cls


def _fields_of(cls: type) -> Iterable[Field]:
    """The class's fields, its class attributes set as a dataclass leaves them."""
    seen_default = False
    for name, annotation in _own_annotations(cls).items():
        if _is_classvar(annotation):
            continue
        if _is_initvar(annotation):
            raise TypeError(f"{cls.__qualname__}.{name}: InitVar fields are not supported")
        given = cls.__dict__.get(name, MISSING)
        made = given if isinstance(given, Field) else Field(given, MISSING, None)
        made.name, made.type = name, annotation
        if isinstance(given, Field):  # the class attribute is the default, if any
            if made.default is MISSING:
                type.__delattr__(cls, name)
            else:
                type.__setattr__(cls, name, made.default)
        if made.default is not MISSING and type(made.default).__hash__ is None:
            raise ValueError(
                f"mutable default {type(made.default)} for field {name} is not allowed:"
                " use default_factory"
            )
        has_default = made.default is not MISSING or made.default_factory is not MISSING
        if seen_default and not has_default:
            raise TypeError(f"non-default argument {name!r} follows default argument")
        seen_default = seen_default or has_default
        yield made


def _own_annotations(cls: type) -> Mapping[str, Any]:
    """The annotations the class itself writes, in order. Python 3.14 evaluates them lazily
    (PEP 649: `__annotate__`, no `__annotations__` in the class's dict until asked), so there
    `annotationlib` asks; before it, the class's dict holds them (the strings of PEP 563 under
    `from __future__ import annotations`, which every module of envcheck has)."""
    try:
        from annotationlib import Format, get_annotations  # type: ignore[import-not-found]
    except ImportError:
        return cls.__dict__.get("__annotations__", {})  # type: ignore[no-any-return]  # noqa: RUF063
    return get_annotations(cls, format=Format.FORWARDREF)  # type: ignore[no-any-return]


def _is_classvar(annotation: Any) -> bool:
    if isinstance(annotation, str):  # `from __future__ import annotations`: the text
        return annotation.startswith(("ClassVar", "typing.ClassVar"))
    return annotation is ClassVar or get_origin(annotation) is ClassVar


def _is_initvar(annotation: Any) -> bool:
    text = annotation if isinstance(annotation, str) else type(annotation).__name__
    return text.startswith(("InitVar", "dataclasses.InitVar"))


def _add(cls: type, name: str, value: Any) -> None:
    """Set `name` on the class unless the class defines it itself (as dataclasses does)."""
    if name not in cls.__dict__:
        if callable(value) and hasattr(value, "__qualname__"):
            value.__qualname__ = f"{cls.__qualname__}.{name}"
        type.__setattr__(cls, name, value)


def _values(names: tuple[str, ...]) -> Callable[[object], tuple[Any, ...]]:
    """obj -> the tuple of its fields' values, in order."""
    if len(names) >= 2:
        return operator.attrgetter(*names)
    if len(names) == 1:
        name = names[0]
        return lambda obj: (getattr(obj, name),)
    return lambda obj: ()


_set = object.__setattr__


def _init(qualname: str, found: tuple[Field, ...], post_init: bool) -> Callable[..., None]:
    known = frozenset(f.name for f in found)
    defaults = tuple((f.name, f.default, f.default_factory) for f in found)
    required = sum(f.default is MISSING and f.default_factory is MISSING for f in found)
    # as Python words it for a function of this signature (`self` counted)
    takes = (
        f"{len(found) + 1}"
        if required == len(found)
        else f"from {required + 1} to {len(found) + 1}"
    )

    def __init__(self: Any, /, *args: Any, **kwargs: Any) -> None:
        # object's own setattr (a frozen class's refuses), in field order: not
        # `self.__dict__[name] = ...`, which gives each instance a dict of its own (~40% more
        # memory than the values kept inline, as attributes set in one order on every instance are)
        rest = defaults
        if args:
            if len(args) > len(defaults):
                raise TypeError(
                    f"{qualname}.__init__() takes {takes} positional arguments but"
                    f" {len(args) + 1} were given"
                )
            for (name, _, _), value in zip(defaults, args):
                if name in kwargs:
                    raise TypeError(
                        f"{qualname}.__init__() got multiple values for argument {name!r}"
                    )
                _set(self, name, value)
            rest = defaults[len(args) :]
        if kwargs and not known.issuperset(kwargs):
            unknown = next(k for k in kwargs if k not in known)
            raise TypeError(f"{qualname}.__init__() got an unexpected keyword argument {unknown!r}")
        missing = []
        for name, default, factory in rest:
            value = kwargs.get(name, MISSING)
            if value is MISSING:
                if default is not MISSING:
                    value = default
                elif factory is not MISSING:
                    value = factory()
                else:
                    missing.append(repr(name))
                    continue
            _set(self, name, value)
        if missing:
            raise TypeError(
                f"{qualname}.__init__() missing {len(missing)} required positional"
                f" argument{'s' if len(missing) > 1 else ''}: {_listed(missing)}"
            )
        if post_init:
            self.__post_init__()

    return __init__


def _listed(words: list[str]) -> str:
    """'a', 'a' and 'b', 'a', 'b', and 'c': as Python's own missing-argument errors list them."""
    if len(words) <= 2:
        return " and ".join(words)
    return f"{', '.join(words[:-1])}, and {words[-1]}"


def _repr(names: tuple[str, ...]) -> Callable[[object], str]:
    @reprlib.recursive_repr()
    def __repr__(self: object) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{type(self).__qualname__}({shown})"

    return __repr__


def _eq(values: Callable[[object], tuple[Any, ...]]) -> Callable[[object, object], Any]:
    def __eq__(self: object, other: object) -> Any:
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented

    return __eq__


def _hash(values: Callable[[object], tuple[Any, ...]]) -> Callable[[object], int]:
    def __hash__(self: object) -> int:
        return hash(values(self))

    return __hash__


def _frozen_setattr(self: object, name: str, value: object) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: object, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")

"""`from_dict` takes a value of exactly the field's JSON type as it is (merging 1,000
reports spent its time there); it must build what the full `_coerce` path builds, and refuse
what it refuses."""

from __future__ import annotations

import typing
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from envcheck.contracts import facts
from envcheck.contracts.facts import (
    DriverFacts,
    FactsError,
    GpuFacts,
    MachineFacts,
    PaddleFacts,
    from_dict,
)
from envcheck.contracts.record import fields

VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 2**64),
    st.floats(allow_nan=True),
    st.sampled_from(["535.104.05", "12.2", "8.0", "3.0.0", "ok", "error", "x", ""]),
    st.lists(st.integers(0, 100), max_size=3),
)


def _slow(cls: type, data: dict[str, Any]) -> Any:
    """What from_dict built before the fast path: `_coerce` and `_check` on every field."""
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for f in fields(cls):
        if f.name in data:
            value = facts._coerce(hints[f.name], data[f.name], f"host.{f.name}")
            facts._check(f.metadata.get("check"), value, f"host.{f.name}")
            kwargs[f.name] = value
    return cls(**kwargs)


def _outcome(build: Any) -> Any:
    try:
        return build()
    except FactsError as e:
        return ("FactsError", str(e))


@pytest.mark.parametrize(
    "cls", [DriverFacts, GpuFacts, PaddleFacts, MachineFacts], ids=lambda c: c.__name__
)
@given(data=st.data())
def test_the_fast_path_builds_and_refuses_what_coerce_does(
    cls: type[Any], data: st.DataObject
) -> None:
    names = [f.name for f in fields(cls)]
    doc = data.draw(st.dictionaries(st.sampled_from(names), VALUES, max_size=len(names)))
    assert _outcome(lambda: from_dict(cls, doc)) == _outcome(lambda: _slow(cls, doc))


def test_true_is_not_an_integer_and_a_number_is_still_text() -> None:
    with pytest.raises(FactsError, match=r"host.index: expected an integer, got True"):
        from_dict(GpuFacts, {"index": True})
    assert from_dict(DriverFacts, {"cuda": 12.2}).cuda == "12.2"

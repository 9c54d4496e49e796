"""The input fault campaign: facts fuzzed field by field, the matrix
broken field by field, bad flags, hostile files, closed/unencodable/full streams.

Every case asserts: never a traceback, never exit 3, the documented exit code, no file outside
the named paths touched (device nodes included). The last test prints the campaign's totals
(`pytest -s`, or `python bench/faults_input.py`).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envcheck.contracts.facts import host_from_document
from envcheck.matrix.load import load_matrix
from envcheck.matrix.location import REPO_DIR
from envcheck.matrix.model import Matrix
from tests import faults
from tests.faults import CLI_CASES, DELETE, TALLY, CliCase

MATRIX: Matrix = load_matrix(str(REPO_DIR))
GOOD = faults.full_facts()
PATHS = sorted(faults.field_paths(GOOD), key=str)

# wrong types and invalid values of every kind a hand-edited or hostile document holds
HOSTILE_VALUES = st.one_of(
    st.sampled_from(
        [
            None,
            True,
            False,
            0,
            -1,
            2**63,
            10**100,
            1.5,
            -0.0,
            float("inf"),
            float("nan"),
            "",
            "x",
            "abc",
            "1.2.3.4.5",
            "535.x",
            "8.X",
            "99.99",
            "0",
            "-1",
            "[/bold]",
            "\x1b[2J\x00",
            "host\n::error::x",
            "\ud800",
            [],
            {},
            [1, "a"],
            {"a": [1]},
            [[[]]],
            "9" * 5000,
            DELETE,
        ]
    ),
    st.text(max_size=30),
    st.integers(),
    st.floats(),
    st.lists(st.one_of(st.integers(), st.text(max_size=5)), max_size=4),
    st.dictionaries(st.text(max_size=5), st.one_of(st.integers(), st.text(max_size=5)), max_size=3),
)


def test_every_field_with_every_listed_hostile_value() -> None:
    """The systematic half: each field of a full document, each value of the fixed list."""
    values: list[Any] = [
        None,
        True,
        0,
        -1,
        2**63,
        1.5,
        float("nan"),
        "",
        "x",
        "abc",
        "8.X",
        "[/bold]",
        "\x1b[2J",
        [],
        {},
        [1, "a"],
        "9" * 5000,
        DELETE,
    ]
    for path in PATHS:
        for value in values:
            faults.facts_case(
                faults.with_value(GOOD, path, value), MATRIX, f"facts {path}={value!r:.20}"
            )


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    path=st.sampled_from(PATHS),
    value=HOSTILE_VALUES,
    second=st.sampled_from(PATHS),
    other=HOSTILE_VALUES,
)
def test_facts_fuzzed_field_by_field(
    path: tuple[Any, ...], value: Any, second: tuple[Any, ...], other: Any
) -> None:
    doc = faults.with_value(GOOD, path, value)
    try:
        doc = faults.with_value(doc, second, other)
    except (KeyError, IndexError, TypeError):
        pass  # the first change removed or replaced the second's parent
    faults.facts_case(doc, MATRIX, f"fuzz {path}={value!r:.20} {second}={other!r:.20}")


@settings(max_examples=100, deadline=None)
@given(
    doc=st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(
                st.sampled_from(
                    [
                        "host",
                        "driver",
                        "gpus",
                        "paddle",
                        "status",
                        "version",
                        "findings",
                        "cuda",
                        "x",
                    ]
                ),
                inner,
                max_size=4,
            )
        ),
        max_leaves=20,
    )
)
def test_any_json_document_is_a_host_or_a_named_error(doc: Any) -> None:
    faults.facts_case(doc, MATRIX, f"document {doc!r:.40}")


def test_the_good_document_itself_judges_cleanly() -> None:
    faults.judge_and_render(host_from_document(GOOD), MATRIX)


def test_matrix_broken_field_by_field(tmp_path: Path) -> None:
    folder = tmp_path / "matrix"
    shutil.copytree(REPO_DIR, folder)
    host = host_from_document(GOOD)
    mutations = list(faults.matrix_mutations(folder))
    assert len(mutations) > 300
    for file, name, text in mutations:
        faults.matrix_case(folder, file, text, name, host)


@pytest.mark.parametrize("case", CLI_CASES, ids=[c.name for c in CLI_CASES])
def test_cli_case(case: CliCase, tmp_path: Path) -> None:
    before = TALLY.failures[:]
    faults.run_cli_case(case, tmp_path)
    assert TALLY.failures == before, TALLY.failures[len(before) :]


def test_zz_campaign_totals(capsys: pytest.CaptureFixture[str]) -> None:
    """Runs last (file order): the totals of every case above, all zeros but the count."""
    with capsys.disabled():
        print("\n" + TALLY.line())
    assert TALLY.cases > 0
    assert TALLY.faults == (0, 0, 0, 0, 0, 0), TALLY.failures

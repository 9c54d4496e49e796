"""The Paddle build read from files: recorded real version files (against the venv's real CPU
build: tests/integration/test_probe_paddle_wheel.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from envcheck.probe.interpreter import Interpreter, resolve_interpreter
from envcheck.probe.paddle_build import parse_version_file, probe_paddle
from tests.paddle_versions import VERSION_262_GPU, VERSION_331_CPU, VERSION_331_CU126, make_site


@pytest.mark.parametrize(
    ("text", "dist", "expect"),
    [
        (
            VERSION_331_CPU,
            "paddlepaddle-3.3.1",
            {
                "package": "paddlepaddle",
                "version": "3.3.1",
                "cuda": None,
                "cudnn": None,
                "compiled_cuda_archs": (),
                "with_pip_cuda_libraries": True,
            },
        ),
        (
            VERSION_262_GPU,
            "paddlepaddle_gpu-2.6.2",
            {
                "package": "paddlepaddle-gpu",
                "version": "2.6.2",
                "cuda": "11.8",
                "cudnn": "8.6.0",
                "compiled_cuda_archs": None,
                "nccl": None,
            },
        ),
        (
            VERSION_331_CU126,
            "paddlepaddle_gpu-3.3.1",
            {
                "package": "paddlepaddle-gpu",
                "cuda": "12.6",
                "compiled_cuda_archs": (75, 80, 86, 89, 90),
                "nccl": "22501",
            },
        ),
    ],
    ids=["pypi-331-cpu", "pypi-262-cu118", "vendor-331-cu126"],
)
def test_recorded_version_files(
    tmp_path: Path, text: str, dist: str, expect: dict[str, object]
) -> None:
    facts = probe_paddle(_at(str(make_site(tmp_path, text, dist))))
    assert facts.status == "ok"
    for key, value in expect.items():
        assert getattr(facts, key) == value, key


def test_both_distributions_installed_is_reported(tmp_path: Path) -> None:
    site = make_site(tmp_path, VERSION_331_CPU, "paddlepaddle-3.3.1", "paddlepaddle_gpu-3.3.1")
    facts = probe_paddle(_at(str(site)))
    assert facts.distributions == ("paddlepaddle", "paddlepaddle-gpu")


def test_one_distribution_is_recorded_as_one(tmp_path: Path) -> None:
    site = make_site(tmp_path, VERSION_262_GPU, "paddlepaddle_gpu-2.6.2")
    assert probe_paddle(_at(str(site))).distributions == ("paddlepaddle-gpu",)


def test_absent_when_no_site_has_paddle(tmp_path: Path) -> None:
    assert probe_paddle(_at(str(tmp_path))).status == "absent"


def test_garbled_version_file_is_an_error_not_a_crash(tmp_path: Path) -> None:
    site = make_site(tmp_path, "full_version = (((\n\x00\xff garbage", "paddlepaddle-3.3.1")
    facts = probe_paddle(_at(str(site)))
    assert facts.status == "error" and facts.reason and "unreadable" in facts.reason


def test_parse_ignores_code_after_the_literals() -> None:
    values = parse_version_file(VERSION_331_CPU + "\nx = os.system('boom')\n")
    assert values["full_version"] == "3.3.1" and "x" not in values


# What write_version_py() assigns, as repr() writes it (lists of arch strings in 2.x, of ints in 3.x)
LITERALS = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(),
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.tuples(inner, inner)),
    max_leaves=8,
)


@given(LITERALS)
def test_a_version_file_value_reads_as_python_wrote_it(value: object) -> None:
    assert parse_version_file(f"x = {value!r}\n") == {"x": value}


@pytest.mark.parametrize(
    "source",
    [
        "os.system('boom')",
        "__import__('os').getcwd()",
        "[1] * 10",
        "cuda_version",
        "lambda: 0",
        "f'{1}'",
        "(" * 10_000,
    ],
)
def test_anything_but_a_literal_is_left_out_unrun(source: str) -> None:
    """A version file is data: an expression in it is never evaluated, only left out."""
    assert parse_version_file(f"bad = {source}\nfull_version = '3.3.1'\n") == {
        "full_version": "3.3.1"
    }


def test_other_interpreter_is_asked_for_its_path(tmp_path: Path) -> None:
    site = make_site(tmp_path, VERSION_262_GPU, "paddlepaddle_gpu-2.6.2")
    fake_python = tmp_path / "python"
    # a stand-in interpreter: whatever it is asked, it answers with its sys.path
    answer = {"prefix": str(tmp_path), "path": [str(site)], "version": "3.11.2"}
    fake_python.write_text(
        f"#!{sys.executable}\nimport json\nprint('envcheck-interpreter:' + json.dumps({answer!r}))\n"
    )
    fake_python.chmod(0o755)
    facts = probe_paddle(resolve_interpreter(str(fake_python), os.environ))
    assert facts.version == "2.6.2" and facts.python == str(fake_python)


def _at(site: str) -> Interpreter:
    return Interpreter(python="python", prefix="/", paths=(site,), version="3.11.2")


@pytest.mark.parametrize(
    "line",
    [
        "cuda_version = 'abc'",
        "cuda_version = '1.2.3.4.5.6.7'",
        "cuda_version = 1e400",
        "cudnn_version = '\u0669.\u0665'",
        "full_version = '\u0661.\u0662'",
        "compiled_cuda_archs = [80, 1000]",
    ],
    ids=["word", "seven-parts", "1e400", "arabic-digits", "arabic-full", "arch"],
)
def test_live_values_are_validated_like_a_facts_file(tmp_path: Path, line: str) -> None:
    """What `--facts` refuses with exit 2, the live probe reports as an error fact, never
    handing the judge a value it would parse into a traceback."""
    text = VERSION_331_CU126 + line + "\n"
    facts = probe_paddle(_at(str(make_site(tmp_path, text, "paddlepaddle_gpu-3.3.1"))))
    assert facts.status == "error", facts
    assert facts.reason and "paddle." in facts.reason

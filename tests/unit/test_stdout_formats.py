"""A format sent to stdout (`--junit -`, `--markdown -`, `--json`) is all that stdout holds,
as `kubectl -o` and `gh --json` do: `envcheck doctor --junit - | xmllint -` parses."""

from __future__ import annotations

import json
import xml.dom.minidom

import pytest

from tests.inprocess import envcheck, envcheck_process
from tests.paths import DATA

H100 = DATA / "real-h100" / "f-gpu262-expect.json"


def _root_tag(text: str) -> str:
    """The tag of the root element of the XML document `text` (ExpatError if it is not one)."""
    root = xml.dom.minidom.parseString(text).documentElement
    assert root is not None
    return root.tagName


def test_junit_to_stdout_is_one_xml_document() -> None:
    run = envcheck("doctor", "--facts", str(H100), "--junit", "-")
    assert run.returncode != 3, run.stderr
    assert _root_tag(run.stdout) == "testsuites"  # ExpatError when the text report came first
    assert "Verdict" not in run.stdout


def test_markdown_to_stdout_starts_with_the_markdown() -> None:
    run = envcheck("doctor", "--facts", str(H100), "--markdown", "-")
    assert run.stdout.startswith("## "), run.stdout[:300]
    assert "Verdict:" not in run.stdout  # the text report's closing line


def test_fleet_markdown_and_junit_to_stdout_hold_only_their_format() -> None:
    md = envcheck("report", str(H100), "--markdown", "-")
    assert md.stdout.startswith("## "), md.stdout[:300]
    junit = envcheck("report", str(H100), "--junit", "-")
    assert _root_tag(junit.stdout) == "testsuites"


def test_a_path_that_is_stdout_takes_stdout_too() -> None:
    run = envcheck_process("doctor", "--facts", str(H100), "--junit", "/dev/stdout")
    assert _root_tag(run.stdout) == "testsuites"


@pytest.mark.parametrize(
    "flags",
    [
        ("--json", "--junit", "-"),
        ("--junit", "-", "--markdown", "-"),
        ("--json", "--save-baseline", "-"),
    ],
    ids=["json-junit", "junit-markdown", "json-baseline"],
)
def test_two_formats_for_one_stdout_are_a_usage_error(flags: tuple[str, ...]) -> None:
    run = envcheck("doctor", "--facts", str(H100), *flags)
    assert run.returncode == 2
    assert "write to stdout" in run.stderr
    if "--json" in flags:  # the one document on stdout is the error's
        assert json.loads(run.stdout)["exit_code"] == 2
    else:
        assert run.stdout == ""

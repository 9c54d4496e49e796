"""Outside values reach every renderer through one sanitiser: shown, never obeyed.

A hostile host (a GPU name with ESC sequences, a hostname that would start a GitHub workflow
command line, rich markup, NUL, a lone surrogate from a broken decoder) must come out of the
plain and rich reports, Markdown, JUnit, the annotations and the fleet table as visible text.
"""

from __future__ import annotations

import io
import sys
import xml.etree.ElementTree as ET

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envcheck.contracts.facts import GpuFacts, MachineFacts
from envcheck.contracts.findings import fail, warn
from envcheck.contracts.host_report import Report
from envcheck.contracts.record import replace
from envcheck.contracts.saved_report import SavedReport
from envcheck.render import sanitize
from envcheck.render.annotations import fleet_annotations, github_annotations
from envcheck.render.junit import junit_xml
from envcheck.render.markdown import render_fleet_markdown, render_markdown
from envcheck.render.sanitize import visible
from envcheck.render.table import fleet_table_text
from envcheck.render.text import render_plain, render_rich
from envcheck.verdict.fleet import FleetSummary, merge_reports
from tests import report_samples as samples

HOSTNAME = "host\n::error::pwned"
GPU = "NVIDIA \x1b]0;owned\x07A100\x1b[2J [/bold] \x00"
MESSAGE = "smoke said \x1b[31mred[/red] [link=file:///etc]x[/link] \ud800 \u202eevil"


def hostile() -> Report:
    base = samples.healthy(hostname=HOSTNAME)
    host = replace(
        base.host,
        gpus=(GpuFacts(index=0, name=GPU, compute_capability="8.0"),),
        machine=MachineFacts(hostname=HOSTNAME, os="[bold]os[/]", arch="x86_64"),
        env={"CUDA_VISIBLE_DEVICES": "0\x1b[2J"},
    )
    findings = (
        fail("smoke.crashed", MESSAGE, fix="run `x` [/bold]\n::warning::fake", layer="smoke"),
        warn("env.cuda-visible", "CUDA_VISIBLE_DEVICES=0\x1b[2J", fix=None, layer="env"),
    )
    return replace(base, host=host, findings=findings)


def assert_safe(text: str, *, command_lines_allowed: bool = False) -> None:
    assert "\x1b" not in text and "\x00" not in text and "\x07" not in text
    assert "\ud800" not in text and "\u202e" not in text
    assert not any(0x80 <= ord(c) <= 0x9F for c in text)
    if not command_lines_allowed:
        assert not [line for line in text.splitlines() if line.lstrip().startswith("::")]
    text.encode("utf-8")  # a lone surrogate would raise here (and on stdout)


def test_plain_report() -> None:
    out = io.StringIO()
    render_plain(hostile(), out, explain=True)
    assert_safe(out.getvalue())
    assert (
        "\\x1b]0;owned\\x07A100" in out.getvalue() and "— host\\n::error::pwned," in out.getvalue()
    )


def test_rich_report_never_reads_markup_from_values() -> None:
    out = io.StringIO()
    render_rich(hostile(), out, explain=True)
    text = out.getvalue()
    assert "[/bold]" in text and "[/red]" in text  # shown as typed, not a MarkupError
    # rich's own styling is ESC sequences: only ours may appear, so check the values' text
    assert "\\x1b]0;owned\\x07" in text and "]0;owned\x07" not in text


def test_markdown() -> None:
    md = render_markdown(hostile())
    assert_safe(md)
    assert "<script" not in md


def test_junit() -> None:
    xml = junit_xml([hostile()])
    assert_safe(xml)
    ET.fromstring(xml.encode("utf-8"))


def test_annotations_never_start_a_second_command() -> None:
    lines = github_annotations(hostile())
    for line in lines:
        assert "\n" not in line and "\r" not in line and line.startswith("::")
        assert_safe(line, command_lines_allowed=True)


def test_fleet_table_markdown_and_annotations() -> None:
    summary: FleetSummary = merge_reports([_saved(hostile())])
    assert_safe(fleet_table_text(summary))
    assert_safe(render_fleet_markdown(summary))
    for line in fleet_annotations(summary):
        assert "\n" not in line


def _saved(report: Report) -> SavedReport:
    return SavedReport(source="hostile.json", document=report.to_json())


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("a\x1b[2Jb", "a\\x1b[2Jb"),
        ("x\ny", "x\\ny"),
        ("\x00", "\\x00"),
        ("\x9b", "\\x9b"),
        ("\ud800", "\\ud800"),
        ("\u202e", "\\u202e"),
        ("\u2028", "\\u2028"),
        ("::error::x", "\\x3a:error::x"),
        ("NVIDIA A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB"),
        ("Grüße ✓", "Grüße ✓"),
    ],
    ids=[
        "esc",
        "newline",
        "nul",
        "c1-csi",
        "surrogate",
        "bidi",
        "line-separator",
        "command",
        "plain",
        "unicode",
    ],
)
def test_visible(raw: str, shown: str) -> None:
    assert visible(raw) == shown


def test_every_unsafe_character_is_escaped_even_alone() -> None:
    """`visible()` returns a printable value as it is, without its regexes: right only
    while every character they escape is one `str.isprintable` refuses."""
    unsafe = sanitize._unsafe(keep_lines=False)
    chars = [chr(c) for c in range(sys.maxunicode + 1) if unsafe.match(chr(c))]
    assert len(chars) > 2048  # the surrogates alone
    assert [hex(ord(c)) for c in chars if visible(c) == c] == []
    assert [hex(ord(c)) for c in chars if visible(c, keep_lines=True) == c] == [hex(ord("\n"))]


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_visible_is_one_safe_line_for_any_text(text: str) -> None:
    shown = visible(text)
    assert "\n" not in shown and "\r" not in shown
    assert_safe(shown)
    shown_lines = visible(text, keep_lines=True)
    assert_safe(shown_lines)
    assert shown_lines.count("\n") == text.replace("\r\n", "\n").count("\n")


def test_pull_progress_shows_hostile_engine_output_without_obeying_it() -> None:
    """Layer ids and retry notes come from the engine's pull stream: a rich Progress description
    is markup, so `[/bold]` there was a MarkupError (exit 3)."""
    from rich.console import Console

    from envcheck.contracts.pull_events import LayerProgress, PullProgress
    from envcheck.render.progress import PlainDisplay, RichDisplay

    progress = PullProgress()
    layer = LayerProgress(
        "[/bold]\x1b[2J", size=10, phase="downloading", note="Retrying [/red]\n::error::x"
    )
    progress.layers[layer.id] = layer
    rich_out, plain_out = io.StringIO(), io.StringIO()
    rich = RichDisplay(
        rich_out, console=Console(file=rich_out, force_terminal=True, color_system=None)
    )
    plain = PlainDisplay(plain_out, interval=0.0)
    for display in (rich, plain):
        display.start("127.0.0.1:5000/x:1", progress)
        display.update(progress, layer)
        display.note("engine said \x1b]0;t\x07")
        display.stop()
    assert "[/bold]" in rich_out.getvalue() and "Retrying [/red]" in rich_out.getvalue()
    assert_safe(plain_out.getvalue())
    assert "\x1b]0;t" not in rich_out.getvalue() and "\x1b[2J" not in rich_out.getvalue()

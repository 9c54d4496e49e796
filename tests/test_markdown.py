"""`--markdown FILE` / the step summary: checked for each verdict, rendered by a GFM table parser."""

from __future__ import annotations

import html
import re

import pytest
from markdown_it import MarkdownIt

from envcheck.findings import fail, passed, warn
from envcheck.fleet import merge_reports
from envcheck.render.markdown import render_fleet_markdown, render_markdown
from envcheck.render.sanitize import visible
from envcheck.report import Report
from envcheck.saved_report import SavedReport
from tests import report_samples as samples

GFM = MarkdownIt("commonmark", {"html": True}).enable("table")


def _tables(markdown: str) -> list[list[list[str]]]:
    """Every table as rows of cell *text*, the way GitHub would show it."""
    tables = []
    for table in re.findall(r"<table>(.*?)</table>", GFM.render(markdown), flags=re.DOTALL):
        rows = re.findall(r"<tr>(.*?)</tr>", table, flags=re.DOTALL)
        tables.append(
            [
                [
                    html.unescape(re.sub(r"<[^>]+>", "", cell)).strip()
                    for cell in re.findall(r"<t[hd]>(.*?)</t[hd]>", row, flags=re.DOTALL)
                ]
                for row in rows
            ]
        )
    return tables


@pytest.mark.parametrize(
    ("builder", "verdict", "exit_code"),
    [(b, v, e) for _, b, v, e in samples.BY_VERDICT],
    ids=[i for i, *_ in samples.BY_VERDICT],
)
def test_summary_for_each_verdict(builder, verdict, exit_code):
    report: Report = builder()
    md = render_markdown(report)
    headline = md.splitlines()[0]
    assert headline.startswith("## ")
    assert f"**{verdict}**" in headline and f"(exit {exit_code})" in headline
    assert report.host.machine.hostname in md
    assert report.image.ref in md

    problems = [f for f in report.findings if f.severity != "pass"]
    tables = _tables(md)
    if problems:
        header, *rows = tables[0]
        assert header == ["", "Check", "Layer", "What was found", "Fix"]
        assert [(r[1], r[3], r[4]) for r in rows] == [
            (f.id, f.message, f.fix) for f in sorted(problems, key=lambda f: f.severity != "fail")
        ]
    else:
        assert f"All {len(report.findings)} checks passed." in md
    passed_rows = next(t for t in tables if t[0] == ["Check", "Layer", "What was found"])[1:]
    assert [r[0] for r in passed_rows] == [f.id for f in report.findings if f.severity == "pass"]


@pytest.mark.parametrize(
    ("verdict", "icon", "words"),
    [
        ("pass", "✅", "can train PaddlePaddle on its GPU"),
        ("warn", "⚠️", "usable, with 1 warning"),
        ("fail", "❌", "1 check failed"),
        ("cpu-fallback", "🛑", "ran on the CPU, not on the GPU"),
    ],
    ids=["pass", "warn", "fail", "cpu-fallback"],
)
def test_headline_says_what_the_verdict_means(verdict, icon, words):
    builder = {v: b for _, b, v, _ in samples.BY_VERDICT}[verdict]
    headline = render_markdown(builder()).splitlines()[0]
    assert headline.startswith(f"## {icon} envcheck: **{verdict}**")
    assert words in headline


def test_failures_come_before_warnings():
    report = samples.report(
        (
            warn("image.unconfirmed", "tag not in the docs", fix="pin a tag", layer="image"),
            fail(
                "driver.too-old",
                "driver 470.82.01 is older than 525.60.13",
                fix="upgrade the driver",
                layer="driver",
            ),
            passed("gpu.supported", "A100 ok", layer="gpu"),
        )
    )
    ids = [row[1] for row in _tables(render_markdown(report))[0][1:]]
    assert ids == ["driver.too-old", "image.unconfirmed"]


def test_hostile_text_stays_in_its_cell_and_reads_the_same():
    message = (
        "ld.so: libcudnn.so.9 | not found <script>alert(1)</script> *bold* [link](x)\nsecond line"
    )
    fix = "run `sudo ldconfig | tee /dev/null` then retry_later"
    report = samples.report((fail("cudnn.missing", message, fix=fix, layer="cuda"),))
    (row,) = _tables(render_markdown(report))[0][1:]
    assert len(row) == 5
    assert (
        row[3] == " ".join(message.split("\n")[0].split()) + "\\nsecond line"
    )  # one line, \n shown
    assert row[4] == fix.replace("`", "")
    assert "<script>" not in GFM.render(render_markdown(report))


def test_smoke_details_show_scalars_only():
    md = render_markdown(samples.healthy())
    smoke = next(t for t in _tables(md) if t[0] == ["Field", "Value"])
    assert ["loss_last", "0.42"] in smoke
    assert all(row[0] != "trace" for row in smoke)


def test_no_passed_block_when_nothing_passed():
    report = samples.report(
        (fail("driver.absent", "no NVIDIA driver", fix="install it", layer="driver"),)
    )
    md = render_markdown(report)
    assert "passed</summary>" not in md and "All 0 checks" not in md


def test_fleet_summary_has_a_row_per_host_and_layer_columns():
    docs = [
        samples.healthy(),
        samples.driver_upgraded_without_reboot(),
        samples.cpu_wheel_in_image(),
    ]
    summary = merge_reports(
        [SavedReport(f"{r.host.machine.hostname}.json", r.to_json()) for r in docs]
    )
    md = render_fleet_markdown(summary)
    assert md.startswith("## 🛑 envcheck fleet: 3 hosts — 1 pass, 1 fail, 1 cpu-fallback (exit 6)")
    header, *rows = _tables(md)[0]
    assert header == ["Host", "Verdict", "driver", "gpu", "paddle", "smoke", "First problem"]
    assert [r[0] for r in rows] == ["gpu-node-1", "gpu-node-3", "gpu-node-4"]
    node3 = rows[1]
    assert node3[1] == "❌ fail" and node3[2] == "❌" and node3[3] == "—"
    assert node3[-1].startswith("driver.version-mismatch: NVML: Driver/library version mismatch")


def test_fleet_summary_names_duplicates():
    old = samples.healthy(meta={"generated_at": "2026-03-01T09:00:00Z"})
    new = samples.driver_upgraded_without_reboot(hostname="gpu-node-1")
    summary = merge_reports(
        [SavedReport("old.json", old.to_json()), SavedReport("new.json", new.to_json())]
    )
    assert (
        "Duplicate host `gpu-node-1`: kept `new.json` (newest), ignored `old.json`."
        in render_fleet_markdown(summary)
    )


@pytest.mark.parametrize(
    "finding_id",
    ["driver.x`<b>hi</b>`\n\n# heading", "a``b`", "`lead", "lone\udcffsurrogate", "p|ipe"],
    ids=["backtick-html-blank-lines", "runs", "leading", "surrogate", "pipe"],
)
def test_a_reports_finding_id_stays_inside_its_code_span(finding_id: str) -> None:
    """#23.2/#23.3: a saved report's finding id is not ours: a backtick in it closed the span (raw
    HTML and blank lines reached $GITHUB_STEP_SUMMARY), a lone surrogate crashed the write."""
    report = samples.report((fail(finding_id, "m", fix="f", layer="driver"),))
    summary = merge_reports([SavedReport("n.json", report.to_json())])
    shown = " ".join(visible(finding_id).split())
    for md in (render_fleet_markdown(summary), render_markdown(report)):
        md.encode("utf-8")
        html_out = GFM.render(md)
        assert "<b>" not in html_out and "<h1>" not in html_out
        spans = [html.unescape(c).strip() for c in re.findall(r"<code>(.*?)</code>", html_out)]
        assert shown in spans, (shown, spans)

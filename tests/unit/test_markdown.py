"""`--markdown FILE` / the step summary: checked for each verdict, rendered by a GFM table parser."""

from __future__ import annotations

import html
import re

import pytest
from markdown_it import MarkdownIt

from envcheck.contracts.facts import from_dict
from envcheck.contracts.findings import fail, passed, warn
from envcheck.contracts.host_report import Report
from envcheck.contracts.record import replace
from envcheck.contracts.saved_report import SavedReport
from envcheck.contracts.smoke_report import SmokeDocument
from envcheck.render.markdown import render_fleet_markdown, render_markdown
from envcheck.render.sanitize import visible
from envcheck.verdict.fleet import merge_reports
from tests import report_samples as samples
from tests import smoke_samples

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


def _items(markdown: str) -> list[str]:
    """Every list item's text, the way GitHub would show it (its paragraphs on their lines)."""
    items = re.findall(r"<li>(.*?)</li>", GFM.render(markdown), flags=re.DOTALL)
    return [html.unescape(re.sub(r"<[^>]+>", "", item)).strip() for item in items]


@pytest.mark.parametrize(
    ("builder", "verdict", "exit_code"),
    [(b, v, e) for _, b, v, e in samples.BY_VERDICT],
    ids=[i for i, *_ in samples.BY_VERDICT],
)
def test_summary_for_each_verdict(builder: samples.Builder, verdict: str, exit_code: int) -> None:
    report: Report = builder()
    md = render_markdown(report)
    headline = md.splitlines()[0]
    assert headline.startswith("## ")
    assert f"**{verdict}**" in headline and f"(exit {exit_code})" in headline
    hostname, image = report.host.machine.hostname, report.image
    assert hostname is not None and hostname in md
    assert image is not None and image.ref is not None and image.ref in md

    problems = [f for f in report.findings if f.severity != "pass"]
    tables = _tables(md)
    if problems:  # each problem an item: its id, layer and words, then its fix under it
        expected = sorted(problems, key=lambda f: f.severity != "fail")
        items = _items(md)
        assert len(items) == len(expected)
        for item, f in zip(items, expected):
            words, *fix = item.split("\n")
            assert words.endswith(f"{f.id} ({f.layer}): {f.message}")
            assert fix == ([f"Fix: {f.fix.replace('`', '')}"] if f.fix else [])
    else:
        assert f"All {len(report.findings)} checks passed." in md
    passed_rows = next(t for t in tables if t[0] == ["Check", "Layer", "What was found"])[1:]
    assert [r[0] for r in passed_rows] == [f.id for f in report.findings if f.severity == "pass"]


@pytest.mark.parametrize(
    ("verdict", "icon", "words"),
    [
        ("pass", "✅", "— GPU host, static checks only (exit 0)"),  # what the proof shows
        ("warn", "⚠️", "static checks only, with 1 warning"),
        ("fail", "❌", "1 check failed"),
        ("cpu-fallback", "🛑", "ran on the CPU, not on the GPU"),
    ],
    ids=["pass", "warn", "fail", "cpu-fallback"],
)
def test_headline_says_what_the_verdict_means(verdict: str, icon: str, words: str) -> None:
    builder = {v: b for _, b, v, _ in samples.BY_VERDICT}[verdict]
    headline = render_markdown(builder()).splitlines()[0]
    assert headline.startswith(f"## {icon} envcheck: **{verdict}**")
    assert words in headline


def test_failures_come_before_warnings() -> None:
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
    ids = [item.split()[1] for item in _items(render_markdown(report))]
    assert ids == ["driver.too-old", "image.unconfirmed"]


def test_hostile_text_stays_in_its_item_and_reads_the_same() -> None:
    message = (
        "ld.so: libcudnn.so.9 | not found <script>alert(1)</script> *bold* [link](x)\nsecond line"
    )
    fix = "run `sudo ldconfig | tee /dev/null` then retry_later"
    report = samples.report((fail("cudnn.missing", message, fix=fix, layer="cuda"),))
    (item,) = _items(render_markdown(report))
    words, shown_fix = item.split("\n")
    # one line, \n shown
    assert words.endswith(" ".join(message.split("\n")[0].split()) + "\\nsecond line")
    assert shown_fix == "Fix: " + fix.replace("`", "")
    assert "<script>" not in GFM.render(render_markdown(report))


def test_the_smoke_has_a_row_per_device_in_words_not_python_values() -> None:
    runs = smoke_samples.on_gpu(smoke_samples.result(), gpus=2)["runs"]
    smoke_doc = {
        "mode": "container",
        "image": "paddlepaddle/paddle:3.3.1-gpu-cuda12.9-cudnn9.9",
        "gpu_expected": True,
        "gpu_expected_reason": "2 usable GPUs",
        "gpu_refused": None,
        "status": "pass",
        "timed_out": False,
        "duration_s": 12.31,
        "runs": runs,
    }
    section = from_dict(SmokeDocument, smoke_doc, "smoke", numbers_as_text=False)
    md = render_markdown(replace(samples.healthy(), smoke=section))
    (smoke,) = [t for t in _tables(md) if t[0][:2] == ["device asked", "device used"]]
    assert smoke[1] == ["gpu:0", "gpu:0", "0.694 → 0.217", "2.4e+03", "0.141", "14/14 right", "24"]
    assert [row[0] for row in smoke[1:]] == ["gpu:0", "gpu:1"]
    assert (
        "Ran in a container of paddlepaddle/paddle:3.3.1-gpu-cuda12.9-cudnn9.9 · 12.3 s · "
        "a GPU was expected: 2 usable GPUs"
    ) in html.unescape(re.sub(r"<[^>]+>", "", GFM.render(md)))
    assert smoke[0] == [
        "device asked",
        "device used",
        "loss start → end",
        "steps/s",
        "first step s",
        "known answers",
        "peak GPU MiB",
    ]
    assert all(cell not in ("None", "True", "False") for row in smoke for cell in row)
    assert "### Smoke training: " in md


def test_no_passed_block_when_nothing_passed() -> None:
    report = samples.report(
        (fail("driver.absent", "no NVIDIA driver", fix="install it", layer="driver"),)
    )
    md = render_markdown(report)
    assert "passed</summary>" not in md and "All 0 checks" not in md


def test_fleet_summary_has_a_row_per_host_with_its_root_causes() -> None:
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
    assert header == ["Host", "Verdict (exit)", "Root causes"]
    assert [r[0] for r in rows] == ["gpu-node-1", "gpu-node-3", "gpu-node-4"]
    node3 = rows[1]
    assert node3[1] == "❌ fail (1)"
    assert node3[-1] == "driver.version-mismatch"  # its words and fix are in the cause above
    group = next(i for i in _items(md) if i.startswith("❌ driver.version-mismatch"))
    assert group.split("\n") == [
        "❌ driver.version-mismatch on 1 host: gpu-node-3",
        "Fix: reboot the machine (or reload the nvidia kernel modules) after a driver upgrade",
        (
            "gpu-node-3: NVML: Driver/library version mismatch (user space 550.54.14, kernel "
            "module 535.104.05)"
        ),
    ]


def test_fleet_summary_names_duplicates() -> None:
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
    """A saved report's finding id is not ours: a backtick in it closed the span (raw
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


def test_a_pass_proven_on_a_gpu_says_which_gpu_trained() -> None:
    """Before: every pass read "this machine can train PaddlePaddle on its GPU", whatever the
    proof was."""
    from envcheck.contracts.findings import passed
    from envcheck.contracts.record import replace

    report = samples.healthy()
    proven = passed("smoke.pass", "trained", layer="smoke", devices=["gpu:0"], witnessed=["gpu:0"])
    report = replace(
        report,
        findings=(*[f for f in report.findings if f.id != "smoke.pass"], proven),
        proof="gpu-trained",
    )
    assert render_markdown(report).splitlines()[0] == (
        "## ✅ envcheck: **pass** — trained on GPU 0 (exit 0)"
    )

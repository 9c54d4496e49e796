"""The job summary as a person sees it: the Markdown rendered by python-markdown and laid
out by headless Chromium (tests/browser.py), at the width of a job summary on a laptop.

Before: the findings table was 981 px wide in 852 px of room (the Fix column behind a horizontal
scroll), 7 check ids broke at their hyphen, and the smoke was a table of Python `None`/`True`/
`False`. Now each fix sits under its finding, the smoke has its table, and a fleet lists its
problems grouped with host ranges and each group's fix.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from envcheck.contracts.host_report import Report
from envcheck.contracts.saved_report import SavedReport, parse_report
from envcheck.render.markdown import render_fleet_markdown, render_markdown
from envcheck.verdict.fleet import merge_reports
from tests import report_samples as samples
from tests.browser import measure
from tests.fleet_samples import real_fleet
from tests.paths import DATA

pytestmark = pytest.mark.browser

REAL_H100 = sorted(p for p in (DATA / "real-h100").glob("*.json") if p.stem != "witness")
CHECK_ID = re.compile(r"[a-z0-9]+(?:\.[a-z0-9-]+)+")
PYTHON_REPR = re.compile(r"\b(None|True|False)\b")


def _real(path: Path) -> Report:
    return parse_report(SavedReport(path.name, json.loads(path.read_text()))).report


def _reports() -> list[Report]:
    return [_real(p) for p in REAL_H100] + [build() for _, build, _, _ in samples.BY_VERDICT]


def _fleet_markdown() -> str:
    fleet = [samples.driver_upgraded_without_reboot(hostname=f"gpu{i:03d}") for i in range(1, 13)]
    fleet += [samples.cpu_wheel_in_image(hostname=f"gpu{i:03d}") for i in range(13, 16)]
    fleet += [samples.healthy(hostname=f"gpu{i:03d}") for i in range(16, 27)]
    return render_fleet_markdown(
        merge_reports([SavedReport(f"{i}.json", r.to_json()) for i, r in enumerate(fleet)])
    )


def test_every_report_fits_the_summary_width_and_no_check_id_breaks() -> None:
    page = "\n\n---\n\n".join(render_markdown(r) for r in _reports())
    laid_out = measure(page)
    assert laid_out["tables"], "the smoke tables at least"
    for table in laid_out["tables"]:
        assert table["scroll"] <= table["room"], table  # nothing behind a horizontal scroll
    assert [c for c in laid_out["wrapped_code"] if CHECK_ID.fullmatch(c)] == []


def test_each_fix_reads_under_its_finding() -> None:
    report = _real(REAL_H100[-1])  # the recorded H100 with Paddle 2.6.2: five failures
    text = measure(render_markdown(report))["text"]
    problems = sorted(
        (f for f in report.findings if f.severity != "pass"), key=lambda f: f.severity != "fail"
    )
    starts = [text.index(f.id) for f in problems] + [text.index("Smoke training")]
    assert starts == sorted(starts)
    for f, start, end in zip(problems, starts, starts[1:]):
        assert ("\nFix: " in text[start:end]) == bool(f.fix), text[start:end]


def test_the_smoke_has_its_own_table_and_no_python_repr() -> None:
    for report in _reports():
        md = render_markdown(report)
        if not report.smoke:
            continue
        smoke = md[md.index("### Smoke training") :].split("<details>")[0]
        assert not PYTHON_REPR.search(smoke), smoke
        assert not re.search(r"\|\s*(None|True|False)\s*\|", md)
        if report.smoke.runs:
            assert "| device asked | device used | loss start → end | steps/s |" in smoke
            assert "known answers" in smoke and "peak GPU MiB" in smoke


def test_the_fleet_summary_groups_problems_with_host_ranges_and_fixes() -> None:
    md = _fleet_markdown()
    laid_out = measure(md)
    text = laid_out["text"]
    assert "driver.version-mismatch on 12 hosts: gpu[001-012]" in text
    assert "paddle.cpu-build on 3 hosts: gpu[013-015]" in text
    assert "Fix: reboot the machine (or reload the nvidia kernel modules)" in text
    assert text.index("gpu[001-012]") < text.index("Host\tVerdict")  # problems before hosts
    for table in laid_out["tables"]:
        assert table["scroll"] <= table["room"], table


@pytest.mark.parametrize("mode", [["--no-smoke"], ["--in-process"]], ids=["static", "smoke"])
def test_a_cpu_hosts_summary_never_claims_a_gpu_it_did_not_prove(mode: list[str]) -> None:
    """Before: every pass was headed "this machine can train PaddlePaddle on its GPU", this
    driverless machine's static check and its CPU training included."""
    from tests.inprocess import envcheck

    run = envcheck("doctor", "--json", *mode)
    report = parse_report(SavedReport("doctor.json", json.loads(run.stdout))).report
    assert not report.host.gpus
    text = measure(render_markdown(report))["text"]
    headline = text.splitlines()[0]
    assert "CPU host" in headline and "GPU" not in headline, headline
    assert re.search(r"(trained on|train \w+ on) (its |the )?GPU", text) is None, text


def test_26_real_reports_lead_with_their_causes_and_fit_the_page() -> None:
    """Before: a column per layer made the hosts' table wider than a job summary, and a host
    was counted under its first problem only; now the causes come first, each with every host
    that has it, and the one table fits."""
    summary = merge_reports(real_fleet())
    laid_out = measure(render_fleet_markdown(summary))
    text = laid_out["text"]
    causes = summary.causes()
    for cause in causes:
        assert f"{cause.id} on {len(cause.hosts)} host" in text, cause.id
    last_cause = max(text.index(f"{c.id} on ") for c in causes)
    assert last_cause < text.index("Host\tVerdict")
    (table,) = laid_out["tables"]
    assert table["scroll"] <= table["room"], table
    assert [c for c in laid_out["wrapped_code"] if CHECK_ID.fullmatch(c)] == []

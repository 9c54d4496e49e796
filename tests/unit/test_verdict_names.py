"""The verdict and severity names are said once: `envcheck.contracts.host_report.Verdict` and
`envcheck.contracts.findings.Severity`, Literals mypy checks every table key against; here, that
every per-verdict table covers each of them and nothing else, and that a fleet and a saved report
rank them as their meaning does (written here from what each verdict means, not read off the
Literal)."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from envcheck.contracts.findings import SEVERITIES, Finding
from envcheck.contracts.host_report import VERDICTS
from envcheck.contracts.record import replace
from envcheck.contracts.saved_report import (
    HostReport,
    ReportDocumentError,
    SavedReport,
    parse_report,
)
from envcheck.render import markdown, table, text
from envcheck.verdict.fleet import merge_reports
from tests import report_samples as samples


@pytest.mark.parametrize(
    "styles",
    [text.VERDICT_STYLE, markdown.VERDICT_ICON, table.STYLE],
    ids=["text-style", "markdown-icon", "fleet-style"],
)
def test_every_per_verdict_table_names_each_verdict_once(styles: Mapping[str, str]) -> None:
    assert sorted(styles) == sorted(VERDICTS)


@pytest.mark.parametrize(
    "styles", [markdown.SEVERITY_ICON, text._MARK, text._STYLE], ids=["icon", "mark", "style"]
)
def test_every_per_severity_table_names_each_severity_once(styles: Mapping[str, str]) -> None:
    assert sorted(styles) == sorted(SEVERITIES)


# Which of two verdicts a fleet shows, said from what each means to the person who trains, not
# read off the Literal: each line is worse than the one before it.
WORST_LAST = (
    ("pass", "the smoke trained on the GPU"),
    ("warn", "it trains, with something to look at"),
    ("fail", "a check failed: the job stops and says so"),
    ("cpu-fallback", "it trains on the CPU and looks fine: slower, and silent"),
    ("wrong-results", "the GPU computes wrong numbers: worse than slow right ones"),
)
WORSE_PAIRS = [
    (worse, better) for i, (worse, _) in enumerate(WORST_LAST) for better, _ in WORST_LAST[:i]
]


def fleet_host(verdict: str, name: str) -> HostReport:
    report = samples.healthy(name)
    return HostReport(f"{name}.json", name, verdict, 0, report)  # type: ignore[arg-type]


@pytest.mark.parametrize(("worse", "better"), WORSE_PAIRS, ids=[f"{w}>{b}" for w, b in WORSE_PAIRS])
def test_a_fleet_shows_the_worse_of_two_verdicts_in_either_order(worse: str, better: str) -> None:
    for pair in ((worse, better), (better, worse)):
        summary = merge_reports([fleet_host(v, f"node-{i}") for i, v in enumerate(pair)])
        assert summary.verdict == worse


@pytest.mark.parametrize(
    ("severities", "worst"),
    [
        (("pass", "warn"), "warn"),
        (("warn", "pass"), "warn"),
        (("warn", "fail"), "fail"),
        (("fail", "warn", "pass"), "fail"),
        (("pass", "pass"), "pass"),
    ],
)
def test_a_layer_shows_its_worst_finding(severities: tuple[str, ...], worst: str) -> None:
    findings = tuple(
        Finding(id=f"driver.case-{i}", severity=s, message="m", layer="driver")  # type: ignore[arg-type]
        for i, s in enumerate(severities)
    )
    host = fleet_host("pass", "node-0")
    host = replace(host, report=replace(host.report, findings=findings))
    assert host.layer_severities() == {"driver": worst}


def test_the_recorded_verdicts_are_the_known_ones() -> None:
    assert sorted(VERDICTS) == sorted(v for v, _ in WORST_LAST)


@pytest.mark.parametrize("verdict", VERDICTS)
def test_the_markdown_headline_says_every_verdict(verdict: str) -> None:
    line = markdown.headline(verdict, [], 0)  # type: ignore[arg-type]  # each of the Literal
    assert f"**{verdict}**" in line and markdown.VERDICT_ICON[verdict] in line  # type: ignore[index]


def test_a_saved_report_with_an_unknown_verdict_names_the_known_ones() -> None:
    doc = samples.healthy().to_json() | {"verdict": "maybe"}
    known = "pass, warn, fail, cpu-fallback, wrong-results"  # as a user reads it, worst last
    with pytest.raises(ReportDocumentError, match=known):
        parse_report(SavedReport(source="mem.json", document=doc))

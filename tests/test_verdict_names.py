"""The verdict and severity names are said once (#26.6b): `envcheck.contracts.host_report.Verdict`
and `envcheck.contracts.findings.Severity`, Literals mypy checks every table key against; here, that
every per-verdict table covers each of them and nothing else, and that the order of weight the fleet
and the saved reports use is the one the Literal states."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from envcheck.contracts.findings import SEVERITIES
from envcheck.contracts.host_report import VERDICTS
from envcheck.contracts.saved_report import ReportDocumentError, SavedReport, parse_report
from envcheck.render import markdown, table, text
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


def test_the_order_of_weight_is_the_literals_worst_last() -> None:
    assert VERDICTS == ("pass", "warn", "fail", "cpu-fallback", "wrong-results")
    assert SEVERITIES == ("pass", "warn", "fail")


@pytest.mark.parametrize("verdict", VERDICTS)
def test_the_markdown_headline_says_every_verdict(verdict: str) -> None:
    line = markdown.headline(verdict, [], 0)  # type: ignore[arg-type]  # each of the Literal
    assert f"**{verdict}**" in line and markdown.VERDICT_ICON[verdict] in line  # type: ignore[index]


def test_a_saved_report_with_an_unknown_verdict_names_the_known_ones() -> None:
    doc = samples.healthy().to_json() | {"verdict": "maybe"}
    with pytest.raises(ReportDocumentError, match=", ".join(VERDICTS)):
        parse_report(SavedReport(source="mem.json", document=doc))

"""`--junit FILE`: one test case per check, valid JUnit XML that round-trips through junitparser."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from junitparser import Failure, JUnitXml

from envcheck.contracts.errors import UsageError
from envcheck.contracts.findings import fail, passed
from envcheck.contracts.host_report import Report
from envcheck.render.junit import junit_xml, write_fleet_junit, write_junit
from envcheck.render.sanitize import visible
from tests import report_samples as samples
from tests.inprocess import process_env


def _load(path: Path) -> JUnitXml:
    xml = JUnitXml.fromfile(str(path))
    assert isinstance(xml, JUnitXml), "root must be <testsuites>"
    return xml


@pytest.mark.parametrize(
    ("builder", "verdict", "exit_code"),
    [(b, v, e) for _, b, v, e in samples.BY_VERDICT],
    ids=[i for i, *_ in samples.BY_VERDICT],
)
def test_one_testcase_per_check_with_layer_as_classname(
    tmp_path: Path, builder: samples.Builder, verdict: str, exit_code: int
) -> None:
    report: Report = builder()
    out = tmp_path / "envcheck.xml"
    write_junit(report, str(out), process_env())

    xml = _load(out)
    (suite,) = list(xml)
    cases = list(suite)
    assert [(c.classname, c.name) for c in cases] == [(f.layer, f.id) for f in report.findings]
    assert suite.tests == xml.tests == len(report.findings)
    assert suite.failures == xml.failures == sum(f.severity == "fail" for f in report.findings)
    assert suite.errors == suite.skipped == 0
    assert suite.hostname == report.host.machine.hostname
    # junitparser leaves properties() unannotated
    props = {p.name: p.value for p in suite.properties()}  # type: ignore[no-untyped-call]
    assert props["verdict"] == verdict
    assert props["exit_code"] == str(exit_code)
    assert report.image and props["image_digest"] == report.image.digest


@pytest.mark.parametrize(
    "builder",
    [samples.driver_upgraded_without_reboot, samples.cpu_wheel_in_image],
    ids=["driver-upgraded-without-reboot", "cpu-wheel-in-image"],
)
def test_failure_carries_message_and_fix(tmp_path: Path, builder: samples.Builder) -> None:
    report = builder()
    out = tmp_path / "r.xml"
    write_junit(report, str(out), process_env())
    failed = {f.id: f for f in report.findings if f.severity == "fail"}
    seen = {}
    for case in next(iter(_load(out))):
        results = case.result
        if case.name not in failed:
            assert case.is_passed and not results
            continue
        (result,) = results
        assert isinstance(result, Failure)
        seen[case.name] = result
        finding = failed[case.name]
        assert result.message == finding.message
        assert result.type == finding.id
        assert finding.message in result.text and f"Fix: {finding.fix}" in result.text
    assert set(seen) == set(failed)


def test_warning_is_a_passing_case_that_says_warning_and_fix(tmp_path: Path) -> None:
    report = samples.unconfirmed_image_tag()
    out = tmp_path / "w.xml"
    write_junit(report, str(out), process_env())
    (case,) = [c for c in next(iter(_load(out))) if c.name == "image.unconfirmed"]
    assert case.is_passed and not case.is_skipped
    assert case.system_out.startswith("WARNING: tag 3.3.1")
    assert "Fix: pin a tag" in case.system_out


def test_round_trips_through_junitparser_unchanged(tmp_path: Path) -> None:
    first, second = tmp_path / "a.xml", tmp_path / "b.xml"
    write_junit(samples.cpu_wheel_in_image(), str(first), process_env())
    _load(first).write(str(second))
    a, b = _load(first), _load(second)
    assert (a.tests, a.failures, a.errors, a.skipped) == (b.tests, b.failures, b.errors, b.skipped)
    assert [(c.classname, c.name, [r.message for r in c.result]) for s in a for c in s] == [
        (c.classname, c.name, [r.message for r in c.result]) for s in b for c in s
    ]


def test_follows_the_common_junit_schema_shape() -> None:
    """The constraints of the Jenkins/Ant JUnit XSD that importers enforce: required attributes,
    `properties` before the test cases, only known children."""
    root = ET.fromstring(junit_xml([samples.unconfirmed_image_tag(), samples.smoke_crashed()]))
    assert root.tag == "testsuites"
    for suite in root:
        assert suite.tag == "testsuite"
        assert {"name", "tests", "failures", "errors", "time"} <= set(suite.attrib)
        float(suite.attrib["time"])
        children = [child.tag for child in suite]
        assert children[0] == "properties" and set(children[1:]) == {"testcase"}
        for case in suite.iter("testcase"):
            assert {"name", "classname"} <= set(case.attrib)
            assert {child.tag for child in case} <= {"failure", "system-out"}
            for failure in case.iter("failure"):
                assert failure.get("message") and failure.get("type")


def test_fleet_has_one_suite_per_host_and_totals(tmp_path: Path) -> None:
    reports = [
        samples.healthy(),
        samples.driver_upgraded_without_reboot(),
        samples.cpu_wheel_in_image(),
    ]
    out = tmp_path / "fleet.xml"
    write_fleet_junit(reports, str(out), process_env())
    xml = _load(out)
    assert [s.hostname for s in xml] == ["gpu-node-1", "gpu-node-3", "gpu-node-4"]
    assert xml.tests == sum(len(r.findings) for r in reports)
    assert xml.failures == 3


def test_unwritable_path_is_a_usage_error_naming_the_flag(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"--junit .*no-such-dir"):
        write_junit(samples.healthy(), str(tmp_path / "no-such-dir" / "r.xml"), process_env())


def test_no_temp_file_left_behind(tmp_path: Path) -> None:
    write_junit(samples.healthy(), str(tmp_path / "r.xml"), process_env())
    assert [p.name for p in tmp_path.iterdir()] == ["r.xml"]


# Smoke output ends up in messages: tracebacks, ANSI colours (\x1b), NULs from a crashed process.
# XML 1.0 cannot carry most C0 controls at all, so the file must stay parseable whatever comes.
@settings(max_examples=200, deadline=None)
@given(message=st.text(), fix=st.text())
def test_any_text_gives_parseable_xml_and_readable_message(message: str, fix: str) -> None:
    report = Report(
        host=samples.host(),
        findings=(
            fail("smoke.crashed", message, fix=fix or None, layer="smoke"),
            passed("driver.ok", fix, layer="driver"),
        ),
    )
    root = ET.fromstring(junit_xml([report]).encode("utf-8"))
    failure = root.find("./testsuite/testcase/failure")
    assert failure is not None
    shown = failure.get("message") or ""
    assert shown == visible(message, keep_lines=True)
    assert not any((ord(ch) < 0x20 and ch != "\n") or 0x7F <= ord(ch) <= 0x9F for ch in shown)


def test_control_characters_are_shown_not_dropped() -> None:
    report = Report(
        host=samples.host(),
        findings=(fail("smoke.crashed", "\x1b[31mKilled\x00", fix=None, layer="smoke"),),
    )
    failure = ET.fromstring(junit_xml([report])).find("./testsuite/testcase/failure")
    assert failure is not None and failure.get("message") == "\\x1b[31mKilled\\x00"


def test_each_testcase_carries_the_time_measured_around_its_check(tmp_path: Path) -> None:
    """Before: every test case said `time="0"`. Now each carries the seconds the doctor measured
    around the check that made it (`meta.check_seconds`), the smoke's its whole run."""
    import json

    from tests.inprocess import envcheck

    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps(samples.driver_upgraded_without_reboot().to_json()))
    out = tmp_path / "envcheck.xml"
    run = envcheck("doctor", "--facts", str(facts), "--json", "--junit", str(out))
    measured = json.loads(run.stdout)["meta"]["check_seconds"]
    cases = list(ET.parse(out).getroot().iter("testcase"))
    assert cases and {c.get("name") for c in cases} == set(measured)
    for case in cases:
        seconds = measured[case.get("name")]
        assert case.get("time") == f"{seconds:.6f}" and seconds > 0


@pytest.mark.parametrize(
    "check_seconds",
    [None, "soon", {"driver.version-mismatch": -1}, {"driver.version-mismatch": True}],
    ids=["older-envcheck", "not-an-object", "negative", "boolean"],
)
def test_a_time_nothing_measured_is_left_out_never_zero(check_seconds: object) -> None:
    report = samples.driver_upgraded_without_reboot()
    meta = {**report.meta, "check_seconds": check_seconds}
    if check_seconds is None:
        del meta["check_seconds"]
    xml = ET.fromstring(junit_xml([Report(report.host, report.findings, report.image, meta=meta)]))
    cases = list(xml.iter("testcase"))
    assert cases and all("time" not in c.attrib for c in cases)

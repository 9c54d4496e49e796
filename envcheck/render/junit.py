"""JUnit XML: one `<testcase>` per check, so CI test tabs show a broken runner like a failed test.

Layout (what Jenkins, GitLab, Azure DevOps and junitparser all import):

    <testsuites name="envcheck" tests failures errors skipped time>
      <testsuite name="envcheck doctor on HOST" hostname timestamp ...>   (one per host)
        <properties> verdict, exit_code, image, image_digest, envcheck_version </properties>
        <testcase classname="LAYER" name="CHECK-ID" time="SECONDS measured around the check">
          <failure message="MESSAGE" type="CHECK-ID">MESSAGE, Fix: FIX, observed values</failure>

JUnit has no "warning" outcome: a warning is a passing test case whose `<system-out>` starts with
`WARNING:` and carries the fix. Marking it failed would break gates that pass on warnings (exit 0);
marking it skipped would claim the check did not run. Nothing is ever `skipped`: a check that could
not run is reported as a finding by the doctor itself.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from datetime import timezone
from typing import TYPE_CHECKING, Any

from envcheck.contracts.findings import Finding
from envcheck.contracts.host_report import Report
from envcheck.contracts.saved_report import report_time
from envcheck.edges.userfiles import write_output
from envcheck.render.sanitize import visible

if TYPE_CHECKING:
    from envcheck.contracts.command_env import Environment


def write_junit(report: Report, path: str, env: Environment) -> None:
    write_output(path, junit_xml([report]), flag="--junit", env=env)


def write_fleet_junit(reports: Sequence[Report], path: str, env: Environment) -> None:
    write_output(path, junit_xml(reports), flag="--junit", env=env)


def junit_xml(reports: Sequence[Report]) -> str:
    root = ET.Element("testsuites", name="envcheck")
    suites = [_suite(r) for r in reports]
    root.extend(suites)
    for attr in ("tests", "failures", "errors", "skipped"):
        root.set(attr, str(sum(int(s.get(attr, "0")) for s in suites)))
    root.set("time", _seconds(sum(float(s.get("time", "0")) for s in suites)))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _suite(report: Report) -> ET.Element:
    hostname = report.host.machine.hostname or "unknown-host"
    failures = sum(f.severity == "fail" for f in report.findings)
    suite = ET.Element(
        "testsuite",
        name=_xml(f"envcheck doctor on {hostname}"),
        tests=str(len(report.findings)),
        failures=str(failures),
        errors="0",
        skipped="0",
        time=_seconds(_duration(report.meta)),
        hostname=_xml(hostname),
    )
    timestamp = _timestamp(report.meta)
    if timestamp:
        suite.set("timestamp", timestamp)
    suite.append(_properties(report))
    seconds = _check_seconds(report.meta)
    suite.extend(_testcase(f, seconds.get(f.id)) for f in report.findings)
    return suite


def _properties(report: Report) -> ET.Element:
    props = ET.Element("properties")
    values: dict[str, Any] = {
        "verdict": report.verdict,
        "exit_code": int(report.exit_status),
        "image": report.image.ref if report.image else None,
        "image_digest": report.image.digest if report.image else None,
        "envcheck_version": report.meta.get("envcheck_version"),
    }
    for name, value in values.items():
        if value is not None:
            ET.SubElement(props, "property", name=name, value=_xml(str(value)))
    return props


def _testcase(finding: Finding, seconds: float | None) -> ET.Element:
    """`time`: what was measured around the check that made the finding (the doctor's
    `meta.check_seconds`); left out where nothing was (a report of an older envcheck)."""
    case = ET.Element("testcase", classname=_xml(finding.layer), name=_xml(finding.id))
    if seconds is not None:
        case.set("time", f"{seconds:.6f}")
    if finding.severity == "fail":
        failure = ET.SubElement(
            case, "failure", message=_xml(finding.message), type=_xml(finding.id)
        )
        failure.text = _xml(_body(finding))
    elif finding.severity == "warn":
        ET.SubElement(case, "system-out").text = _xml("WARNING: " + _body(finding))
    return case


def _body(finding: Finding) -> str:
    lines = [finding.message]
    if finding.fix:
        lines.append(f"Fix: {finding.fix}")
    remedy = finding.remedy
    if remedy is not None and remedy.commands:  # each command whole on a line, to copy
        lines += [f"  $ {c.shell()}" for c in remedy.commands]
    lines += [f"{key}: {value}" for key, value in finding.observed.items()]
    return "\n".join(lines)


def _duration(meta: dict[str, Any]) -> float:
    for key in ("duration_s", "elapsed_s", "seconds"):
        value = meta.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
            return float(value)
    return 0.0


def _check_seconds(meta: dict[str, Any]) -> dict[str, float]:
    """`meta.check_seconds` of a report, keeping only what is a number of seconds (a saved
    report may hold anything)."""
    found = meta.get("check_seconds")
    if not isinstance(found, dict):
        return {}
    return {
        str(check): float(s)
        for check, s in found.items()
        if isinstance(s, (int, float)) and not isinstance(s, bool) and 0 <= s < 1e9
    }


def _timestamp(meta: dict[str, Any]) -> str | None:
    """UTC without a zone suffix: the JUnit XSD's timestamp pattern has none, and Jenkins rejects
    the file over a trailing `Z`."""
    when = report_time(meta)
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S") if when else None


def _seconds(value: float) -> str:
    return f"{value:.3f}"


def _xml(text: str) -> str:
    """XML 1.0 forbids most C0 controls even as character references; ElementTree writes them as
    is and the importer then rejects the whole file. Smoke output (tracebacks, progress bars with
    ESC) does carry them: the one sanitiser shows them as visible escapes."""
    return visible(text, keep_lines=True)

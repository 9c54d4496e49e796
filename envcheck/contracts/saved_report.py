"""A saved `envcheck doctor --json` read back: every field checked, then one `HostReport`.

The documents come from other hosts, artifacts and hand edits, so they are hostile input: a
document that is not a report envcheck can merge raises ReportDocumentError, which says what is
wrong and where. Pure: documents in, reports out; reading the files is the `report` command's.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, get_args

from envcheck.contracts.exitcodes import ExitStatus
from envcheck.contracts.facts import FactsError, from_dict, host_from_document
from envcheck.contracts.findings import SEVERITIES, Finding, Layer, Severity
from envcheck.contracts.host_report import SCHEMA_VERSION, VERDICTS, ImageChoice, Report, Verdict
from envcheck.contracts.record import record
from envcheck.contracts.remedy import as_remedy
from envcheck.contracts.remedy import from_document as remedy_document
from envcheck.contracts.versioned import DocumentVersionError, Versioned

REPORT = Versioned("report", "schema_version", SCHEMA_VERSION)
if TYPE_CHECKING:
    from envcheck.contracts.smoke_report import SmokeDocument

TIMESTAMP_KEYS = ("generated_at", "finished_at", "started_at", "timestamp")  # in `meta`
MAX_EXIT_CODE = int(ExitStatus.WRONG_RESULTS)  # the worst verdict; 130 leaves no report


class ReportDocumentError(ValueError):
    """A saved report is not one envcheck can merge; the message says why."""


@record
class SavedReport:
    """A document as read from `source`; `mtime` breaks ties when reports carry no timestamp."""

    source: str
    document: Any
    mtime: float | None = None


@record
class HostReport:
    source: str
    hostname: str | None
    verdict: Verdict  # as that host's envcheck said (the document's, not recomputed)
    exit_code: int
    report: Report
    timestamp: datetime | None = None
    mtime: float | None = None
    reported: bool = True  # False: an expected host with no report (see not_reported)

    @property
    def label(self) -> str:
        """The host's name, or the name of the file it came from when its report names no host
        (`gpu-node-07.json`: what the person who collected the reports named it)."""
        return self.hostname or self.source.rstrip("/").rsplit("/", 1)[-1] or self.source

    def layer_severities(self) -> dict[str, Severity]:
        """The worst severity per layer: `{"driver": "fail", "smoke": "pass", …}`."""
        worst: dict[str, Severity] = {}
        for f in self.report.findings:
            if SEVERITIES.index(f.severity) >= SEVERITIES.index(worst.get(f.layer, "pass")):
                worst[f.layer] = f.severity
        return worst

    def first_problem(self) -> Finding | None:
        """The host's root cause: its first failure (else warning) whose fix no other finding's
        fix includes; a follow-on one only where every problem is one."""
        problems = [f for f in self.report.findings if f.severity != "pass"]
        problems.sort(key=lambda f: (f.severity != "fail", f.follows is not None))
        return problems[0] if problems else None


def parse_report(saved: SavedReport) -> HostReport:
    """Validate one saved `envcheck doctor --json` document; ReportDocumentError says what is wrong."""
    doc = saved.document
    try:
        REPORT.version_of(doc)
    except DocumentVersionError as e:
        raise ReportDocumentError(str(e)) from e
    verdict = doc.get("verdict")
    if verdict not in VERDICTS:
        raise ReportDocumentError(
            f'"verdict" must be one of {", ".join(VERDICTS)}, got {verdict!r}'
        )
    exit_code = doc.get("exit_code")
    if (
        not isinstance(exit_code, int)
        or isinstance(exit_code, bool)
        or not 0 <= exit_code <= MAX_EXIT_CODE
    ):
        raise ReportDocumentError(
            f'"exit_code" must be an integer 0-{MAX_EXIT_CODE}, got {exit_code!r}'
        )
    if not isinstance(doc.get("host"), dict):
        raise ReportDocumentError('"host" is missing or not an object')
    try:
        host = host_from_document(doc["host"])
        image = _image(doc.get("image"))
    except FactsError as e:
        raise ReportDocumentError(str(e)) from e
    meta = object_field(doc, "meta")
    report = Report(host, findings_of(doc.get("findings")), image, smoke_of(doc), meta)
    return HostReport(
        source=saved.source,
        hostname=host.machine.hostname,
        verdict=verdict,
        exit_code=exit_code,
        report=report,
        timestamp=report_time(meta),
        mtime=saved.mtime,
    )


def findings_of(items: Any) -> tuple[Finding, ...]:
    """A saved report's `findings`, validated; ReportDocumentError names the entry at fault."""
    if not isinstance(items, list):
        raise ReportDocumentError('"findings" must be a list')
    return tuple(_finding(item, i) for i, item in enumerate(items))


def _finding(item: Any, i: int) -> Finding:
    where = f"findings[{i}]"
    if not isinstance(item, dict):
        raise ReportDocumentError(f"{where}: expected an object")
    for key in ("id", "message"):
        if not isinstance(item.get(key), str):
            raise ReportDocumentError(f"{where}.{key}: expected a string")
    if item.get("severity") not in SEVERITIES:
        raise ReportDocumentError(
            f"{where}.severity: expected pass, warn or fail, got {item.get('severity')!r}"
        )
    fix, layer, observed = item.get("fix"), item.get("layer", "host"), item.get("observed", {})
    if fix is not None and not isinstance(fix, str):
        raise ReportDocumentError(f"{where}.fix: expected a string or null")
    try:  # the structured remedy where the report has one (schema 6), else its words
        remedy = (
            remedy_document(item["remedy"], f"{where}.remedy")
            if item.get("remedy") is not None
            else as_remedy(fix)
        )
    except ValueError as e:
        raise ReportDocumentError(str(e)) from e
    if layer not in get_args(Layer):
        raise ReportDocumentError(f"{where}.layer: expected one of {', '.join(get_args(Layer))}")
    return Finding(
        id=item["id"],
        severity=item["severity"],
        message=item["message"],
        remedy=remedy,
        layer=layer,
        observed=observed if isinstance(observed, dict) else {},
    )


def _image(data: Any) -> ImageChoice | None:
    if not isinstance(data, dict) or data.get("ref") is None:
        return None
    if isinstance(data.get("matrix_pip_command"), str):  # schema 3: `pip_command` is the target's
        data = data | {"pip_command": data["matrix_pip_command"]}
    return from_dict(ImageChoice, data, "image")


def smoke_of(doc: Mapping[str, Any]) -> SmokeDocument | None:
    """A saved report's `smoke`, read by the reader of every document (strictly: a program wrote
    it); None where it has none (null, or not an object). ReportDocumentError names a wrong field."""
    smoke = object_field(doc, "smoke")
    if not smoke:
        return None
    from envcheck.contracts.smoke_report import SmokeDocument  # a report with a smoke only

    try:
        return from_dict(SmokeDocument, smoke, "smoke", numbers_as_text=False)
    except FactsError as e:
        raise ReportDocumentError(str(e)) from e


def object_field(doc: Mapping[str, Any], key: str) -> dict[str, Any]:
    """`doc[key]` when it is a JSON object, else `{}`: optional parts of a saved report."""
    value = doc.get(key)
    return value if isinstance(value, dict) else {}


def report_time(meta: Mapping[str, Any]) -> datetime | None:
    """When the doctor ran, from its `meta` (aware, UTC if the text had no zone)."""
    for key in TIMESTAMP_KEYS:
        value = meta.get(key)
        if isinstance(value, str):
            try:
                # The doctor writes a trailing Z, which fromisoformat reads only from 3.11 on.
                stamp = datetime.fromisoformat(
                    value[:-1] + "+00:00" if value.endswith("Z") else value
                )
            except ValueError:
                continue
            return stamp if stamp.tzinfo else stamp.replace(tzinfo=timezone.utc)  # naive = UTC
    return None

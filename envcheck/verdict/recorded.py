"""A saved report's smoke outcome, kept when the report is judged again: `doctor --facts` on a
report whose smoke failed (exit 5) once said `warn`, exit 0, where `envcheck report` on the same
file said `fail 5`. The host is judged again; what the smoke saw is not re-decided
from facts that cannot show it. Pure."""

from __future__ import annotations

from typing import Any

from envcheck.contracts.findings import Finding
from envcheck.contracts.record import record
from envcheck.contracts.saved_report import findings_of, smoke_of
from envcheck.contracts.smoke_report import SmokeDocument
from envcheck.verdict.proof import PROOF_WORDS, Proof


@record
class RecordedSmoke:
    findings: tuple[Finding, ...]  # the smoke layer's findings as recorded
    smoke: SmokeDocument | None  # the recorded `smoke` section
    proof: Proof


def recorded_smoke(doc: Any) -> RecordedSmoke | None:
    """The smoke outcome of a saved `doctor --json` report; None for a `host` object or a report
    without a smoke. ReportDocumentError when its findings are malformed."""
    if not isinstance(doc, dict) or "host" not in doc or "findings" not in doc:
        return None
    smoke = tuple(f for f in findings_of(doc["findings"]) if f.layer == "smoke")
    if not smoke:
        return None
    return RecordedSmoke(
        findings=smoke,
        smoke=smoke_of(doc),
        proof=next((p for p in PROOF_WORDS if p == doc.get("proof")), "none"),
    )

"""What `envcheck fix` did, as records (pure): the plan, the doctor's summary, and for each
independent part (the interpreter, the image) what ran, its verification and, where it failed,
its rollback and the proof by files. `FixOutcome.to_json()` is the one document `--json` prints
and the text renderer reads (schema/fix-report.schema.json)."""

from __future__ import annotations

from typing import Any, Literal

from envcheck import __version__
from envcheck.contracts.exitcodes import ExitStatus
from envcheck.contracts.facts import to_dict
from envcheck.contracts.findings import Severity
from envcheck.contracts.host_report import Report, Verdict
from envcheck.contracts.record import field, record
from envcheck.fix.plan import FixPlan
from envcheck.verdict.proof import Proof

SCHEMA_VERSION = 1
PIP_LOG = "pip.log"  # in the record: the output of every pip step the fix ran

Outcome = Literal[
    "nothing-to-fix",
    "manual-only",
    "planned",
    "fixed",
    "partly-fixed",
    "failed",
    "rolled-back",
    "rollback-incomplete",
]
PartOutcome = Literal["fixed", "failed", "rolled-back", "rollback-incomplete", "not-run"]


@record
class Ran:
    """One command run: its argv, exit status and the last lines it printed."""

    argv: tuple[str, ...]
    code: int
    seconds: float
    tail: str
    killed: bool = False  # it outlived its bound and was killed with its process group

    def to_json(self) -> dict[str, Any]:
        return {"argv": list(self.argv), "exit_code": self.code, "seconds": self.seconds}

    @property
    def last_line(self) -> str:
        return (self.tail.strip().splitlines() or [""])[-1]


def _says(description: str) -> Any:
    """A field without a default, described in the published schema."""
    return field(metadata={"description": description})


@record
class Change:
    """One distribution an install changes, as pip's resolver said it would."""

    name: str = _says("the distribution's canonical name")
    before: str | None = _says("the installed version; null: not installed")
    after: str | None = _says("the version after the fix; null: removed")
    requested: bool = _says("named by the plan; false: a dependency pip's resolver changes")

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = to_dict(self)
        return doc


@record
class FindingSummary:
    """A finding of the doctor's that did not pass."""

    id: str
    severity: Severity
    message: str
    fix: str | None = _says(
        "the finding's fix as `envcheck doctor` prints it (its pip command is the plan's: the"
        " same package==version and index)"
    )

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = to_dict(self)
        return doc


@record
class Summary:
    """A doctor run: its verdict, exit code, proof and every finding that did not pass."""

    verdict: Verdict
    exit_code: int
    proof: Proof
    findings: tuple[FindingSummary, ...]
    ran_in: str | None = field(  # a verification's interpreter or image
        default=None,
        metadata={
            "description": "a verification's: the interpreter (absolute path) or the image"
            " reference it ran in"
        },
    )

    @classmethod
    def of(cls, report: Report, ran_in: str | None = None) -> Summary:
        findings = tuple(
            FindingSummary(f.id, f.severity, f.message, f.fix)
            for f in report.findings
            if f.severity != "pass"
        )
        return cls(report.verdict, int(report.exit_status), report.proof, findings, ran_in)

    def unproven(self, expect: str | None, where: str) -> tuple[int, str] | None:
        """Why this verification did not prove the plan (its exit code and the words), or None
        when it trained where `expect` ("gpu", else the CPU) says it must."""
        want = "gpu-trained" if expect == "gpu" else "cpu-trained"
        if self.exit_code == 0 and self.proof == want:
            return None
        code = self.exit_code or int(
            ExitStatus.CPU_FALLBACK if expect == "gpu" else ExitStatus.SMOKE_FAILED
        )
        what = (
            f"the verification smoke in {where}: verdict {self.verdict}, proof {self.proof} "
            f"(expected {want})"
        )
        return code, what

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {} if self.ran_in is None else {"ran_in": self.ran_in}
        return doc | {
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "proof": self.proof,
            "findings": [f.to_json() for f in self.findings],
        }


@record
class RecordInfo:
    """Where the state before the fix was written, inside the target's own prefix."""

    folder: str
    journal: str

    def to_json(self) -> dict[str, Any]:
        return {
            "folder": self.folder,
            "freeze": f"{self.folder}/freeze.txt",
            "pip_config": f"{self.folder}/pip-config.txt",
            "wheelhouse": f"{self.folder}/wheelhouse",
            "kept": f"{self.folder}/kept",
            "journal": self.journal,
            "pip_log": f"{self.folder}/{PIP_LOG}",
        }


@record
class Rollback:
    """The interpreter put back from the record, and the proof by files that it is."""

    ran: tuple[Ran, ...]
    freeze_matches: bool
    differences: tuple[str, ...]  # files not as their RECORD says, packages not as recorded
    new_problems: tuple[str, ...]  # what `pip check` finds now that it did not before

    @property
    def complete(self) -> bool:
        return self.freeze_matches and not self.differences and not self.new_problems

    def to_json(self) -> dict[str, Any]:
        return {
            "ran": [r.to_json() for r in self.ran],
            "freeze_matches": self.freeze_matches,
            "files_match": not self.differences,
            "differences": list(self.differences),
            "pip_check_new": list(self.new_problems),
        }


@record
class Part:
    """One independent transaction of the fix: the interpreter's pip steps, or the image pull."""

    outcome: PartOutcome
    exit_code: int
    applied: tuple[Ran, ...] = ()
    verification: Summary | None = None
    failed: str | None = None
    rollback: Rollback | None = None
    after_rollback: Summary | None = None
    pip_check_new: tuple[str, ...] = ()  # what pip check found new after the change

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"outcome": self.outcome, "exit_code": self.exit_code}
        if self.applied:
            doc["applied"] = [r.to_json() for r in self.applied]
        if self.verification is not None:
            doc["verification"] = self.verification.to_json()
        if self.failed is not None:
            doc["failed"] = self.failed
        if self.rollback is not None:
            doc["rollback"] = self.rollback.to_json()
        if self.after_rollback is not None:
            doc["after_rollback"] = self.after_rollback.to_json()
        if self.pip_check_new:
            doc["pip_check_new"] = list(self.pip_check_new)
        return doc


@record
class FixOutcome:
    plan: FixPlan
    doctor: Summary
    dry_run: bool
    outcome: Outcome
    exit_code: int
    changes: tuple[Change, ...] = ()  # every package the install changes: the plan's and pip's
    resolved_from: str | None = None  # in words: which index answered, or why none did
    record: RecordInfo | None = None
    interpreter: Part | None = None
    image: Part | None = None
    notes: tuple[str, ...] = ()  # e.g. an unfinished fix found and what was done with it

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "envcheck_version": __version__,
            "dry_run": self.dry_run,
            "plan": self.plan.to_json(),
            "doctor": self.doctor.to_json(),
            "changes": [c.to_json() for c in self.changes],
            "resolved_from": self.resolved_from,
        }
        if self.notes:
            doc["notes"] = list(self.notes)
        if self.record is not None:
            doc["record"] = self.record.to_json()
        parts = {k: p for k, p in (("interpreter", self.interpreter), ("image", self.image)) if p}
        if parts:
            doc["parts"] = {k: p.to_json() for k, p in parts.items()}
        doc |= _flat(parts)
        return doc | {"outcome": self.outcome, "exit_code": self.exit_code}


def _flat(parts: dict[str, Part]) -> dict[str, Any]:
    """The keys the document had before it had parts, kept for the scripts that read them: what
    ran, each verification, and the first failure and its rollback."""
    doc: dict[str, Any] = {}
    applied = [r.to_json() for p in parts.values() for r in p.applied]
    if applied:
        doc["applied"] = applied
    checks = [p.verification.to_json() for p in parts.values() if p.verification]
    if checks:
        doc["verifications"] = checks
        doc["verification"] = checks[-1]
    failed = next((p for p in parts.values() if p.failed is not None), None)
    if failed is not None:
        doc["failed"] = failed.failed
        if failed.verification is not None:  # the smoke that decided
            doc["verification"] = failed.verification.to_json()
    undone = next((p for p in parts.values() if p.rollback is not None), None)
    if undone is not None and undone.rollback is not None:
        doc["rollback"] = undone.rollback.to_json()
        if undone.after_rollback is not None:
            doc["after_rollback"] = undone.after_rollback.to_json()
    return doc


def overall(interpreter: Part | None, image: Part | None) -> tuple[Outcome, int]:
    """The run's outcome and exit code from its parts: fixed only when every part that ran is;
    otherwise the exit code of the part that failed, so a script can tell which."""
    ran = [p for p in (interpreter, image) if p is not None and p.outcome != "not-run"]
    bad = [p for p in ran if p.outcome != "fixed"]
    if not bad:
        return "fixed", 0
    if len(bad) < len(ran):
        return "partly-fixed", bad[0].exit_code
    first = bad[0]
    outcome: Outcome = first.outcome if first.outcome != "not-run" else "failed"
    return outcome, first.exit_code

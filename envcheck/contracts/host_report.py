"""The doctor's result: facts + findings + chosen image + smoke, and the verdict they imply."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, get_args

from envcheck.contracts.exitcodes import ExitStatus
from envcheck.contracts.facts import HostFacts, to_dict
from envcheck.contracts.findings import Finding
from envcheck.contracts.record import field, record

if TYPE_CHECKING:  # types only: the report (a contract) imports no rule, and the static tier
    # (`--no-smoke`) never loads the smoke's records
    from envcheck.contracts.smoke_report import SmokeDocument
    from envcheck.verdict.proof import Proof

# 2: `proof` added; `verdict` may be "error" (the error document of a run that could not judge)
# 3: each finding's `remedy` (ordered steps: a command's argv, who runs it and what it changes,
#    or manual words) beside `fix`, its one-sentence form
SCHEMA_VERSION = 3

# The verdict names, said once: every per-verdict table is keyed by `Verdict` (mypy checks the
# keys) and tests/unit/test_verdict_names.py checks that each covers `VERDICTS`.
Verdict = Literal["pass", "warn", "fail", "cpu-fallback", "wrong-results"]
VERDICTS: tuple[Verdict, ...] = get_args(Verdict)  # in order of weight, the worst last

CPU_FALLBACK_ID = "smoke.cpu-fallback"
# --expect-gpu and nothing trained on a GPU: 6 where the host has a GPU it could have used, 1
# where it has none it can use (the driver's or the GPU's finding says why) or no smoke was asked
# for; never 5, which says a smoke ran and failed.
UNPROVEN_ID = "smoke.gpu-unproven"
WRONG_RESULTS_ID = "smoke.wrong-results"  # the GPU computed wrong numbers: worse than a fallback


@record
class Rejected:
    """An image tag the choice passed over, and why."""

    ref: str
    reason: str


@record
class ImageChoice:
    """The registry image chosen for this host (None `ref`: none fits), and why."""

    ref: str | None  # full reference with registry and tag
    registry: str | None = None
    tag: str | None = None
    kind: str | None = None  # "gpu" | "cpu"
    cuda: str | None = None
    cudnn: str | None = None
    paddle: str | None = None
    pip_command: str | None = None
    reason: str | None = None
    confirmed: bool = True  # False when the matrix marks the tag UNCONFIRMED
    source: str | None = None
    digest: str | None = None
    rejected: tuple[Rejected, ...] = ()
    # The variant preference: True when the build is known to hold every GPU's arch
    # (its list, or a report of it running there), False when nothing shows it; `arch_note` then
    # says so. `pip_command` is that same preferred variant's wheel.
    arch_known: bool | None = None
    arch_note: str | None = None
    # The arch facts the matrix applied to this tag's build, each with its scope (`--explain`).
    arch_facts: tuple[str, ...] = ()
    # No GPU tag runs, and the driver alone holds them back: the lowest driver that runs one
    # (`reason` says it in words). The fix plan orders that upgrade with the driver's work.
    min_driver: str | None = None


@record
class Report:
    """A doctor's outcome: the host's facts, the findings, the image, the smoke, the proof."""

    host: HostFacts
    findings: tuple[Finding, ...]
    image: ImageChoice | None = None
    smoke: SmokeDocument | None = None
    meta: dict[str, Any] = field(default_factory=dict)  # envcheck version, matrix path, timings
    proof: Proof = "static"  # how far the evidence goes (envcheck.verdict.proof)

    @property
    def verdict(self) -> Verdict:
        return verdict_of(self.findings)

    @property
    def exit_status(self) -> ExitStatus:
        return exit_status_of(self.findings)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "verdict": self.verdict,
            "exit_code": int(self.exit_status),
            "proof": self.proof,
            "host": to_dict(self.host),
            "findings": [finding_json(f) for f in self.findings],
            "image": to_dict(self.image) if self.image else {"ref": None},
            "smoke": to_dict(self.smoke),
            "meta": self.meta,
        }


def finding_json(f: Finding) -> dict[str, Any]:
    """A finding's JSON: its remedy as steps, and `fix`, the same remedy in one sentence."""
    doc = {k: v for k, v in to_dict(f).items() if k != "remedy"}
    remedy = f.remedy.to_json() if f.remedy is not None else None
    return doc | {"fix": f.fix, "remedy": remedy, "family": f.family}


def error_document(exit_code: int, message: str, hint: str | None) -> dict[str, Any]:
    """What `--json` prints when the run ends before a verdict (bad flag, bad input, a bug)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "verdict": "error",
        "exit_code": exit_code,
        "error": {"exit": exit_code, "message": message, "hint": hint},
    }


def verdict_of(findings: tuple[Finding, ...] | list[Finding]) -> Verdict:
    failed = [f for f in findings if f.severity == "fail"]
    if any(f.id == WRONG_RESULTS_ID for f in failed):
        return "wrong-results"
    if any(f.id == CPU_FALLBACK_ID for f in failed):
        return "cpu-fallback"
    if failed:
        return "fail"
    if any(f.severity == "warn" for f in findings):
        return "warn"
    return "pass"


def gpu_usable(findings: Sequence[Finding]) -> bool:
    """No driver or GPU check failed: the host has a GPU a smoke could have trained on."""
    return not any(f.layer in ("driver", "gpu") and f.severity == "fail" for f in findings)


def exit_status_of(findings: tuple[Finding, ...] | list[Finding]) -> ExitStatus:
    failed = [f for f in findings if f.severity == "fail"]
    if any(f.id == WRONG_RESULTS_ID for f in failed):
        return ExitStatus.WRONG_RESULTS
    if any(f.id == CPU_FALLBACK_ID for f in failed):
        return ExitStatus.CPU_FALLBACK
    unproven = any(f.id == UNPROVEN_ID and f.observed.get("proof") != "static" for f in failed)
    if unproven and gpu_usable(findings):  # nothing ran on the GPU it has
        return ExitStatus.CPU_FALLBACK
    if any(f.family == "smoke" and f.id != UNPROVEN_ID for f in failed):
        return ExitStatus.SMOKE_FAILED
    if failed:
        return ExitStatus.INCOMPATIBLE
    return ExitStatus.OK

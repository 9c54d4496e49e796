"""A smoke result that contradicts the host's own evidence (pure).

The workload's result is the word of whatever ran in the image or the interpreter: a patched
`paddle`, a wrapper on PATH or a replayed log can print a GPU run. When the host knows there was
no GPU to train on (no usable NVIDIA GPU listed by NVML or on the PCI bus, so none was expected,
and a container given none), a result that says "gpu:0" is not a pass, and not a CPU fallback
either (no GPU was expected): it is a contradiction, and the finding says so without repeating
the claim as fact.
"""

from __future__ import annotations

from envcheck.contracts.findings import Finding, fail
from envcheck.contracts.smoke_report import NvmlSummary
from envcheck.contracts.smoke_result import RunResult, SmokeResult
from envcheck.smoke.plan import Plan
from envcheck.smoke.verdict.loaded import loaded_libraries

CONTRADICTED_ID = "smoke.contradicted"

_CONTAINER_FIX = (
    "do not trust this image's reports: something in it (a patched paddle package, a wrapper "
    "for python, a replayed log) reports a device it never used; run the smoke in an official "
    "Paddle image (the doctor's own choice, without --image) and rebuild this one from it"
)
_IN_PROCESS_FIX = (
    "do not trust this interpreter's Paddle: something in it (a patched paddle package, a "
    "sitecustomize or .pth file, a wrapper for python) reports a device it never used; "
    "reinstall Paddle in a fresh virtual environment and run the smoke again"
)


def claims_gpu(run: RunResult) -> bool:
    """The run says a GPU was used: as its device, or as the place of a parameter or the logits."""
    places = [*(run.param_places or {}).values(), run.logits_place or ""]
    return run.device_used.startswith("gpu") or any("gpu" in p for p in places)


def contradicted_runs(plan: Plan, runs: list[RunResult]) -> list[RunResult]:
    """The runs that claim a GPU the host's evidence rules out: no GPU was expected because the
    host has none (an --expect-gpu or a GPU on the PCI bus would expect one), and none was
    requested for a container."""
    if plan.gpu_expected or plan.gpu_ids:
        return []
    return [r for r in runs if claims_gpu(r)]


def contradiction(
    plan: Plan, result: SmokeResult, runs: list[RunResult], nvml: NvmlSummary
) -> Finding:
    devices = sorted({r.device_used for r in runs})
    evidence = [plan.gpu_reason]
    if plan.mode == "container":
        evidence.append("the container was given no GPU")
    if nvml.status != "ok":
        evidence.append("NVML could not see any GPU")
    libs = loaded_libraries(result)
    if libs is not None and not libs and result.loaded_when:
        evidence.append("the process mapped no NVIDIA library")
    where = f"the image {plan.image}" if plan.mode == "container" else f"{plan.python}"
    return fail(
        CONTRADICTED_ID,
        f"the smoke's result contradicts the evidence: it claims training on "
        f"{', '.join(devices)}, but {'; '.join(evidence)}. A claim the host rules out proves "
        f"nothing: what {where} reports cannot be trusted",
        fix=_CONTAINER_FIX if plan.mode == "container" else _IN_PROCESS_FIX,
        layer="smoke",
        claimed=devices,
        evidence=evidence,
    )

"""The report's `smoke` object: where the smoke ran, what Paddle saw, the figures per device, NVML."""

from __future__ import annotations

from typing import Any

from envcheck.contracts.host_report import CPU_FALLBACK_ID, WRONG_RESULTS_ID
from envcheck.smoke.parse import RawRun, log_tail
from envcheck.smoke.plan import Outcome, Plan
from envcheck.smoke.verdict.contradiction import CONTRADICTED_ID, contradicted_runs
from envcheck.smoke.verdict.judge import host_gpu, judge, on_gpu, witnesses
from envcheck.smoke.verdict.loaded import loaded_libraries
from envcheck.smoke.verdict.pieces import PIECE_IDS
from envcheck.smoke.verdict.witness import GpuSummary, NvmlSummary
from envcheck.smoke.workload.protocol import RunResult

RUN_KEYS = (
    "device_requested",
    "device_used",
    "device_error",
    "param_places",
    "logits_place",
    "logits_dtype",
    "amp",
    "loss_start",
    "loss_end",
    "losses",
    "accuracy",
    "steps",
    "batch_size",
    "steps_per_s",
    "samples_per_s",
    "first_step_s",
    "peak_gpu_mem_bytes",
    "peak_gpu_reserved_bytes",
    "compare_cpu",
    "export",
    "checks",
    "checks_s",
    "loss_check",
    "train_window",
    "error",
)
PADDLE_KEYS = (
    "paddle_version",
    "python",
    "compiled_with_cuda",
    "cuda_version",
    "cudnn_version",
    "cuda_device_count",
    "device_capabilities",
    "device_names",
    "default_device",
    "env",
    "import_s",
    "total_s",
)


def smoke_document(plan: Plan, outcome: Outcome | None) -> dict[str, Any]:
    """The JSON `smoke` object: where it ran, what Paddle saw, the figures per device, NVML."""
    doc: dict[str, Any] = {
        "mode": plan.mode,
        "image": plan.image,
        "python": plan.python if plan.mode != "container" else None,
        "gpu_expected": plan.gpu_expected,
        "gpu_expected_reason": plan.gpu_reason,
        "gpu_request": list(plan.gpu_ids) if plan.gpu_ids else None,
        "gpu_refused": plan.gpu_refused,
        "fallback": plan.fallback.reason if plan.fallback else None,
        "status": None,
        "exit_code": None,
        "timed_out": False,
        "duration_s": None,
        "paddle": None,
        "runs": [],
        "warnings": [],
        "nvml": None,
        "log_tail": [],
        "container": None,
        "loaded_libraries": None,
        "loaded_when": None,
        "driver_check": None,
        "problem": None,
        "error": None,
    }
    if outcome is None:
        doc["status"] = "not-run"
        return doc
    raw, result = outcome.raw, outcome.result
    doc.update(
        status=_status(plan, outcome),
        exit_code=raw.exit_code,
        timed_out=raw.timed_out,
        duration_s=raw.duration_s,
        nvml=_without_series(outcome.nvml),
        problem=outcome.problem,
        container=_container_info(raw) if plan.mode == "container" else None,
    )
    if result is not None:
        doc["paddle"] = {k: result.get(k) for k in PADDLE_KEYS}
        doc["runs"] = [_run_document(plan, r, outcome.nvml) for r in result["runs"]]
        doc["warnings"] = result["warnings"]
        doc["error"] = result["error"]
        doc["loaded_libraries"] = loaded_libraries(result)
        doc["loaded_when"] = result.get("loaded_when")
        doc["driver_check"] = result.get("driver_check")
    if doc["status"] != "pass":
        doc["log_tail"] = log_tail(raw.stderr)
    return doc


def _run_document(plan: Plan, run: RunResult, nvml: NvmlSummary) -> dict[str, Any]:
    host = host_gpu(plan, run)
    gpus = _without_series(nvml).get("gpus", {})
    seen = witnesses(plan, [run], nvml).get(run["device_used"]) if not run["error"] else None
    # A GPU claim the host rules out is kept as the workload's word, never as `on_gpu`.
    contradicted = not run["error"] and bool(contradicted_runs(plan, [run]))
    return {k: run.get(k) for k in RUN_KEYS} | {
        "host_gpu": host,
        "on_gpu": on_gpu(run) and not contradicted if not run["error"] else False,
        "contradicted": contradicted,
        "nvml": gpus.get(str(host)) if host is not None else None,
        "witness": seen.as_dict() if seen else None,
    }


def _without_series(nvml: NvmlSummary) -> NvmlSummary:
    """The sampler's time series stay out of the report: each run's `witness` says what they
    showed."""
    out = nvml.copy()
    if "gpus" in nvml:
        out["gpus"] = {index: _no_series(trace) for index, trace in nvml["gpus"].items()}
    return out


def _no_series(trace: GpuSummary) -> GpuSummary:
    kept = trace.copy()
    kept.pop("series", None)
    kept.pop("process_util", None)
    return kept


def _container_info(raw: RawRun) -> dict[str, Any]:
    keys = ("container", "run_id", "image_id", "limits", "swept", "read_only_dropped", "removed")
    return {k: raw.extra.get(k) for k in keys}


def _status(plan: Plan, outcome: Outcome) -> str:
    """One word for the smoke table: the most important failing finding, or pass."""
    order = (
        "smoke.timeout",
        "smoke.bad-output",
        CONTRADICTED_ID,
        *PIECE_IDS,
        "smoke.crashed",
        WRONG_RESULTS_ID,
        CPU_FALLBACK_ID,
        "smoke.not-learning",
        "smoke.export-failed",
        "smoke.not-run",
    )
    ids = {f.id for f in judge(plan, outcome) if f.severity != "pass"}
    for finding_id in order:
        if finding_id in ids:
            return finding_id.removeprefix("smoke.")
    return "pass"

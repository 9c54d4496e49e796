"""The report's `smoke` object: where the smoke ran, what Paddle saw, the figures per device, NVML."""

from __future__ import annotations

from envcheck.contracts.host_report import CPU_FALLBACK_ID, WRONG_RESULTS_ID
from envcheck.contracts.record import replace
from envcheck.contracts.smoke_report import (
    ContainerInfo,
    GpuSummary,
    NvmlSummary,
    SmokeDocument,
    SmokePaddle,
    SmokeRun,
)
from envcheck.contracts.smoke_result import RunResult, SmokeResult
from envcheck.smoke.parse import log_tail
from envcheck.smoke.plan import Outcome, Plan
from envcheck.smoke.verdict.contradiction import CONTRADICTED_ID, contradicted_runs
from envcheck.smoke.verdict.judge import host_gpu, judge, on_gpu, witnesses
from envcheck.smoke.verdict.loaded import loaded_libraries
from envcheck.smoke.verdict.pieces import PIECE_IDS


def smoke_document(plan: Plan, outcome: Outcome | None) -> SmokeDocument:
    """The report's `smoke`: where it ran, what Paddle saw, the figures per device, NVML."""
    doc = SmokeDocument(
        mode=plan.mode,
        image=plan.image,
        python=plan.python if plan.mode != "container" else None,
        gpu_expected=plan.gpu_expected,
        gpu_expected_reason=plan.gpu_reason,
        gpu_request=plan.gpu_ids or None,
        gpu_refused=plan.gpu_refused,
        fallback=plan.fallback.reason if plan.fallback else None,
    )
    if outcome is None:
        return replace(doc, status="not-run")
    raw, result = outcome.raw, outcome.result
    status = _status(plan, outcome)
    doc = replace(
        doc,
        status=status,
        exit_code=raw.exit_code,
        timed_out=raw.timed_out,
        duration_s=raw.duration_s,
        nvml=_without_series(outcome.nvml),
        container=(raw.container or ContainerInfo()) if plan.mode == "container" else None,
        log_tail=tuple(log_tail(raw.stderr)) if status != "pass" else (),
        problem=outcome.problem,
    )
    if result is None:
        return doc
    libraries = loaded_libraries(result)
    return replace(
        doc,
        paddle=_paddle(result),
        runs=tuple(_run_document(plan, r, outcome.nvml) for r in result.runs),
        warnings=result.warnings,
        loaded_libraries=tuple(libraries) if libraries is not None else None,
        loaded_when=result.loaded_when,
        driver_check=result.driver_check,
        error=result.error,
    )


def _paddle(result: SmokeResult) -> SmokePaddle:
    """What the Paddle under test is and sees, as the workload said."""
    return SmokePaddle(
        paddle_version=result.paddle_version,
        python=result.python,
        compiled_with_cuda=result.compiled_with_cuda,
        cuda_version=result.cuda_version,
        cudnn_version=result.cudnn_version,
        cuda_device_count=result.cuda_device_count,
        device_capabilities=result.device_capabilities,
        device_names=result.device_names,
        default_device=result.default_device,
        env=result.env,
        import_s=result.import_s,
        total_s=result.total_s,
    )


def _run_document(plan: Plan, run: RunResult, nvml: NvmlSummary) -> SmokeRun:
    host = host_gpu(plan, run)
    gpus = _without_series(nvml).gpus
    seen = witnesses(plan, [run], nvml).get(run.device_used) if not run.error else None
    # A GPU claim the host rules out is kept as the workload's word, never as `on_gpu`.
    contradicted = not run.error and bool(contradicted_runs(plan, [run]))
    return SmokeRun(
        device_requested=run.device_requested,
        device_used=run.device_used,
        device_error=run.device_error,
        param_places=run.param_places,
        logits_place=run.logits_place,
        logits_dtype=run.logits_dtype,
        amp=run.amp,
        loss_start=run.loss_start,
        loss_end=run.loss_end,
        losses=run.losses,
        accuracy=run.accuracy,
        steps=run.steps,
        batch_size=run.batch_size,
        steps_per_s=run.steps_per_s,
        samples_per_s=run.samples_per_s,
        first_step_s=run.first_step_s,
        peak_gpu_mem_bytes=run.peak_gpu_mem_bytes,
        peak_gpu_reserved_bytes=run.peak_gpu_reserved_bytes,
        compare_cpu=run.compare_cpu,
        export=run.export,
        checks=run.checks,
        checks_s=run.checks_s,
        loss_check=run.loss_check,
        train_window=run.train_window,
        error=run.error,
        host_gpu=host,
        on_gpu=on_gpu(run) and not contradicted if not run.error else False,
        contradicted=contradicted,
        nvml=gpus.get(str(host)) if host is not None else None,
        witness=seen,
    )


def _without_series(nvml: NvmlSummary) -> NvmlSummary:
    """The sampler's time series stay out of the report: each run's `witness` says what they
    showed."""
    return replace(nvml, gpus={index: _no_series(trace) for index, trace in nvml.gpus.items()})


def _no_series(trace: GpuSummary) -> GpuSummary:
    return replace(trace, series=None, process_util=None)


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

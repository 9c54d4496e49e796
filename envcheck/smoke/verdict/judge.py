"""Judging the smoke (pure): the findings for a plan and what its run printed.

The decisions are here; the causes of a CPU fallback are in `causes.py`, the findings of a smoke
that did not train in `failures.py`. All are built from the plan and the recorded outputs, so the unit tests replay real
results without an engine.
"""

from __future__ import annotations

from envcheck.contracts.facts import to_dict
from envcheck.contracts.findings import Finding, fail, passed, warn
from envcheck.contracts.host_report import CPU_FALLBACK_ID
from envcheck.contracts.smoke_report import NvmlSummary, Witness
from envcheck.contracts.smoke_result import (
    CpuCompared,
    ExportDone,
    ExtraFailed,
    PaddleWarning,
    RunResult,
    SmokeResult,
)
from envcheck.smoke.plan import Outcome, Plan
from envcheck.smoke.verdict.causes import cpu_fallback, fix_from_warnings
from envcheck.smoke.verdict.contradiction import contradicted_runs, contradiction
from envcheck.smoke.verdict.failures import (
    LEARNED_RATIO,
    bad_output,
    crashed,
    first_line,
    not_learning,
    not_run,
    run_crashed,
    setup_failed,
    timeout,
)
from envcheck.smoke.verdict.known_answers import is_wrong, wrong_results
from envcheck.smoke.verdict.loaded import loaded_libraries, loaded_summary
from envcheck.smoke.verdict.pieces import PIECE_IDS, piece_failure
from envcheck.smoke.verdict.witness import witness
from envcheck.verdict.fixes import (
    INFERENCE_FIX,
    NOT_A_GPU_RUN_FIX,
    RAN_ELSEWHERE_FIX,
    UNWITNESSED_FIX,
)


def judge(plan: Plan, outcome: Outcome | None) -> list[Finding]:
    if plan.mode == "not-run" or outcome is None:
        return [not_run(plan)]
    raw = outcome.raw
    if raw.timed_out:
        return [timeout(plan, raw)]
    if raw.stdout_overflow:
        return [
            bad_output(
                plan,
                raw,
                f"it printed more than {len(raw.stdout)} bytes on stdout "
                f"and was stopped ({raw.stdout_bytes} bytes read)",
            )
        ]
    if outcome.result is None:
        if raw.exit_code != 0:
            return [crashed(plan, raw, None, outcome.problem)]
        return [bad_output(plan, raw, outcome.problem or "no result")]
    result = outcome.result
    if result.error is not None:
        return [setup_failed(plan, raw, result, result.error)]
    findings = judge_runs(plan, result, outcome.nvml)
    if raw.exit_code != 0 and not any(f.id in ("smoke.crashed", *PIECE_IDS) for f in findings):
        findings = [f for f in findings if f.id != "smoke.pass"]
        findings.append(
            crashed(plan, raw, result, f"exited with status {raw.exit_code} after its result")
        )
    return findings


def judge_runs(plan: Plan, result: SmokeResult, nvml: NvmlSummary) -> list[Finding]:
    runs = list(result.runs)
    findings: list[Finding] = []
    crashed = [r for r in runs if r.error]
    trained = [r for r in runs if not r.error]
    if crashed:  # a piece of the training named by Paddle's words, else a plain crash
        findings.append(piece_failure(plan, result, crashed) or run_crashed(plan, result, crashed))
    seen = witnesses(plan, trained, nvml)
    wrong = [r for r in runs if is_wrong(r)]  # checks before a crash count too
    if wrong:
        findings.append(wrong_results(plan, result, wrong, seen))
    fell_back = [r for r in trained if plan.gpu_expected and not on_gpu(r)]
    if fell_back:
        findings.append(cpu_fallback(plan, result, fell_back))
    stuck = [r for r in trained if not learned(r) and not is_wrong(r)]
    if stuck:
        findings.append(not_learning(plan, stuck))
    findings += _extras(plan, trained)
    # A GPU claim on a host that had no GPU to give is a contradiction, not a CPU fallback (no
    # GPU was expected) and never a pass.
    impossible = contradicted_runs(plan, trained)
    if impossible:
        findings.append(contradiction(plan, result, impossible, nvml))
    unmapped = [r for r in _claims_without_libraries(result, trained) if r not in impossible]
    if unmapped:
        findings.append(_no_library_mapped(unmapped))
    findings += _nvml_findings([r for r in trained if not is_wrong(r)], nvml, seen)
    if not any(f.severity == "fail" for f in findings):
        findings.insert(0, _passed(plan, result, trained, seen))
    said = {line for f in findings if f.id in PIECE_IDS for line in f.observed["lines"]}
    findings += _warning_findings([w for w in result.warnings if w.text not in said])  # once
    return findings


def witnesses(plan: Plan, runs: list[RunResult], nvml: NvmlSummary) -> dict[str, Witness]:
    """NVML's evidence per GPU run (by device), inside each run's training window."""
    if nvml.status != "ok":
        return {}
    return {
        r.device_used: witness(nvml, host_gpu(plan, r), r.train_window) for r in runs if on_gpu(r)
    }


def on_gpu(run: RunResult) -> bool:
    """The device Paddle used *and* where every parameter and the logits actually live."""
    places = [*(run.param_places or {}).values(), run.logits_place or ""]
    return run.device_used.startswith("gpu") and all("gpu" in p for p in places)


def learned(run: RunResult) -> bool:
    start, end = run.loss_start, run.loss_end
    return start is not None and end is not None and end < start * LEARNED_RATIO


def _extras(plan: Plan, runs: list[RunResult]) -> list[Finding]:
    found = []
    broken = [
        r
        for r in runs
        if isinstance(r.export, ExtraFailed)
        or (isinstance(r.export, ExportDone) and not r.export.match)
    ]
    if broken:
        details = [_export_detail(r) for r in broken]
        found.append(
            fail(
                "smoke.export-failed",
                "train → serve failed: " + "; ".join(details),
                fix=INFERENCE_FIX,
                layer="smoke",
                export=[to_dict(r.export) for r in broken],
            )
        )
    slow = [r.compare_cpu.error for r in runs if isinstance(r.compare_cpu, ExtraFailed)]
    if slow:
        found.append(
            warn(
                "smoke.compare-cpu-failed",
                "the CPU comparison run failed: " + first_line(slow[0].message),
                fix=None,
                layer="smoke",
            )
        )
    return found


def _export_detail(run: RunResult) -> str:
    export = run.export
    if isinstance(export, ExtraFailed):
        error = export.error
        return f"{run.device_used}: {error.type}: {first_line(error.message)}"
    diff, agreement = (export.max_abs_diff, export.argmax_agreement) if export else (None, None)
    return (
        f"{run.device_used}: paddle.inference predictions differ from training "
        f"(max |Δ| {diff}, argmax agreement {agreement})"
    )


_UNCONFIRMED = {
    "unseen": "NVML never listed the process {pids} with GPU memory while it trained",
    "no-samples": "NVML took no sample during the {window} s training window",
    "unknown": "NVML reports no utilisation for GPU {gpu}, so the work cannot be confirmed",
    "stale": "its training window lies outside the run the host started and reaped, so no "
    "NVML sample can confirm it",
}


def _nvml_findings(
    runs: list[RunResult], nvml: NvmlSummary, seen: dict[str, Witness]
) -> list[Finding]:
    """The witness: the workload's process must hold memory *and* work on its GPU while training."""
    judged = [(r, seen[r.device_used]) for r in runs if r.device_used in seen]
    found = []
    idle = [(r, w) for r, w in judged if w.state == "idle"]
    if idle:
        found.append(_gpu_idle(idle))
    unsure = [(r, w) for r, w in judged if w.state not in ("busy", "idle")]
    if unsure:
        reasons = [
            f"{r.device_used}: "
            + _UNCONFIRMED[w.state].format(pids=list(nvml.pids), window=w.window_s, gpu=w.gpu)
            for r, w in unsure
        ]
        found.append(
            warn(
                "smoke.gpu-unconfirmed",
                f"Paddle reports training on {', '.join(r.device_used for r, _ in unsure)}, "
                f"but {'; '.join(reasons)}{_sample_count(nvml)}",
                fix=UNWITNESSED_FIX,
                layer="smoke",
                witness={r.device_used: to_dict(w) for r, w in unsure},
            )
        )
    return found


def _claims_without_libraries(result: SmokeResult, runs: list[RunResult]) -> list[RunResult]:
    """GPU runs of a result that also says no NVIDIA library was mapped after the first step:
    Paddle cannot compute on a GPU without libcuda, so the claim contradicts itself."""
    libs = loaded_libraries(result)
    if libs is None or libs or not result.loaded_when:
        return []
    return [r for r in runs if on_gpu(r)]


def _no_library_mapped(runs: list[RunResult]) -> Finding:
    devices = ", ".join(r.device_used for r in runs)
    return fail(
        CPU_FALLBACK_ID,
        f"Paddle's places say {devices}, but the process mapped no NVIDIA library while it "
        "trained (/proc/self/maps after the first step): no GPU computed this",
        fix=NOT_A_GPU_RUN_FIX,
        layer="smoke",
        cause="no-nvidia-library",
        causes=["no-nvidia-library"],
        devices=[r.device_used for r in runs],
    )


def _sample_count(nvml: NvmlSummary) -> str:
    """The sampler's count, when the summary has one (a saved or older summary may not)."""
    return f" ({nvml.samples} samples in all)" if nvml.samples is not None else ""


def _gpu_idle(idle: list[tuple[RunResult, Witness]]) -> Finding:
    parts = [
        f"{r.device_used}: the process held {(w.process_mem_max_bytes or 0) // 2**20} MiB on "
        f"GPU {w.gpu} but showed {w.util_text} in {w.samples} samples of the "
        f"{w.window_s} s training window"
        for r, w in idle
    ]
    return fail(
        CPU_FALLBACK_ID,
        "Paddle's places say GPU, but NVML saw no GPU work while training (a CUDA context "
        "proves no training): " + "; ".join(parts),
        fix=RAN_ELSEWHERE_FIX,
        layer="smoke",
        cause="gpu-idle",
        causes=["gpu-idle"],
        witness={r.device_used: to_dict(w) for r, w in idle},
    )


def host_gpu(plan: Plan, run: RunResult) -> int | None:
    """NVML index of the GPU a run used (ordinals follow PCI order: CUDA_DEVICE_ORDER)."""
    used = run.device_used
    if not used.startswith("gpu") or plan.host_gpus is None:
        return None
    ordinal = int(used.split(":", 1)[1]) if ":" in used else 0
    return plan.host_gpus[ordinal] if ordinal < len(plan.host_gpus) else None


def _passed(
    plan: Plan, result: SmokeResult, runs: list[RunResult], seen: dict[str, Witness]
) -> Finding:
    where = f"in {plan.image}" if plan.mode == "container" else f"with {plan.python}"
    parts = [_run_summary(r, seen.get(r.device_used)) for r in runs]
    note = "" if plan.gpu_expected else f" (no GPU expected: {plan.gpu_reason})"
    loaded = loaded_summary(result)
    return passed(
        "smoke.pass",
        f"Paddle {result.paddle_version} trained {where}: "
        + "; ".join(parts)
        + (f"; {loaded}" if loaded else "")
        + note,
        layer="smoke",
        devices=[r.device_used for r in runs],
        # the devices NVML saw busy in their window: what `proof` rests a GPU claim on
        witnessed=[d for d, w in seen.items() if w.state == "busy"],
    )


def _run_summary(run: RunResult, seen: Witness | None) -> str:
    checks = run.checks or ()
    text = (
        f"{run.device_used} loss {run.loss_start:.3f} → {run.loss_end:.3f} in "
        f"{run.steps} steps, {run.steps_per_s} steps/s, "
        f"{len(checks)}/{len(checks)} known answers right"
    )
    if seen is not None and seen.state == "busy":
        text += (
            f", NVML saw {(seen.process_mem_max_bytes or 0) // 2**20} MiB and "
            f"{seen.util_text} on GPU {seen.gpu} while training"
        )
    if isinstance(run.compare_cpu, CpuCompared) and run.compare_cpu.speedup:
        text += f", {run.compare_cpu.speedup}× the CPU"
    if isinstance(run.export, ExportDone) and run.export.match:
        text += ", export matches"
    return text


# Paddle warnings that deserve a finding of their own even when the run passed.
_SERIOUS = (
    "cuda-cudnn-mismatch",
    "cuda-mismatch",
    "cudnn-mismatch",
    "arch-mismatch",
    "library-missing",
    "bf16-unsupported",
    "driver-error",
    "cuda-error",
)


def _warning_findings(warnings: list[PaddleWarning]) -> list[Finding]:
    serious = [w for w in warnings if w.kind in _SERIOUS]
    if not serious:
        return []
    return [
        warn(
            "smoke.paddle-warnings",
            "Paddle warned during the smoke: " + " | ".join(w.text for w in serious[:3]),
            fix=fix_from_warnings(serious, None) or None,
            layer="smoke",
            warnings=[to_dict(w) for w in serious],
        )
    ]

"""A smoke that did not train, or did not learn (pure): the findings for an image that cannot
be had, an engine that refuses the GPU, a run that never started, timed out, crashed, printed no
result or did not learn, each with its log tail and fix."""

from __future__ import annotations

from envcheck.contracts.facts import to_dict
from envcheck.contracts.findings import Finding, fail, warn
from envcheck.contracts.remedy import Instruction, Remedy, steps
from envcheck.contracts.smoke_result import PaddleWarning, RunResult, SmokeResult, WorkloadError
from envcheck.smoke.parse import RawRun, log_tail
from envcheck.smoke.plan import Fallback, Plan
from envcheck.smoke.verdict.causes import fix_from_warnings
from envcheck.smoke.verdict.known_answers import where as _where
from envcheck.smoke.workload.protocol import scan_paddle_warnings
from envcheck.verdict.fixes import (
    FLAT_LOSS_FIX,
    NVIDIA_RUNTIME_FIX,
    READ_THE_JSON_TRACEBACK_FIX,
    READ_THE_LOG_FIX,
    READ_THE_TRACEBACK_FIX,
    SMOKE_OUTPUT_FIX,
    SMOKE_TIMEOUT_FIX,
    START_DOCKER_FIX,
    paddle_or_container_fix,
    paddle_or_docker_fix,
)

LEARNED_RATIO = 0.9  # loss_end must be below 90% of loss_start: measured 0.69 -> ~0.5 on CPU


def gpu_refused(plan: Plan) -> Finding:
    asked = "every GPU" if plan.gpu_ids == ("all",) else f"GPUs {', '.join(plan.gpu_ids or ())}"
    return fail(
        "smoke.gpu-refused",
        f"the Docker engine refused the request for {asked} for {plan.image}: "
        f"{plan.gpu_refused} (no NVIDIA runtime or CDI device)",
        fix=NVIDIA_RUNTIME_FIX,
        layer="engine",
        request=list(plan.gpu_ids or ()),
        error=plan.gpu_refused,
    )


def image_unavailable(plan: Plan, fallback: Fallback) -> Finding:
    then = (
        f"ran the smoke in a subprocess of {plan.python} instead"
        if plan.mode == "in-process"
        else f"and Paddle is not installed in {plan.python}: no smoke ran"
    )
    if fallback.kind == "no-engine":
        fix: Remedy | str = steps(
            plan.engine_fix or START_DOCKER_FIX,
            Instruction("or pass --in-process to smoke-test without the image", alternative=True),
        )
    elif fallback.kind == "no-image":
        fix = "pass an image with --image REF, or --in-process"
    else:
        fix = (
            "make the registry reachable (network, DNS, proxy), or load the image by hand "
            "(docker load -i FILE, or a local registry) and pass it with --image; --in-process "
            "skips the container"
        )
    reason = fallback.reason
    return warn(
        "smoke.image-unavailable",
        f"{reason}; {then}",
        fix=fix,
        layer="smoke",
        reason=reason,
        detail=fallback.detail,
    )


def not_run(plan: Plan) -> Finding:
    return warn(
        "smoke.not-run",
        f"no smoke training ran: no usable image and no Paddle in {plan.python}",
        fix=paddle_or_docker_fix(plan.python, plan.install_command),
        layer="smoke",
    )


def timeout(plan: Plan, raw: RawRun) -> Finding:
    tail = log_tail(raw.stderr)
    return fail(
        "smoke.timeout",
        f"the smoke in {_where(plan)} was killed after {raw.duration_s:.0f} s (timeout) "
        f"and removed{tail_text(tail)}",
        fix=SMOKE_TIMEOUT_FIX,
        layer="smoke",
        duration_s=raw.duration_s,
        log_tail=tail,
    )


def bad_output(plan: Plan, raw: RawRun, problem: str) -> Finding:
    tail = log_tail(raw.stderr)
    return fail(
        "smoke.bad-output",
        f"the smoke in {_where(plan)} did not print its one JSON line: {problem}{tail_text(tail)}",
        fix=SMOKE_OUTPUT_FIX,
        layer="smoke",
        exit_code=raw.exit_code,
        stdout_bytes=raw.stdout_bytes,
        log_tail=tail,
    )


def crashed(plan: Plan, raw: RawRun, result: SmokeResult | None, problem: str | None) -> Finding:
    tail = log_tail(raw.stderr)
    how = f"exited with status {raw.exit_code}"
    if raw.oom_killed:
        how = "was killed by the memory limit (OOM)"
    elif raw.exit_code is None:
        how = "disappeared before it exited (removed by something else, or the engine restarted)"
    known = scan_paddle_warnings(raw.stderr)
    return fail(
        "smoke.crashed",
        f"the smoke in {_where(plan)} {how}"
        + (f" ({problem})" if problem else "")
        + tail_text(tail),
        fix=fix_from_warnings(_warnings(known), plan) or READ_THE_LOG_FIX,
        layer="smoke",
        exit_code=raw.exit_code,
        oom_killed=raw.oom_killed,
        log_tail=tail,
        paddle_warnings=known,
    )


def _warnings(found: list[dict[str, str]]) -> list[PaddleWarning]:
    """The protocol's scan of a log ({kind, text} each), as the result's warnings."""
    return [PaddleWarning(w["kind"], w["text"]) for w in found]


def setup_failed(plan: Plan, raw: RawRun, result: SmokeResult, error: WorkloadError) -> Finding:
    """The smoke died before training (`error`: the result's)."""
    if error.phase == "import" and plan.mode == "in-process":
        return warn(
            "smoke.not-run",
            f"Paddle cannot be imported by {plan.python}: {error.type}: {error.message}",
            fix=paddle_or_container_fix(plan.python),
            layer="smoke",
        )
    tail = log_tail(raw.stderr)
    return fail(
        "smoke.crashed",
        f"the smoke in {_where(plan)} failed while {error.phase}: "
        f"{error.type}: {first_line(error.message)}{tail_text(tail)}",
        fix=fix_from_warnings(list(result.warnings), plan) or READ_THE_TRACEBACK_FIX,
        layer="smoke",
        exit_code=raw.exit_code,
        error=to_dict(error),
        log_tail=tail,
    )


def run_crashed(plan: Plan, result: SmokeResult, runs: list[RunResult]) -> Finding:
    crashed = [(r, r.error) for r in runs if r.error is not None]
    parts = [
        f"{r.device_requested} ({r.device_used}): {e.type}: {first_line(e.message)}"
        for r, e in crashed
    ]
    said = scan_paddle_warnings("\n".join(e.message for _, e in crashed))
    known = [*result.warnings, *_warnings(said)]
    return fail(
        "smoke.crashed",
        f"training failed in {_where(plan)} on " + "; ".join(parts),
        fix=fix_from_warnings(known, plan) or READ_THE_JSON_TRACEBACK_FIX,
        layer="smoke",
        errors=[to_dict(e) for _, e in crashed],
    )


def not_learning(plan: Plan, runs: list[RunResult]) -> Finding:
    parts = [f"{r.device_used}: loss {r.loss_start} → {r.loss_end}" for r in runs]
    return fail(
        "smoke.not-learning",
        f"the loss did not fall by {100 - LEARNED_RATIO * 100:.0f}% in {runs[0].steps} steps "
        f"({'; '.join(parts)}): the arithmetic on this device is wrong",
        fix=FLAT_LOSS_FIX,
        layer="smoke",
        losses={r.device_used: to_dict(r.losses) for r in runs},
    )


def tail_text(tail: list[str], lines: int = 8) -> str:
    return ("\n  last log lines:\n    " + "\n    ".join(tail[-lines:])) if tail else ""


def first_line(text: str | None) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0][:300] if lines else ""

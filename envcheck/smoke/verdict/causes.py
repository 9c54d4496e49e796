"""Why a smoke that should have used the GPU did not, and what to do (pure): the causes of a
CPU fallback read from the plan, the workload's own report and Paddle's log lines, most likely
first, each with its fix; and the fix Paddle's recognised warning lines point at."""

from __future__ import annotations

from collections.abc import Mapping

from envcheck.contracts.findings import Finding, fail
from envcheck.contracts.host_report import CPU_FALLBACK_ID
from envcheck.contracts.remedy import Remedy, as_remedy, steps, user
from envcheck.contracts.smoke_result import PaddleWarning, RunResult, SmokeResult
from envcheck.smoke.plan import Plan
from envcheck.smoke.verdict.known_answers import INSTALL_GPU_PADDLE, install_fix
from envcheck.smoke.verdict.known_answers import where as _where
from envcheck.smoke.workload.protocol import scan_paddle_warnings
from envcheck.verdict.fixes import NO_GPU_BUILD_YET, NVIDIA_RUNTIME_FIX, command

Cause = tuple[str, str, Remedy | str]  # (cause id, what was seen, the fix: a remedy or words)


def fallback_causes(plan: Plan, result: SmokeResult, run: RunResult) -> list[Cause]:
    """[(cause id, what was seen, the fix)], most likely first."""
    causes: list[Cause] = []
    lines = [w.text for w in result.warnings] + [
        run.device_error or "",
        result.cuda_device_count_error or "",
    ]
    kinds = {hit["kind"] for hit in scan_paddle_warnings("\n".join(lines))}
    env = result.env or {}
    if plan.gpu_refused:
        causes.append(
            (
                "engine-refused",
                f"the engine refused the GPU request: {plan.gpu_refused}",
                NVIDIA_RUNTIME_FIX,
            )
        )
    if not result.compiled_with_cuda:
        causes.append(
            (
                "cpu-build",
                (
                    f"Paddle {result.paddle_version} in {_where(plan)} is a CPU-only build "
                    "(is_compiled_with_cuda() is False)"
                ),
                cpu_build_fix(plan),
            )
        )
    hidden = hidden_by_env(plan, env)
    if hidden and result.compiled_with_cuda and not plan.gpu_refused:
        causes.append(hidden)
    driver_kinds = {"driver-error", "library-missing", "cuda-error"}
    if kinds & driver_kinds and result.compiled_with_cuda:
        # Any line of a text, not its first recognised one: a device error may say nothing Paddle
        # words (no hit) or open with another kind (a `no-gpu` line before the CUDA error).
        line = next(
            t for t in lines if any(hit["kind"] in driver_kinds for hit in scan_paddle_warnings(t))
        )
        causes.append(
            (
                "driver-error",
                f"the CUDA driver failed in {_where(plan)}: {line}",
                driver_fix(plan, result),
            )
        )
    if result.compiled_with_cuda and not result.cuda_device_count and not causes:
        causes.append(
            (
                "no-gpu-visible",
                f"Paddle sees no GPU in {_where(plan)} (cuda device count {result.cuda_device_count})",
                no_gpu_fix(plan),
            )
        )
    if not causes:
        causes.append(
            (
                "unexplained",
                (
                    f"Paddle saw {result.cuda_device_count} GPU(s) but trained on "
                    f"{run.device_used} (device error: {run.device_error}; parameters on "
                    f"{sorted(set((run.param_places or {}).values()))})"
                ),
                "report this with the doctor's JSON output (--json)",
            )
        )
    return causes


def hidden_by_env(plan: Plan, env: Mapping[str, str | None]) -> Cause | None:
    """CUDA_VISIBLE_DEVICES="" / -1 hides every GPU (compat_facts 7 row 7); so does
    NVIDIA_VISIBLE_DEVICES=void|none in a container (NVIDIA Container Toolkit docs:
    https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/docker-specialized.html)."""
    cvd = env.get("CUDA_VISIBLE_DEVICES")
    if cvd is not None and cvd.strip() in ("", "-1", "none", "void", "NoDevFiles"):
        where = "the image sets" if plan.mode == "container" else "your environment has"
        fix = (
            "unset CUDA_VISIBLE_DEVICES (or list the GPUs to use, e.g. CUDA_VISIBLE_DEVICES=0)"
            if plan.mode != "container"
            else f"override it (docker run -e CUDA_VISIBLE_DEVICES=), or remove the ENV line from {plan.image}"
        )
        return (
            "hidden-by-cuda-visible-devices",
            f"{where} CUDA_VISIBLE_DEVICES={cvd!r}, which hides every GPU",
            fix,
        )
    nvd = env.get("NVIDIA_VISIBLE_DEVICES")
    if plan.mode == "container" and nvd is not None and nvd.strip() in ("", "void", "none"):
        return (
            "hidden-by-nvidia-visible-devices",
            f"the image sets NVIDIA_VISIBLE_DEVICES={nvd!r}",
            f"remove NVIDIA_VISIBLE_DEVICES from {plan.image} (the GPU request sets it)",
        )
    return None


def cpu_build_fix(plan: Plan) -> Remedy | str:
    if plan.mode == "container":
        if plan.gpu_image:
            return steps(
                user(
                    "envcheck",
                    "doctor",
                    "--image",
                    plan.gpu_image,
                    changes="runs the smoke in the CUDA image of Paddle the doctor chose",
                )
            )
        return "use a CUDA image of Paddle: without --image the doctor chooses one for this host"
    if plan.pip_command is None:
        return NO_GPU_BUILD_YET
    return command(plan.pip_command, NO_GPU_BUILD_YET)


def driver_fix(plan: Plan, result: SmokeResult) -> str:
    cuda = result.cuda_version
    need = f" that supports CUDA {cuda}" if cuda and cuda != "False" else ""
    return f"install an NVIDIA driver{need} (the driver findings say which)"


def no_gpu_fix(plan: Plan) -> str:
    if plan.mode == "container":
        return (
            "the engine accepted the GPU request but the container sees no GPU: register the "
            "NVIDIA Container Toolkit with Docker again (nvidia-ctk runtime configure "
            "--runtime=docker as root, then restart Docker)"
        )
    return "load the driver, and make /dev/nvidia* readable and writable by your user"


def cpu_fallback(plan: Plan, result: SmokeResult, runs: list[RunResult]) -> Finding:
    causes = fallback_causes(plan, result, runs[0])
    asked = ", ".join(f"{r.device_requested}→{r.device_used}" for r in runs)
    seen = "; also ".join(text for _, text, _ in causes)
    fix = steps(*dict.fromkeys(as_remedy(fix) for _, _, fix in causes))  # in order, no repeats
    return fail(
        CPU_FALLBACK_ID,
        f"a GPU was expected ({plan.gpu_reason}) but the smoke trained on the CPU ({asked}): {seen}",
        fix=fix,
        layer="smoke",
        causes=[c for c, _, _ in causes],
        cause=causes[0][0],
        devices=[
            {
                "device_requested": r.device_requested,
                "device_used": r.device_used,
                "device_error": r.device_error,
            }
            for r in runs
        ],
    )


def fix_from_warnings(warnings: list[PaddleWarning], plan: Plan | None) -> Remedy | str | None:
    kinds = [w.kind for w in warnings]
    if "arch-mismatch" in kinds:
        if plan is not None:
            return install_fix(
                plan, "a Paddle build with kernels for this GPU's compute capability"
            )
        return (
            "this Paddle build has no kernels for this GPU's compute capability: install the wheel "
            f"built for it ({INSTALL_GPU_PADDLE})"
        )
    if any(k in kinds for k in ("cuda-mismatch", "cuda-cudnn-mismatch", "driver-error")):
        return (
            "upgrade the NVIDIA driver to one that supports the CUDA version Paddle was built with"
        )
    if "cudnn-mismatch" in kinds or "library-missing" in kinds:
        return "install the cuDNN (and CUDA libraries) Paddle was built with, or use the official image"
    if "bf16-unsupported" in kinds:
        return "bf16 needs compute capability >= 8.0: use fp16 on this GPU"
    if plan is not None and "cpu-build" in kinds:
        return cpu_build_fix(plan)
    return None

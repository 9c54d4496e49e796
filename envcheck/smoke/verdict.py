"""Judging the smoke (pure): the findings for a plan and what its run printed.

Every finding the smoke can raise is built here, from the plan and the recorded outputs, so the
unit tests replay real results without an engine.
"""

from __future__ import annotations

from typing import Any

from envcheck.findings import Finding, fail, passed, warn
from envcheck.fixes import NO_GPU_BUILD_YET, NVIDIA_RUNTIME_FIX, START_DOCKER_FIX
from envcheck.report import CPU_FALLBACK_ID
from envcheck.smoke.known_answers import INSTALL_GPU_PADDLE, is_wrong, wrong_results
from envcheck.smoke.known_answers import where as _where
from envcheck.smoke.loaded import loaded_summary
from envcheck.smoke.parse import RawRun, log_tail
from envcheck.smoke.pieces import PIECE_IDS, piece_failure
from envcheck.smoke.plan import Outcome, Plan
from envcheck.smoke.protocol import scan_paddle_warnings
from envcheck.smoke.witness import Witness, witness

LEARNED_RATIO = 0.9  # loss_end must be below 90% of loss_start: measured 0.69 -> ~0.5 on CPU


def judge(plan: Plan, outcome: Outcome | None) -> list[Finding]:
    if plan.mode == "not-run" or outcome is None:
        return [_not_run(plan)]
    raw = outcome.raw
    if raw.timed_out:
        return [_timeout(plan, raw)]
    if raw.stdout_overflow:
        return [
            _bad_output(
                plan,
                raw,
                f"it printed more than {len(raw.stdout)} bytes on stdout "
                f"and was stopped ({raw.stdout_bytes} bytes read)",
            )
        ]
    if outcome.result is None:
        if raw.exit_code != 0:
            return [_crashed(plan, raw, None, outcome.problem)]
        return [_bad_output(plan, raw, outcome.problem or "no result")]
    result = outcome.result
    if result["error"] is not None:
        return [_setup_failed(plan, raw, result)]
    findings = judge_runs(plan, result, outcome.nvml)
    if raw.exit_code != 0 and not any(f.id in ("smoke.crashed", *PIECE_IDS) for f in findings):
        findings = [f for f in findings if f.id != "smoke.pass"]
        findings.append(
            _crashed(plan, raw, result, f"exited with status {raw.exit_code} after its result")
        )
    return findings


def judge_runs(plan: Plan, result: dict[str, Any], nvml: dict[str, Any]) -> list[Finding]:
    runs = result["runs"]
    warnings = result["warnings"]
    findings: list[Finding] = []
    crashed = [r for r in runs if r["error"]]
    trained = [r for r in runs if not r["error"]]
    if crashed:  # a piece of the training named by Paddle's words, else a plain crash
        findings.append(piece_failure(plan, result, crashed) or _run_crashed(plan, result, crashed))
    seen = witnesses(plan, trained, nvml)
    wrong = [r for r in runs if is_wrong(r)]  # checks before a crash count too
    if wrong:
        findings.append(wrong_results(plan, result, wrong, seen))
    fell_back = [r for r in trained if plan.gpu_expected and not on_gpu(r)]
    if fell_back:
        findings.append(cpu_fallback(plan, result, fell_back))
    stuck = [r for r in trained if not learned(r) and not is_wrong(r)]
    if stuck:
        findings.append(_not_learning(plan, stuck))
    findings += _extras(plan, trained)
    findings += _nvml_findings([r for r in trained if not is_wrong(r)], nvml, seen)
    if not any(f.severity == "fail" for f in findings):
        findings.insert(0, _passed(plan, result, trained, seen))
    said = {line for f in findings if f.id in PIECE_IDS for line in f.observed["lines"]}
    findings += _warning_findings([w for w in warnings if w["text"] not in said])  # once
    return findings


def witnesses(plan: Plan, runs: list[dict[str, Any]], nvml: dict[str, Any]) -> dict[str, Witness]:
    """NVML's evidence per GPU run (by device), inside each run's training window."""
    if nvml.get("status") != "ok":
        return {}
    return {
        r["device_used"]: witness(nvml, host_gpu(plan, r), r.get("train_window"))
        for r in runs
        if on_gpu(r)
    }


def on_gpu(run: dict[str, Any]) -> bool:
    """The device Paddle used *and* where every parameter and the logits actually live."""
    places = [*run["param_places"].values(), run["logits_place"]]
    return str(run["device_used"]).startswith("gpu") and all("gpu" in p for p in places)


def learned(run: dict[str, Any]) -> bool:
    start, end = run["loss_start"], run["loss_end"]
    return start is not None and end is not None and end < start * LEARNED_RATIO


def fallback_causes(
    plan: Plan, result: dict[str, Any], run: dict[str, Any]
) -> list[tuple[str, str, str]]:
    """[(cause id, what was seen, the fix)], most likely first."""
    causes: list[tuple[str, str, str]] = []
    lines = [w["text"] for w in result["warnings"]] + [
        run.get("device_error") or "",
        result.get("cuda_device_count_error") or "",
    ]
    kinds = {hit["kind"] for hit in scan_paddle_warnings("\n".join(lines))}
    env = result.get("env") or {}
    if plan.gpu_refused:
        causes.append(
            (
                "engine-refused",
                f"the engine refused the GPU request: {plan.gpu_refused}",
                NVIDIA_RUNTIME_FIX,
            )
        )
    if not result["compiled_with_cuda"]:
        causes.append(
            (
                "cpu-build",
                (
                    f"Paddle {result['paddle_version']} in {_where(plan)} is a CPU-only build "
                    "(is_compiled_with_cuda() is False)"
                ),
                _cpu_build_fix(plan),
            )
        )
    hidden = _hidden_by_env(plan, env)
    if hidden and result["compiled_with_cuda"] and not plan.gpu_refused:
        causes.append(hidden)
    driver_kinds = {"driver-error", "library-missing", "cuda-error"}
    if kinds & driver_kinds and result["compiled_with_cuda"]:
        # Any line of a text, not its first recognised one: a device error may say nothing Paddle
        # words (no hit) or open with another kind (a `no-gpu` line before the CUDA error).
        line = next(
            t for t in lines if any(hit["kind"] in driver_kinds for hit in scan_paddle_warnings(t))
        )
        causes.append(
            (
                "driver-error",
                f"the CUDA driver failed in {_where(plan)}: {line}",
                _driver_fix(plan, result),
            )
        )
    if result["compiled_with_cuda"] and not result["cuda_device_count"] and not causes:
        causes.append(
            (
                "no-gpu-visible",
                f"Paddle sees no GPU in {_where(plan)} (cuda device count {result['cuda_device_count']})",
                _no_gpu_fix(plan),
            )
        )
    if not causes:
        causes.append(
            (
                "unexplained",
                (
                    f"Paddle saw {result['cuda_device_count']} GPU(s) but trained on "
                    f"{run['device_used']} (device error: {run.get('device_error')}; parameters on "
                    f"{sorted(set(run['param_places'].values()))})"
                ),
                "report this with the JSON output: `envcheck doctor --json`",
            )
        )
    return causes


def _hidden_by_env(plan: Plan, env: dict[str, Any]) -> tuple[str, str, str] | None:
    """CUDA_VISIBLE_DEVICES="" / -1 hides every GPU (compat_facts 7 row 7); so does
    NVIDIA_VISIBLE_DEVICES=void|none in a container (NVIDIA Container Toolkit docs:
    https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/docker-specialized.html)."""
    cvd = env.get("CUDA_VISIBLE_DEVICES")
    if cvd is not None and cvd.strip() in ("", "-1", "none", "void", "NoDevFiles"):
        where = "the image sets" if plan.mode == "container" else "your environment has"
        fix = (
            "unset CUDA_VISIBLE_DEVICES (or list the GPUs to use, e.g. CUDA_VISIBLE_DEVICES=0)"
            if plan.mode != "container"
            else f"override it: `docker run -e CUDA_VISIBLE_DEVICES= …`, or remove the ENV line from {plan.image}"
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


def _cpu_build_fix(plan: Plan) -> str:
    if plan.mode == "container":
        image = (
            f"`envcheck doctor --image {plan.gpu_image}`" if plan.gpu_image else "a `-gpu-cuda` tag"
        )
        return f"use a CUDA image of Paddle: {image}"
    if plan.pip_command is None:
        return NO_GPU_BUILD_YET
    return f"install the GPU build in {plan.python}: `{plan.pip_command}` ({INSTALL_GPU_PADDLE})"


def _driver_fix(plan: Plan, result: dict[str, Any]) -> str:
    cuda = result.get("cuda_version")
    need = f" that supports CUDA {cuda}" if cuda and cuda != "False" else ""
    probe = (
        f"`docker run --rm --gpus all {plan.image} nvidia-smi`"
        if plan.mode == "container"
        else "`nvidia-smi`"
    )
    return f"check the driver with {probe}; install an NVIDIA driver{need} (see the driver findings above)"


def _no_gpu_fix(plan: Plan) -> str:
    if plan.mode == "container":
        return (
            f"the engine accepted the GPU request but the container sees no GPU: check "
            f"`docker run --rm --gpus all {plan.image} nvidia-smi` and the NVIDIA Container Toolkit "
            f"(`nvidia-ctk runtime configure --runtime=docker`)"
        )
    return "check `nvidia-smi`, that the driver is loaded, and that /dev/nvidia* is readable by you"


def cpu_fallback(plan: Plan, result: dict[str, Any], runs: list[dict[str, Any]]) -> Finding:
    causes = fallback_causes(plan, result, runs[0])
    asked = ", ".join(f"{r['device_requested']}→{r['device_used']}" for r in runs)
    seen = "; also ".join(text for _, text, _ in causes)
    fix = "; then ".join(dict.fromkeys(fix for _, _, fix in causes))  # in order, no repeats
    return fail(
        CPU_FALLBACK_ID,
        f"a GPU was expected ({plan.gpu_reason}) but the smoke trained on the CPU ({asked}): {seen}",
        fix,
        "smoke",
        causes=[c for c, _, _ in causes],
        cause=causes[0][0],
        devices=[
            {k: r.get(k) for k in ("device_requested", "device_used", "device_error")} for r in runs
        ],
    )


def gpu_refused(plan: Plan) -> Finding:
    asked = "every GPU" if plan.gpu_ids == ("all",) else f"GPUs {', '.join(plan.gpu_ids or ())}"
    return fail(
        "smoke.gpu-refused",
        f"the Docker engine refused the request for {asked} for {plan.image}: "
        f"{plan.gpu_refused} (no NVIDIA runtime or CDI device)",
        NVIDIA_RUNTIME_FIX,
        "engine",
        request=list(plan.gpu_ids or ()),
        error=plan.gpu_refused,
    )


def image_unavailable(plan: Plan, reason: str) -> Finding:
    then = (
        f"ran the smoke in a subprocess of {plan.python} instead"
        if plan.mode == "in-process"
        else f"and Paddle is not installed in {plan.python}: no smoke ran"
    )
    if reason.startswith("no container engine"):
        fix = f"{plan.engine_fix or START_DOCKER_FIX} to smoke-test the image, or pass --in-process"
    elif reason.startswith("the doctor chose no image"):
        fix = "pass an image with --image REF, or --in-process"
    else:
        fix = (
            "make the registry reachable (network, DNS, proxy) or load the image by hand "
            "(`docker load`, a local registry) and pass it with --image; --in-process skips the container"
        )
    return warn("smoke.image-unavailable", f"{reason}; {then}", fix, "smoke", reason=reason)


def _not_run(plan: Plan) -> Finding:
    return warn(
        "smoke.not-run",
        f"no smoke training ran: no usable image and no Paddle in {plan.python}",
        f"install Paddle in {plan.python} (`python -m pip install paddlepaddle`) or start Docker",
        "smoke",
    )


def _timeout(plan: Plan, raw: RawRun) -> Finding:
    tail = log_tail(raw.stderr)
    return fail(
        "smoke.timeout",
        f"the smoke in {_where(plan)} was killed after {raw.duration_s:.0f} s (timeout) "
        f"and removed{_tail_text(tail)}",
        "look at the last log lines; if the machine is just slow, raise --smoke-timeout",
        "smoke",
        duration_s=raw.duration_s,
        log_tail=tail,
    )


def _bad_output(plan: Plan, raw: RawRun, problem: str) -> Finding:
    tail = log_tail(raw.stderr)
    return fail(
        "smoke.bad-output",
        f"the smoke in {_where(plan)} did not print its one JSON line: {problem}{_tail_text(tail)}",
        "the smoke script must print exactly one JSON line on stdout; is the image's `python` "
        "wrapped by something that prints?",
        "smoke",
        exit_code=raw.exit_code,
        stdout_bytes=raw.stdout_bytes,
        log_tail=tail,
    )


def _crashed(
    plan: Plan, raw: RawRun, result: dict[str, Any] | None, problem: str | None
) -> Finding:
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
        + _tail_text(tail),
        _fix_from_warnings(known, plan) or "read the last log lines above",
        "smoke",
        exit_code=raw.exit_code,
        oom_killed=raw.oom_killed,
        log_tail=tail,
        paddle_warnings=known,
    )


def _setup_failed(plan: Plan, raw: RawRun, result: dict[str, Any]) -> Finding:
    error = result["error"]
    if error.get("phase") == "import" and plan.mode == "in-process":
        return warn(
            "smoke.not-run",
            f"Paddle cannot be imported by {plan.python}: "
            f"{error.get('type')}: {error.get('message')}",
            f"install Paddle in {plan.python} or run the smoke in a container",
            "smoke",
        )
    tail = log_tail(raw.stderr)
    return fail(
        "smoke.crashed",
        f"the smoke in {_where(plan)} failed while {error.get('phase')}: "
        f"{error.get('type')}: {_first_line(error.get('message'))}{_tail_text(tail)}",
        _fix_from_warnings(result["warnings"], plan) or "read the traceback in the log",
        "smoke",
        exit_code=raw.exit_code,
        error=error,
        log_tail=tail,
    )


def _run_crashed(plan: Plan, result: dict[str, Any], runs: list[dict[str, Any]]) -> Finding:
    parts = [
        f"{r['device_requested']} ({r['device_used']}): {r['error']['type']}: "
        f"{_first_line(r['error']['message'])}"
        for r in runs
    ]
    known = result["warnings"] + scan_paddle_warnings(
        "\n".join(r["error"]["message"] for r in runs)
    )
    return fail(
        "smoke.crashed",
        f"training failed in {_where(plan)} on " + "; ".join(parts),
        _fix_from_warnings(known, plan) or "read the traceback in the smoke JSON (`--json`)",
        "smoke",
        errors=[r["error"] for r in runs],
    )


def _not_learning(plan: Plan, runs: list[dict[str, Any]]) -> Finding:
    parts = [f"{r['device_used']}: loss {r['loss_start']} → {r['loss_end']}" for r in runs]
    return fail(
        "smoke.not-learning",
        f"the loss did not fall by {100 - LEARNED_RATIO * 100:.0f}% in {runs[0]['steps']} steps "
        f"({'; '.join(parts)}): the arithmetic on this device is wrong",
        "a loss that stays flat on a learnable task points to broken kernels: check the arch "
        "and cuDNN warnings; try --amp off, another image, or a newer driver",
        "smoke",
        losses={r["device_used"]: r["losses"] for r in runs},
    )


def _extras(plan: Plan, runs: list[dict[str, Any]]) -> list[Finding]:
    found = []
    broken = [
        r
        for r in runs
        if r.get("export") and (r["export"].get("error") or not r["export"].get("match"))
    ]
    if broken:
        details = [_export_detail(r) for r in broken]
        found.append(
            fail(
                "smoke.export-failed",
                "train → serve failed: " + "; ".join(details),
                "check that the image ships paddle.inference for this device (GPU builds do)",
                "smoke",
                export=[r["export"] for r in broken],
            )
        )
    slow = [r for r in runs if r.get("compare_cpu") and r["compare_cpu"].get("error")]
    if slow:
        found.append(
            warn(
                "smoke.compare-cpu-failed",
                "the CPU comparison run failed: "
                + _first_line(slow[0]["compare_cpu"]["error"].get("message")),
                None,
                "smoke",
            )
        )
    return found


def _export_detail(run: dict[str, Any]) -> str:
    export = run["export"]
    if export.get("error"):
        return f"{run['device_used']}: {export['error'].get('type')}: {_first_line(export['error'].get('message'))}"
    return (
        f"{run['device_used']}: paddle.inference predictions differ from training "
        f"(max |Δ| {export.get('max_abs_diff')}, argmax agreement {export.get('argmax_agreement')})"
    )


_UNCONFIRMED = {
    "unseen": "NVML never listed the process {pids} with GPU memory while it trained",
    "no-samples": "NVML took no sample during the {window} s training window",
    "unknown": "NVML reports no utilisation for GPU {gpu}, so the work cannot be confirmed",
}


def _nvml_findings(
    runs: list[dict[str, Any]], nvml: dict[str, Any], seen: dict[str, Witness]
) -> list[Finding]:
    """The witness: the workload's process must hold memory *and* work on its GPU while training."""
    judged = [(r, seen[r["device_used"]]) for r in runs if r["device_used"] in seen]
    found = []
    idle = [(r, w) for r, w in judged if w.state == "idle"]
    if idle:
        found.append(_gpu_idle(idle))
    unsure = [(r, w) for r, w in judged if w.state not in ("busy", "idle")]
    if unsure:
        reasons = [
            f"{r['device_used']}: "
            + _UNCONFIRMED[w.state].format(pids=nvml.get("pids"), window=w.window_s, gpu=w.gpu)
            for r, w in unsure
        ]
        found.append(
            warn(
                "smoke.gpu-unconfirmed",
                f"Paddle reports training on {', '.join(r['device_used'] for r, _ in unsure)}, "
                f"but {'; '.join(reasons)} ({nvml.get('samples')} samples in all)",
                "per-process accounting and utilisation are missing under some vGPU/WSL drivers; "
                "otherwise the run was not on this host's GPU: compare `nvidia-smi pmon -s um` "
                "during a run",
                "smoke",
                witness={r["device_used"]: w.as_dict() for r, w in unsure},
            )
        )
    return found


def _gpu_idle(idle: list[tuple[dict[str, Any], Witness]]) -> Finding:
    parts = [
        f"{r['device_used']}: the process held {(w.process_mem_max_bytes or 0) // 2**20} MiB on "
        f"GPU {w.gpu} but showed {w.util_text} in {w.samples} samples of the "
        f"{w.window_s} s training window"
        for r, w in idle
    ]
    return fail(
        CPU_FALLBACK_ID,
        "Paddle's places say GPU, but NVML saw no GPU work while training (a CUDA context "
        "proves no training): " + "; ".join(parts),
        "the computation ran elsewhere: check the Paddle warnings (arch, cuDNN) and the device "
        "placement, and watch `nvidia-smi pmon -s um` during `envcheck doctor`",
        "smoke",
        cause="gpu-idle",
        causes=["gpu-idle"],
        witness={r["device_used"]: w.as_dict() for r, w in idle},
    )


def host_gpu(plan: Plan, run: dict[str, Any]) -> int | None:
    """NVML index of the GPU a run used (ordinals follow PCI order: CUDA_DEVICE_ORDER)."""
    used = str(run["device_used"])
    if not used.startswith("gpu") or plan.host_gpus is None:
        return None
    ordinal = int(used.split(":", 1)[1]) if ":" in used else 0
    return plan.host_gpus[ordinal] if ordinal < len(plan.host_gpus) else None


def _passed(
    plan: Plan, result: dict[str, Any], runs: list[dict[str, Any]], seen: dict[str, Witness]
) -> Finding:
    where = f"in {plan.image}" if plan.mode == "container" else f"with {plan.python}"
    parts = [_run_summary(r, seen.get(r["device_used"])) for r in runs]
    note = "" if plan.gpu_expected else f" (no GPU expected: {plan.gpu_reason})"
    loaded = loaded_summary(result)
    return passed(
        "smoke.pass",
        f"Paddle {result['paddle_version']} trained {where}: "
        + "; ".join(parts)
        + (f"; {loaded}" if loaded else "")
        + note,
        "smoke",
        devices=[r["device_used"] for r in runs],
    )


def _run_summary(run: dict[str, Any], seen: Witness | None) -> str:
    checks = run.get("checks") or []
    text = (
        f"{run['device_used']} loss {run['loss_start']:.3f} → {run['loss_end']:.3f} in "
        f"{run['steps']} steps, {run['steps_per_s']} steps/s, "
        f"{len(checks)}/{len(checks)} known answers right"
    )
    if seen is not None and seen.state == "busy":
        text += (
            f", NVML saw {(seen.process_mem_max_bytes or 0) // 2**20} MiB and "
            f"{seen.util_text} on GPU {seen.gpu} while training"
        )
    speedup = (run.get("compare_cpu") or {}).get("speedup")
    if speedup:
        text += f", {speedup}× the CPU"
    if (run.get("export") or {}).get("match"):
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


def _warning_findings(warnings: list[dict[str, str]]) -> list[Finding]:
    serious = [w for w in warnings if w["kind"] in _SERIOUS]
    if not serious:
        return []
    return [
        warn(
            "smoke.paddle-warnings",
            "Paddle warned during the smoke: " + " | ".join(w["text"] for w in serious[:3]),
            _fix_from_warnings(serious, None) or None,
            "smoke",
            warnings=serious,
        )
    ]


def _fix_from_warnings(warnings: list[dict[str, str]], plan: Plan | None) -> str | None:
    kinds = [w["kind"] for w in warnings]
    if "arch-mismatch" in kinds:
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
        return _cpu_build_fix(plan)
    return None


def _tail_text(tail: list[str], lines: int = 8) -> str:
    return ("\n  last log lines:\n    " + "\n    ".join(tail[-lines:])) if tail else ""


def _first_line(text: Any) -> str:
    lines = str(text or "").strip().splitlines()
    return lines[0][:300] if lines else ""

"""The smoke's pure half: planning from facts, and judging recorded workload outputs.

One scenario per real way a "GPU" training ends up on the CPU or fails (compat_facts.md §7), over
the JSON lines the workload printed in the offline Paddle image (tests/smoke_samples.py).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from envcheck.contracts.exitcodes import ExitStatus
from envcheck.contracts.facts import host_from_document, to_dict
from envcheck.contracts.findings import Finding
from envcheck.contracts.host_report import ImageChoice, exit_status_of, verdict_of
from envcheck.contracts.record import replace
from envcheck.contracts.smoke_report import NvmlSummary
from envcheck.contracts.smoke_result import RunResult, TrainWindow
from envcheck.engine.docker_adapter import NVIDIA_RUNTIME_FIX
from envcheck.render.smoke_runs import smoke_row
from envcheck.smoke.options import SmokeOptions
from envcheck.smoke.parse import RawRun
from envcheck.smoke.plan import Fallback, FallbackKind, Outcome, in_process_plan, plan_smoke
from envcheck.smoke.verdict.document import smoke_document
from envcheck.smoke.verdict.failures import image_unavailable
from envcheck.smoke.verdict.judge import host_gpu, judge
from envcheck.verdict.proof import expect_gpu_unproven, proof_of, proof_words
from tests import scenarios as s
from tests import smoke_samples as rec
from tests.smoke_plans import (
    CPU_IMAGE,
    GPU_IMAGE,
    NO_GPU_HOST,
    NVML_ABSENT,
    container_plan,
    gpu_host,
    outcome,
)


def run_on(device: str) -> RunResult:
    """A run on `device`, with only the keys every run has (`host_gpu` reads the device used)."""
    return RunResult(device_requested=device, device_used=device, device_error=None, error=None)


def ids(findings: list[Finding]) -> list[str]:
    return [f.id for f in findings]


def only(findings: list[Finding], id_: str) -> Finding:
    found = [f for f in findings if f.id == id_]
    assert len(found) == 1, f"{id_} in {ids(findings)}"
    return found[0]


# -- planning ---------------------------------------------------------------------------------
def test_host_without_gpu_trains_on_cpu_in_the_chosen_image_without_a_gpu_request() -> None:
    plan = container_plan()
    assert (plan.mode, plan.image, plan.device_args, plan.gpu_ids) == (
        "container",
        CPU_IMAGE.ref,
        ("cpu",),
        None,
    )
    assert not plan.gpu_expected and plan.gpu_reason == "the host has no usable NVIDIA GPU"


def test_expect_gpu_on_a_host_without_gpus_still_asks_the_engine_for_every_gpu() -> None:
    plan = container_plan(expect_gpu=True)
    assert plan.gpu_expected and plan.gpu_ids == ("all",) and plan.device_args == ("gpu:all",)


def test_two_a100s_and_a_gpu_image_expect_the_gpu_on_each_card() -> None:
    plan = container_plan(gpu_host(2), GPU_IMAGE)
    assert plan.gpu_expected and plan.gpu_ids == ("all",) and plan.host_gpus == (0, 1)
    assert "2 usable GPU(s)" in plan.gpu_reason


def test_gpus_flag_requests_exactly_those_and_maps_container_ordinals_back() -> None:
    plan = container_plan(gpu_host(3), GPU_IMAGE, gpus=(2, 0))
    assert plan.gpu_ids == ("2", "0") and plan.host_gpus == (0, 2)
    assert host_gpu(plan, run_on("gpu:1")) == 2  # the container sees host GPUs 0,2 as 0,1


def test_gpu_host_with_a_cpu_image_expects_the_gpu() -> None:
    """A CPU run beside a usable GPU is a CPU fallback, asked or not."""
    plan = container_plan(gpu_host(), CPU_IMAGE)
    assert plan.gpu_expected and plan.gpu_ids == ("all",)


@pytest.mark.parametrize(
    "ref",
    [
        "registry.local/ml/trainer:2024-05",
        "registry.local/paddle:3.3.1-gpu-cuda12.6",
        "x/paddle:cpu",
    ],
    ids=["neutral-name", "gpu-name", "cpu-name"],
)
def test_an_image_named_with_image_is_judged_by_the_host_not_its_name(ref: str) -> None:
    """A host with a usable GPU expects it whatever the tag says; what the workload reports
    (is_compiled_with_cuda) then tells a CPU build from a fallback."""
    given = ImageChoice(ref=ref, kind="cpu", reason="given with --image")
    plan = container_plan(gpu_host(), given, image=ref)
    assert plan.gpu_expected and plan.image == ref and plan.gpu_ids == ("all",)
    assert not container_plan(NO_GPU_HOST, given, image=ref).gpu_expected


def test_no_engine_falls_back_in_process_and_says_why() -> None:
    host = host_from_document(
        s.host(
            paddle=s.PADDLE_331_CPU | {"python": "/usr/bin/python3"},
            engine={"status": "absent", "reason": "no socket at /var/run/docker.sock"},
        )
    )
    plan = plan_smoke(host, CPU_IMAGE, SmokeOptions())
    assert plan.mode == "in-process" and plan.python == "/usr/bin/python3"
    assert plan.fallback == Fallback(
        "no-engine", "no container engine: no socket at /var/run/docker.sock"
    )


@pytest.mark.parametrize(
    ("kind", "fix"),
    [
        ("no-engine", "or pass --in-process to smoke-test without the image"),
        ("no-image", "pass an image with --image REF"),
        ("image-unavailable", "make the registry reachable"),
    ],
)
def test_the_fallbacks_fix_follows_its_kind_not_its_words(kind: FallbackKind, fix: str) -> None:
    """The reason is for people: the same words under each kind get that kind's fix."""
    why = Fallback(kind, "no container engine, and the doctor chose no image")
    plan = in_process_plan(NO_GPU_HOST, None, SmokeOptions(), fallback=why)
    finding = image_unavailable(plan, why)
    assert fix in (finding.fix or "") and finding.observed["reason"] == why.reason


def test_in_process_flag_is_not_a_fallback() -> None:
    plan = plan_smoke(
        NO_GPU_HOST, CPU_IMAGE, SmokeOptions(in_process=True, python="/opt/py/bin/python")
    )
    assert (plan.mode, plan.python, plan.fallback, plan.device_args) == (
        "in-process",
        "/opt/py/bin/python",
        None,
        ("cpu",),
    )


def test_no_paddle_in_the_target_python_is_not_run() -> None:
    host = host_from_document(s.host(paddle={"status": "absent"}))
    assert in_process_plan(host, None, SmokeOptions(), fallback=None).mode == "not-run"


def test_in_process_gpu_indices_are_nvml_indices_unless_cuda_visible_devices_renumbers() -> None:
    plan = in_process_plan(gpu_host(3), None, SmokeOptions(gpus=(0, 2)), fallback=None)
    assert plan.device_args == ("gpu:0", "gpu:2") and host_gpu(plan, run_on("gpu:2")) == 2
    hidden = gpu_host(3, env={"CUDA_VISIBLE_DEVICES": "2"})
    assert in_process_plan(hidden, None, SmokeOptions(), fallback=None).host_gpus is None


# -- judging: passes ----------------------------------------------------------------------------
def test_cpu_smoke_that_learns_on_a_host_without_gpu_is_a_pass() -> None:
    findings = judge(container_plan(), outcome(rec.result()))
    assert ids(findings) == ["smoke.pass"] and verdict_of(findings) == "pass"
    assert "cpu loss 0.694 → 0.217 in 60 steps" in findings[0].message
    assert "no GPU expected: the host has no usable NVIDIA GPU" in findings[0].message


def test_gpu_smoke_confirmed_by_nvml_memory_and_work_inside_the_training_window() -> None:
    doc = rec.on_gpu(rec.result())
    nvml = rec.nvml_witness(doc, {0: (812, 57, 41)})
    findings = judge(container_plan(gpu_host(), GPU_IMAGE), outcome(doc, nvml=nvml))
    assert ids(findings) == ["smoke.pass"]
    assert (
        "gpu:0 loss" in findings[0].message and "14/14 known answers right" in findings[0].message
    )
    assert "NVML saw 812 MiB and 41% SM utilisation of the process on GPU 0 while training" in (
        findings[0].message
    )


def test_gpu_claim_that_nvml_never_saw_is_a_warning() -> None:
    doc = rec.on_gpu(rec.result())
    nvml = rec.nvml_witness(doc, {0: (None, 0, None)})
    findings = judge(container_plan(gpu_host(), GPU_IMAGE), outcome(doc, nvml=nvml))
    assert ids(findings) == ["smoke.pass", "smoke.gpu-unconfirmed"]
    assert verdict_of(findings) == "warn" and exit_status_of(findings) == ExitStatus.OK
    assert "never listed the process [4242] with GPU memory while it trained" in findings[1].message


def test_second_gpu_is_checked_against_its_own_nvml_index() -> None:
    doc = rec.on_gpu(rec.result(), gpus=2)
    nvml = rec.nvml_witness(doc, {0: (700, 30, 22), 1: (None, 0, 0), 2: (700, 28, 19)})
    plan = container_plan(gpu_host(3), GPU_IMAGE, gpus=(0, 2))
    findings = judge(plan, outcome(doc, nvml=nvml))
    assert ids(findings) == ["smoke.pass"] and "on GPU 2 while training" in findings[0].message


def test_a_context_that_does_no_work_while_training_is_cpu_fallback() -> None:
    """The real H100: 612 MiB held, ~0 % utilisation; busy only outside the training window."""
    doc = rec.on_gpu(rec.result())
    nvml = rec.nvml_witness(doc, {0: (612, 0, None)})
    busy_before = rec.nvml_witness(doc, {0: (612, 35, None)}, offset=-30.0).gpus["0"].series
    trace = nvml.gpus["0"]
    series = (*(busy_before or ()), *(trace.series or ()))
    nvml = replace(nvml, gpus={"0": replace(trace, series=series)})
    findings = judge(container_plan(gpu_host(), GPU_IMAGE), outcome(doc, nvml=nvml))
    fallback = only(findings, "smoke.cpu-fallback")
    assert verdict_of(findings) == "cpu-fallback" and exit_status_of(findings) == 6
    assert fallback.observed["cause"] == "gpu-idle"
    assert "held 612 MiB on GPU 0 but showed 0% GPU utilisation in 10 samples" in fallback.message


def test_a_process_idle_by_its_own_utilisation_is_cpu_fallback_even_on_a_busy_gpu() -> None:
    doc = rec.on_gpu(rec.result())
    nvml = rec.nvml_witness(doc, {0: (612, 90, 0)})  # another job keeps the GPU at 90 %
    findings = judge(container_plan(gpu_host(), GPU_IMAGE), outcome(doc, nvml=nvml))
    assert "0% SM utilisation of the process" in only(findings, "smoke.cpu-fallback").message


@pytest.mark.parametrize(
    ("gpus", "offset", "words"),
    [
        ({0: (800, None, None)}, 0.0, "reports no utilisation for GPU 0"),
        ({0: (800, 50, 40)}, 60.0, "took no sample during the"),
    ],
    ids=["no-utilisation", "samples-outside-the-window"],
)
def test_what_the_witness_cannot_tell_is_a_warning_not_a_pass(
    gpus: dict[int, Any], offset: float, words: str
) -> None:
    doc = rec.on_gpu(rec.result())
    nvml = rec.nvml_witness(doc, gpus, offset=offset)
    findings = judge(container_plan(gpu_host(), GPU_IMAGE), outcome(doc, nvml=nvml))
    assert words in only(findings, "smoke.gpu-unconfirmed").message
    assert verdict_of(findings) == "warn"


# -- judging: wrong numbers ---------------------------------------------------------------------
def test_h100_with_the_262_wheel_zeros_and_zero_loss_is_wrong_results_not_fallback() -> None:
    """The real H100 (2.6.2, sm_61-86): matmul and conv returned 0.0, loss 0.0, exit 0."""
    doc = rec.on_gpu(rec.result(), cc="9.0")
    doc["warnings"].append({"kind": "arch-mismatch", "text": rec.ARCH_NOT_SUPPORTED_H100})
    for op in ("matmul", "conv1d", "embedding", "mean"):
        doc = rec.broken(doc, op, "all-zero")
    doc = rec.zero_loss(doc)
    nvml = rec.nvml_witness(doc, {0: (612, 0, None)})
    plan = in_process_plan(gpu_host(), GPU_IMAGE, SmokeOptions(), fallback=None)
    findings = judge(plan, outcome(doc, nvml=nvml))
    wrong = only(findings, "smoke.wrong-results")
    assert verdict_of(findings) == "wrong-results" and exit_status_of(findings) == 7
    assert "smoke.pass" not in ids(findings) and "smoke.cpu-fallback" not in ids(findings)
    assert "smoke.not-learning" not in ids(findings)  # one cause, said once
    assert wrong.observed["cause"] == "arch"
    assert "matmul (all-zero before, all-zero after)" in wrong.message
    assert "the loss started at exactly 0.0; the loss stayed at exactly 0.0" in wrong.message
    assert (
        "the kernels did not run" in wrong.message and "compute capability (9.0)" in wrong.message
    )
    assert GPU_IMAGE.pip_command and GPU_IMAGE.pip_command in (wrong.fix or "")


def test_only_the_cudnn_op_wrong_with_cudnn_9_loaded_under_a_cudnn_8_build_blames_cudnn() -> None:
    doc = rec.broken(rec.on_gpu(rec.result()), "conv1d", "mismatch")
    doc.update(cudnn_version="8.6.0")
    doc["warnings"].append({"kind": "cudnn-version", "text": rec.CUDNN_914_LINE})
    findings = judge(container_plan(gpu_host(), GPU_IMAGE), outcome(doc))
    wrong = only(findings, "smoke.wrong-results")
    assert wrong.observed["cause"] == "cudnn-mismatch" and "cuDNN 8.6.0" in (wrong.fix or "")
    assert "conv1d (mismatch before, mismatch after)" in wrong.message


@pytest.mark.parametrize(
    ("loss_check", "words"),
    [
        ({"start": 0.6931, "non_finite": 0, "zero_steps": 0, "distinct": 1}, "never changed"),
        ({"start": None, "non_finite": 60, "zero_steps": 0, "distinct": 0}, "were NaN/Inf"),
        ({"start": 0.0, "non_finite": 0, "zero_steps": 1, "distinct": 60}, "started at exactly"),
    ],
    ids=["constant", "nan", "starts-at-zero"],
)
def test_a_loss_that_is_nan_zero_or_frozen_is_wrong_results(
    loss_check: dict[str, Any], words: str
) -> None:
    doc = rec.result()
    doc["runs"][0]["loss_check"] = loss_check
    findings = judge(container_plan(), outcome(doc))
    assert words in only(findings, "smoke.wrong-results").message
    assert verdict_of(findings) == "wrong-results" and "smoke.pass" not in ids(findings)


def test_wrong_cpu_numbers_blame_the_cpu_install_not_a_gpu() -> None:
    findings = judge(container_plan(), outcome(rec.broken(rec.result(), "adam", "mismatch")))
    wrong = only(findings, "smoke.wrong-results")
    assert wrong.observed["cause"] == "cpu-kernels" and "--force-reinstall" in (wrong.fix or "")


# -- judging: the silent CPU fallback, cause by cause ---------------------------------------------
def test_expect_gpu_with_a_cpu_only_build_is_cpu_fallback_naming_the_build() -> None:
    plan = container_plan(expect_gpu=True)
    findings = judge(plan, outcome(rec.result(rec.RECORDED_CPU_BUILD_ASKED_GPU)))
    fallback = only(findings, "smoke.cpu-fallback")
    assert fallback.observed["cause"] == "cpu-build"
    assert "CPU-only build (is_compiled_with_cuda() is False)" in fallback.message
    assert "gpu:0→cpu" in fallback.message and "use a CUDA image" in (fallback.fix or "")
    assert (
        verdict_of(findings) == "cpu-fallback"
        and exit_status_of(findings) == ExitStatus.CPU_FALLBACK
    )


def test_engine_refusal_is_the_first_cause_and_its_fix_is_nvidia_ctk() -> None:
    from envcheck.contracts.record import replace

    plan = replace(
        container_plan(expect_gpu=True),
        gpu_refused='could not select device driver "" with capabilities: [[gpu]]',
    )
    fallback = only(
        judge(plan, outcome(rec.result(rec.RECORDED_CPU_BUILD_ASKED_GPU))), "smoke.cpu-fallback"
    )
    assert fallback.observed["causes"] == ["engine-refused", "cpu-build"]
    assert (fallback.fix or "").startswith(NVIDIA_RUNTIME_FIX.prose())


def test_in_process_cpu_build_fix_is_the_doctors_pip_command() -> None:
    plan = in_process_plan(
        gpu_host(), GPU_IMAGE, SmokeOptions(python="/venv/bin/python"), fallback=None
    )
    plan = plan.__class__(**{**plan.__dict__, "gpu_expected": True})
    fallback = only(
        judge(plan, outcome(rec.result(rec.RECORDED_CPU_BUILD_ASKED_GPU))), "smoke.cpu-fallback"
    )
    assert GPU_IMAGE.pip_command and GPU_IMAGE.pip_command in (fallback.fix or "")


def test_gpu_build_hidden_by_empty_cuda_visible_devices() -> None:
    doc = rec.gpu_build_fell_back("ValueError: " + rec.NO_GPU_EMPTY_CVD, CUDA_VISIBLE_DEVICES="")
    plan = in_process_plan(gpu_host(), None, SmokeOptions(), fallback=None)
    fallback = only(judge(plan, outcome(doc)), "smoke.cpu-fallback")
    assert fallback.observed["cause"] == "hidden-by-cuda-visible-devices"
    assert "unset CUDA_VISIBLE_DEVICES" in (fallback.fix or "")


def test_image_that_sets_nvidia_visible_devices_void_hides_the_gpus() -> None:
    doc = rec.gpu_build_fell_back("OSError: " + rec.NO_DEVICE, NVIDIA_VISIBLE_DEVICES="void")
    fallback = only(
        judge(container_plan(gpu_host(), GPU_IMAGE), outcome(doc)), "smoke.cpu-fallback"
    )
    assert fallback.observed["cause"] == "hidden-by-nvidia-visible-devices"


def test_driver_too_old_inside_the_container_is_a_driver_error() -> None:
    doc = rec.gpu_build_fell_back(rec.DRIVER_TOO_OLD)
    fallback = only(
        judge(container_plan(gpu_host(), GPU_IMAGE), outcome(doc)), "smoke.cpu-fallback"
    )
    assert fallback.observed["cause"] == "driver-error"
    assert "CUDA error(35)" in fallback.message and "supports CUDA 12.6" in (fallback.fix or "")


def test_gpu_build_that_sees_no_gpu_in_the_container_points_at_the_toolkit() -> None:
    doc = rec.gpu_build_fell_back("OSError: " + rec.NO_DEVICE)
    fallback = only(
        judge(container_plan(gpu_host(), GPU_IMAGE), outcome(doc)), "smoke.cpu-fallback"
    )
    assert fallback.observed["cause"] == "no-gpu-visible" and "nvidia-ctk" in (fallback.fix or "")


def test_device_says_gpu_but_parameters_stayed_on_cpu_is_a_fallback() -> None:
    doc = rec.on_gpu(rec.result())
    doc["runs"][0]["param_places"]["embedding.weight"] = "Place(cpu)"
    findings = judge(container_plan(gpu_host(), GPU_IMAGE), outcome(doc))
    assert only(findings, "smoke.cpu-fallback").observed["cause"] == "unexplained"


# -- judging: failures (exit 5) -----------------------------------------------------------------
def test_flat_loss_is_not_learning() -> None:
    doc = rec.result()
    doc["runs"][0].update(loss_start=0.6931, loss_end=0.6929)
    findings = judge(container_plan(), outcome(doc))
    assert (
        ids(findings) == ["smoke.not-learning"]
        and exit_status_of(findings) == ExitStatus.SMOKE_FAILED
    )


def test_diverged_loss_written_as_null_is_not_learning() -> None:
    doc = rec.result()
    doc["runs"][0]["loss_end"] = None
    assert ids(judge(container_plan(), outcome(doc))) == ["smoke.not-learning"]


def test_timeout_is_exit_5_with_the_last_log_lines() -> None:
    raw = outcome(None, exit_code=137, timed_out=True, stderr="step 1\nloading cudnn...\n")
    finding = only(judge(container_plan(), raw), "smoke.timeout")
    assert "killed after 4 s (timeout) and removed" in finding.message
    assert finding.observed["log_tail"] == ["step 1", "loading cudnn..."]


def test_megabytes_on_stdout_is_bad_output() -> None:
    raw = outcome(None, exit_code=137, stdout_overflow=True, stdout_bytes=3 * 2**20)
    finding = only(judge(container_plan(), raw), "smoke.bad-output")
    assert "was stopped" in finding.message


def test_garbage_with_exit_0_is_bad_output_and_a_crash_is_crashed() -> None:
    garbage = Outcome(
        RawRun(0, b"hello\n", "", 1.0), None, "stdout is not JSON: 'hello'", NVML_ABSENT
    )
    assert ids(judge(container_plan(), garbage)) == ["smoke.bad-output"]
    crash = Outcome(
        RawRun(1, b"", "Traceback (most recent call last):\nRuntimeError: boom\n", 1.0),
        None,
        "printed nothing on stdout",
        NVML_ABSENT,
    )
    finding = only(judge(container_plan(), crash), "smoke.crashed")
    assert "exited with status 1" in finding.message and "RuntimeError: boom" in finding.message


def test_oom_kill_says_memory_limit() -> None:
    raw = Outcome(RawRun(137, b"", "", 3.0, oom_killed=True), None, "printed nothing", NVML_ABSENT)
    assert "memory limit (OOM)" in only(judge(container_plan(), raw), "smoke.crashed").message


def test_arch_mismatch_crash_gets_the_right_wheel_fix() -> None:
    doc = rec.on_gpu(rec.result())
    doc["runs"][0]["error"] = {
        "phase": "train",
        "type": "RuntimeError",
        "message": "Unsupported GPU architecture",
        "traceback": "",
    }
    doc["warnings"].append({"kind": "arch-mismatch", "text": rec.ARCH_MISMATCH})
    findings = judge(container_plan(gpu_host(), GPU_IMAGE), outcome(doc, exit_code=1))
    crashed = only(findings, "smoke.crashed")
    assert "gpu:0 (gpu:0): RuntimeError: Unsupported GPU architecture" in crashed.message
    assert "compute capability" in (crashed.fix or "")
    assert f"`envcheck doctor --image {GPU_IMAGE.ref}`" in (crashed.fix or "")


def test_arch_mismatch_crash_in_process_names_the_pip_command() -> None:
    """The real H100 with 2.6.2 (sm_61-86): CUDA error 209 in the known-answer checks. The fix is
    the exact command of a build with sm_90, as paddle.arch-missing says, not a link alone."""
    doc = rec.on_gpu(rec.result(), cc="9.0")
    doc["runs"][0]["error"] = {
        "phase": "check",
        "type": "OSError",
        "message": "(External) CUDA error(209), no kernel image is available for execution on "
        "the device.",
        "traceback": "",
    }
    doc["warnings"].append({"kind": "arch-mismatch", "text": rec.ARCH_NOT_SUPPORTED_H100})
    plan = in_process_plan(gpu_host(), GPU_IMAGE, SmokeOptions(), fallback=None)
    crashed = only(judge(plan, outcome(doc, exit_code=1)), "smoke.crashed")
    assert f"`{plan.python} -m pip install paddlepaddle-gpu==3.3.1 -i " in (crashed.fix or "")
    assert "a Paddle build with kernels for this GPU's compute capability" in (crashed.fix or "")


def test_image_without_paddle_is_a_crash_but_a_python_without_it_is_not_run() -> None:
    doc = {
        "schema": "envcheck-smoke/1",
        "runs": [],
        "warnings": [],
        "error": {
            "phase": "import",
            "type": "ModuleNotFoundError",
            "message": "No module named 'paddle'",
        },
    }
    assert ids(judge(container_plan(), outcome(doc, exit_code=1))) == ["smoke.crashed"]
    in_proc = in_process_plan(
        NO_GPU_HOST, None, SmokeOptions(python="/usr/bin/python3"), fallback=None
    )
    assert ids(judge(in_proc, outcome(doc, exit_code=1))) == ["smoke.not-run"]


def test_segfault_after_a_good_result_is_still_a_crash() -> None:
    findings = judge(container_plan(), outcome(rec.result(), exit_code=139))
    assert ids(findings) == ["smoke.crashed"] and "139 after its result" in findings[0].message


def test_export_predictions_that_differ_fail_train_to_serve() -> None:
    doc = rec.result()
    doc["runs"][0]["export"].update(match=False, max_abs_diff=0.4, argmax_agreement=0.9)
    finding = only(judge(container_plan(), outcome(doc)), "smoke.export-failed")
    assert "max |Δ| 0.4" in finding.message


def test_cuda_mismatch_warning_on_a_passing_run_is_reported() -> None:
    doc = rec.on_gpu(rec.result())
    doc["warnings"].append({"kind": "cuda-mismatch", "text": rec.CUDA_MISMATCH})
    findings = judge(container_plan(gpu_host(), GPU_IMAGE), outcome(doc))
    assert ids(findings) == ["smoke.pass", "smoke.paddle-warnings"]
    assert "upgrade the NVIDIA driver" in (findings[1].fix or "")


# -- the report's smoke object ---------------------------------------------------------------------
def test_smoke_document_holds_the_measured_figures_per_device() -> None:
    doc = to_dict(smoke_document(container_plan(), outcome(rec.result())))
    assert doc["status"] == "pass" and doc["mode"] == "container" and doc["log_tail"] == []
    run = doc["runs"][0]
    for key in (
        "device_requested",
        "device_used",
        "param_places",
        "logits_place",
        "loss_start",
        "loss_end",
        "steps_per_s",
        "first_step_s",
        "peak_gpu_mem_bytes",
        "host_gpu",
        "on_gpu",
        "nvml",
    ):
        assert key in run
    assert doc["paddle"]["compiled_with_cuda"] is False and doc["paddle"]["cuda_device_count"] == 0
    json.dumps(doc)  # JSON-ready


def test_smoke_document_keeps_the_checks_and_the_witness_not_the_nvml_time_series() -> None:
    result = rec.broken(rec.on_gpu(rec.result()), "matmul", "all-zero")
    nvml = rec.nvml_witness(result, {0: (612, 0, None)})
    doc = to_dict(smoke_document(container_plan(gpu_host(), GPU_IMAGE), outcome(result, nvml=nvml)))
    assert doc["status"] == "wrong-results"
    run = doc["runs"][0]
    assert len(run["checks"]) == 14 and run["loss_check"]["distinct"] == 60
    assert run["train_window"] == result["runs"][0]["train_window"] and run["checks_s"] > 0
    assert (
        run["witness"]["state"] == "idle" and run["witness"]["process_mem_max_bytes"] == 612 * 2**20
    )
    assert "series" not in run["nvml"] and "series" not in doc["nvml"]["gpus"]["0"]
    assert nvml.gpus["0"].series  # the outcome itself is untouched
    json.dumps(doc)


@pytest.mark.parametrize(
    ("timed_out", "status"), [(True, "timeout"), (False, "crashed")], ids=["timeout", "crash"]
)
def test_smoke_document_status_and_log_tail_on_failure(timed_out: bool, status: str) -> None:
    raw = outcome(None, exit_code=1, timed_out=timed_out, stderr="a\nb\n")
    doc = smoke_document(container_plan(), raw)
    assert doc.status == status and doc.log_tail == ("a", "b")


@pytest.mark.parametrize(
    ("message", "retry"),
    [
        (  # nvidia-container-toolkit #2026 (toolkit 1.20.0)
            (
                "starting the smoke container: the engine answered: failed to create task for container: "
                "OCI runtime create failed: runc create failed: unable to start container process: error "
                "during container init: error running createContainer hook #6: exit status 1, stdout: , "
                'stderr: time="2026-08-26T21:50:49Z" level=error msg="failed to create application '
                'profiles directory: mkdirat etc/nvidia/nvidia-application-profiles-rc.d: read-only file system"'
            ),
            True,
        ),
        ("creating the smoke container: the engine answered: no space left on device", False),
        ("starting the smoke container: open /x: read-only file system", False),
    ],
    ids=["toolkit-1.20-hook", "disk-full", "not-a-hook"],
)
def test_only_an_nvidia_hook_on_a_read_only_root_drops_the_read_only_root(
    message: str, retry: bool
) -> None:
    from envcheck.smoke.runner.container_spec import hook_needs_writable_root

    assert hook_needs_writable_root(message) is retry


@pytest.mark.parametrize(
    ("device_error", "count_error"),
    [
        ("OSError: (External) cudaGetDeviceCount failed", rec.DRIVER_TOO_OLD),
        (rec.NO_DEVICE + "\n" + rec.DRIVER_TOO_OLD, None),
    ],
    ids=["device-error-paddle-does-not-word", "no-gpu-line-before-the-driver-error"],
)
def test_driver_error_found_whatever_the_device_error_says_first(
    device_error: str, count_error: str | None
) -> None:
    """The CUDA error may sit in the device-count error, or on a later line of the device error:
    the cause is still driver-error, not an IndexError/StopIteration (exit 3)."""
    doc = rec.gpu_build_fell_back(device_error)
    doc["cuda_device_count_error"] = count_error
    fallback = only(
        judge(container_plan(gpu_host(), GPU_IMAGE), outcome(doc)), "smoke.cpu-fallback"
    )
    assert fallback.observed["cause"] == "driver-error" and "CUDA error(35)" in fallback.message


def _run_error_without_message(doc: dict[str, Any]) -> None:
    doc["runs"][0] = {k: doc["runs"][0][k] for k in ("device_requested", "device_used")}
    doc["runs"][0].update(device_error=None, error={"type": "OSError", "phase": "train"})


WRONG_TYPED = [
    (_run_error_without_message, "result.runs[0].error.message: missing"),
    (
        lambda doc: doc["env"].update(CUDA_VISIBLE_DEVICES=0),
        "result.env.CUDA_VISIBLE_DEVICES: expected a string, got 0",
    ),
    (
        lambda doc: doc["runs"][0].update(compare_cpu={"error": "boom"}),
        "result.runs[0].compare_cpu.error: expected an object, got str",
    ),
    (
        lambda doc: doc["runs"][0]["checks"][3].update(ok="yes"),
        "result.runs[0].checks[3].ok: expected true/false, got 'yes'",
    ),
    (
        lambda doc: doc.update(device_capabilities=[8.6]),
        "device_capabilities[0]: expected a string",
    ),
]


@pytest.mark.parametrize(
    ("mutate", "message"),
    WRONG_TYPED,
    ids=["error-without-message", "env-number", "compare-error-text", "ok-text", "cc-number"],
)
def test_a_wrong_typed_field_in_the_result_line_is_bad_output_not_a_traceback(
    mutate: Any, message: str
) -> None:
    """The line is hostile input: each of these reached a rule as a KeyError/AttributeError
    (exit 3) while the validator checked only that `error`, `env` or `compare_cpu` were objects."""
    from envcheck.smoke.runner.check import outcome_of

    doc = rec.gpu_build_fell_back("no CUDA-capable device is detected")
    mutate(doc)
    raw = RawRun(exit_code=0, stdout=json.dumps(doc).encode(), stderr="", duration_s=1.0)
    findings = judge(container_plan(gpu_host(), GPU_IMAGE), outcome_of(raw, NVML_ABSENT))
    assert ids(findings) == ["smoke.bad-output"]
    assert message in findings[0].message


def test_an_unconfirmed_gpu_without_a_sample_count_says_no_none_samples() -> None:
    """A summary without the sampler's count (saved by hand, an older envcheck) printed
    "(None samples in all)"."""
    doc = rec.on_gpu(rec.result())
    nvml = replace(rec.nvml_witness(doc, {0: (None, 0, None)}), samples=None)
    message = only(
        judge(container_plan(gpu_host(), GPU_IMAGE), outcome(doc, nvml=nvml)),
        "smoke.gpu-unconfirmed",
    ).message
    assert "None" not in message and message.endswith("while it trained")
    nvml = replace(nvml, samples=10)
    message = only(
        judge(container_plan(gpu_host(), GPU_IMAGE), outcome(doc, nvml=nvml)),
        "smoke.gpu-unconfirmed",
    ).message
    assert message.endswith("(10 samples in all)")


# -- proof that cannot be forged -----------------------------------------------------------------
def _host_ran(doc: dict[str, Any], nvml: NvmlSummary, shift: float = 0.0) -> NvmlSummary:
    """`nvml` with the interval the host started and reaped the run in, around the first run's
    window shifted by `shift` seconds (what `outcome_of` adds from the RawRun)."""
    window = doc["runs"][0]["train_window"]
    start: float = window["start"] + shift - 3
    end: float = window["end"] + shift + 1
    return replace(nvml, run_window=TrainWindow(start, end))


def test_a_training_window_outside_the_run_confirms_nothing() -> None:
    """A result replayed from another run (its window an hour before this run started) with
    NVML busy "inside" that window earned a pass: the window is checked against the host's."""
    doc = rec.on_gpu(rec.result())
    nvml = _host_ran(doc, rec.nvml_witness(doc, {0: (812, 57, 41)}), shift=3600.0)
    findings = judge(container_plan(gpu_host(), GPU_IMAGE), outcome(doc, nvml=nvml))
    assert ids(findings) == ["smoke.pass", "smoke.gpu-unconfirmed"]
    assert "outside the run the host started and reaped" in findings[1].message
    assert proof_of(findings, smoke_asked=True) == "none"
    unproven = expect_gpu_unproven(findings, "none")
    assert unproven is not None and unproven.severity == "fail"
    assert "NVML did not witness" in unproven.message


def test_the_windows_own_run_is_confirmed() -> None:
    doc = rec.on_gpu(rec.result())
    nvml = _host_ran(doc, rec.nvml_witness(doc, {0: (812, 57, 41)}))
    findings = judge(container_plan(gpu_host(), GPU_IMAGE), outcome(doc, nvml=nvml))
    assert ids(findings) == ["smoke.pass"]
    assert proof_of(findings, smoke_asked=True) == "gpu-trained"


def test_a_gpu_claim_with_no_nvidia_library_mapped_is_a_cpu_fallback() -> None:
    """The same result said `loaded_libraries: []` after the first step: no libcuda, no GPU."""
    doc = rec.on_gpu(rec.result()) | {"loaded_libraries": [], "loaded_when": "first-step"}
    nvml = _host_ran(doc, rec.nvml_witness(doc, {0: (812, 57, 41)}))
    findings = judge(container_plan(gpu_host(), GPU_IMAGE), outcome(doc, nvml=nvml))
    assert "smoke.pass" not in ids(findings)
    [fallback] = [f for f in findings if f.id == "smoke.cpu-fallback"]
    assert fallback.observed["cause"] == "no-nvidia-library"
    assert verdict_of(findings) == "cpu-fallback"


@pytest.mark.parametrize(
    "nvml",
    [NVML_ABSENT, rec.as_nvml({"status": "ok", "samples": 10, "gpus": {"0": {}}})],
    ids=["nvml-unavailable", "nvml-saw-nothing"],
)
def test_under_expect_gpu_a_claim_nvml_did_not_witness_fails(nvml: NvmlSummary) -> None:
    doc = rec.on_gpu(rec.result())
    findings = judge(container_plan(gpu_host(), GPU_IMAGE), outcome(doc, nvml=nvml))
    assert "smoke.pass" in ids(findings)
    proof = proof_of(findings, smoke_asked=True)
    assert proof == "none"
    assert "did not witness" in proof_words(proof, verdict_of(findings), findings)
    unproven = expect_gpu_unproven(findings, proof)
    assert unproven is not None and unproven.severity == "fail"


# -- a result that contradicts the evidence ---------------------------------------------------------
def test_a_gpu_claim_on_a_host_with_no_gpu_is_a_contradiction_never_a_pass() -> None:
    """An image that reported gpu:0 on a host with no GPU, its container given none, passed with
    the claim repeated as fact ("trained … gpu:0")."""
    doc = rec.on_gpu(rec.result())
    plan = container_plan()
    findings = judge(plan, outcome(doc))
    assert ids(findings) == ["smoke.contradicted"]
    [finding] = findings
    assert finding.severity == "fail" and "trained" not in finding.message
    assert finding.message.startswith("the smoke's result contradicts the evidence: it claims ")
    assert "the host has no usable NVIDIA GPU; the container was given no GPU" in finding.message
    assert finding.observed["claimed"] == ["gpu:0"]
    assert verdict_of(findings) == "fail" and exit_status_of(findings) == ExitStatus.SMOKE_FAILED
    smoke = smoke_document(plan, outcome(doc))
    assert smoke.status == "contradicted"
    assert smoke.runs[0].on_gpu is False and smoke.runs[0].contradicted is True
    assert smoke_row(smoke.runs[0])[1:] == (
        "gpu:0 (claimed)", "0.694 → 0.217", "2.4e+03", "0.141", "14/14 right", "-"
    )  # fmt: skip


def test_no_library_mapped_on_a_host_with_no_gpu_is_evidence_of_the_contradiction() -> None:
    # Not a CPU fallback (exit 6): no GPU was expected here, so nothing fell back.
    doc = rec.on_gpu(rec.result()) | {"loaded_libraries": [], "loaded_when": "first-step"}
    findings = judge(container_plan(), outcome(doc))
    assert "smoke.pass" not in ids(findings) and "smoke.cpu-fallback" not in ids(findings)
    finding = only(findings, "smoke.contradicted")
    assert "the process mapped no NVIDIA library" in finding.observed["evidence"]
    assert exit_status_of(findings) == ExitStatus.SMOKE_FAILED


def test_in_process_a_gpu_claim_on_a_host_with_no_gpu_is_a_contradiction() -> None:
    plan = in_process_plan(NO_GPU_HOST, None, SmokeOptions(in_process=True), fallback=None)
    findings = judge(plan, outcome(rec.on_gpu(rec.result())))
    finding = only(findings, "smoke.contradicted")
    assert "container" not in finding.message and "sitecustomize" in (finding.fix or "")
    assert "smoke.pass" not in ids(findings)


def test_a_gpu_claim_where_a_gpu_is_expected_is_judged_as_before() -> None:
    # A host with a GPU (or --expect-gpu) gives the claim a chance: NVML's witness decides.
    doc = rec.on_gpu(rec.result())
    for plan in (container_plan(gpu_host(), GPU_IMAGE), container_plan(expect_gpu=True)):
        assert "smoke.contradicted" not in ids(judge(plan, outcome(doc)))

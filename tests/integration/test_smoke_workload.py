"""The workload script itself, run for real with the host's Paddle 3.3.1 CPU wheel."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from envcheck.contracts.host_report import exit_status_of, verdict_of
from envcheck.contracts.smoke_report import NvmlSummary
from envcheck.smoke.parse import RawRun, parse_result
from envcheck.smoke.plan import Outcome, Plan
from envcheck.smoke.runner.payload import WORKLOAD
from envcheck.smoke.verdict.judge import judge
from envcheck.smoke.workload import classifier as workload_classifier
from envcheck.smoke.workload import main as workload
from envcheck.smoke.workload import protocol
from tests import smoke_samples as rec


def run_workload(
    *args: str, timeout: float = 180
) -> tuple[subprocess.CompletedProcess[bytes], dict[str, Any]]:
    """The workload's run and its line, validated by `parse_result` and kept as JSON."""
    proc = subprocess.run(
        [sys.executable, str(WORKLOAD), *args], check=False, capture_output=True, timeout=timeout
    )
    parse_result(proc.stdout)
    line: dict[str, Any] = json.loads(proc.stdout)
    return proc, line


@pytest.fixture(scope="module")
def exported() -> tuple[subprocess.CompletedProcess[bytes], dict[str, Any]]:
    return run_workload("--device", "cpu", "--export", "--compare-cpu", "--amp")


def test_cpu_run_prints_one_json_line_and_learns(exported: tuple[Any, dict[str, Any]]) -> None:
    proc, doc = exported
    assert proc.returncode == 0 and proc.stdout.count(b"\n") == 1
    run = doc["runs"][0]
    assert run["device_used"] == "cpu" and set(run["param_places"].values()) == {"Place(cpu)"}
    loss_start, loss_end, steps_per_s = run["loss_start"], run["loss_end"], run["steps_per_s"]
    assert loss_start is not None and loss_end is not None and steps_per_s is not None
    assert loss_end < 0.9 * loss_start and run["accuracy"] > 0.6
    assert run["steps"] == 60 and run["batch_size"] >= 128 and steps_per_s > 0
    assert doc["compiled_with_cuda"] is False and doc["cuda_device_count"] == 0


def test_the_training_runs_the_text_cnn_conv_on_batches_from_host_memory(
    exported: tuple[Any, dict[str, Any]],
) -> None:
    """The conv head's parameters trained with the rest; /dev/shm as the run saw it."""
    _, doc = exported
    run = doc["runs"][0]
    assert {"conv.weight", "conv.bias", "conv_fc.weight"} <= set(run["param_places"])
    shm = doc["shm"]
    assert shm and shm["size_bytes"] >= shm["free_bytes"] > 0
    assert "conv1d" in {c["op"] for c in run["checks"] if c["ok"]}


def test_paddles_own_stdout_prints_go_to_the_log(exported: tuple[Any, dict[str, Any]]) -> None:
    proc, doc = exported
    # paddle.jit.save prints this on stdout in 3.3.1; the contract keeps stdout to our JSON line
    assert b"ReduceMeanCheckIfOneDNNSupport" in proc.stderr
    assert (
        doc["runs"][0]["export"]["match"] is True and doc["runs"][0]["export"]["format"] == "json"
    )


def test_amp_on_cpu_is_reported_as_having_no_effect(exported: tuple[Any, dict[str, Any]]) -> None:
    _, doc = exported
    assert doc["runs"][0]["amp"] == {"enabled": True, "dtype": "bfloat16"}
    assert "amp-no-effect" in {w["kind"] for w in doc["warnings"]}
    assert doc["runs"][0]["compare_cpu"]["skipped"] == "the run itself was on the CPU"


def test_cpu_build_asked_for_gpu_records_paddles_refusal_and_trains_where_it_falls_back() -> None:
    proc, doc = run_workload("--device", "gpu:all", "--steps", "5")
    run = doc["runs"][0]
    assert (
        proc.returncode == 0 and run["device_requested"] == "gpu:0" and run["device_used"] == "cpu"
    )
    # compat_facts §7 row 2: the re.Match repr is Paddle's own quirk
    assert run["device_error"] == (
        "ValueError: The device should not be <re.Match object; span=(0, 5), match='gpu:0'>, "
        "since PaddlePaddle is not compiled with CUDA"
    )


def test_recorded_sample_has_the_shape_the_workload_prints_today() -> None:
    _, doc = run_workload("--device", "cpu", "--steps", "3")
    assert set(doc) == set(rec.result())
    assert set(doc["runs"][0]) == set(rec.result()["runs"][0]) - {"compare_cpu", "export"}


def test_stderr_tee_sees_lines_written_below_python(tmp_path: Path) -> None:
    code = textwrap.dedent(f"""
        import os, sys, json
        sys.path.insert(0, {str(WORKLOAD.parent)!r})
        from output import StderrTee
        tee = StderrTee()
        os.write(2, {rec.CUDA_MISMATCH!r}.encode() + b"\\n")  # as glog does, bypassing sys.stderr
        print(json.dumps(tee.stop()))
    """)
    proc = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, timeout=60, text=True
    )
    assert json.loads(proc.stdout) == [{"kind": "cuda-mismatch", "text": rec.CUDA_MISMATCH}]
    assert rec.CUDA_MISMATCH in proc.stderr  # still shown live


@pytest.mark.parametrize(
    ("asked", "count", "expanded"),
    [
        (["gpu:all"], 2, ["gpu:0", "gpu:1"]),
        (["gpu:all"], 0, ["gpu:0"]),
        (["gpu:all"], None, ["gpu:0"]),
        (["cpu", "gpu:1"], 4, ["cpu", "gpu:1"]),
    ],
    ids=["two", "none", "unknown", "explicit"],
)
def test_expand_devices(asked: list[str], count: int | None, expanded: list[str]) -> None:
    assert workload.expand_devices(asked, count) == expanded


def test_importing_the_workload_module_does_not_import_paddle() -> None:
    code = "import sys, envcheck.smoke.runner.check; print('paddle' in sys.modules, 'docker' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=60
    ).stdout
    assert out.split() == ["False", "False"]


# -- known answers -----------------------------------------------------------------------------
NVML_ABSENT = NvmlSummary(status="unavailable", reason="NVML_ERROR_LIBRARY_NOT_FOUND", samples=0)
CPU_PLAN = Plan(
    mode="in-process",
    gpu_expected=False,
    gpu_reason="the host has no usable NVIDIA GPU",
    device_args=("cpu",),
    python=sys.executable,
)


def test_the_real_cpu_paddle_passes_every_known_answer_check_before_and_after(
    exported: tuple[Any, dict[str, Any]],
) -> None:
    _, doc = exported  # under --amp: matmul and conv1d inside auto_cast, as in training
    run = doc["runs"][0]
    phases = {(c["op"], c["phase"]) for c in run["checks"]}
    assert phases == {(op, p) for op in workload_classifier.CHECK_OPS for p in ("before", "after")}
    assert [c for c in run["checks"] if not c["ok"]] == []
    assert run["loss_check"] == {
        "start": run["loss_check"]["start"],
        "non_finite": 0,
        "zero_steps": 0,
        "distinct": 60,
    }
    assert run["train_window"]["start"] < run["train_window"]["end"]
    findings = judge(CPU_PLAN, Outcome(raw_of(doc), rec.as_result(doc), None, NVML_ABSENT))
    assert [f.id for f in findings] == ["smoke.pass"]
    assert "14/14 known answers right" in findings[0].message


@pytest.mark.parametrize(
    ("corrupt", "problem"),
    [
        ("embedding:zero", "all-zero"),
        ("matmul", "mismatch"),
        ("conv1d:zero", "all-zero"),
        ("mean:nan", "non-finite"),
        ("cross_entropy", "mismatch"),
        ("adam", "mismatch"),
        ("dropout:zero", "all-zero"),
    ],
    ids=["embedding", "matmul", "conv1d", "mean", "cross_entropy", "adam", "dropout"],
)
def test_each_op_class_corrupted_after_paddle_computed_it_is_detected_and_named(
    monkeypatch: pytest.MonkeyPatch, corrupt: str, problem: str
) -> None:
    op = corrupt.split(":")[0]
    monkeypatch.setenv(protocol.CORRUPT_ENV, corrupt)
    proc, doc = run_workload("--device", "cpu", "--steps", "2")
    run = doc["runs"][0]
    assert proc.returncode == 0 and run["error"] is None  # Paddle raised nothing: only numbers
    wrong = [c for c in run["checks"] if not c["ok"]]
    assert {(c["op"], c["phase"], c["problem"]) for c in wrong} == {
        (op, "before", problem),
        (op, "after", problem),
    }
    findings = judge(CPU_PLAN, Outcome(raw_of(doc), rec.as_result(doc), None, NVML_ABSENT))
    assert verdict_of(findings) == "wrong-results" and exit_status_of(findings) == 7
    (finding,) = [f for f in findings if f.id == "smoke.wrong-results"]
    assert f"cpu: 2 of 14 known-answer checks failed: {op} ({problem} before, {problem} after)" in (
        finding.message
    )


@pytest.mark.parametrize(
    ("corrupt", "words"),
    [("loss:zero", "the loss started at exactly 0.0"), ("loss", "the loss never changed")],
    ids=["zero", "constant"],
)
def test_a_zero_or_frozen_training_loss_is_wrong_results(
    monkeypatch: pytest.MonkeyPatch, corrupt: str, words: str
) -> None:
    monkeypatch.setenv(protocol.CORRUPT_ENV, corrupt)
    _, doc = run_workload("--device", "cpu", "--steps", "3")
    findings = judge(CPU_PLAN, Outcome(raw_of(doc), rec.as_result(doc), None, NVML_ABSENT))
    (finding,) = [f for f in findings if f.id == "smoke.wrong-results"]
    assert words in finding.message and "smoke.not-learning" not in [f.id for f in findings]


def test_doctor_exits_7_with_a_wrong_results_verdict_when_the_smoke_computes_wrong_numbers() -> (
    None
):
    env = {**os.environ, protocol.CORRUPT_ENV: "matmul:zero"}
    proc = subprocess.run(
        [sys.executable, "-m", "envcheck", "doctor", "--in-process", "--json"],
        check=False,
        capture_output=True,
        timeout=300,
        env=env,
    )
    report = json.loads(proc.stdout)
    assert proc.returncode == 7 and report["verdict"] == "wrong-results", proc.stderr[-2000:]
    (run,) = report["smoke"]["runs"]
    assert [c["op"] for c in run["checks"] if not c["ok"]] == ["matmul", "matmul"]
    assert report["smoke"]["status"] == "wrong-results"


def raw_of(doc: dict[str, Any]) -> RawRun:
    return RawRun(exit_code=0, stdout=(json.dumps(doc) + "\n").encode(), stderr="", duration_s=3.0)

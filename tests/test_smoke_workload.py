"""The workload script itself, run for real with the host's Paddle 3.3.1 CPU wheel."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from envcheck.smoke import workload
from envcheck.smoke.check import WORKLOAD
from envcheck.smoke.parse import parse_result
from tests import smoke_samples as rec


def run_workload(
    *args: str, timeout: float = 180
) -> tuple[subprocess.CompletedProcess[bytes], dict[str, Any]]:
    proc = subprocess.run(
        [sys.executable, str(WORKLOAD), *args], check=False, capture_output=True, timeout=timeout
    )
    return proc, parse_result(proc.stdout)


@pytest.fixture(scope="module")
def exported() -> tuple[subprocess.CompletedProcess[bytes], dict[str, Any]]:
    return run_workload("--device", "cpu", "--export", "--compare-cpu", "--amp")


def test_cpu_run_prints_one_json_line_and_learns(exported: tuple[Any, dict[str, Any]]) -> None:
    proc, doc = exported
    assert proc.returncode == 0 and proc.stdout.count(b"\n") == 1
    run = doc["runs"][0]
    assert run["device_used"] == "cpu" and set(run["param_places"].values()) == {"Place(cpu)"}
    assert run["loss_end"] < 0.9 * run["loss_start"] and run["accuracy"] > 0.6
    assert run["steps"] == 60 and run["batch_size"] >= 128 and run["steps_per_s"] > 0
    assert doc["compiled_with_cuda"] is False and doc["cuda_device_count"] == 0


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
        from workload import StderrTee
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
    code = (
        "import sys, envcheck.smoke.check; print('paddle' in sys.modules, 'docker' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=60
    ).stdout
    assert out.split() == ["False", "False"]

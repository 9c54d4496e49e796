"""Each piece of the training fails with its own cause.

On this machine, for real: the DataLoader worker raising or killed (the workload's test-only
ENVCHECK_SMOKE_CORRUPT=worker hook) in a subprocess of the host's Paddle 3.3.1 CPU, and a /dev/shm
too small in the real container (`Limits.shm`, the engine's --shm-size), with Paddle computing.
cuDNN cannot run on a CPU build: its causes are judged from Paddle's own texts
(compat_facts.md section 7, rows 18-19; enforce.h's CUDNN error line) on a GPU result.
"""

from __future__ import annotations

import copy
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from envcheck.contracts.host_report import exit_status_of, verdict_of
from envcheck.smoke.options import SmokeOptions
from envcheck.smoke.runner.check import outcome_of, smoke_check
from envcheck.smoke.runner.container import SmokeContainer
from envcheck.smoke.runner.container_spec import ContainerSpec, Limits
from envcheck.smoke.runner.payload import WORKLOAD
from envcheck.smoke.verdict.judge import judge
from envcheck.smoke.verdict.pieces import CUDNN_ID, SHM_ID, WORKER_ID
from envcheck.smoke.workload.protocol import CORRUPT_ENV
from tests import smoke_samples as rec
from tests.smoke_host import CPU_CHOICE, NO_GPU_HOST
from tests.smoke_plans import GPU_IMAGE, NVML_ABSENT, container_plan, gpu_host, outcome

pytest_plugins = ("tests.smoke_fixtures", "tests.fakenv")  # no_driver: hides a real driver


def only(findings: list[Any], finding_id: str) -> Any:
    assert [f.id for f in findings] == [finding_id], [(f.id, f.message) for f in findings]
    return findings[0]


@pytest.mark.parametrize(
    ("mode", "words"),
    [
        (
            "worker",
            ["DataLoader worker(0) caught RuntimeError", "envcheck test fault", "traceback"],
        ),
        # what holds in every run; which of Paddle's lines came first is the test below's
        ("worker:kill", ["DataLoader", "OOM killer"]),
    ],
    ids=["raised", "killed"],
)
def test_a_dataloader_worker_that_fails_is_its_own_finding_with_its_log_line(
    mode: str, words: list[str], no_driver: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CORRUPT_ENV, mode)
    doc, findings = smoke_check(
        NO_GPU_HOST, CPU_CHOICE, SmokeOptions(in_process=True, timeout=180.0, variables=os.environ)
    )
    finding = only(findings, WORKER_ID)
    assert all(w in f"{finding.message} {finding.fix}" for w in words), finding
    assert verdict_of(findings) == "fail" and exit_status_of(findings) != 0
    error = doc.runs[0].error
    assert doc.status == "dataloader-worker" and error is not None
    assert error.phase in ("data", "train")


@pytest.mark.parametrize(
    ("shm", "words"),
    [
        # the semaphores fit, the first batch does not: SIGBUS in the worker
        ("48k", "Unexpected BUS error encountered in DataLoader worker"),
        # not even the DataLoader's queues fit: ENOSPC before any worker starts
        ("16k", "[Errno 28] No space left on device"),
    ],
    ids=["sigbus", "enospc"],
)
def test_a_container_with_too_little_shared_memory_is_smoke_shm_with_the_shm_size_fix(
    shm: str, words: str, docker_client: Any, paddle_image: str, no_leftovers: None
) -> None:
    spec = ContainerSpec(
        image=paddle_image,
        args=("--device", "cpu"),
        script=WORKLOAD,
        timeout=300,
        limits=Limits(shm=shm),
    )
    with SmokeContainer(docker_client, spec, variables=os.environ, stderr=sys.stderr) as box:
        raw = box.run()
    findings = judge(container_plan(), outcome_of(raw, NVML_ABSENT))
    finding = only(findings, SHM_ID)
    size = f"/dev/shm has {shm[:-1]} KiB"
    assert words in finding.message and size in finding.message, finding.message
    assert finding.fix is not None and "--shm-size" in finding.fix


def test_shm_in_process_advises_the_remount() -> None:
    doc = _crashed(rec.result(), "data", "[Errno 28] No space left on device")
    doc["shm"] = {"size_bytes": 2**20, "free_bytes": 0}
    plan = container_plan(in_process=True)
    assert plan.mode == "in-process"
    finding = only(judge(plan, outcome(doc, exit_code=1)), SHM_ID)
    assert "/dev/shm has 1 MiB (0 KiB free" in finding.message
    assert finding.fix is not None and "mount -o remount,size=" in finding.fix


# Paddle's texts for a missing cuDNN (compat_facts 7 row 18: a warning, then row 19's error at
# the first cuDNN call) and a failing cuDNN call (enforce.h).
CUDNN_NOT_CONFIGURED = (
    "W1122 10:00:00.000000  1234 dynamic_loader.cc:314] The third-party dynamic library "
    "(libcudnn.so) that Paddle depends on is not configured correctly. (error code is "
    "libcudnn.so: cannot open shared object file: No such file or directory)"
)
CUDNN_CANNOT_LOAD = (
    "(PreconditionNotMet) Cannot load cudnn shared library. Cannot invoke method cudnnCreate. "
    "(at /paddle/paddle/phi/backends/dynload/cudnn.h:62)"
)
CUDNN_STATUS = (
    "(External) CUDNN error(3000), CUDNN_STATUS_NOT_SUPPORTED. (at /paddle/paddle/phi/kernels/"
    "gpudnn/conv_kernel.cu:120)"
)


def _crashed(doc: dict[str, Any], phase: str, message: str) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    doc["runs"][0]["error"] = {
        "phase": phase,
        "type": "RuntimeError",
        "message": message,
        "traceback": "",
    }
    return doc


WORKER_EXITED = "DataLoader 1 workers exit unexpectedly, pids: 4242"
WORKER_KILLED = "DataLoader process (pid 4242) exited is killed by signal: Killed."


@pytest.mark.parametrize(
    "warned", [[WORKER_EXITED], []], ids=["exit-line-printed-first", "signal-line-only"]
)
def test_a_killed_worker_is_named_by_the_line_with_its_signal(warned: list[str]) -> None:
    """Paddle prints "workers exit unexpectedly" before the signal's line in some runs
    (under load): the finding quotes the signal whichever came first."""
    doc = _crashed(rec.result(), "data", WORKER_KILLED)
    doc["warnings"] = [{"kind": "dataloader-worker", "text": text} for text in warned]
    finding = only(judge(container_plan(), outcome(doc, exit_code=1)), WORKER_ID)
    assert WORKER_KILLED in finding.message and "OOM killer" in (finding.fix or "")


def test_cudnn_missing_names_the_library_the_process_tried_to_load() -> None:
    doc = _crashed(rec.on_gpu(rec.result()), "train", CUDNN_CANNOT_LOAD)
    doc["warnings"].append({"kind": "library-missing", "text": CUDNN_NOT_CONFIGURED})
    plan = container_plan(gpu_host(), GPU_IMAGE)
    finding = only(judge(plan, outcome(doc, exit_code=1, nvml=NVML_ABSENT)), CUDNN_ID)
    assert "the process tried to load libcudnn.so (libcudnn.so: cannot open shared object" in (
        finding.message
    )
    assert finding.observed["library"] == "libcudnn.so"
    assert finding.fix is not None and "cuDNN 9.5.1 (the one the build expects)" in finding.fix


def test_a_failing_cudnn_call_names_the_cudnn_the_process_mapped() -> None:
    doc = _crashed(rec.on_gpu(rec.result()), "train", CUDNN_STATUS)
    doc["loaded_libraries"] = [
        {
            "name": "libcudnn",
            "path": "/usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.7",
            "source": "system",
            "call": "cudnnGetVersion",
            "raw": 8907,
            "call_error": None,
        }
    ]
    plan = container_plan(gpu_host(), GPU_IMAGE)
    finding = only(judge(plan, outcome(doc, exit_code=1, nvml=NVML_ABSENT)), CUDNN_ID)
    assert "CUDNN_STATUS_NOT_SUPPORTED" in finding.message
    assert "mapped: /usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.7" in finding.message


def test_a_crash_paddle_does_not_tie_to_a_piece_stays_smoke_crashed() -> None:
    doc = _crashed(rec.on_gpu(rec.result()), "train", "(External) CUDA error(700), illegal address")
    plan = container_plan(gpu_host(), GPU_IMAGE)
    assert only(judge(plan, outcome(doc, exit_code=1, nvml=NVML_ABSENT)), "smoke.crashed")

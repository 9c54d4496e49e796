"""The NVML witness against the fake NVIDIA libraries (tests/fakenv), in a fresh interpreter each
(dlopen reads LD_LIBRARY_PATH once), and against an empty driver root (no driver at all)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from envcheck.contracts.facts import from_dict
from envcheck.contracts.smoke_report import NvmlSummary, Witness
from envcheck.contracts.smoke_result import TrainWindow
from envcheck.smoke.runner.sampler import NvmlSampler
from envcheck.smoke.verdict.witness import witness

pytest_plugins = ("tests.fakenv",)

FAKE_PID = 4242  # the process tests/fakenv/src/fake_nvml.c reports on a GPU with `processes = 1`

SAMPLE = f"""
import json, os, time
from envcheck.contracts.facts import to_dict
from envcheck.smoke.runner.sampler import NvmlSampler
def wait_for_samples(n):  # events, not a fixed time: n more samples were taken
    target = sampler.summary().samples + n
    while sampler.summary().samples < target and sampler.status == "ok":
        time.sleep(0.005)
with NvmlSampler(os.environ, interval=0.01) as sampler:
    sampler.watch({FAKE_PID})
    wait_for_samples(5)
    window = {{"start": time.time(), "end": None}}  # as the workload stamps its training
    wait_for_samples(5)
    window["end"] = time.time()
print(json.dumps(dict(to_dict(sampler.summary()), window=window)))
"""


def with_gpu_keys(env: dict[str, str], tmp_path: Path, **keys: int) -> dict[str, str]:
    """The profile of `env` with extra keys on its [gpu.1] (the GPU the fake process is on)."""
    text = Path(env["FAKE_NVIDIA_PROFILE"]).read_text()
    extra = "".join(f"{key} = {value}\n" for key, value in keys.items())
    profile = tmp_path / "profile.toml"
    profile.write_text(text.replace("[gpu.1]\n", "[gpu.1]\n" + extra))
    return {**env, "FAKE_NVIDIA_PROFILE": str(profile)}


def sample(env: dict[str, str]) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", SAMPLE],
        env={**os.environ, **env},
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    summary: dict[str, Any] = json.loads(proc.stdout)  # the summary, and the window beside it
    return summary


def witnessed(summary: dict[str, Any], gpu: int) -> Witness:
    """The witness of `gpu` in the window the sampled process printed beside its summary (JSON,
    read back by the reader of every document)."""
    window = summary["window"]
    nvml = from_dict(NvmlSummary, summary, "nvml", numbers_as_text=False)
    return witness(nvml, gpu, TrainWindow(window["start"], window["end"]))


@pytest.mark.fakegpu
def test_the_process_is_seen_with_its_memory_on_its_own_gpu_only(
    fake_nvidia: Callable[[str], dict[str, str]],
) -> None:
    summary = sample(fake_nvidia("a100x2-535"))
    assert summary["status"] == "ok" and summary["samples"] >= 5 and summary["pids"] == [FAKE_PID]
    gpu0, gpu1 = summary["gpus"]["0"], summary["gpus"]["1"]
    assert not gpu0["process_seen"] and gpu0["process_mem_max_bytes"] is None
    assert gpu1["process_seen"] and gpu1["process_mem_max_bytes"] == 2**30
    assert gpu1["mem_used_max_bytes"] == 1024 * 2**20
    assert gpu1["util_max"] is None  # the fake has no utilisation: unknown, not a failure
    assert gpu1["process_util_query"] == "NVML_ERROR_NOT_SUPPORTED" and gpu1["process_util"] == []
    assert len(gpu1["series"]) == summary["samples"] and gpu1["series"][-1][1:] == [None, 2**30]
    assert witnessed(summary, 1).state == "unknown"  # memory alone proves nothing


@pytest.mark.fakegpu
def test_a_context_that_does_no_work_is_seen_idle_inside_the_window(
    fake_nvidia: Callable[[str], dict[str, str]], tmp_path: Path
) -> None:
    """The real H100's case: memory held, no kernel ran (per-process SM 0, device 0 %)."""
    summary = sample(
        with_gpu_keys(fake_nvidia("a100x2-535"), tmp_path, util_gpu=0, process_sm_util=0)
    )
    gpu1 = summary["gpus"]["1"]
    assert gpu1["process_util_query"] == "ok" and {u for _, u in gpu1["process_util"]} == {0}
    seen = witnessed(summary, 1)
    assert (seen.state, seen.process_mem_max_bytes, seen.process_sm_max) == ("idle", 2**30, 0)
    assert seen.samples >= 5  # the window, plus the utilisation lag after it


@pytest.mark.fakegpu
def test_the_processes_own_utilisation_is_recorded_with_nvmls_time_stamps(
    fake_nvidia: Callable[[str], dict[str, str]], tmp_path: Path
) -> None:
    summary = sample(
        with_gpu_keys(fake_nvidia("a100x2-535"), tmp_path, util_gpu=63, process_sm_util=41)
    )
    gpu1, window = summary["gpus"]["1"], summary["window"]
    assert gpu1["util_max"] == 63 and {u for _, u in gpu1["process_util"]} == {41}
    assert any(window["start"] <= t <= window["end"] for t, _ in gpu1["process_util"])
    assert witnessed(summary, 1).state == "busy"
    assert witnessed(summary, 0).state == "unseen"  # GPU 0 never had the process


@pytest.mark.fakegpu
def test_old_driver_without_the_v3_process_query_falls_back_to_v2(
    fake_nvidia: Callable[[str], dict[str, str]],
) -> None:
    summary = sample(fake_nvidia("t4-470"))
    assert summary["status"] == "ok" and summary["gpus"]["0"]["process_query"] == "ok"


@pytest.mark.fakegpu
@pytest.mark.parametrize(
    ("profile", "error"),
    [
        ("driver-not-loaded", "NVML_ERROR_DRIVER_NOT_LOADED"),
        ("rm-mismatch", "NVML_ERROR_LIB_RM_VERSION_MISMATCH"),
    ],
    ids=["not-loaded", "rm-mismatch"],
)
def test_a_broken_driver_is_an_error_summary_not_an_exception(
    fake_nvidia: Callable[[str], dict[str, str]], profile: str, error: str
) -> None:
    summary = sample(fake_nvidia(profile))
    assert (
        summary["status"] == "error"
        and summary["reason"].startswith(error)
        and summary["samples"] == 0
    )


def test_no_driver_is_unavailable_with_the_reason(no_driver: Path) -> None:
    with NvmlSampler(os.environ) as sampler:
        sampler.watch(os.getpid())
    summary = sampler.summary()
    assert summary.status == "unavailable" and summary.gpus == {}
    assert (summary.reason or "").startswith("NVML_ERROR_LIBRARY_NOT_FOUND")

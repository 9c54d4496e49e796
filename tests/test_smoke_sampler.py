"""The NVML witness against the fake NVIDIA libraries (tests/fakenv), in a fresh interpreter each
(dlopen reads LD_LIBRARY_PATH once), and against this machine's real absence of a driver."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from envcheck.smoke.sampler import NvmlSampler

pytest_plugins = ("tests.fakenv",)

FAKE_PID = 4242  # the process tests/fakenv/src/fake_nvml.c reports on a GPU with `processes = 1`

SAMPLE = f"""
import json, time
from envcheck.smoke.sampler import NvmlSampler
with NvmlSampler(interval=0.01) as sampler:
    sampler.watch({FAKE_PID})
    time.sleep(0.2)
print(json.dumps(sampler.summary()))
"""


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
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


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


def test_no_driver_on_this_machine_is_unavailable_with_the_reason() -> None:
    with NvmlSampler() as sampler:
        sampler.watch(os.getpid())
    summary = sampler.summary()
    assert summary["status"] == "unavailable" and summary["gpus"] == {}
    assert summary["reason"].startswith("NVML_ERROR_LIBRARY_NOT_FOUND")

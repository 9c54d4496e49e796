"""GPU health read through the real pynvml from the fake libnvidia-ml (tests/fakenv): row
remapping, page retirement, volatile uncorrectable ECC and the recovery action, each GPU on its
own; and the doctor's verdict on a GPU with a pending row remap beside a healthy one."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.fakenv import run_probes
from tests.inprocess import doctor_process

pytest_plugins = ("tests.fakenv",)  # fake_build, fake_nvidia, probed_host

pytestmark = pytest.mark.fakegpu

Probed = Callable[[str], dict[str, Any]]


def with_keys(env: dict[str, str], tmp_path: Path, gpu: int, **keys: int) -> dict[str, str]:
    """The profile of `env` with extra keys on its [gpu.N]."""
    text = Path(env["FAKE_NVIDIA_PROFILE"]).read_text()
    extra = "".join(f"{key} = {value}\n" for key, value in keys.items())
    profile = tmp_path / "profile.toml"
    profile.write_text(text.replace(f"[gpu.{gpu}]\n", f"[gpu.{gpu}]\n" + extra))
    return {**env, "FAKE_NVIDIA_PROFILE": str(profile)}


def test_a_pending_remap_is_read_for_that_gpu_only(probed_host: Probed) -> None:
    gpus = probed_host("a100x2-535-remap-pending")["gpus"]
    assert gpus[0]["health"] == {
        "remap_pending": True,
        "remap_failure": False,
        "retired_pages_pending": None,  # A100: row remapping replaced page retirement
        "ecc_volatile_uncorrected": 1,
        "recovery_action": None,  # driver 535 has no recovery-action field
    }
    assert gpus[1]["health"]["remap_pending"] is False
    assert gpus[1]["health"]["ecc_volatile_uncorrected"] == 0


def test_gpus_that_answer_not_supported_record_no_health(probed_host: Probed) -> None:
    """GeForce and the shipped profiles answer NOT_SUPPORTED to every health query: no record,
    so a saved report is what it was."""
    assert "health" not in probed_host("rtx5090-570")["gpus"][0]
    assert "health" not in probed_host("t4-470")["gpus"][0]  # the legacy NVML build too


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        ({"remap_pending": 0, "remap_failure": 1}, {"remap_failure": True}),
        ({"pages_pending": 1}, {"retired_pages_pending": True}),
        ({"ecc_mode": 1, "ecc_volatile_uncorrected": 7}, {"ecc_volatile_uncorrected": 7}),
        ({"ecc_mode": 0, "ecc_volatile_uncorrected": 7}, None),  # ECC off: counters not read
        ({"recovery_action": 1}, {"recovery_action": "GPU_RESET"}),
        ({"recovery_action": 2}, {"recovery_action": "NODE_REBOOT"}),
        ({"recovery_action": 0}, {"recovery_action": "NONE"}),
    ],
    ids=[
        "remap-failure",
        "pages-pending",
        "ecc-volatile",
        "ecc-off",
        "recovery-reset",
        "recovery-reboot",
        "recovery-none",
    ],
)
def test_each_health_query_reads_its_value(
    fake_nvidia: Callable[[str], dict[str, str]],
    tmp_path: Path,
    keys: dict[str, int],
    expected: dict[str, Any] | None,
) -> None:
    gpu = run_probes(with_keys(fake_nvidia("h100-580"), tmp_path, 0, **keys))["gpus"][0]
    if expected is None:
        assert "health" not in gpu
    else:
        assert {k: gpu["health"][k] for k in expected} == expected


def test_the_doctor_fails_the_gpu_to_reset_and_keeps_the_healthy_one_to_one_line(
    fake_nvidia: Callable[[str], dict[str, str]],
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    env |= fake_nvidia("a100x2-535-remap-pending")
    code, doc, _ = doctor_process(env, "--no-smoke")
    gpu = [f for f in doc["findings"] if f["layer"] == "gpu"]
    assert [(f["id"], f["severity"], f["observed"].get("index")) for f in gpu] == [
        ("gpu.1", "pass", 1),
        ("gpu.reset-needed", "fail", 0),
    ]
    reset = gpu[1]
    assert "row remap of its memory is pending" in reset["message"]
    assert "1 uncorrectable ECC error(s)" in reset["message"]
    assert "`sudo nvidia-smi -r -i 0`" in reset["fix"]
    assert code == 1 and doc["verdict"] == "fail"

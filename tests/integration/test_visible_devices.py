"""CUDA_VISIBLE_DEVICES: one cause, one finding, one fix; the CUDA driver API is the truth.
End to end on the fake H100 (its libcuda applies the variable as the
measured real driver does) and on the recorded real H100 host."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import pytest

from envcheck.contracts.facts import CudaDriverFacts, host_from_document
from envcheck.contracts.record import replace
from envcheck.matrix.load import load_matrix
from envcheck.verdict.judge import Context, judge
from envcheck.verdict.visible_devices import read_visible_devices
from tests.inprocess import doctor_process
from tests.paths import DATA

pytest_plugins = ("tests.fakenv",)

FAKE_UUID = "GPU-9c1d2e3f-4a5b-6c7d-8e9f-0a1b2c3d4e5f"  # tests/fakenv/profiles/h100-580.toml
REAL_HOST = (
    DATA / "hosts" / "h100-580-nopaddle.host.json"
)  # recorded on the real H100: docs/facts/real-gpu-host.md


def _doctor(env: dict[str, str]) -> dict[str, Any]:
    return doctor_process(env, "--no-smoke")[1]


def _problems(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["id"]: f for f in doc["findings"] if f["severity"] == "fail"}


@pytest.fixture
def h100(fake_nvidia: Callable[[str], dict[str, str]]) -> dict[str, str]:
    fake = fake_nvidia("h100-580")
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("CUDA_VISIBLE_DEVICES",) and not k.startswith("GITHUB_")
    }
    return env | fake | {"PYTHONPATH": fake["FAKE_NVIDIA_SITE_PACKAGES"]}


@pytest.mark.fakegpu
@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("", "empty"),
        ("7", "device 7 does not exist"),
        ("GPU-9c1d2e3f", "only a prefix of a GPU UUID"),
        ("GPU-00000000-0000-0000-0000-000000000000", "not a GPU UUID"),
    ],
    ids=["empty", "no-such-index", "uuid-prefix", "unknown-uuid"],
)
def test_a_variable_hiding_every_gpu_is_one_finding(
    h100: dict[str, str], value: str, why: str
) -> None:
    doc = _doctor(h100 | {"CUDA_VISIBLE_DEVICES": value})
    assert doc["host"]["cuda_driver"]["error"] == "CUDA_ERROR_NO_DEVICE"  # what the driver API said
    problems = _problems(doc)
    assert "cuda.init-failed" not in problems  # no "modprobe nvidia-uvm" advice for a variable
    f = problems["env.cuda-visible-devices"]
    assert (
        why in f["message"] and "unset CUDA_VISIBLE_DEVICES" in f["fix"] and FAKE_UUID in f["fix"]
    )


@pytest.mark.fakegpu
@pytest.mark.parametrize(
    "value", ["0", FAKE_UUID, FAKE_UUID.lower()], ids=["index", "uuid", "uuid-lowercase"]
)
def test_a_variable_naming_the_gpu_passes(h100: dict[str, str], value: str) -> None:
    doc = _doctor(h100 | {"CUDA_VISIBLE_DEVICES": value})
    assert doc["host"]["cuda_driver"]["device_count"] == 1
    checks = {f["id"]: f["severity"] for f in doc["findings"]}
    assert checks["env.cuda-visible-devices"] == checks["cuda.driver-api"] == "pass"


def _real_host(env: dict[str, str], cuda: CudaDriverFacts) -> list[Any]:
    host = host_from_document(json.loads(REAL_HOST.read_text()))
    host = replace(host, env={**host.env, **env}, cuda_driver=cuda)
    return judge(Context(host=host, matrix=load_matrix(None), image=None))


def test_the_recorded_h100_with_a_uuid_prefix_fails_once() -> None:
    """Measured: CUDA_VISIBLE_DEVICES=GPU-09fd4f27 on the real H100 -> cuInit: no device. Judged
    PASS before, with a second, wrong `cuda.init-failed` driver fix."""
    no_device = CudaDriverFacts(
        status="error", error="CUDA_ERROR_NO_DEVICE", reason="no CUDA-capable device"
    )
    fails = [
        f
        for f in _real_host({"CUDA_VISIBLE_DEVICES": "GPU-09fd4f27"}, no_device)
        if f.severity == "fail"
    ]
    assert [f.id for f in fails] == ["env.cuda-visible-devices"]
    assert "GPU-09fd4f27-5ad8-6234-5f37-1ad95334cacd" in (fails[0].fix or "")


def test_the_driver_api_outranks_the_reading_of_the_variable() -> None:
    """A MIG entry, or any value the driver accepted: a device count above 0 is a pass."""
    ok = CudaDriverFacts(status="ok", version="13.0", device_count=1)
    findings = _real_host({"CUDA_VISIBLE_DEVICES": "MIG-2b7a9c1e-1111-2222-3333-444455556666"}, ok)
    assert {f.id: f.severity for f in findings}["env.cuda-visible-devices"] == "pass"


@pytest.mark.parametrize(
    ("value", "visible"),
    [("0,2,-1,1", 2), ("2,1", 2), ("3", 0), ("1,3,0", 1), (" 0 ", 1), ("-1", 0)],
)
def test_reading_stops_at_the_first_invalid_entry(value: str, visible: int) -> None:
    """The CUDA Programming Guide's own examples, on a three-GPU host."""
    host = host_from_document(json.loads(REAL_HOST.read_text()))
    gpus = tuple(
        replace(host.gpus[0], index=i, uuid=f"GPU-{i:08x}-0000-0000-0000-000000000000")
        for i in range(3)
    )
    assert read_visible_devices(value, gpus).visible == visible

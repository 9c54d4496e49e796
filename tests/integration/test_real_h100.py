"""The lent H100 as a recorded fixture, and the truth its fake must match.

`tests/data/real-h100/` holds what envcheck said on a real H100 (driver 580.159.04, CUDA 13.0, no
Docker, PyPI's CPU Paddle 3.3.1 installed for the Paddle runs), recorded offline with
`bench/real_gpu_host.sh` on 2026-11-23 (a-e at commit 636d3c8, f from the working tree between 854e002 and aaae7ca, the
witness at 854e002; messages are as those commits wrote them, so the replays compare ids):

  a-static-nopaddle        doctor --no-smoke                       warn, exit 0
  b-expect-gpu-nopaddle    doctor --in-process --expect-gpu        fail, exit 5 (nothing ran)
  c-static-cpu-paddle      doctor --no-smoke --python P            fail, exit 1 (paddle.cpu-build)
  d-expect-gpu-cpu-paddle  doctor --in-process --expect-gpu ...    cpu-fallback, exit 6
  e-smoke-cpu-paddle       doctor --in-process --python P          fail, exit 1, cpu-trained
  f-gpu262-expect          doctor --in-process --expect-gpu with PyPI's paddlepaddle-gpu 2.6.2
                           (CUDA 11.8, SASS sm_61-86): the known-answer checks die with CUDA
                           error 209 before training; fail, exit 5, nothing proven
  witness.json             bench/witness_real.py: NVML sampled around three torch workloads

Two kinds of check: a recorded report judged again (`--facts`) must give the same verdict, and
the fake profile `h100-580-lent` (the C-level fakes answering as that machine's driver did) with
this venv's CPU Paddle must give the real machine's facts and the real machine's verdicts.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from envcheck.contracts.facts import to_dict
from tests.inprocess import doctor_process
from tests.paths import DATA

pytest_plugins = ("tests.fakenv",)  # fake_build, fake_nvidia, probed_host

REAL = DATA / "real-h100"
PROFILE = "h100-580-lent"


def recorded(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((REAL / f"{name}.json").read_text())
    return doc


def doctor(env: dict[str, str], *args: str) -> dict[str, Any]:
    code, doc, _ = doctor_process(env, "--quiet", *args)
    assert doc["exit_code"] == code
    return doc


# Checks retired since the recording: the chosen image's unknown arch list is said on the image
# line (`image.selected`), no longer as a warning on every host.
RETIRED = frozenset({"image.arch-unverified"})


def verdict(doc: dict[str, Any]) -> tuple[object, ...]:
    """What a user acts on: every check's id and severity, the verdict, its exit and proof."""
    checks = sorted((f["id"], f["severity"]) for f in doc["findings"] if f["id"] not in RETIRED)
    return (doc["verdict"], doc["exit_code"], doc["proof"], checks)


def test_the_recordings_are_what_the_docstring_says() -> None:
    seen = {
        name: (doc["verdict"], doc["exit_code"], doc["proof"])
        for name in ("a-static-nopaddle", "b-expect-gpu-nopaddle", "c-static-cpu-paddle")
        + ("d-expect-gpu-cpu-paddle", "e-smoke-cpu-paddle", "f-gpu262-expect")
        for doc in [recorded(name)]
    }
    assert seen == {
        "a-static-nopaddle": ("warn", 0, "static"),
        "b-expect-gpu-nopaddle": ("fail", 5, "none"),
        "c-static-cpu-paddle": ("fail", 1, "static"),
        "d-expect-gpu-cpu-paddle": ("cpu-fallback", 6, "none"),
        "e-smoke-cpu-paddle": ("fail", 1, "cpu-trained"),
        "f-gpu262-expect": ("fail", 5, "none"),
    }
    # the real NVML and driver API, as the machine answered
    host = recorded("a-static-nopaddle")["host"]
    assert (host["driver"]["version"], host["driver"]["cuda"]) == ("580.159.04", "13.0")
    assert host["gpus"][0]["name"] == "NVIDIA H100 80GB HBM3"
    smoke = recorded("d-expect-gpu-cpu-paddle")["smoke"]
    assert (smoke["status"], smoke["runs"][0]["device_used"]) == ("cpu-fallback", "cpu")


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("a-static-nopaddle", []),
        ("b-expect-gpu-nopaddle", ["--expect-gpu"]),
        ("c-static-cpu-paddle", []),
        ("d-expect-gpu-cpu-paddle", ["--expect-gpu"]),
        ("e-smoke-cpu-paddle", []),
        ("f-gpu262-expect", ["--expect-gpu"]),
    ],
)
def test_a_recorded_report_judged_again_gives_the_same_verdict(
    name: str, args: list[str], tmp_path: Path
) -> None:
    """`doctor --facts REPORT --no-smoke`: the same host facts, the same matrix, the same checks,
    and the recorded smoke's outcome kept (b, a smoke that failed with exit 5, was once judged
    again as `warn`, exit 0)."""
    env = {**os.environ, "ENVCHECK_DRIVER_ROOT": str(tmp_path)}  # nothing probed: no driver
    again = doctor(env, "--facts", str(REAL / f"{name}.json"), "--no-smoke", *args)
    expected = verdict(recorded(name))
    if name == "b-expect-gpu-nopaddle":  # recorded as 5, a smoke that failed, when none started:
        expected = (expected[0], 6, *expected[2:])  # nothing ran on the H100's GPU
    assert verdict(again) == expected


def test_the_sm61_86_build_is_judged_again_with_its_recorded_smoke(tmp_path: Path) -> None:
    """Paddle 2.6.2 cu118 on the H100: the host alone already fails it (no sm_90 in the wheel,
    cuDNN 9 where it wants 8); the smoke that died on CUDA error 209 added the loaded libraries,
    and judging again keeps what it saw (exit 5, not the host's exit 1)."""
    real = recorded("f-gpu262-expect")
    env = {**os.environ, "ENVCHECK_DRIVER_ROOT": str(tmp_path)}
    again = doctor(env, "--facts", str(REAL / "f-gpu262-expect.json"), "--no-smoke")
    static = [
        (f["id"], f["severity"])
        for f in real["findings"]
        if f["layer"] != "smoke" and f["id"] not in RETIRED
    ]
    assert sorted((f["id"], f["severity"]) for f in again["findings"] if f["layer"] != "smoke") == (
        sorted(static)
    )
    assert ("paddle.arch-missing", "fail") in static and ("cudnn.major-mismatch", "fail") in static
    seen = [
        (f["id"], f["severity"], f["message"]) for f in again["findings"] if f["layer"] == "smoke"
    ]
    assert seen == [
        (f["id"], f["severity"], f["message"]) for f in real["findings"] if f["layer"] == "smoke"
    ]
    assert (again["verdict"], again["exit_code"], again["smoke"]) == ("fail", 5, real["smoke"])
    smoke = {f["id"]: f["severity"] for f in real["findings"] if f["layer"] == "smoke"}
    assert smoke["smoke.crashed"] == "fail" and smoke["smoke.loaded-cuda-mismatch"] == "fail"
    assert real["smoke"]["runs"][0]["error"]["phase"] == "check"  # before any training step


@pytest.mark.parametrize(
    "name", ["d-expect-gpu-cpu-paddle", "e-smoke-cpu-paddle", "f-gpu262-expect"]
)
def test_the_recorded_smoke_reads_back_as_it_was_written(name: str) -> None:
    """A report of schema 2, read by the reader of every document and written again: the same
    keys, order and values (a key added since, `contradicted`, stays absent)."""
    from envcheck.contracts.saved_report import smoke_of

    real = recorded(name)
    assert real["schema_version"] == 2
    smoke = smoke_of(real)
    assert smoke is not None and smoke.runs[0].contradicted is None
    assert json.dumps(to_dict(smoke)) == json.dumps(real["smoke"])


def test_nvml_on_the_real_h100_witnessed_each_workload_in_its_window() -> None:
    """The sampler's record of three torch workloads on the H100, judged again: training is busy
    (98 % SM of the process), a CUDA context computing on the CPU is idle (584 MiB, 0 %), no
    CUDA is unseen. The same `trains` record judged on the second after its last kernel, when
    its context still held 902 MiB, is idle: memory alone proves no training."""
    from envcheck.contracts.facts import from_dict
    from envcheck.contracts.smoke_report import NvmlSummary
    from envcheck.contracts.smoke_result import TrainWindow
    from envcheck.smoke.verdict.witness import witness

    rows = json.loads((REAL / "witness.json").read_text())
    assert [r["case"] for r in rows] == ["trains", "context-idle", "cpu-only"]

    def nvml(row: dict[str, Any]) -> NvmlSummary:
        return from_dict(NvmlSummary, row["nvml"], "nvml", numbers_as_text=False)

    for row in rows:
        window = TrainWindow(row["window"]["start"], row["window"]["end"])
        seen = witness(nvml(row), 0, window)
        assert (seen.state, to_dict(seen)) == (row["expected"], row["witness"]), row["case"]
    trains = rows[0]
    # NVML's utilisation trailed the window by 0.2-0.3 s there; from 2.35 s after its start the
    # device and the process read 0 % while the memory stayed until the process exited
    after = trains["window"]["start"] + 2.35
    late = witness(nvml(trains), 0, TrainWindow(after, after))
    assert late.samples > 0 and late.process_mem_max_bytes and late.process_sm_max == 0
    assert late.state == "idle"


@pytest.fixture
def lent_h100(fake_nvidia: Callable[[str], dict[str, str]], tmp_path: Path) -> dict[str, str]:
    """That machine had no Docker engine: here the endpoint is a socket nobody listens on."""
    fake = fake_nvidia(PROFILE)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "DOCKER_"))} | fake
    env["DOCKER_HOST"] = f"unix://{tmp_path}/docker.sock"
    env["PYTHONPATH"] = fake["FAKE_NVIDIA_SITE_PACKAGES"]  # the pip nvidia-* libraries
    return env


@pytest.mark.fakegpu
def test_the_fake_answers_as_the_real_driver_did(
    probed_host: Callable[[str], dict[str, Any]],
) -> None:
    real, fake = recorded("a-static-nopaddle")["host"], probed_host(PROFILE)
    keys = ("status", "version", "cuda", "kernel_module", "nvml_version")
    assert {k: fake["driver"][k] for k in keys} == {k: real["driver"][k] for k in keys}
    gpu_keys = ("index", "name", "uuid", "compute_capability", "memory_total_mib", "mig_mode")
    assert [{k: g[k] for k in gpu_keys + ("process_query",)} for g in fake["gpus"]] == [
        {k: g[k] for k in gpu_keys + ("process_query",)} for g in real["gpus"]
    ]
    cuda_keys = ("status", "version", "device_count")
    assert {k: fake["cuda_driver"][k] for k in cuda_keys} == {
        k: real["cuda_driver"][k] for k in cuda_keys
    }


@pytest.mark.fakegpu
@pytest.mark.parametrize(
    ("name", "args", "now"),
    [
        ("c-static-cpu-paddle", ["--no-smoke"], "c-static-cpu-paddle"),
        ("d-expect-gpu-cpu-paddle", ["--in-process", "--expect-gpu"], "d-expect-gpu-cpu-paddle"),
        # a CPU run beside a usable GPU is a CPU fallback, asked or not: e's run now gives d's
        # verdict, where the recording (made before that rule) passed the smoke "no GPU expected"
        ("e-smoke-cpu-paddle", ["--in-process"], "d-expect-gpu-cpu-paddle"),
    ],
)
def test_the_fake_gives_the_real_machines_verdict(
    lent_h100: dict[str, str], name: str, args: list[str], now: str
) -> None:
    """The real machine's CPU Paddle 3.3.1 was in torch's venv; here it is this venv's, the same
    release from the same PyPI wheel."""
    mine = doctor(lent_h100, "--python", sys.executable, *args)
    real = recorded(now)
    assert verdict(mine) == verdict(real)
    assert mine["image"]["ref"] == real["image"]["ref"]
    if real["smoke"]:
        ran = [(r["device_requested"], r["device_used"]) for r in real["smoke"]["runs"]]
        assert [(r["device_requested"], r["device_used"]) for r in mine["smoke"]["runs"]] == ran
        assert mine["smoke"]["status"] == real["smoke"]["status"]

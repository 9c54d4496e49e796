"""`envcheck doctor` end to end on fake NVIDIA hosts: the real pynvml and ctypes probes answer from
the C-level fakes, the real judge and image choice decide, the CLI prints the JSON and exit code.

The target Python is this venv's, whose Paddle is the real CPU build: on a GPU host that is
itself the `paddle.cpu-build` failure users hit when they `pip install paddlepaddle`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.inprocess import ENV, doctor_process, envcheck_process
from tests.paths import ROOT

pytest_plugins = ("tests.fakenv",)  # fake_build, fake_nvidia, probed_host

pytestmark = pytest.mark.fakegpu


def doctor(env: dict[str, str], *args: str) -> tuple[int, dict[str, Any]]:
    code, doc, _ = doctor_process(env, "--no-smoke", *args)
    return code, doc


def findings(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["id"]: f for f in doc["findings"]}


@pytest.fixture
def host_env(fake_nvidia: Callable[[str], dict[str, str]]) -> Callable[[str], dict[str, str]]:
    def make(profile: str) -> dict[str, str]:
        fake = fake_nvidia(profile)
        env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")} | fake
        env["PYTHONPATH"] = fake[
            "FAKE_NVIDIA_SITE_PACKAGES"
        ]  # the pip nvidia-* libraries, as Paddle sees them
        return env

    return make


def test_a100s_on_535_with_the_cpu_wheel(host_env: Callable[[str], dict[str, str]]) -> None:
    code, doc = doctor(host_env("a100x2-535"))
    assert code == 1 and doc["verdict"] == "fail"
    assert (
        doc["host"]["driver"]["version"] == "535.104.05" and doc["host"]["driver"]["cuda"] == "12.2"
    )
    assert [g["compute_capability"] for g in doc["host"]["gpus"]] == ["8.0", "8.0"]
    assert findings(doc)["paddle.cpu-build"]["severity"] == "fail"
    assert "paddlepaddle-gpu==3.3.1" in findings(doc)["paddle.cpu-build"]["fix"]
    # 535 reports CUDA 12.2: the cu12.9 image runs through minor-version compatibility, cu13.0 does not
    assert doc["image"]["ref"] == "docker.io/paddlepaddle/paddle:3.3.1-gpu-cuda12.9-cudnn9.9"
    assert doc["host"]["cudnn"]["origin"] == "pip" and doc["host"]["cudnn"]["version"] == "9.5.1"


def test_h100_on_580_gets_the_cuda13_image(host_env: Callable[[str], dict[str, str]]) -> None:
    _, doc = doctor(host_env("h100-580"))
    assert doc["image"]["ref"] == "docker.io/paddlepaddle/paddle:3.3.1-gpu-cuda13.0-cudnn9.13"
    assert findings(doc)["cuda.driver-api"]["severity"] == "pass"


@pytest.mark.parametrize(
    ("profile", "finding_id", "fix_word"),
    [
        ("rm-mismatch", "driver.version-mismatch", "reboot"),
        ("driver-not-loaded", "driver.not-loaded", "modprobe"),
        ("no-permission", "driver.no-permission", "/dev/nvidia"),
        ("mig-no-instances", "gpu.mig-no-instances", "nvidia-smi mig"),
    ],
    ids=["upgraded-without-reboot", "module-not-loaded", "no-permission", "mig-without-instances"],
)
def test_broken_driver_states_are_findings_with_fixes(
    host_env: Callable[[str], dict[str, str]], profile: str, finding_id: str, fix_word: str
) -> None:
    code, doc = doctor(host_env(profile))
    f = findings(doc)[finding_id]
    assert code == 1 and f["severity"] == "fail" and fix_word in f["fix"]


def test_module_mismatch_shows_both_versions(host_env: Callable[[str], dict[str, str]]) -> None:
    _, doc = doctor(host_env("rm-mismatch"))
    driver = doc["host"]["driver"]
    assert driver["error"] == "NVML_ERROR_LIB_RM_VERSION_MISMATCH"
    assert driver["kernel_module"] == "535.104.05" and driver["version"] == "550.54.15"


def test_a_pending_reboot_keeps_the_gpu_plan(host_env: Callable[[str], dict[str, str]]) -> None:
    """NVML_ERROR_LIB_RM_VERSION_MISMATCH lists no GPU, but the GPU is on the PCI bus
    (sysfs, vendor 0x10de). Before: `GPUs: none`, the CPU build passed "on a host without GPU"
    and the CPU image and wheel were offered: after the reboot the user had the wrong wheel."""
    code, doc = doctor(host_env("rm-mismatch"), "--python", sys.executable)  # the CPU wheel
    assert doc["host"]["driver"]["gpus_present"] == 1  # the Intel VGA function is not counted
    assert doc["host"]["gpus"] == []
    cpu = findings(doc)["paddle.cpu-build"]
    assert (code, cpu["severity"]) == (1, "fail")
    assert "paddlepaddle-gpu==" in cpu["fix"] and "-gpu-cuda" in doc["image"]["ref"]
    assert doc["image"]["kind"] == "gpu"


def test_a_pending_reboot_expects_the_gpu_in_the_smoke(
    host_env: Callable[[str], dict[str, str]],
) -> None:
    """The smoke on a host waiting for a reboot: before, "no GPU expected: the host has no usable
    NVIDIA GPU" and the CPU build's CPU run was a smoke pass beside the driver's failure; the
    GPU is on the PCI bus, so a CPU run there is the fallback the user must hear about."""
    code, doc, _ = doctor_process(
        host_env("rm-mismatch"), "--in-process", "--python", sys.executable
    )
    smoke = findings(doc)
    assert code == 6 and "smoke.pass" not in smoke  # CPU_FALLBACK
    assert smoke["smoke.cpu-fallback"]["severity"] == "fail"
    assert doc["smoke"]["gpu_expected"] is True
    assert "NVML_ERROR_LIB_RM_VERSION_MISMATCH" in doc["smoke"]["gpu_expected_reason"]


def test_a_hanging_cuinit_does_not_hang_the_doctor(
    host_env: Callable[[str], dict[str, str]],
) -> None:
    code, doc = doctor(host_env("cuinit-hang"))
    assert doc["host"]["cuda_driver"]["error"] == "timeout"
    assert code == 1 and findings(doc)["cuda.init-failed"]["severity"] == "fail"


def test_expect_gpu_passes_the_gpu_checks_on_a_healthy_host(
    host_env: Callable[[str], dict[str, str]],
) -> None:
    _, doc = doctor(host_env("rtx5090-570"), "--expect-gpu")
    ids = findings(doc)
    assert ids["driver.present"]["severity"] == "pass" and ids["gpu.0"]["severity"] == "pass"
    assert "gpu.expected" not in ids and doc["host"]["gpus"][0]["compute_capability"] == "12.0"


# The doctor's static tier, run as `envcheck doctor --no-smoke --json` runs it, then the names of
# every module the process imported (into the file named by argv[1]).
STATIC_TIER = """
import json, sys
from envcheck.cli import main
code = main(["doctor", "--no-smoke", "--json", "--quiet"])
with open(sys.argv[1], "w") as f:
    json.dump(sorted(sys.modules), f)
sys.exit(code)
"""
# top-level packages; `_hashlib` is OpenSSL's libcrypto, 3.7 MB of resident memory;
# `textwrap` wraps only the end of `envcheck --help`; `dataclasses` compiled six methods a class
# and brought `inspect` (with `dis` and `tokenize`): envcheck's records need none. (`ast` reads
# Paddle's version file: the standard library's own literal reader, ~1 ms, is worth its cost.)
NOT_STATIC = (
    *("rich", "docker", "requests", "urllib3", "paddle", "_hashlib", "textwrap"),
    *("dataclasses", "inspect", "dis", "tokenize"),
)
NOT_STATIC_ENVCHECK = (
    "envcheck.smoke",
    "envcheck.pull",
    "envcheck.registry",
    "envcheck.docker_",
    *(f"envcheck.commands.{name}" for name in ("fix", "pull_image", "report", "completion")),
    # what only a branch the static tier seldom takes needs: the pins of the known
    # package versions, a `--image` reference, a CUDA_VISIBLE_DEVICES value, a 2.x build's fatbin
    "envcheck.verdict.known_packages",
    "envcheck.image.reference",
    "envcheck.verdict.visible_devices",
    "envcheck.probe.fatbin",
)


def static_tier_modules(env: dict[str, str], tmp_path: Path, cuda: str = "ok") -> list[str]:
    """The modules a `doctor --no-smoke --json` on `env` imported; `cuda`: the CUDA driver's
    status it found (by default a GPU host's)."""
    modules = tmp_path / "modules.json"
    run = subprocess.run(
        [sys.executable, "-c", STATIC_TIER, str(modules)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "Traceback" not in run.stderr, run.stderr
    assert json.loads(run.stdout)["host"]["cuda_driver"]["status"] == cuda  # it judged that host
    loaded: list[str] = json.loads(modules.read_text())
    return loaded


def test_a_doctor_without_a_driver_never_imports_pynvml(
    host_env: Callable[[str], dict[str, str]], tmp_path: Path
) -> None:
    """No libnvidia-ml, no pynvml (~10 ms and ~2 MB of a driverless doctor, measured by
    bench/bench_doctor.py --host none): the NVML probe loads the library first. Nor `tempfile`
    (with `random`, ~1.5 ms), which only writes a report file."""
    loaded = static_tier_modules(host_env("no-driver"), tmp_path, cuda="absent")
    assert "envcheck.probe.nvml" in loaded and "envcheck.edges.userfiles" in loaded
    assert [m for m in ("pynvml", "ctypes.util", "tempfile", "random") if m in loaded] == []


def test_the_static_tier_imports_no_smoke_no_rich_no_docker_sdk(
    host_env: Callable[[str], dict[str, str]], tmp_path: Path
) -> None:
    """What `--no-smoke --json` does not need is not imported (what it costs is measured
    by bench/bench_doctor.py): the smoke and pull modules, rich, the docker SDK, Paddle,
    OpenSSL (the digests it needs are CPython's own, envcheck.digest), and the other commands'
    modules and parsers."""
    loaded = static_tier_modules(host_env("h100-580-lent"), tmp_path)
    assert "envcheck.verdict.judge" in loaded and "pynvml" in loaded
    assert [m for m in loaded if m.split(".")[0] in NOT_STATIC] == []
    assert [m for m in loaded if m.startswith(NOT_STATIC_ENVCHECK)] == []


# What the console script's first import (envcheck/entry.py, which starts the CUDA driver child
# before it imports anything else) adds to a bare interpreter's modules.
ENTRY_IMPORTS = """
import sys
bare = set(sys.modules)
import envcheck.entry
print(" ".join(sorted(set(sys.modules) - bare)))
"""
BEFORE_THE_CHILD = ("typing", "threading", "enum", "re", "collections", "signal", "subprocess")


def test_the_cuda_child_starts_before_typing_threading_and_enum_are_imported() -> None:
    """Every millisecond before the driver child starts is added to the doctor's wall
    time on a GPU host (cuInit is its slowest probe); `typing`, `threading` and `signal`'s
    enums alone cost ~15 ms on a loaded two-core machine (bench/bench_doctor.py)."""
    run = subprocess.run(
        [sys.executable, "-c", ENTRY_IMPORTS],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    loaded = run.stdout.split()
    assert "envcheck.probe.cuda_spawn" in loaded  # what starts the child is there
    assert [m for m in loaded if m.split(".")[0] in BEFORE_THE_CHILD] == []


def test_a_doctor_stopped_by_a_bad_flag_leaves_no_cuda_child(
    host_env: Callable[[str], dict[str, str]], tmp_path: Path
) -> None:
    """The CLI starts the CUDA child before it parses the flags; a usage error (exit 2)
    after that reaps it, even one hung in cuInit."""
    from tests.fakenv import children_alive  # registered as a plugin above

    env = host_env("cuinit-hang")
    profile = tmp_path / "cuinit-hang.toml"  # this test's own marker
    profile.write_bytes(Path(env["FAKE_NVIDIA_PROFILE"]).read_bytes())
    env["FAKE_NVIDIA_PROFILE"] = str(profile)
    code, doc, _ = doctor_process(env, "--no-smoke", "--no-such-flag")
    assert code == 2 and "--no-such-flag" in doc["error"]["message"]
    assert children_alive(str(profile)) == []


def test_the_doctor_adopts_the_cuda_child_its_entry_point_started(
    host_env: Callable[[str], dict[str, str]], tmp_path: Path
) -> None:
    """The entry point starts the driver child on the process's variables before the imports;
    the doctor's probe must take that child, not start a second one on a copy of them (a second
    cuInit, ~0.2 s on an H100, added to the wall time while the first is thrown away)."""
    trace = tmp_path / "trace"
    env = host_env("h100-580") | {"FAKE_NVIDIA_TRACE": str(trace)}
    run = subprocess.run(
        [sys.executable, "-m", "envcheck", "doctor", "--no-smoke", "--json"],
        env=env,
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert json.loads(run.stdout)["host"]["cuda_driver"]["status"] == "ok"
    assert trace.read_text().splitlines().count("cuInit") == 1


def test_no_driver_no_smoke_json(fake_nvidia: Callable[[str], dict[str, str]]) -> None:
    """No driver (the no-driver profile hides any real one), the .venv's Paddle CPU build."""
    r = envcheck_process("doctor", "--no-smoke", "--json", env={**ENV, **fake_nvidia("no-driver")})
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["host"]["driver"]["status"] == "absent"
    assert (
        doc["host"]["paddle"]["package"] == "paddlepaddle" and doc["host"]["paddle"]["cuda"] is None
    )
    assert doc["image"]["ref"] == "docker.io/paddlepaddle/paddle:3.3.1"
    assert doc["verdict"] in ("pass", "warn")


def test_expect_gpu_without_a_driver_fails(fake_nvidia: Callable[[str], dict[str, str]]) -> None:
    r = envcheck_process(
        "doctor", "--no-smoke", "--json", "--expect-gpu", env={**ENV, **fake_nvidia("no-driver")}
    )
    assert r.returncode == 1
    ids = {f["id"]: f["severity"] for f in json.loads(r.stdout)["findings"]}
    assert ids["driver.missing"] == "fail"

"""probe_driver (envcheck.probe.nvml) against the fake libnvidia-ml, one interpreter per host
profile (tests/fakenv), the driver root that hides a real driver, and the pure helpers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from envcheck.probe import nvml
from envcheck.probe.driver_root import proc_driver_version

pytest_plugins = ("tests.fakenv",)  # fake_build, fake_nvidia, probed_host

Probed = Callable[[str], dict[str, Any]]

# (profile, driver version, CUDA, kernel module, NVML version)
HEALTHY_DRIVERS = [
    ("a100x2-535", "535.104.05", "12.2", "535.104.05", "12.535.104.05"),
    ("t4-470", "470.82.01", "11.4", "470.82.01", "11.470.82.01"),
    ("h100-580", "580.65.06", "13.0", "580.65.06", "13.580.65.06"),
    ("rtx5090-570", "570.124.06", "12.8", "570.124.06", "12.570.124.06"),
    ("jetson-orin", "540.4.0", "12.6", None, "12.540.4.0"),
]

# profile -> per GPU: (name, compute capability, MiB, MIG on, MIG devices, process query)
GPUS: dict[str, list[tuple[Any, ...]]] = {
    "a100x2-535": [
        ("NVIDIA A100-SXM4-80GB", "8.0", 81920, False, None, "v3"),
        ("NVIDIA A100-SXM4-80GB", "8.0", 81920, False, None, "v3"),
    ],
    "t4-470": [("Tesla T4", "7.5", 15109, None, None, "v2")],
    "h100-580": [("NVIDIA H100 80GB HBM3", "9.0", 81559, False, None, "v3")],
    "rtx5090-570": [("NVIDIA GeForce RTX 5090", "12.0", 32607, None, None, "v3")],
    "jetson-orin": [("Orin (nvgpu)", "8.7", None, None, None, None)],
    "mig-no-instances": [("NVIDIA A100-SXM4-80GB", "8.0", 81920, True, 0, "v3")],
    "mig-two-instances": [("NVIDIA A100-SXM4-80GB", "8.0", 81920, True, 2, "v3")],
}

# (profile, status, NVML error, user-space version from the library name, kernel module, words)
INIT_FAILURES = [
    (
        "driver-not-loaded",
        "NVML_ERROR_DRIVER_NOT_LOADED",
        "535.104.05",
        None,
        "kernel module is not loaded",
    ),
    ("rm-mismatch", "NVML_ERROR_LIB_RM_VERSION_MISMATCH", "550.54.15", "535.104.05", "reboot"),
    ("no-permission", "NVML_ERROR_NO_PERMISSION", "535.104.05", "535.104.05", "/dev/nvidia"),
]


@pytest.mark.fakegpu
@pytest.mark.parametrize(
    ("profile", "version", "cuda", "module", "nvml_version"),
    HEALTHY_DRIVERS,
    ids=[row[0] for row in HEALTHY_DRIVERS],
)
def test_driver_facts_of_a_working_driver(
    probed_host: Probed,
    profile: str,
    version: str,
    cuda: str,
    module: str | None,
    nvml_version: str,
) -> None:
    driver = probed_host(profile)["driver"]
    assert driver["status"] == "ok", driver
    assert (driver["version"], driver["cuda"], driver["kernel_module"], driver["nvml_version"]) == (
        version,
        cuda,
        module,
        nvml_version,
    )
    assert driver["error"] is None and driver["reason"] is None
    assert driver["library"].endswith(f"/driver/libnvidia-ml.so.{version}")


@pytest.mark.fakegpu
@pytest.mark.parametrize("profile", sorted(GPUS), ids=sorted(GPUS))
def test_gpu_facts(probed_host: Probed, profile: str) -> None:
    gpus = probed_host(profile)["gpus"]
    seen = [
        (
            g["name"],
            g["compute_capability"],
            g["memory_total_mib"],
            g["mig_mode"],
            g["mig_instances"],
            g["process_query"],
        )
        for g in gpus
    ]
    assert seen == GPUS[profile]
    assert [g["index"] for g in gpus] == list(range(len(gpus)))


@pytest.mark.fakegpu
def test_old_driver_without_v3_process_query_falls_back_to_v2(probed_host: Probed) -> None:
    """Drivers before R510 lack nvmlDeviceGetComputeRunningProcesses_v3: pynvml raises
    FunctionNotFound, which must become process_query "v2", not a failed probe."""
    facts = probed_host("t4-470")
    assert facts["driver"]["status"] == "ok"
    assert [g["process_query"] for g in facts["gpus"]] == ["v2"]


@pytest.mark.fakegpu
def test_mig_on_without_instances_is_reported_not_hidden(probed_host: Probed) -> None:
    gpu = probed_host("mig-no-instances")["gpus"][0]
    assert (gpu["mig_mode"], gpu["mig_instances"]) == (True, 0)


@pytest.mark.fakegpu
def test_jetson_nvml_answers_what_it_can(probed_host: Probed) -> None:
    """JetPack 6 NVML: name, CC, driver and CUDA, but memory, UUID, MIG and processes are
    NOT_SUPPORTED; nvgpu has no /proc/driver/nvidia/version. None of it is an error."""
    facts = probed_host("jetson-orin")
    assert facts["driver"]["status"] == "ok"
    assert facts["gpus"] == [
        {
            "index": 0,
            "name": "Orin (nvgpu)",
            "uuid": None,
            "compute_capability": "8.7",
            "memory_total_mib": None,
            "mig_mode": None,
            "mig_instances": None,
            "process_query": None,
        }
    ]


@pytest.mark.fakegpu
@pytest.mark.parametrize(
    ("profile", "error", "version", "module", "words"),
    INIT_FAILURES,
    ids=[r[0] for r in INIT_FAILURES],
)
def test_nvml_init_failure_is_an_error_fact(
    probed_host: Probed, profile: str, error: str, version: str, module: str | None, words: str
) -> None:
    facts = probed_host(profile)
    driver = facts["driver"]
    assert (driver["status"], driver["error"]) == ("error", error)
    assert words in driver["reason"]
    assert driver["version"] == version  # from libnvidia-ml.so.<version>, NVML could not say
    assert driver["kernel_module"] == module
    assert facts["gpus"] == []


@pytest.mark.fakegpu
def test_mismatch_reason_names_the_loaded_module(probed_host: Probed) -> None:
    reason = probed_host("rm-mismatch")["driver"]["reason"]
    assert "kernel module 535.104.05" in reason


@pytest.mark.fakegpu
def test_toolkit_stub_without_nvml_is_absent(probed_host: Probed) -> None:
    driver = probed_host("cuda-stub")["driver"]
    assert (driver["status"], driver["error"]) == ("absent", "NVML_ERROR_LIBRARY_NOT_FOUND")


PROBE_DRIVER_ONLY = (
    "import json; from envcheck.contracts.facts import to_dict; import os; from envcheck.probe.nvml import probe_driver;"
    " d, g = probe_driver(os.environ); print(json.dumps({'driver': to_dict(d), 'gpus': to_dict(g)}))"
)


def _probe_driver_in(env: dict[str, str]) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE_DRIVER_ONLY],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def _nvml_calls(trace: Path) -> list[str]:
    return [c for c in trace.read_text().split() if c.startswith("nvml")]


@pytest.mark.fakegpu
def test_nvml_is_shut_down_after_a_successful_probe(
    fake_nvidia: Callable[[str], dict[str, str]], tmp_path: Path
) -> None:
    trace = tmp_path / "trace"
    _probe_driver_in({**fake_nvidia("a100x2-535"), "FAKE_NVIDIA_TRACE": str(trace)})
    calls = _nvml_calls(trace)
    assert calls[0] == "nvmlInitWithFlags" and calls[-1] == "nvmlShutdown"
    assert calls.count("nvmlShutdown") == 1


@pytest.mark.fakegpu
def test_gpu_lost_mid_probe_still_shuts_nvml_down(
    fake_nvidia: Callable[[str], dict[str, str]], tmp_path: Path
) -> None:
    """A GPU that falls off the bus between init and a device query (Xid 79)."""
    profile = tmp_path / "gpu-lost.toml"
    base = Path(fake_nvidia("a100x2-535")["FAKE_NVIDIA_PROFILE"]).read_text()
    profile.write_text(base + "\n[nvml.errors]\nnvmlDeviceGetName = 15\n")
    trace = tmp_path / "trace"
    env = {
        **fake_nvidia("a100x2-535"),
        "FAKE_NVIDIA_PROFILE": str(profile),
        "FAKE_NVIDIA_TRACE": str(trace),
    }
    facts = _probe_driver_in(env)
    assert (facts["driver"]["status"], facts["driver"]["error"]) == (
        "error",
        "NVML_ERROR_GPU_IS_LOST",
    )
    assert "Xid" in facts["driver"]["reason"]
    assert facts["gpus"] == []
    assert _nvml_calls(trace)[-1] == "nvmlShutdown"


@pytest.mark.fakegpu
def test_no_driver_profile_is_absent(probed_host: Probed) -> None:
    """No libnvidia-ml at all (the machine's own driver, if it has one, hidden by the profile's
    driver root): NVML is absent, not an error."""
    facts = probed_host("no-driver")
    assert (facts["driver"]["status"], facts["driver"]["error"]) == (
        "absent",
        "NVML_ERROR_LIBRARY_NOT_FOUND",
    )
    assert facts["driver"]["kernel_module"] is None and facts["gpus"] == []


@pytest.mark.fakegpu
def test_the_driver_root_hides_a_driver_the_loader_would_find(
    fake_nvidia: Callable[[str], dict[str, str]],
) -> None:
    """A machine with a real driver: libnvidia-ml.so.1 and /proc/driver/nvidia/version exist
    (here a fake driver on LD_LIBRARY_PATH stands in for the loader cache's copy). The no-driver
    profile's root still says absent: the probe never searched the loader path."""
    real = fake_nvidia("a100x2-535")
    assert _probe_driver_in(real)["driver"]["status"] == "ok"  # the loader would find a driver
    hidden = {**real, "ENVCHECK_DRIVER_ROOT": fake_nvidia("no-driver")["ENVCHECK_DRIVER_ROOT"]}
    facts = _probe_driver_in(hidden)
    assert (facts["driver"]["status"], facts["driver"]["kernel_module"]) == ("absent", None)


@pytest.mark.fakegpu
def test_the_driver_root_library_is_the_one_that_answers(
    fake_nvidia: Callable[[str], dict[str, str]],
) -> None:
    """The loader path holds one driver (T4, 470), the root another (A100, 535): the root's
    copy answers, even though pynvml itself asks dlopen for the bare soname."""
    t4, a100 = fake_nvidia("t4-470"), fake_nvidia("a100x2-535")
    env = {
        **t4,
        "ENVCHECK_DRIVER_ROOT": a100["ENVCHECK_DRIVER_ROOT"],
        "FAKE_NVIDIA_PROFILE": a100["FAKE_NVIDIA_PROFILE"],
    }
    driver = _probe_driver_in(env)["driver"]
    assert (driver["status"], driver["kernel_module"]) == ("ok", "535.104.05")
    assert driver["library"].endswith("/driver/libnvidia-ml.so.535.104.05")
    assert driver["library"].startswith(str(Path(a100["ENVCHECK_DRIVER_ROOT"]).parent))


BROKEN_PYNVML = [
    ("raise ImportError('broken install')\n", "pynvml-missing"),
    ("def nvmlInit():\n    pass\n", "pynvml-corrupted"),
]
BROKEN_PYNVML_IDS = ["unimportable", "shadowed-by-another-pynvml"]


def _with_pynvml(tmp_path: Path, module_text: str, host: dict[str, str]) -> dict[str, str]:
    """`host`'s variables with a `pynvml` module of `module_text` ahead of the installed one."""
    (tmp_path / "pynvml.py").write_text(module_text)
    path = [str(tmp_path), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**host, "PYTHONPATH": os.pathsep.join(path)}


@pytest.mark.fakegpu
@pytest.mark.parametrize(("module_text", "error"), BROKEN_PYNVML, ids=BROKEN_PYNVML_IDS)
def test_a_broken_pynvml_is_an_error_fact_not_a_crash(
    fake_nvidia: Callable[[str], dict[str, str]], tmp_path: Path, module_text: str, error: str
) -> None:
    """On a host with a driver, where the probe needs pynvml."""
    facts = _probe_driver_in(_with_pynvml(tmp_path, module_text, fake_nvidia("a100x2-535")))
    assert (facts["driver"]["status"], facts["driver"]["error"]) == ("error", error)
    assert "nvidia-ml-py" in facts["driver"]["reason"]


@pytest.mark.fakegpu
@pytest.mark.parametrize("module_text", [text for text, _ in BROKEN_PYNVML], ids=BROKEN_PYNVML_IDS)
def test_without_a_driver_pynvml_is_never_imported(
    fake_nvidia: Callable[[str], dict[str, str]], tmp_path: Path, module_text: str
) -> None:
    """No libnvidia-ml to load, so no pynvml to import (~10 ms, ~2 MB): the answer is the
    one nvmlInit gives, and a broken pynvml, never imported, changes nothing."""
    facts = _probe_driver_in(_with_pynvml(tmp_path, module_text, fake_nvidia("no-driver")))
    assert (facts["driver"]["status"], facts["driver"]["error"]) == (
        "absent",
        "NVML_ERROR_LIBRARY_NOT_FOUND",
    )
    assert facts["driver"]["reason"].startswith("No NVIDIA driver is installed")


def test_a_missing_pynvml_is_reported_even_without_a_driver(
    no_driver: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An envcheck installed without nvidia-ml-py is the install's fault, which the first driver
    installed here would meet: reported on a driverless host too, rather than `absent`."""
    monkeypatch.setitem(sys.modules, "pynvml", None)  # `import pynvml` raises ImportError
    driver, gpus = nvml.probe_driver(os.environ)
    assert (driver.status, driver.error, gpus) == ("error", "pynvml-missing", ())
    assert "Reinstall envcheck" in (driver.reason or "")


# Pure helpers ---------------------------------------------------------------------------------

PROC_FILES = [
    (
        "proprietary",
        (
            "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n"
            "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n"
        ),
        "535.104.05",
    ),
    (
        "open",
        (
            "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  575.57.08  Release Build"
            "  (dvs-builder@U16)  Tue May 20 2025\n"
        ),
        "575.57.08",
    ),
    (
        "open-aarch64",
        "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  580.65.06  Release Build\n",
        "580.65.06",
    ),
    ("garbage", "nothing to see\n", None),
]


@pytest.mark.parametrize(
    ("text", "expected"), [r[1:] for r in PROC_FILES], ids=[r[0] for r in PROC_FILES]
)
def test_kernel_module_version_from_proc_file(
    tmp_path: Path, text: str, expected: str | None
) -> None:
    path = tmp_path / "version"
    path.write_text(text)
    assert nvml.read_kernel_module_version(str(path)) == expected


def test_kernel_module_version_is_read_under_the_driver_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "proc" / "driver" / "nvidia" / "version"
    path.parent.mkdir(parents=True)
    path.write_text(PROC_FILES[0][1])
    monkeypatch.setenv("ENVCHECK_DRIVER_ROOT", str(tmp_path))
    assert nvml.read_kernel_module_version(proc_driver_version(os.environ)) == "535.104.05"
    monkeypatch.setenv("ENVCHECK_DRIVER_ROOT", str(tmp_path / "missing"))
    assert nvml.read_kernel_module_version(proc_driver_version(os.environ)) is None


@pytest.mark.parametrize(
    ("code", "name"),
    [
        (9, "NVML_ERROR_DRIVER_NOT_LOADED"),
        (18, "NVML_ERROR_LIB_RM_VERSION_MISMATCH"),
        (4, "NVML_ERROR_NO_PERMISSION"),
        (13, "NVML_ERROR_FUNCTION_NOT_FOUND"),
        (999, "NVML_ERROR_UNKNOWN"),
        (12345, "NVML_ERROR_12345"),
    ],
    ids=["not-loaded", "mismatch", "permission", "function-not-found", "unknown", "unnamed"],
)
def test_error_names_are_the_nvml_constants(code: int, name: str) -> None:
    import pynvml

    assert nvml.error_name(pynvml, pynvml.NVMLError(code)) == name


@pytest.mark.parametrize(
    ("path", "version"),
    [
        ("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15", "550.54.15"),
        ("/usr/lib/aarch64-linux-gnu/nvidia/libnvidia-ml.so.540.4.0", "540.4.0"),
        ("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", None),
        (None, None),
    ],
    ids=["x86_64", "jetson", "soname-only", "none"],
)
def test_driver_version_from_library_file_name(path: str | None, version: str | None) -> None:
    assert nvml._version_from_library_name(path) == version

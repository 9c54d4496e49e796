"""What the smoke process actually loaded: the workload's /proc/self/maps reading,
run for real, and the rules that judge it.

The fake NVIDIA libraries (tests/fakenv, C ABI) are put into the process with LD_PRELOAD, so
the dynamic loader maps them exactly as Paddle's dlopen() would on a GPU host, and the workload's
real /proc/self/maps reading and RTLD_NOLOAD version calls see them. The CPU Paddle run maps no
NVIDIA library at all, and says so.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from envcheck.commands.doctor import read_facts_document
from envcheck.contracts.facts import (
    DriverFacts,
    HostFacts,
    LibraryFacts,
    PaddleFacts,
    from_dict,
    to_dict,
)
from envcheck.contracts.findings import Finding
from envcheck.contracts.record import replace
from envcheck.contracts.smoke_report import NvmlSummary
from envcheck.smoke.parse import BadOutput, RawRun, parse_result, validate
from envcheck.smoke.plan import Outcome, Plan
from envcheck.smoke.runner.payload import WORKLOAD
from envcheck.smoke.verdict.judge import judge
from envcheck.smoke.verdict.loaded import NVML_UNKNOWN_FIX, loaded_findings, loaded_libraries
from envcheck.verdict.fixes import REBOOT_FIX, PipInstall
from tests import fakenv
from tests import smoke_samples as rec
from tests.inprocess import process_env
from tests.paths import DATA

pytest_plugins = ("tests.fakenv",)

REAL_HOST = DATA / "hosts" / "h100-580-nopaddle.host.json"  # docs/facts/real-gpu-host.md
IN_PROCESS = Plan(
    mode="in-process",
    gpu_expected=True,
    gpu_reason="--expect-gpu",
    device_args=("gpu:all",),
    python="/venv/bin/python",
    pip_command=PipInstall(
        "/venv/bin/python",
        ("paddlepaddle-gpu==3.3.1", "-i", "https://www.paddlepaddle.org.cn/packages/stable/cu126/"),
    ),
)
CONTAINER = Plan(
    mode="container",
    gpu_expected=True,
    gpu_reason="--expect-gpu",
    device_args=("gpu:all",),
    image="paddlepaddle/paddle:3.3.1-gpu-cuda12.6-cudnn9.5",
    gpu_image="paddlepaddle/paddle:3.3.1-gpu-cuda12.6-cudnn9.5",
)

# Only the loader's view matters here: a library's functions are called on the mapped copy.
LISTING = """
import json, sys
sys.path.insert(0, sys.argv[1])
import libraries
libs = libraries.loaded_libraries()
print(json.dumps({"loaded_libraries": libs, "driver_check": libraries.driver_check(libs)}))
"""


def preloaded(env: dict[str, str], *paths: Path, full: bool = False) -> dict[str, Any]:
    """The workload (whole, or just its maps reading) in a fresh process with `paths` mapped."""
    merged = {**os.environ, **env, "LD_PRELOAD": ":".join(str(p) for p in paths)}
    if full:
        argv = [sys.executable, str(WORKLOAD), "--device", "cpu", "--steps", "3"]
    else:
        argv = [sys.executable, "-c", LISTING, str(WORKLOAD.parent)]
    proc = subprocess.run(argv, env=merged, capture_output=True, timeout=180, check=False)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    if full:
        parse_result(proc.stdout)  # the whole workload's line keeps the protocol
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc


@pytest.fixture(scope="module")
def a100(fake_nvidia: Callable[[str], dict[str, str]]) -> tuple[dict[str, str], Path, Path, Path]:
    env = fake_nvidia("a100x2-535")
    driver, ld = (Path(p) for p in env["LD_LIBRARY_PATH"].split(":"))
    return env, driver, ld, Path(env["FAKE_NVIDIA_SITE_PACKAGES"]) / "nvidia"


@pytest.fixture(scope="module")
def a100_run(a100: tuple[dict[str, str], Path, Path, Path]) -> dict[str, Any]:
    """The whole workload, with the pip CUDA runtime and cuDNN and the driver's libraries mapped."""
    env, driver, _, pip = a100
    return preloaded(
        env,
        driver / "libcuda.so.1",
        driver / "libnvidia-ml.so.1",
        pip / "cudnn/lib/libcudnn.so.9",
        pip / "cuda_runtime/lib/libcudart.so.12",
        full=True,
    )


def host(kernel_module: str = "535.104.05", **more: Any) -> HostFacts:
    return HostFacts(
        driver=DriverFacts(
            status="ok", version=kernel_module, cuda="12.2", kernel_module=kernel_module
        ),
        **more,
    )


def built(result: dict[str, Any], cuda: str, cudnn: str, paddle: str = "3.3.1") -> dict[str, Any]:
    """The CPU wheel's real result, read as a GPU build's (the loaded list stays what was mapped)."""
    return result | {"cuda_version": cuda, "cudnn_version": cudnn, "paddle_version": paddle}


def by_id(findings: list[Finding]) -> dict[str, Finding]:
    return {f.id: f for f in findings}


def test_the_cpu_paddle_run_maps_no_nvidia_library_and_the_report_says_so(no_driver: Path) -> None:
    """No driver: on a GPU machine the CPU build is paddle.cpu-build, exit 1 (the lent H100)."""
    proc = subprocess.run(
        [sys.executable, "-m", "envcheck", "doctor", "--in-process", "--explain"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "14/14 known answers right; no NVIDIA library mapped" in proc.stdout  # smoke.pass
    assert "loaded: no NVIDIA library (the smoke ran without CUDA)" in proc.stdout


def test_mapped_fake_libraries_are_reported_with_path_version_and_source(
    a100: tuple[dict[str, str], Path, Path, Path], a100_run: dict[str, Any]
) -> None:
    _, driver, _, pip = a100
    assert a100_run["loaded_when"] == "first-step"
    libs = {lib.name: to_dict(lib) for lib in loaded_libraries(rec.as_result(a100_run)) or []}
    assert libs["libcudart"] | {} == {
        "name": "libcudart",
        "path": str(pip / "cuda_runtime/lib/libcudart.so.12"),
        "version": "12.6",
        "source": "pip",
        "version_from": "cudaRuntimeGetVersion()",
    }
    assert libs["libcudnn"]["path"] == str(pip / "cudnn/lib/libcudnn.so.9")
    assert (libs["libcudnn"]["version"], libs["libcudnn"]["source"]) == ("9.5.1", "pip")
    assert libs["libcudnn"]["version_from"] == "cudnnGetVersion()"
    # maps holds the resolved file: the driver's libcuda.so.1 is libcuda.so.<driver version>
    assert libs["libcuda"] == {
        "name": "libcuda",
        "path": str(driver / "libcuda.so.535.104.05"),
        "version": "535.104.05",
        "source": "LD_LIBRARY_PATH",
        "version_from": "file name",
        "cuda_api": "12.2",
    }
    assert (libs["libnvidia-ml"]["version"], libs["libnvidia-ml"]["source"]) == (
        "535.104.05",
        "LD_LIBRARY_PATH",
    )
    assert a100_run["driver_check"] == {
        "library": str(driver / "libnvidia-ml.so.535.104.05"),
        "init": 0,
        "error": None,
        "driver_version": "535.104.05",
    }


def test_matching_libraries_raise_nothing_and_the_pass_names_them(a100_run: dict[str, Any]) -> None:
    probed = LibraryFacts(
        status="ok",
        version="9.5.1",
        origin="pip",
        path=next(lib["path"] for lib in a100_run["loaded_libraries"] if lib["name"] == "libcudnn"),
    )
    assert (
        loaded_findings(
            host(cudnn=probed), IN_PROCESS, rec.as_result(built(a100_run, "12.6", "9.5.1"))
        )
        == []
    )
    mapped = {"loaded_libraries": a100_run["loaded_libraries"]}  # on a run that learned (60 steps)
    cpu = replace(IN_PROCESS, gpu_expected=False, gpu_reason="a CPU run", device_args=("cpu",))
    [passed] = judge(
        cpu,
        Outcome(RawRun(0, b"", "", 1.0), rec.as_result(rec.result() | mapped), None, NvmlSummary()),
    )
    assert (
        passed.id == "smoke.pass"
        and "; mapped libcudart 12.6 (pip), libcudnn 9.5.1 (pip)" in passed.message
    )


def test_a_cudnn_and_cuda_of_another_major_than_the_build_fail_with_the_library_named(
    a100_run: dict[str, Any],
) -> None:
    found = by_id(
        loaded_findings(
            host(), IN_PROCESS, rec.as_result(built(a100_run, "11.8", "8.6.0", "2.6.2"))
        )
    )
    cudnn = found["smoke.loaded-cudnn-mismatch"]
    assert (
        cudnn.severity == "fail"
        and "libcudnn 9.5.1 from " in cudnn.message
        and "(pip)" in cudnn.message
    )
    assert "install cuDNN 8.6.0 (the one the build expects) in /venv/bin/python" in (
        cudnn.fix or ""
    )
    cuda = found["smoke.loaded-cuda-mismatch"]
    assert cuda.severity == "fail" and "libcudart 12.6" in cuda.message
    assert "the CUDA 11.8 libraries the build expects" in (cuda.fix or "")
    older = by_id(
        loaded_findings(host(), IN_PROCESS, rec.as_result(built(a100_run, "12.6", "9.8.0")))
    )
    assert older["smoke.loaded-cudnn-mismatch"].severity == "warn"


def test_an_ld_library_path_cudnn_that_shadows_the_probed_pip_copy_is_named_with_its_fix(
    a100: tuple[dict[str, str], Path, Path, Path],
) -> None:
    env, _, ld, _ = a100
    probed = fakenv.run_probes(env)  # the host probe: pip cuDNN 9.5.1 wins over the LD 8.9.6
    cudnn = from_dict(LibraryFacts, probed["cudnn"])
    assert (cudnn.version, cudnn.origin) == ("9.5.1", "pip")
    mapped = preloaded(env, ld / "libcudnn.so.8")  # what a process really got
    result = built(rec.result() | mapped, "12.6", "9.5.1")
    found = by_id(loaded_findings(host(cudnn=cudnn), IN_PROCESS, rec.as_result(result)))
    shadow = found["smoke.loaded-cudnn-shadowed"]
    assert (
        shadow.severity == "warn"
        and f"libcudnn 8.9.6 from {ld}/libcudnn.so.8 (LD_LIBRARY_PATH)" in shadow.message
    )
    assert f"expected cuDNN 9.5.1 from {cudnn.path} (pip)" in shadow.message
    assert shadow.fix is not None and shadow.fix.startswith(f"remove {ld} from LD_LIBRARY_PATH")
    mismatch = found["smoke.loaded-cudnn-mismatch"]
    assert mismatch.fix is not None and mismatch.fix.startswith(
        f"remove {ld} from LD_LIBRARY_PATH; then "
    )
    # in a container the host probe looked at another filesystem: no shadowing claim
    assert "smoke.loaded-cudnn-shadowed" not in by_id(
        loaded_findings(host(cudnn=cudnn), CONTAINER, rec.as_result(result))
    )


def test_a_compat_libcuda_that_differs_from_the_kernel_module_has_its_own_finding(
    fake_build: fakenv.FakeBuild, a100: tuple[dict[str, str], Path, Path, Path], tmp_path: Path
) -> None:
    env = a100[0]
    compat = tmp_path / "usr/local/cuda-13.0/compat"
    compat.mkdir(parents=True)
    shutil.copyfile(fake_build.cuda, compat / "libcuda.so.580.65.06")
    (compat / "libcuda.so.1").symlink_to("libcuda.so.580.65.06")
    mapped = preloaded(env, compat / "libcuda.so.1")
    [lib] = loaded_libraries(rec.as_result(rec.result() | mapped)) or []
    assert (lib.path, lib.version, lib.source) == (
        str(compat / "libcuda.so.580.65.06"),
        "580.65.06",
        "compat",
    )
    found = by_id(
        loaded_findings(host("535.104.05"), CONTAINER, rec.as_result(rec.result() | mapped))
    )
    finding = found["smoke.compat-driver-mismatch"]
    assert finding.severity == "fail" and "kernel module is 535.104.05" in finding.message
    assert f"drop the CUDA compat folder from LD_LIBRARY_PATH (set it without {compat}" in (
        finding.fix or ""
    )
    assert "smoke.driver-library-mismatch" not in found  # one finding, the compat one
    assert "smoke.compat-driver-mismatch" not in by_id(
        loaded_findings(host("580.65.06"), CONTAINER, rec.as_result(rec.result() | mapped))
    )


def test_driver_user_space_newer_than_the_kernel_module_is_driver_library_mismatch(
    fake_nvidia: Callable[[str], dict[str, str]],
) -> None:
    env = fake_nvidia("rm-mismatch")  # user space 550.54.15, kernel module 535.104.05
    driver = Path(env["LD_LIBRARY_PATH"].split(":")[0])
    mapped = preloaded(env, driver / "libcuda.so.1", driver / "libnvidia-ml.so.1")
    assert mapped["driver_check"]["error"] == "NVML_ERROR_LIB_RM_VERSION_MISMATCH"
    assert mapped["driver_check"]["init"] == 18
    found = by_id(
        loaded_findings(host("535.104.05"), CONTAINER, rec.as_result(rec.result() | mapped))
    )
    finding = found["smoke.driver-library-mismatch"]
    assert finding.severity == "fail" and finding.remedy == REBOOT_FIX
    assert (
        "Driver/library version mismatch" in finding.message
        and "(injected by the NVIDIA runtime)" in finding.message
    )
    assert "libcuda 550.54.15" in finding.message and "kernel module 535.104.05" in finding.message
    # in-process the host's NVML probe already said it (driver.version-mismatch): said once
    said = replace(
        host("535.104.05"),
        driver=DriverFacts(
            status="error", error="NVML_ERROR_LIB_RM_VERSION_MISMATCH", kernel_module="535.104.05"
        ),
    )
    assert "smoke.driver-library-mismatch" not in by_id(
        loaded_findings(said, IN_PROCESS, rec.as_result(rec.result() | mapped))
    )


def test_nvml_unknown_error_in_the_container_is_a_finding_with_the_cgroup_fix(
    fake_nvidia: Callable[[str], dict[str, str]], tmp_path: Path
) -> None:
    env = fake_nvidia("a100x2-535")
    profile = tmp_path / "unknown.toml"  # the daemon-reload state: nvmlInit answers 999
    profile.write_text(
        Path(env["FAKE_NVIDIA_PROFILE"]).read_text() + "\n[nvml.errors]\nnvmlInit = 999\n"
    )
    driver = Path(env["LD_LIBRARY_PATH"].split(":")[0])
    mapped = preloaded(env | {"FAKE_NVIDIA_PROFILE": str(profile)}, driver / "libnvidia-ml.so.1")
    assert mapped["driver_check"]["error"] == "NVML_ERROR_UNKNOWN"
    finding = by_id(loaded_findings(host(), CONTAINER, rec.as_result(rec.result() | mapped)))[
        "smoke.nvml-unknown-error"
    ]
    assert finding.severity == "fail" and finding.remedy == NVML_UNKNOWN_FIX
    assert "NVML: Unknown Error in the container" in finding.message


# The real H100 (docs/facts/real-gpu-host.md): PyPI paddlepaddle-gpu 2.6.2 (CUDA 11.8, cuDNN 8.6)
# mapped the system cuDNN 9.14 and a CUDA 13 cuBLAS, while the host probe named the pip cuDNN 9.19.
# Paths as recorded there; no version call was recorded, so versions come from the file names.
REAL_H100_LOADED: list[dict[str, Any]] = [
    {
        "name": "libcuda",
        "path": "/usr/local/nvidia/lib64/libcuda.so.580.159.04",
        "source": "LD_LIBRARY_PATH",
        "call": "cuDriverGetVersion",
        "raw": 13000,
        "call_error": None,
    },
    {
        "name": "libcublas",
        "path": "/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcublas.so.13.1.0.3",
        "source": "cuda-home",
        "call": "cublasGetProperty",
        "raw": None,
        "call_error": None,
    },
    {
        "name": "libcublasLt",
        "path": "/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcublasLt.so.13.1.0.3",
        "source": "cuda-home",
        "call": "cublasLtGetProperty",
        "raw": None,
        "call_error": None,
    },
    {
        "name": "libcudnn",
        "path": "/usr/lib/x86_64-linux-gnu/libcudnn.so.9.14.0",
        "source": "system",
        "call": "cudnnGetVersion",
        "raw": None,
        "call_error": None,
    },
]


def test_recorded_real_h100_cudnn_9_14_and_cublas_13_under_a_cuda_11_8_build() -> None:
    facts, _ = read_facts_document(str(REAL_HOST), process_env())
    facts = replace(
        facts,
        paddle=PaddleFacts(
            status="ok",
            package="paddlepaddle-gpu",
            version="2.6.2",
            cuda="11.8",
            cudnn="8.6.0",
            python="/opt/torch/.venv/bin/python3",
        ),
    )
    result = built(rec.on_gpu(rec.result(), cc="9.0"), "11.8", "8.6.0", "2.6.2")
    result |= {
        "loaded_libraries": REAL_H100_LOADED,
        "loaded_when": "first-step",
        "driver_check": None,
    }
    validate(result)
    found = by_id(loaded_findings(facts, IN_PROCESS, rec.as_result(result)))
    cudnn = found["smoke.loaded-cudnn-mismatch"]
    assert cudnn.severity == "fail"
    assert (
        "libcudnn 9.14.0 from /usr/lib/x86_64-linux-gnu/libcudnn.so.9.14.0 (system)"
        in cudnn.message
    )
    cuda = found["smoke.loaded-cuda-mismatch"]
    assert "libcublas 13.1.0.3" in cuda.message and "libcublasLt 13.1.0.3" in cuda.message
    # each fix does what it says: cuDNN 8.6 from NVIDIA's CUDA 11 wheel, or the doctor's build
    # (on the real H100 the Paddle command was offered as "install cuDNN 8.6.0 …")
    assert cudnn.remedy is not None and cudnn.remedy.commands[0].shell() == (
        "/venv/bin/python -m pip install nvidia-cudnn-cu11==8.6.0.163"
    )
    assert "the system copy in /usr/lib/x86_64-linux-gnu was found first" in (cudnn.fix or "")
    doctors = IN_PROCESS.pip_command.shell() if IN_PROCESS.pip_command else ""
    assert (
        "or instead: replace the build with the one the doctor chose, which brings matching "
        f"libraries; then `{doctors}`" in (cudnn.fix or "")
    )
    assert "libraries the build expects in /venv/bin/python; or instead: replace the build" in (
        cuda.fix or ""
    )
    shadow = found["smoke.loaded-cudnn-shadowed"]
    assert (
        "expected cuDNN 9.19.0 from /opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn.so.9 (pip)"
        in shadow.message
    )
    assert (
        "smoke.driver-library-mismatch" not in found and "smoke.compat-driver-mismatch" not in found
    )


@pytest.mark.parametrize(
    "bad",
    [
        {"loaded_libraries": {}},
        {"loaded_libraries": [{"name": "libcuda"}]},
        {"loaded_libraries": [dict(REAL_H100_LOADED[0], raw=[True])]},
        {"loaded_libraries": [], "driver_check": {"library": 1}},
    ],
    ids=["not-a-list", "missing-keys", "raw-not-int", "driver-check-shape"],
)
def test_a_malformed_loaded_list_is_bad_output(bad: dict[str, Any]) -> None:
    with pytest.raises(BadOutput):
        validate(rec.result() | bad)


def test_maps_lines_name_each_library_once_in_load_order_and_ignore_look_alikes() -> None:
    from envcheck.smoke.workload import libraries as workload_libraries

    maps = "\n".join(
        [
            "7f00-7f01 r--p 00000000 08:01 1 /usr/lib/x86_64-linux-gnu/libcudnn_ops.so.9.1.0",
            "7f01-7f02 r-xp 00001000 08:01 1 /usr/lib/x86_64-linux-gnu/libcudnn_ops.so.9.1.0",
            "7f02-7f03 r--p 00000000 08:01 2 /opt/conda/lib/libnccl.so.2.18.3",
            "7f03-7f04 r--p 00000000 08:01 3 /usr/lib/libcudart_static_helper.so",
            "7f04-7f05 r--p 00000000 08:01 4 /usr/lib/libcudann.so.1",
            "7f05-7f06 r--p 00000000 08:01 5 /usr/local/cuda-12.4/compat/libcuda.so.550.54.15 (deleted)",
            "7f06-7f07 rw-p 00000000 00:00 0 ",
        ]
    )
    libs = workload_libraries.loaded_libraries(maps, {"CONDA_PREFIX": "/opt/conda"})
    assert [(lib["name"], lib["source"]) for lib in libs] == [
        ("libcudnn_ops", "system"),
        ("libnccl", "conda"),
        ("libcuda", "compat"),
    ]
    assert libs[2]["path"] == "/usr/local/cuda-12.4/compat/libcuda.so.550.54.15"
    assert all(lib["raw"] is None for lib in libs)  # never loaded: RTLD_NOLOAD found none mapped

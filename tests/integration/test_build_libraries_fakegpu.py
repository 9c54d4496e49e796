"""Everything the installed GPU build opens, on fake hosts: the probe's child opens each name as
Paddle's loader would (the real ctypes code against empty libraries with the right sonames), and
the doctor fails a build that cannot load one, or an NVML without its libcuda."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.fakenv import FakeBuild, empty_library, run_probes
from tests.inprocess import doctor_process
from tests.paddle_versions import VERSION_262_GPU, VERSION_331_CU126

pytest_plugins = ("tests.fakenv",)  # fake_build, fake_nvidia, probed_host

pytestmark = pytest.mark.fakegpu


def host_env(fake: dict[str, str], paddle: str | None = None, **extra: str) -> dict[str, str]:
    """The fake host's variables; `paddle`: a Paddle version file put on the target's sys.path
    (the fake site-packages, first on PYTHONPATH), else this venv's CPU build is the subject."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")} | fake | extra
    site = Path(fake["FAKE_NVIDIA_SITE_PACKAGES"])
    if paddle is not None:
        (site / "paddle" / "version").mkdir(parents=True)
        (site / "paddle" / "version" / "__init__.py").write_text(paddle)
    env["PYTHONPATH"] = str(site)
    return env


def findings(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["id"]: f for f in doc["findings"]}


def test_the_probe_opens_every_name_the_host_holds_and_the_unversioned_ones(
    probed_host: Callable[[str], dict[str, Any]],
) -> None:
    opened = {o["name"]: o for o in probed_host("t4-470-no-cublas")["opened"]}
    assert opened["libcublas.so"]["status"] == "absent"
    assert "libcublas.so: cannot open shared object file" in opened["libcublas.so"]["reason"]
    assert opened["libcublas.so.11"]["status"] == "ok"
    assert opened["libcublas.so.11"]["path"].endswith("/ld/libcublas.so.11")
    assert opened["libcublas.so.11"]["origin"] == "loader"
    for name in ("libcufft.so", "libcurand.so", "libcusolver.so", "libcusparse.so", "libnccl.so"):
        assert opened[name]["status"] == "ok", opened[name]


def test_a_2x_gpu_build_without_libcublas_fails_with_the_link_or_the_package(
    fake_nvidia: Callable[[str], dict[str, str]],
) -> None:
    code, doc, _ = doctor_process(
        host_env(fake_nvidia("t4-470-no-cublas"), VERSION_262_GPU), "--no-smoke"
    )
    assert code == 1 and doc["verdict"] == "fail"
    f = findings(doc)["cuda.library-missing"]
    assert f["severity"] == "fail"
    assert "opens cuBLAS as libcublas.so" in f["message"]
    assert "names from the matrix for Paddle 2.x, CUDA 11" in f["message"]
    assert "libcublas.so.11" in f["fix"] and "ln -s" in f["fix"]
    assert "apt-get install -y libcublas-dev-11-8" in f["fix"]
    # the names present load: one pass line lists them
    assert "cuFFT (libcufft.so)" in findings(doc)["cuda.libraries"]["message"]


def test_a_cpu_build_opens_none_of_them(fake_nvidia: Callable[[str], dict[str, str]]) -> None:
    _, doc, _ = doctor_process(host_env(fake_nvidia("t4-470-no-cublas")), "--no-smoke")
    assert doc["host"]["paddle"]["cuda"] is None
    assert not doc["host"].get("opened_libraries")
    assert "cuda.library-missing" not in findings(doc)


def test_nvml_without_libcuda_in_a_utility_only_container_fails_a_gpu_build(
    fake_nvidia: Callable[[str], dict[str, str]],
) -> None:
    env = host_env(
        fake_nvidia("a100-535-utility-only"),
        VERSION_331_CU126,
        NVIDIA_VISIBLE_DEVICES="all",
        NVIDIA_DRIVER_CAPABILITIES="utility",
    )
    code, doc, _ = doctor_process(env, "--no-smoke")
    assert doc["host"]["driver"]["status"] == "ok"
    assert doc["host"]["cuda_driver"]["status"] == "absent"
    f = findings(doc)["cuda.libcuda-missing"]
    assert code == 1 and f["severity"] == "fail"
    assert "NVML answers (driver 535.104.05" in f["message"]
    assert "NVIDIA_DRIVER_CAPABILITIES=compute,utility" in f["fix"]


def test_nvml_without_libcuda_beside_a_cpu_build_is_a_warning(
    fake_nvidia: Callable[[str], dict[str, str]],
) -> None:
    _, doc, _ = doctor_process(host_env(fake_nvidia("a100-535-utility-only")), "--no-smoke")
    assert findings(doc)["cuda.libcuda-missing"]["severity"] == "warn"


def test_a_pip_folder_comes_before_the_loaders_path(
    fake_build: FakeBuild, fake_nvidia: Callable[[str], dict[str, str]]
) -> None:
    fake = fake_nvidia("t4-470-no-cublas")
    pip = Path(fake["FAKE_NVIDIA_SITE_PACKAGES"]) / "nvidia" / "cufft" / "lib"
    pip.mkdir(parents=True)
    shutil.copyfile(empty_library(fake_build, "libcufft.so.10"), pip / "libcufft.so.10")
    opened = {o["name"]: o for o in run_probes(fake, timeout=5.0)["opened"]}
    assert opened["libcufft.so.10"]["origin"] == "pip"
    assert opened["libcufft.so.10"]["path"] == str(pip / "libcufft.so.10")
    assert opened["libcufft.so"]["origin"] == "loader"  # the unversioned name is not in pip's


def test_a_pip_cuda_build_missing_its_required_cublas_fails_with_the_pin(
    fake_build: FakeBuild, fake_nvidia: Callable[[str], dict[str, str]]
) -> None:
    fake = fake_nvidia("a100-535-utility-only")
    env = host_env(fake, VERSION_331_CU126)
    site = Path(fake["FAKE_NVIDIA_SITE_PACKAGES"])
    (site / "nvidia" / "cudnn" / "lib").mkdir(
        parents=True
    )  # its cuDNN is there: only cuBLAS is not
    shutil.copyfile(fake_build.cudnn("9.5.1"), site / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9")
    dist = site / "paddlepaddle_gpu-3.3.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: paddlepaddle-gpu\nVersion: 3.3.1\n"
        'Requires-Dist: nvidia-cublas-cu12==12.6.4.1; platform_system == "Linux"\n'
    )
    code, doc, _ = doctor_process(env, "--no-smoke")
    assert doc["host"]["paddle"]["cuda_requirements"] == ["nvidia-cublas-cu12==12.6.4.1"]
    f = findings(doc)["cuda.library-missing"]
    assert code == 1 and f["severity"] == "fail"
    assert "opens cuBLAS and cuBLASLt from nvidia-cublas-cu12==12.6.4.1" in f["message"]
    assert "-m pip install nvidia-cublas-cu12==12.6.4.1" in f["fix"]

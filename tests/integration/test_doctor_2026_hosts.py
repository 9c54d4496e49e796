"""`envcheck doctor` on the hosts of 2025–2026 that lose their GPU to the driver, described under
ENVCHECK_DRIVER_ROOT with the C-level fakes: a driver branch that dropped the GPU's generation, a
kernel module of the wrong flavour for it (both ways), and WSL judged as what it is.

Each host has the GPU on the PCI bus (or, on WSL, behind /dev/dxg) while the software says "No
devices were found"; the finding names the GPU, its generation and the one change that fixes it,
instead of `gpu.none` and `cuda.init-failed`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest

from tests.inprocess import doctor_process

pytest_plugins = ("tests.fakenv",)  # fake_build, fake_nvidia

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
        return {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")} | fake

    return make


SYMPTOMS = ("gpu.none", "cuda.init-failed", "driver.not-loaded")


def test_a_gtx_1080_on_a_595_driver_is_a_dropped_gpu_not_no_gpu(
    host_env: Callable[[str], dict[str, str]],
) -> None:
    """nixos-hardware#1880: after an upgrade to 595 the GTX 1080 vanishes from nvidia-smi."""
    code, doc = doctor(host_env("gtx1080-595"))
    found = findings(doc)
    dropped = found["driver.gpu-dropped"]
    assert code == 1 and dropped["severity"] == "fail"
    assert "GeForce GTX 1080" in dropped["message"] and "10de:1b80" in dropped["message"]
    assert "Pascal" in dropped["message"] and "R580 legacy branch" in dropped["message"]
    assert "595.58.03" in dropped["message"]
    # the kernel's own words, quoted from the root's kern.log
    assert "supported through the NVIDIA 580.xx Legacy drivers" in dropped["message"]
    assert "nvidia-driver-580" in dropped["fix"] and "legacy_580" in dropped["fix"]
    assert dropped["observed"]["generation"] == "Pascal"
    assert dropped["observed"]["install_branch"] == 580
    assert not set(SYMPTOMS) & set(found)
    assert doc["host"]["driver"]["pci_gpus"] == [{"address": "0000:17:00.0", "device_id": "1b80"}]


def test_a_tesla_p4_under_the_open_module_needs_the_proprietary_one(
    host_env: Callable[[str], dict[str, str]],
) -> None:
    """truenas-nvidia-drivers#20: the open nvidia.ko has no GSP to run a Pascal GPU on."""
    code, doc = doctor(host_env("p4-open-580"))
    found = findings(doc)
    wrong = found["driver.module-needs-proprietary"]
    assert code == 1 and wrong["severity"] == "fail"
    assert "Tesla P4" in wrong["message"] and "10de:1bb3" in wrong["message"]
    assert "Pascal" in wrong["message"] and "GSP" in wrong["message"]
    # no kernel log under this root: say how to read it
    assert "sudo dmesg | grep NVRM" in wrong["message"]
    assert "nvidia-driver-580" in wrong["fix"] and "nvidia-driver-580-open" not in wrong["fix"]
    assert doc["host"]["driver"]["kernel_module_flavor"] == "open"
    assert "driver.gpu-dropped" not in found  # R580 still drives Pascal
    assert not set(SYMPTOMS) & set(found)


def test_an_rtx_5090_under_the_proprietary_module_needs_the_open_one(
    host_env: Callable[[str], dict[str, str]],
) -> None:
    code, doc = doctor(host_env("rtx5090-proprietary-580"))
    found = findings(doc)
    wrong = found["driver.module-needs-open"]
    assert code == 1 and wrong["severity"] == "fail"
    assert "GeForce RTX 5090" in wrong["message"] and "Blackwell" in wrong["message"]
    assert "requires use of the NVIDIA open kernel modules" in wrong["message"]
    assert "nvidia-driver-580-open" in wrong["fix"]
    assert doc["host"]["driver"]["kernel_module_flavor"] == "proprietary"
    assert not set(SYMPTOMS) & set(found)


def test_wsl2_is_judged_as_wsl_not_as_a_linux_host_without_its_module(
    host_env: Callable[[str], dict[str, str]],
) -> None:
    """NVML and libcuda answer from /usr/lib/wsl/lib; /dev/dxg is the device; there is no
    /proc/driver/nvidia, which is no fault on WSL."""
    _, doc = doctor(host_env("wsl2"))
    found = findings(doc)
    wsl = doc["host"]["wsl"]
    assert wsl["version"] == 2 and wsl["kernel"].endswith("microsoft-standard-WSL2")
    assert wsl["dxg"] and wsl["libcuda"] and wsl["libnvidia_ml"] and wsl["linux_driver"] == []
    assert found["wsl.library"]["severity"] == "pass"
    assert found["driver.present"]["severity"] == "pass"
    assert found["cuda.driver-api"]["severity"] == "pass"  # libcuda loaded from the WSL folder
    assert [g["name"] for g in doc["host"]["gpus"]] == ["NVIDIA GeForce RTX 4090"]
    assert not [f for f in found if f.startswith("wsl.") and found[f]["severity"] != "pass"]
    assert "driver.missing" not in found  # the WSL library is the driver here


def test_wsl1_is_refused_with_the_reason(host_env: Callable[[str], dict[str, str]]) -> None:
    code, doc = doctor(host_env("wsl1"), "--expect-gpu")
    found = findings(doc)
    refused = found["wsl.version-1"]
    assert code != 0 and refused["severity"] == "fail"
    assert "WSL 1" in refused["message"] and "wsl --set-version" in refused["fix"]
    assert "driver.missing" not in found  # no Linux driver to install on WSL

"""Item 11.6 in a real container: the driver's user-space libraries inside the image against the
host's kernel module. The fake driver of the `rm-mismatch` host (user space 550.54.15; its NVML
answers LIB_RM_VERSION_MISMATCH) is bind-mounted read-only into the offline Paddle image and
mapped with LD_PRELOAD, as the NVIDIA runtime would inject the host's libraries after a driver
upgrade without a reboot; the workload's own /proc/self/maps reading and NVML call see it.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from envcheck.contracts.facts import DriverFacts, HostFacts
from envcheck.contracts.smoke_report import NvmlSummary
from envcheck.smoke.plan import Plan
from envcheck.smoke.runner.check import outcome_of
from envcheck.smoke.runner.container import SmokeContainer
from envcheck.smoke.runner.container_spec import ContainerSpec
from envcheck.smoke.runner.payload import WORKLOAD
from envcheck.smoke.verdict.loaded import loaded_findings, loaded_libraries
from envcheck.verdict.fixes import REBOOT_FIX
from tests.smoke_host import CPU_CHOICE

pytest_plugins = ("tests.fakenv", "tests.smoke_fixtures")

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("paddle_image", "no_leftovers")]

INJECTED = "/opt/injected-driver"


def test_injected_driver_libraries_newer_than_the_kernel_module_are_driver_library_mismatch(
    docker_client: Any, fake_nvidia: Callable[[str], dict[str, str]], tmp_path: Path
) -> None:
    env = fake_nvidia("rm-mismatch")
    driver = Path(env["LD_LIBRARY_PATH"].split(":")[0])
    shared = tmp_path / "driver"  # readable by the container's uid 1000
    shutil.copytree(driver, shared, symlinks=True)
    shutil.copyfile(env["FAKE_NVIDIA_PROFILE"], shared / "profile.toml")
    for path in (shared, *shared.iterdir()):
        if not path.is_symlink():
            path.chmod(0o755)
    spec = ContainerSpec(
        image=CPU_CHOICE.ref or "",
        args=("--device", "cpu", "--steps", "3"),
        script=WORKLOAD,
        timeout=180.0,
        binds=((str(shared), INJECTED),),
        environment={
            "LD_PRELOAD": f"{INJECTED}/libcuda.so.1:{INJECTED}/libnvidia-ml.so.1",
            "FAKE_NVIDIA_PROFILE": f"{INJECTED}/profile.toml",
        },
    )
    with SmokeContainer(docker_client, spec, variables=os.environ, stderr=sys.stderr) as box:
        raw = box.run()
    outcome = outcome_of(raw, NvmlSummary())
    assert outcome.result is not None, outcome.problem
    libs = {lib.name: lib for lib in loaded_libraries(outcome.result) or []}
    assert libs["libcuda"].path == f"{INJECTED}/libcuda.so.550.54.15"
    assert (libs["libcuda"].version, libs["libcuda"].source) == ("550.54.15", "system")
    assert libs["libnvidia-ml"].version == "550.54.15"
    driver_check = outcome.result.driver_check
    assert driver_check and driver_check.error == "NVML_ERROR_LIB_RM_VERSION_MISMATCH"

    host = HostFacts(
        driver=DriverFacts(status="ok", version="535.104.05", kernel_module="535.104.05")
    )
    plan = Plan(
        mode="container",
        gpu_expected=False,
        gpu_reason="test",
        device_args=("cpu",),
        image=spec.image,
    )
    found = {f.id: f for f in loaded_findings(host, plan, outcome.result)}
    mismatch = found["smoke.driver-library-mismatch"]
    assert mismatch.severity == "fail" and mismatch.remedy == REBOOT_FIX
    assert f"in the container {spec.image} (injected by the NVIDIA runtime)" in mismatch.message
    assert f"libcuda 550.54.15 from {INJECTED}/libcuda.so.550.54.15 (system)" in mismatch.message

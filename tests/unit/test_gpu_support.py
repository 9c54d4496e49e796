"""The GPUs a driver leaves out, judged over saved facts: a branch that dropped the generation, a
kernel module of the wrong flavour, and WSL (envcheck/verdict/rules/gpu_support.py, wsl.py).
Each host is a real report's shape: the GPU on the PCI bus, NVML listing none.
"""

from __future__ import annotations

from typing import Any

import pytest

from envcheck.contracts.facts import HostFacts, host_from_document
from envcheck.contracts.findings import Finding
from envcheck.image.choice import select_image
from envcheck.matrix.load import load_matrix
from envcheck.verdict.judge import Context, judge
from tests import scenarios as s

MATRIX = load_matrix()
GTX_1050_LOG = [
    "The NVIDIA NVIDIA GeForce GTX 1050 GPU installed in this system is",
    "supported through the NVIDIA 580.xx Legacy drivers. Please",
    "visit http://www.nvidia.com/object/unix.html for more",
    "information.  The 595.71.05 NVIDIA driver will ignore",
    "this GPU.  Continuing probe...",
    "No NVIDIA GPU found.",
]


def judged(doc: dict[str, Any], expect_gpu: bool = False) -> dict[str, Finding]:
    host: HostFacts = host_from_document(doc)
    image = select_image(host, MATRIX)
    found = judge(Context(host=host, matrix=MATRIX, image=image, expect_gpu=expect_gpu))
    return {f.id: f for f in found}


def pci(*ids: str) -> list[dict[str, str]]:
    return [{"address": f"0000:{0x17 + i:02x}:00.0", "device_id": d} for i, d in enumerate(ids)]


def test_a_595_driver_that_failed_to_load_for_a_gtx_1050_names_the_legacy_branch() -> None:
    """The module found no GPU and unloaded: NVML says Driver Not Loaded, the version comes from
    the library's file name, the kernel log says why (NixOS/nixos-hardware#1880)."""
    found = judged(
        s.host(
            machine={"os": "NixOS 25.11 (Xantusia)"},
            driver={
                "status": "error",
                "error": "NVML_ERROR_DRIVER_NOT_LOADED",
                "version": "595.71.05",
                "gpus_present": 1,
                "pci_gpus": pci("1c81"),
                "kernel_log": ["loading NVIDIA UNIX x86_64 Kernel Module", *GTX_1050_LOG],
            },
            cuda_driver={"status": "error", "error": "CUDA_ERROR_NO_DEVICE"},
        ),
        expect_gpu=True,
    )
    dropped = found["driver.gpu-dropped"]
    assert dropped.severity == "fail"
    assert "GeForce GTX 1050" in dropped.message and "595.71.05" in dropped.message
    assert dropped.message.endswith('No NVIDIA GPU found."')
    assert "loading NVIDIA" not in dropped.message  # only the message about the GPU is quoted
    # the host is NixOS: its own setting, not every distribution's
    assert dropped.fix is not None and "legacy_580" in dropped.fix and "Ubuntu" not in dropped.fix
    assert "driver.not-loaded" not in found and "cuda.init-failed" not in found


def test_an_ubuntu_host_gets_the_apt_command_of_the_legacy_branch() -> None:
    found = judged(
        s.host(
            driver=s.driver("595.58.03", "13.2", kernel_module="595.58.03", pci_gpus=pci("1b80"))
        )
    )
    dropped = found["driver.gpu-dropped"]
    assert dropped.remedy is not None
    assert [c.shell() for c in dropped.remedy.commands] == [
        "sudo apt-get install nvidia-driver-580"
    ]
    assert "sudo dmesg | grep NVRM" in dropped.message  # no log read: how to read it
    assert "gpu.none" not in found


def test_eight_identical_gpus_are_one_finding() -> None:
    found = judged(s.host(driver=s.driver("595.58.03", "13.2", pci_gpus=pci(*["15f8"] * 8))))
    dropped = [f for f in found.values() if f.id == "driver.gpu-dropped"]
    assert len(dropped) == 1 and dropped[0].message.startswith("8× Tesla P100-PCIE-16GB")
    assert len(dropped[0].observed["addresses"]) == 8


@pytest.mark.parametrize(
    ("version", "device", "expected"),
    [
        ("580.95.05", "1b80", None),  # R580 still drives Pascal
        ("595.58.03", "1eb8", None),  # a Tesla T4 (Turing) is driven: nothing to blame on R595
        ("602.10.01", "1db4", "driver.gpu-dropped"),  # no R600 row: judged as R595
        ("595.58.03", "ffff", None),  # an id no source names: not judged
    ],
    ids=["pascal-on-580", "turing-on-595", "volta-on-600", "unknown-id"],
)
def test_which_branch_drops_which_gpu(version: str, device: str, expected: str | None) -> None:
    found = judged(s.host(driver=s.driver(version, "13.0", pci_gpus=pci(device))))
    assert ("driver.gpu-dropped" in found) == (expected is not None)
    if expected is None:
        assert found["gpu.none"].severity == "warn"  # the old words stay where nothing explains


def test_the_module_flavour_is_judged_both_ways() -> None:
    p4 = judged(
        s.host(
            driver=s.driver("580.95.05", "13.0", kernel_module_flavor="open", pci_gpus=pci("1bb3"))
        )
    )
    b = judged(
        s.host(
            driver=s.driver(
                "580.95.05", "13.0", kernel_module_flavor="proprietary", pci_gpus=pci("2b85")
            )
        )
    )
    assert "GSP" in p4["driver.module-needs-proprietary"].message
    assert p4["driver.module-needs-proprietary"].remedy.commands[0].argv[-1] == "nvidia-driver-580"  # type: ignore[union-attr]
    assert "Blackwell" in b["driver.module-needs-open"].message
    assert b["driver.module-needs-open"].remedy.commands[0].argv[-1] == "nvidia-driver-580-open"  # type: ignore[union-attr]
    ok = judged(
        s.host(
            driver=s.driver("580.95.05", "13.0", kernel_module_flavor="open", pci_gpus=pci("2b85"))
        )
    )
    assert not {"driver.module-needs-open", "driver.module-needs-proprietary"} & set(ok)


def test_listed_gpus_are_not_judged_by_the_bus() -> None:
    """NVML lists the GPU: whatever the bus says, the driver drives it."""
    found = judged(
        s.host(driver=s.driver("595.58.03", "13.2", pci_gpus=pci("1b80")), gpus=[s.A100])
    )
    assert "driver.gpu-dropped" not in found


def test_a_gpu_held_by_vfio_for_a_virtual_machine_is_not_blamed_on_the_branch() -> None:
    gpus = [{"address": "0000:17:00.0", "device_id": "1b80", "bound_to": "vfio-pci"}]
    found = judged(s.host(driver=s.driver("595.58.03", "13.2", pci_gpus=gpus)))
    assert "driver.gpu-dropped" not in found


WSL2 = {
    "version": 2,
    "kernel": "5.15.167.4-microsoft-standard-WSL2",
    "library_dir": "/usr/lib/wsl/lib",
}


def test_wsl2_with_a_linux_driver_inside_is_named_with_its_files() -> None:
    found = judged(
        s.host(
            driver={"status": "error", "error": "NVML_ERROR_DRIVER_NOT_LOADED"},
            wsl=WSL2
            | {
                "libcuda": True,
                "libnvidia_ml": True,
                "dxg": True,
                "linux_driver": ["/usr/lib/x86_64-linux-gnu/libcuda.so.1"],
            },
        )
    )
    assert "/usr/lib/x86_64-linux-gnu/libcuda.so.1" in found["wsl.linux-driver"].message
    assert "driver.not-loaded" not in found  # no Linux module to load on WSL


def test_wsl2_without_dxg_or_its_libraries() -> None:
    found = judged(
        s.host(driver={"status": "absent"}, wsl=WSL2 | {"library_dir": None}), expect_gpu=True
    )
    assert found["wsl.no-dxg"].severity == "fail"
    assert found["wsl.library-missing"].severity == "fail"
    assert "Windows" in (found["wsl.library-missing"].fix or "")
    assert "driver.missing" not in found


def test_wsl1_warns_without_expect_gpu() -> None:
    found = judged(
        s.host(driver={"status": "absent"}, wsl={"version": 1, "kernel": "4.4.0-19041-Microsoft"})
    )
    assert found["wsl.version-1"].severity == "warn"
    assert "driver.missing" not in found

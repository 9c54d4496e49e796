"""Installed distributions as pip leaves them (`<name>-<version>.dist-info/METADATA` with its
`Requires-Dist` lines), for the tests of Paddle beside other frameworks in one environment.

The pins are the published ones the public reports quote:
- torch 2.3.0 (Paddle#71867: "torch 2.3.0 requires nvidia-cudnn-cu12==8.9.2.26; platform_system
  == "Linux" and platform_machine == "x86_64", but you have nvidia-cudnn-cu12 9.1.1.17");
- paddlepaddle-gpu 3.2.0, the cu126 build (Paddle#75926: "paddlepaddle-gpu 3.2.0 requires
  nvidia-cudnn-cu12==9.5.1.17 …").
"""

from __future__ import annotations

from pathlib import Path

LINUX_X86 = '; platform_system == "Linux" and platform_machine == "x86_64"'

TORCH_230 = {
    "nvidia-cublas-cu12": "12.1.3.1",
    "nvidia-cuda-cupti-cu12": "12.1.105",
    "nvidia-cuda-nvrtc-cu12": "12.1.105",
    "nvidia-cuda-runtime-cu12": "12.1.105",
    "nvidia-cudnn-cu12": "8.9.2.26",
    "nvidia-cufft-cu12": "11.0.2.54",
}
PADDLE_320_CU126 = {
    "nvidia-cublas-cu12": "12.6.4.1",
    "nvidia-cuda-cupti-cu12": "12.6.80",
    "nvidia-cuda-nvrtc-cu12": "12.6.77",
    "nvidia-cuda-runtime-cu12": "12.6.77",
    "nvidia-cudnn-cu12": "9.5.1.17",
    "nvidia-cufft-cu12": "11.3.0.4",
}


def dist_info(site: Path, name: str, version: str, requires: list[str] | None = None) -> Path:
    """One installed distribution: its dist-info folder with METADATA (and the INSTALLER and
    RECORD files pip writes beside it)."""
    folder = site / f"{name.replace('-', '_')}-{version}.dist-info"
    folder.mkdir(parents=True)
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Dist: {r}" for r in requires or []]
    (folder / "METADATA").write_text("\n".join(lines) + "\n\nThe description.\nRequires-Dist: x\n")
    (folder / "INSTALLER").write_text("pip\n")
    (folder / "RECORD").write_text("")
    return folder


def pins(wheels: dict[str, str], marker: str = LINUX_X86) -> list[str]:
    return [f"{name}=={version}{marker}" for name, version in wheels.items()]


def environment(site: Path, installed: dict[str, str]) -> Path:
    """torch 2.3.0 and paddlepaddle-gpu 3.2.0 (cu126) in one site-packages, with the NVIDIA
    wheels at the versions `installed` (whichever framework pip installed last)."""
    dist_info(site, "torch", "2.3.0", ["filelock", *pins(TORCH_230)])
    dist_info(site, "paddlepaddle-gpu", "3.2.0", ["httpx", *pins(PADDLE_320_CU126)])
    for name, version in installed.items():
        dist_info(site, name, version)
    dist_info(site, "nvidia-ml-py", "12.535.133")  # NVML's bindings: no CUDA wheel
    return site

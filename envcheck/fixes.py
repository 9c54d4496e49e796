"""Fix commands said once (pure): the rules and the smoke verdict quote these, so no report can
tell the user two different things about the same change."""

from __future__ import annotations

from envcheck.facts import EngineFacts
from envcheck.report import ImageChoice

NVIDIA_RUNTIME_FIX = (
    "install the NVIDIA Container Toolkit and register it with Docker: "
    "`sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker` "
    "(https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html)"
)
DOCKER_GROUP_FIX = (
    "add yourself to the docker group (`sudo usermod -aG docker $USER`, then log in again) "
    "or run as root"
)
START_DOCKER_FIX = "start the Docker engine (`sudo systemctl start docker`)"
RELOAD_MODULE = "`sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && sudo modprobe nvidia`"
REBOOT_FIX = (
    f"reboot, or reload the kernel module without rebooting: {RELOAD_MODULE} "
    "(the driver package was upgraded but the old module is still loaded)"
)

NO_GPU_BUILD_YET = (
    "no GPU build of Paddle runs on this host as it is: fix the driver/GPU findings above, then run "
    "`envcheck doctor` again for the paddlepaddle-gpu command that fits"
)


def cudnn_pip_command(cudnn: str, cuda: str) -> str | None:
    """NVIDIA's cuDNN wheel of that major for that CUDA major: `python -m pip install
    nvidia-cudnn-cu11==8.*`; None when either version has no readable major."""
    major, cu = cudnn.split(".")[0], cuda.split(".")[0]
    if not (major.isdigit() and cu.isdigit()):
        return None
    return f"python -m pip install nvidia-cudnn-cu{cu}=={major}.*"


def cudart_pip_command(cuda: str) -> str | None:
    """NVIDIA's CUDA runtime wheel of that CUDA major (its `lib/libcudart.so.11.0` or `.so.12`):
    `python -m pip install nvidia-cuda-runtime-cu11==11.*`; None before CUDA 11 (no such wheel)."""
    major = cuda.split(".")[0]
    if not major.isdigit() or int(major) < 11:
        return None
    return f"python -m pip install nvidia-cuda-runtime-cu{major}=={major}.*"


def gpu_pip_command(image: ImageChoice | None) -> str | None:
    """The pip command of the GPU build the doctor chose; None when it chose none (no driver, or
    only the CPU image runs here): a CPU command is never offered as "the GPU build"."""
    if image is not None and image.kind == "gpu" and image.pip_command:
        return image.pip_command
    return None


def replace_cpu_build(image: ImageChoice | None, python: str = "python") -> str:
    command = gpu_pip_command(image)
    if command is None:
        return NO_GPU_BUILD_YET
    return f"`{python} -m pip uninstall -y paddlepaddle && {command}`"


def engine_fix(engine: EngineFacts) -> str:
    """Reach the engine: the socket refused us (the docker group), or nothing answered (start it)."""
    if engine.denied:
        return DOCKER_GROUP_FIX
    return f"{START_DOCKER_FIX} or set DOCKER_HOST (now {engine.host or 'unset'})"

"""Fix commands said once (pure): the rules and the smoke verdict quote these, so no report can
tell the user two different things about the same change."""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Iterable
from itertools import pairwise

from envcheck.contracts.facts import EngineFacts, HostFacts
from envcheck.contracts.host_report import ImageChoice
from envcheck.contracts.record import record

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


COMMAND = re.compile(r"`([^`\n]+)`")  # every command of a fix or message is between backticks


def commands_in(text: str) -> list[str]:
    """The commands of a fix or message: each span between backticks."""
    return COMMAND.findall(text)


PADDLE_DISTRIBUTIONS = ("paddlepaddle", "paddlepaddle-gpu")
# pip options whose value follows them (everything else after `install` is a requirement)
_VALUE_OPTIONS = frozenset({"-i", "--index-url", "--extra-index-url", "-f", "--find-links"})
# A report whose facts do not record the interpreter (a hand-written or old `host` object)
UNKNOWN_PYTHON = "python3"


@record
class PipInstall:
    """One pinned install into the judged interpreter, what conflicts with it removed first:
    `/venv/bin/python -m pip uninstall -y paddlepaddle && /venv/bin/python -m pip install
    paddlepaddle-gpu==3.3.1 -i https://…/cu129/`, quoted for bash and zsh alike."""

    python: str
    args: tuple[str, ...]  # what follows `pip install`: requirements and index options
    remove: tuple[str, ...] = ()  # uninstalled first

    def argvs(self) -> tuple[tuple[str, ...], ...]:
        pip = (self.python, "-m", "pip")
        first = ((*pip, "uninstall", "-y", *self.remove),) if self.remove else ()
        return (*first, (*pip, "install", *self.args))

    def shell(self) -> str:
        return " && ".join(shlex.join(argv) for argv in self.argvs())

    @property
    def requirements(self) -> tuple[str, ...]:
        found, skip = [], False
        for arg in self.args:
            if not skip and not arg.startswith("-"):
                found.append(arg)
            skip = arg in _VALUE_OPTIONS
        return tuple(found)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(r.split("==", 1)[0] for r in self.requirements)

    def option(self, *names: str) -> str | None:
        """The value of the first of pip's options `names` (`-i URL`), None when absent."""
        return next((v for a, v in pairwise(self.args) if a in names), None)


def and_list(words: list[str]) -> list[list[str]]:
    """`a b && c d` as shlex split it -> [[a, b], [c, d]]: the commands `PipInstall.shell` joins."""
    parts: list[list[str]] = [[]]
    for word in words:
        if word == "&&":
            parts.append([])
        else:
            parts[-1].append(word)
    return parts


def target_python(host: HostFacts) -> str:
    """The interpreter the report judged, by its absolute path: never a bare `python` (a pyenv
    shim, or absent on Ubuntu 24.04)."""
    python = host.paddle.python
    return python if python and posixpath.isabs(python) else UNKNOWN_PYTHON


def installed_distributions(host: HostFacts) -> tuple[str, ...]:
    p = host.paddle
    if p.distributions:
        return p.distributions
    return (p.package,) if p.status == "ok" and p.package else ()


def conflicting(installed: Iterable[str], installing: Iterable[str]) -> tuple[str, ...]:
    """The Paddle distributions to remove before installing: the other one (they overwrite each
    other's files), or both where both are there already."""
    have = set(installed) & set(PADDLE_DISTRIBUTIONS)
    want = set(installing) & set(PADDLE_DISTRIBUTIONS)
    if not want:
        return ()
    return tuple(sorted(have if len(have) > 1 else have - want))


def matrix_install(
    pip: str, python: str, installed: Iterable[str] = (), extra: tuple[str, ...] = ()
) -> PipInstall | None:
    """A matrix row's `python -m pip install …` for `python`; None for any other shape."""
    argv = shlex.split(pip)
    if argv[:4] != ["python", "-m", "pip", "install"] or len(argv) < 5:
        return None
    plain = PipInstall(python, (*extra, *argv[4:]))
    return PipInstall(python, plain.args, conflicting(installed, plain.names))


def paddle_install(
    host: HostFacts, image: ImageChoice | None, *, gpu: bool = False, python: str | None = None
) -> PipInstall | None:
    """The one Paddle install this report recommends: the chosen build (the GPU build where a
    GPU is usable, else the CPU one), pinned, from its index, into the judged interpreter.
    `gpu`: only a GPU build (a CPU command is never offered as "the GPU build"); `python`: the
    smoke's interpreter, where it was given (else the facts')."""
    if image is None or not image.pip_command:
        return None
    target = python or target_python(host)
    install = matrix_install(image.pip_command, target, installed_distributions(host))
    return None if install is None or (gpu and "paddlepaddle-gpu" not in install.names) else install


def command(install: PipInstall | None, otherwise: str) -> str:
    """A fix's command between backticks, or the words that say why there is none."""
    return f"`{install.shell()}`" if install else otherwise


def cudnn_install(python: str, cudnn: str, cuda: str) -> PipInstall | None:
    """NVIDIA's cuDNN wheel for that CUDA major, the newest recorded release of the build's
    cuDNN major.minor (else of its major); None when PyPI has none (`nvidia-cudnn-cu10`)."""
    cu = cuda.split(".")[0]
    return _nvidia_wheel(python, f"nvidia-cudnn-cu{cu}", cudnn) if cu.isdigit() else None


def cudart_install(python: str, cuda: str) -> PipInstall | None:
    """NVIDIA's CUDA runtime wheel of that CUDA major (its `lib/libcudart.so.11.0` or `.so.12`);
    None before CUDA 11 (PyPI has no such wheel)."""
    major = cuda.split(".")[0]
    if not major.isdigit() or int(major) < 11:
        return None
    return _nvidia_wheel(python, f"nvidia-cuda-runtime-cu{major}", cuda)


def _nvidia_wheel(python: str, name: str, version: str) -> PipInstall | None:
    """`name` pinned to the newest recorded release of `version`'s major.minor, else of its
    major; None when the list has neither."""
    parts = version.split(".")
    if not parts[0].isdigit():
        return None
    # imported here: only this branch needs it, and a doctor seldom takes it (#27.3)
    from envcheck.verdict.known_packages import known_packages

    known = known_packages()
    minor = f"{parts[0]}.{parts[1]}." if len(parts) > 1 and parts[1].isdigit() else None
    found = (minor and known.newest(name, minor)) or known.newest(name, f"{parts[0]}.")
    return PipInstall(python, (f"{name}=={found}",)) if found else None


def replace_cpu_build(host: HostFacts, image: ImageChoice | None) -> str:
    return command(paddle_install(host, image, gpu=True), NO_GPU_BUILD_YET)


def engine_fix(engine: EngineFacts) -> str:
    """Reach the engine: the socket refused us (the docker group), or nothing answered (start it)."""
    if engine.denied:
        return DOCKER_GROUP_FIX
    return f"{START_DOCKER_FIX} or set DOCKER_HOST (now {engine.host or 'unset'})"


# -- the fixes the rules, the proof and the smoke's verdict give: each said here, once ----------

GPUS_ALL = "`--gpus all` (or NVIDIA_VISIBLE_DEVICES=all with the NVIDIA runtime)"
PASS_THE_GPUS_FIX = f"start the container with {GPUS_ALL}"
LOAD_DRIVER_FIX = (
    "load it: `sudo modprobe nvidia`; if that fails, see `sudo dmesg | grep -i nvrm` "
    "(Secure Boot blocking an unsigned module, or the module missing for this kernel: "
    "reinstall the driver for `uname -r`)"
)
DEVICE_FILES_FIX = (
    "check `ls -l /dev/nvidiactl /dev/nvidia0`: the device files must be readable and writable by "
    "your user (add it to the `video` group, or fix NVreg_DeviceFileMode); in a container, start "
    f"it with {GPUS_ALL}"
)
GPU_MISSING_FIX = (
    "check `nvidia-smi -L` and `lspci | grep -i nvidia`; a GPU may have fallen off the bus "
    "(`sudo dmesg | grep -i xid`)"
)
OLD_GPU_FIX = (
    "use a newer GPU, or Paddle 2.5 (the last release documented for compute capability > 3.5)"
)
CUDA_INIT_FIX = (
    "run `nvidia-smi`; if it works but CUDA does not, check that /dev/nvidia-uvm exists "
    "(`sudo modprobe nvidia-uvm`) and that no stub libcuda.so shadows the driver's"
)
OTHER_RELEASE_FIX = "upgrade the driver, or choose another release with --paddle"
PROVE_WITH_SMOKE_FIX = "prove it with the smoke training (`envcheck doctor`)"
SMOKE_ON_THIS_HOST_FIX = "run the smoke on this host: `envcheck doctor --expect-gpu`"
SMOKE_WITH_GPU_FIX = "run the doctor where its smoke can use the GPU"
SMOKE_NOT_SKIPPED_FIX = (
    "run `envcheck doctor --expect-gpu` on the host without --no-smoke: its smoke training "
    "on the GPU is the proof"
)
UNREPORTED_HOST_FIX = (
    "on that host, run `envcheck doctor --json` by hand and read its stderr "
    "(the job's log, or `kubectl logs` of its pod)"
)
SMOKE_TIMEOUT_FIX = "look at the last log lines; if the machine is just slow, raise --smoke-timeout"
SMOKE_OUTPUT_FIX = (
    "the smoke script must print exactly one JSON line on stdout; is the image's `python` "
    "wrapped by something that prints?"
)
READ_THE_LOG_FIX = "read the last log lines above"
READ_THE_TRACEBACK_FIX = "read the traceback in the log"
READ_THE_JSON_TRACEBACK_FIX = "read the traceback in the smoke JSON (`--json`)"
FLAT_LOSS_FIX = (
    "a loss that stays flat on a learnable task points to broken kernels: check the arch "
    "and cuDNN warnings; try --amp off, another image, or a newer driver"
)
INFERENCE_FIX = "check that the image ships paddle.inference for this device (GPU builds do)"
WATCH_PMON = "watch `nvidia-smi pmon -s um` during `envcheck doctor`"
NOT_A_GPU_RUN_FIX = (
    f"the result does not describe a GPU run: check the image and its entrypoint, and {WATCH_PMON}"
)
RAN_ELSEWHERE_FIX = (
    "the computation ran elsewhere: check the Paddle warnings (arch, cuDNN) and the device "
    f"placement, and {WATCH_PMON}"
)
UNWITNESSED_FIX = (
    "per-process accounting and utilisation are missing under some vGPU/WSL drivers; "
    "otherwise the run was not on this host's GPU: compare `nvidia-smi pmon -s um` "
    "during a run"
)


def gpu_check_command(image: str | None) -> str:
    """Does a container of `image` see the GPUs? (`nvidia-smi` inside it)"""
    return f"docker run --rm --gpus all {image} nvidia-smi"


def mig_instance_fix(index: int) -> str:
    """A MIG GPU without an instance: make one of the whole GPU, or turn MIG off."""
    return (
        f"create an instance of the whole GPU (`sudo nvidia-smi mig -i {index} -cgi 0 -C`; "
        f"`sudo nvidia-smi mig -i {index} -lgip` lists the smaller profiles) or disable MIG "
        f"(`sudo nvidia-smi -i {index} -mig 0`, then reset the GPU)"
    )


def upgrade_driver_fix(version: str | None, *, full_support: bool = False) -> str:
    return f"upgrade the driver to {version} or newer" + (
        " for full support" if full_support else ""
    )


def visible_devices_fix(gpus: int, uuids: str) -> str:
    """CUDA_VISIBLE_DEVICES hides every GPU: unset it, or list the `gpus` there are."""
    listed = ",".join(str(i) for i in range(gpus))
    fix = f"`unset CUDA_VISIBLE_DEVICES`, or list devices: `export CUDA_VISIBLE_DEVICES={listed}`"
    return fix + (f" (or full UUIDs as NVML reports them: {uuids})" if uuids else "")


def arch_build_fix(sm: int, gpu_build_fix: str) -> str:
    return f"install a build compiled for sm_{sm}: {gpu_build_fix}"


def cudnn_link_fix(path: str | None, version: str) -> str:
    """A non-pip build dlopens `libcudnn.so`; Ubuntu's runtime package ships only `libcudnn.so.8`:
    the dev package has the link, or make it beside the versioned file."""
    major = version.split(".")[0]
    folder, name = (
        path.rsplit("/", 1)
        if path and "/" in path
        else ("/usr/lib/x86_64-linux-gnu", f"libcudnn.so.{major}")
    )
    return (
        f"install cuDNN's development package (Ubuntu: `sudo apt-get install libcudnn{major}-dev`), "
        f"or link the unversioned name: `sudo ln -s {name} {folder}/libcudnn.so && sudo ldconfig`"
    )


def driver_or_runtime_fix(install_driver: str) -> str:
    """GPUs on the bus, no driver answering: the host's driver, or the container's runtime."""
    return f"{install_driver}; in a container, {PASS_THE_GPUS_FIX}"


def engine_or_in_process_fix(engine: EngineFacts) -> str:
    return f"{engine_fix(engine)}; or run the smoke with --in-process"


def runtime_or_image_fix(get: str) -> str:
    """`get`: how to get the CUDA runtime itself (a pinned wheel, or the toolkit)."""
    return f"{get}, or use the official image (`envcheck pull-image`)"


def paddle_or_docker_fix(python: str | None, install: str | None) -> str:
    """No smoke could run: Paddle in the target (`install`: its command), or an engine."""
    if install:
        return f"install Paddle in {python}: `{install}`, or start Docker"
    return f"install Paddle in {python} (`envcheck doctor --explain` says which build), or start Docker"


def paddle_or_container_fix(python: str | None) -> str:
    return f"install Paddle in {python} or run the smoke in a container"

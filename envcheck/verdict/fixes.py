"""Fix commands said once (pure): the rules and the smoke verdict quote these, so no report can
tell the user two different things about the same change."""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Iterable
from itertools import pairwise
from typing import Any

from packaging.version import InvalidVersion, Version

from envcheck.contracts.facts import EngineFacts, HostFacts
from envcheck.contracts.host_report import ImageChoice, Report
from envcheck.contracts.record import record
from envcheck.contracts.remedy import (
    COMMAND,
    Command,
    Instruction,
    Remedy,
    aiming,
    as_remedy,
    root,
    say,
    steps,
    user,
)

TOOLKIT_GUIDE = (
    "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html"
)
INSTALL_TOOLKIT = Instruction(
    f"install nvidia-container-toolkit from NVIDIA's package repository: {TOOLKIT_GUIDE}"
)
NVIDIA_RUNTIME_FIX = steps(
    INSTALL_TOOLKIT,
    root(
        "nvidia-ctk",
        "runtime",
        "configure",
        "--runtime=docker",
        changes="registers the NVIDIA runtime in /etc/docker/daemon.json",
    ),
    root("systemctl", "restart", "docker", changes="restarts Docker with the NVIDIA runtime"),
)
DOCKER_GROUP_FIX = steps(
    root(
        "usermod",
        "-aG",
        "docker",
        "$USER",
        changes="adds you to the docker group, whose members may use the engine's socket",
    ),
    Instruction("log out and in again, so that your session has the docker group"),
    Instruction("or run envcheck as root", alternative=True),
)
START_DOCKER = root("systemctl", "start", "docker", changes="starts the Docker engine")
START_DOCKER_FIX = steps(START_DOCKER)
RELOAD_MODULE = "`sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && sudo modprobe nvidia`"
REBOOT_FIX = steps(
    Instruction("reboot: the driver was upgraded but its old kernel module is still loaded"),
    root(
        "sh",
        "-c",
        "rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && modprobe nvidia",
        changes="reloads the NVIDIA kernel module without a reboot (nothing may use the GPU)",
        alternative=True,
    ),
)

NO_GPU_BUILD_YET = steps(
    Instruction(
        "no GPU build of Paddle (paddlepaddle-gpu) runs on this host as it is: do the driver and "
        "GPU steps first"
    ),
    user("envcheck", "fix", "--yes", changes="installs the Paddle GPU build that fits them"),
)


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
        """One removal per distribution, the wrong one first, then the install."""
        pip = (self.python, "-m", "pip")
        first = tuple((*pip, "uninstall", "-y", dist) for dist in self.remove)
        return (*first, (*pip, "install", *self.args))

    def shell(self) -> str:
        return " && ".join(shlex.join(argv) for argv in self.argvs())

    def commands(self, changes: str) -> tuple[Command, ...]:
        """The target's pip commands, in order: the removals, then the install (`changes`)."""
        argvs = self.argvs()
        removed = tuple(
            Command(argv, "pip", f"removes {argv[-1]} before the install") for argv in argvs[:-1]
        )
        return (*removed, Command(argvs[-1], "pip", changes))

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
    """The Paddle distributions to remove before installing Paddle: every one installed, the
    wrong one first. The other one overwrites this one's files; one of the same name may be
    another CUDA variant of the same version (3.3.1 cu130 for 3.3.1 cu129), which pip keeps as
    "Requirement already satisfied"."""
    have = set(installed) & set(PADDLE_DISTRIBUTIONS)
    want = set(installing) & set(PADDLE_DISTRIBUTIONS)
    if not want:
        return ()
    return tuple(sorted(have, key=lambda d: (d in want, d)))


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


def report_document(report: Report) -> dict[str, Any]:
    """The report's JSON, its image's `pip_command` for the judged interpreter by its absolute
    path (removals first), as the text prints it; the matrix row's own command, which names a
    bare `python`, stays as `matrix_pip_command`."""
    doc = report.to_json()
    install = paddle_install(report.host, report.image)
    if install is not None and report.image is not None:
        doc["image"] = doc["image"] | {
            "pip_command": install.shell(),
            "matrix_pip_command": report.image.pip_command,
        }
    return doc


def command(install: PipInstall | None, otherwise: Remedy | str) -> Remedy:
    """A Paddle install's remedy (its removals, then the install), or the words (or remedy) that
    say what comes first."""
    if install is None:
        return say(otherwise) if isinstance(otherwise, str) else otherwise
    return Remedy(install.commands(install_words(install)))


def install_words(install: PipInstall) -> str:
    return f"installs {' '.join(install.requirements)} into {install.python}"


def paddle_remedy(
    host: HostFacts, image: ImageChoice | None, install: PipInstall | None, otherwise: Remedy | str
) -> Remedy:
    """A Paddle build's remedy: its removals and install, then the cuDNN it loads but does not
    bring (2.x); or what comes first where no build fits yet (`otherwise`)."""
    if install is None:
        return command(None, otherwise)
    return steps(command(install, otherwise), build_cudnn(host, image, install))


def build_cudnn(host: HostFacts, image: ImageChoice | None, install: PipInstall) -> Command | None:
    """NVIDIA's cuDNN wheel for a 2.x GPU build (which bundles no CUDA libraries) where the host
    has no cuDNN of the build's major. A 3.x build brings its own through pip's dependencies."""
    paddle = [r for r in install.requirements if r.split("==", 1)[0] == "paddlepaddle-gpu"]
    if image is None or not paddle or "==" not in paddle[0] or not (image.cudnn and image.cuda):
        return None
    try:
        if Version(paddle[0].split("==", 1)[1]).major >= 3:
            return None
    except InvalidVersion:
        return None
    have = host.cudnn.version if host.cudnn.status == "ok" else None
    major = image.cudnn.split(".")[0]
    if have and have.split(".")[0] == major:
        return None
    get = cudnn_install(install.python, image.cudnn, image.cuda)
    if get is None:
        return None
    return get.commands(
        f"installs cuDNN {major} for CUDA {image.cuda.split('.')[0]} "
        f"({' '.join(get.requirements)}), which this Paddle build loads but does not bring"
    )[-1]


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
    # imported here: only this branch needs it, and a doctor seldom takes it
    from envcheck.verdict.known_packages import known_packages

    known = known_packages()
    minor = f"{parts[0]}.{parts[1]}." if len(parts) > 1 and parts[1].isdigit() else None
    found = (minor and known.newest(name, minor)) or known.newest(name, f"{parts[0]}.")
    return PipInstall(python, (f"{name}=={found}",)) if found else None


def replace_cpu_build(host: HostFacts, image: ImageChoice | None) -> Remedy:
    return paddle_remedy(host, image, paddle_install(host, image, gpu=True), NO_GPU_BUILD_YET)


def engine_fix(engine: EngineFacts) -> Remedy:
    """Reach the engine: the socket refused us (the docker group), or nothing answered (start it)."""
    if engine.denied:
        return DOCKER_GROUP_FIX
    return steps(
        START_DOCKER,
        Instruction(
            f"or point DOCKER_HOST at the engine that runs (now {engine.host or 'unset'})",
            alternative=True,
        ),
    )


# -- the fixes the rules, the proof and the smoke's verdict give: each said here, once ----------

GPUS_ALL = "`--gpus all` (or NVIDIA_VISIBLE_DEVICES=all with the NVIDIA runtime)"
PASS_THE_GPUS_FIX = f"start the container with {GPUS_ALL}"
LOAD_DRIVER_FIX = steps(
    root("modprobe", "nvidia", changes="loads the NVIDIA kernel module"),
    Instruction(
        "if it does not load, the kernel log says why: Secure Boot refusing an unsigned module, "
        "or no module built for the running kernel (reinstall the driver for it)"
    ),
)
DEVICE_FILES_FIX = say(
    "make the device files /dev/nvidiactl and /dev/nvidia0 readable and writable by your user: "
    "add it to the group that owns them (often video), or set the driver's NVreg_DeviceFileMode; "
    f"in a container, start it with {GPUS_ALL}"
)
GPU_MISSING_FIX = say(
    "a GPU may have fallen off the bus (Xid errors in the kernel log): reseat or reset it, or "
    "reboot; if the GPU is not on the PCI bus at all, it needs a hardware check"
)
OLD_GPU_FIX = (
    "use a newer GPU, or Paddle 2.5 (the last release documented for compute capability 3.5 "
    "and newer)"
)
CUDA_INIT_FIX = steps(
    root(
        "modprobe",
        "nvidia-uvm",
        changes="loads the unified-memory module CUDA needs (it makes /dev/nvidia-uvm)",
    ),
    Instruction(
        "if CUDA still fails, take the stub libcuda.so (a CUDA toolkit's stubs folder) off "
        "LD_LIBRARY_PATH: it shadows the driver's"
    ),
)
OTHER_RELEASE_FIX = "upgrade the driver, or choose another release with --paddle"
PROVE_WITH_SMOKE_FIX = "prove it with the smoke training: the doctor without --no-smoke"
# A saved document (`--facts`) cannot be smoke-trained or probed again here: the fact that is
# missing, or the smoke, is recorded on the host the document describes.
RECORD_ON_THAT_HOST_FIX = (
    "record it on the host this document describes: save the doctor's JSON report there, with "
    "its smoke training, and judge that report here"
)


def keep_installed_fix(installed: str, target: str, floor: str) -> str:
    """A GPU that a newer release dropped, while the installed build still runs on it."""
    return (
        f"keep Paddle {installed} on this GPU: Paddle {target} needs compute capability {floor} "
        "or newer"
    )


SMOKE_ON_THIS_HOST = user(
    "envcheck", "doctor", "--expect-gpu", changes="trains on this host's GPU: the proof"
)
SMOKE_ON_THIS_HOST_FIX = steps(SMOKE_ON_THIS_HOST)
SMOKE_WITH_GPU_FIX = "run the doctor where its smoke can use the GPU"
SMOKE_NOT_SKIPPED_FIX = steps(SMOKE_ON_THIS_HOST)
UNREPORTED_HOST_FIX = (
    "on that host, run the doctor with --json by hand and read its stderr "
    "(the job's log, or its pod's log)"
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
WATCH_PMON = "watch the GPU's processes (nvidia-smi pmon -s um) during a doctor's smoke"
NOT_A_GPU_RUN_FIX = (
    f"the result does not describe a GPU run: check the image and its entrypoint, and {WATCH_PMON}"
)
RAN_ELSEWHERE_FIX = (
    "the computation ran elsewhere: check the Paddle warnings (arch, cuDNN) and the device "
    f"placement, and {WATCH_PMON}"
)
UNWITNESSED_FIX = (
    "per-process accounting and utilisation are missing under some vGPU/WSL drivers; "
    "otherwise the run was not on this host's GPU: compare the GPU's processes "
    "(nvidia-smi pmon -s um) during a run"
)


def mig_instance_fix(index: int) -> Remedy:
    """A MIG GPU without an instance: make one of the whole GPU, or turn MIG off."""
    i = str(index)
    return steps(
        root(
            "nvidia-smi",
            "mig",
            "-i",
            i,
            "-cgi",
            "0",
            "-C",
            changes=f"creates a GPU instance (and its compute instance) of the whole GPU {i}",
        ),
        root(
            "nvidia-smi",
            "-i",
            i,
            "-mig",
            "0",
            changes=f"disables MIG on GPU {i}",
            alternative=True,
        ),
        Instruction("then reset the GPU, or reboot", alternative=True),
    )


def upgrade_driver_fix(version: str | None, *, full_support: bool = False) -> str:
    return f"upgrade the driver to {version} or newer" + (
        " for full support" if full_support else ""
    )


def visible_devices_fix(gpus: int, uuids: str) -> Remedy:
    """CUDA_VISIBLE_DEVICES hides every GPU: unset it, or list the `gpus` there are."""
    listed = ",".join(str(i) for i in range(gpus))
    return steps(
        user("unset", "CUDA_VISIBLE_DEVICES", changes="shows every GPU to CUDA"),
        user(
            "export",
            f"CUDA_VISIBLE_DEVICES={listed}",
            changes="lists the GPUs CUDA may use",
            alternative=True,
        ),
        Instruction(f"or list full UUIDs as NVML reports them: {uuids}", alternative=True)
        if uuids
        else None,
    )


def arch_build_fix(sm: int, gpu_build_fix: Remedy) -> Remedy:
    """A build compiled for sm_`sm`: the doctor's GPU build (one that says why it was chosen
    keeps its words)."""
    if not gpu_build_fix.commands or gpu_build_fix.goal:
        return gpu_build_fix
    return aiming(f"install a build compiled for sm_{sm}", gpu_build_fix)


def cudnn_link_fix(path: str | None, version: str) -> Remedy:
    """A non-pip build dlopens `libcudnn.so`; Ubuntu's runtime package ships only `libcudnn.so.8`:
    the dev package has the link, or make it beside the versioned file."""
    major = version.split(".")[0]
    folder, name = (
        path.rsplit("/", 1)
        if path and "/" in path
        else ("/usr/lib/x86_64-linux-gnu", f"libcudnn.so.{major}")
    )
    return aiming(
        "give this build the unversioned libcudnn.so it opens",
        steps(
            root(
                "apt-get",
                "install",
                "-y",
                f"libcudnn{major}-dev",
                changes="installs cuDNN's development package, which has the link (Ubuntu)",
            ),
            root(
                "ln",
                "-s",
                name,
                f"{folder}/libcudnn.so",
                changes="links the unversioned name to the cuDNN that is there",
                alternative=True,
            ),
            root("ldconfig", changes="refreshes the loader's cache", alternative=True),
        ),
    )


def driver_or_runtime_fix(install_driver: Remedy | str) -> Remedy:
    """GPUs on the bus, no driver answering: the host's driver, or the container's runtime."""
    return steps(
        as_remedy(install_driver),
        Instruction(f"in a container, {PASS_THE_GPUS_FIX}", alternative=True),
    )


def engine_or_in_process_fix(engine: EngineFacts) -> Remedy:
    return steps(
        engine_fix(engine),
        Instruction("or run the smoke with --in-process", alternative=True),
    )


def runtime_or_image_fix(get: Remedy, image: ImageChoice | None) -> Remedy:
    """`get`: how to get the CUDA runtime itself (a pinned wheel, or the toolkit); the image
    is the alternative only where one runs on this host."""
    if image is None or image.ref is None:
        return get
    return steps(
        get,
        user(
            "envcheck",
            "pull-image",
            changes="pulls the official image that fits this host",
            alternative=True,
        ),
    )


def paddle_or_docker_fix(python: str | None, install: PipInstall | None) -> Remedy:
    """No smoke could run: Paddle in the target (`install`: its commands), or an engine."""
    start = Instruction("or start Docker, for the smoke in a container", alternative=True)
    if install:
        return steps(*install.commands(install_words(install)), start)
    return steps(
        Instruction(f"install Paddle in {python} (the doctor's --explain says which build)"),
        start,
    )


def paddle_or_container_fix(python: str | None) -> str:
    return f"install Paddle in {python} or run the smoke in a container"

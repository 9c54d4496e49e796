"""What the smoke process actually loaded, judged (pure).

The workload reads `/proc/self/maps` after its first training step and reports every NVIDIA
library mapped, where it came from and the raw answer of the library's own version call
(`loaded_libraries`), plus NVML's answer inside the process (`driver_check`). Here those become
the report's `smoke.loaded_libraries` and findings: the cuDNN / CUDA libraries loaded against the
ones the build expects and the ones the host probe expected to win, and the driver's user space
(a CUDA compat libcuda, the libraries the NVIDIA runtime injected) against the host's kernel module.

On a real H100 a 2.6.2 build (CUDA 11.8, cuDNN 8.6) loaded the system cuDNN 9.14 and a CUDA 13
cuBLAS, while the host probe named the pip cuDNN 9.19 (docs/facts/real-gpu-host.md): what
is installed is no proof of what runs.
"""

from __future__ import annotations

import posixpath
import re

from envcheck.contracts.facts import HostFacts, LibraryFacts, to_dict
from envcheck.contracts.findings import Finding, fail, warn
from envcheck.contracts.remedy import Instruction, Remedy, as_remedy, root, steps
from envcheck.contracts.smoke_report import Mapped, MappedCuda, MappedLibrary
from envcheck.contracts.smoke_result import LibrarySource, LoadedLibrary, SmokeResult
from envcheck.contracts.versions import (
    VersionParseError,
    cuda_version_from_int,
    cudnn_version_from_int,
)
from envcheck.smoke.plan import Plan
from envcheck.smoke.verdict.known_answers import cudnn_fix, library_fix, where
from envcheck.verdict.fixes import REBOOT_FIX

# Libraries whose major version is the CUDA major they were built for (cuBLAS 11.x ships with
# CUDA 11, 12.x with 12, 13.x with 13; NVRTC likewise).
CUDA_FAMILY = ("libcudart", "libcublas", "libcublasLt", "libnvrtc")
DRIVER_FAMILY = ("libcuda", "libnvidia-ml")
_FILE_VERSION = re.compile(r"\.so\.(\d+(?:\.\d+)*)$")

COMPAT_FIX = (
    "use the driver's own libcuda: drop the CUDA compat folder from LD_LIBRARY_PATH "
    "(set it without {folder}, or remove the image's cuda-compat package), or "
    "use an image whose CUDA the driver supports natively (CUDA {cuda} or older); forward "
    "compatibility works only with a compat package newer than the driver, on data-center GPUs "
    "(https://docs.nvidia.com/deploy/cuda-compatibility/)"
)
# NVIDIA Container Toolkit, "Failed to initialize NVML: Unknown Error" after a daemon-reload:
# https://github.com/NVIDIA/nvidia-container-toolkit/issues/48
NVML_UNKNOWN_FIX = steps(
    Instruction(
        "the container lost access to /dev/nvidia* (systemd reloaded the device cgroup rules, "
        "e.g. after a daemon-reload): restart the container; to keep it from recurring:"
    ),
    root(
        "nvidia-ctk",
        "system",
        "create-dev-char-symlinks",
        "--create-all",
        changes="creates the /dev/char links that keep a container's GPU devices on a reload",
    ),
    Instruction(
        'or run Docker with "exec-opts": ["native.cgroupdriver=cgroupfs"] in '
        "/etc/docker/daemon.json",
        alternative=True,
    ),
)


def loaded_libraries(result: SmokeResult | None) -> list[Mapped] | None:
    """The report's `smoke.loaded_libraries`: {name, path, version, source, version_from} per
    mapped library, and libcuda's `cuda_api` (None: the workload reported nothing, e.g. it never
    started)."""
    if result is None or result.loaded_libraries is None:
        return None
    return [_describe(lib) for lib in result.loaded_libraries]


def _describe(lib: LoadedLibrary) -> Mapped:
    called = _decoded(lib)
    match = _FILE_VERSION.search(lib.path)
    named = match.group(1) if match else None
    if lib.name == "libcuda":  # its call is the CUDA API it serves; the file, the driver
        how = "file name" if named else None
        return MappedCuda(lib.name, lib.path, named, lib.source, how, cuda_api=called)
    if called is not None:
        return MappedLibrary(lib.name, lib.path, called, lib.source, f"{lib.call}()")
    return MappedLibrary(lib.name, lib.path, named, lib.source, "file name" if named else None)


def _decoded(lib: LoadedLibrary) -> str | None:
    raw = lib.raw
    try:
        if isinstance(raw, tuple) and raw:
            return ".".join(str(v) for v in raw)
        if not isinstance(raw, int):
            return None
        if lib.name in ("libcudart", "libcuda"):
            return cuda_version_from_int(raw)
        if lib.name.startswith("libcudnn"):
            return cudnn_version_from_int(raw)
        if lib.name == "libnccl":  # NCCL_VERSION_CODE: 10000*major+100*minor+patch since 2.9
            major, rest = divmod(raw, 10000) if raw >= 10000 else divmod(raw, 1000)
            return f"{major}.{rest // 100}.{rest % 100}"
    except VersionParseError:
        return None
    return None


def loaded_findings(host: HostFacts, plan: Plan, result: SmokeResult | None) -> list[Finding]:
    """The loaded libraries against the build, the host probe and the kernel module."""
    libs = loaded_libraries(result)
    if libs is None or result is None:
        return []
    findings = _against_build(plan, result, libs)
    if plan.mode == "in-process":  # the host probe looked at this filesystem, not an image's
        findings += _against_probe(plan, "libcudnn", "cuDNN", host.cudnn, libs)
        findings += _against_probe(plan, "libcudart", "CUDA runtime", host.cuda_runtime, libs)
    findings += _against_kernel_module(host, plan, result, libs)
    return findings


def loaded_summary(result: SmokeResult) -> str | None:
    """The smoke pass's words for what was mapped; None when the workload reported nothing."""
    libs = loaded_libraries(result)
    if libs is None:
        return None
    if not libs:
        return "no NVIDIA library mapped (/proc/self/maps after the first step)"
    main = [lib for lib in libs if not lib.name.startswith("libcudnn_")]
    return "mapped " + ", ".join(f"{lib.name} {lib.version or '?'} ({lib.source})" for lib in main)


def _major(version: str | None) -> int | None:
    text = version or ""
    head = text.split(".")[0]
    return int(head) if head.isdigit() else None


def _major_minor(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split(".")[:2] if x.isdigit())


def _where(lib: Mapped) -> str:
    return f"{lib.name} {lib.version or '(version unknown)'} from {lib.path} ({lib.source})"


def _against_build(plan: Plan, result: SmokeResult, libs: list[Mapped]) -> list[Finding]:
    found = []
    build = (
        f"Paddle {result.paddle_version} (CUDA {result.cuda_version}, cuDNN {result.cudnn_version})"
    )
    cudnn = result.cudnn_version or ""
    dnn = [lib for lib in libs if lib.name == "libcudnn" and lib.version]
    wrong = [lib for lib in dnn if _major(lib.version) != _major(cudnn)]
    older = [
        lib
        for lib in dnn
        if lib not in wrong and _major_minor(lib.version or "") < _major_minor(cudnn)
    ]
    if _major(cudnn) is not None and (wrong or older):
        severity = fail if wrong else warn
        found.append(
            severity(
                "smoke.loaded-cudnn-mismatch",
                f"{build} loaded {'; '.join(_where(lib) for lib in wrong or older)}: "
                + (
                    "another cuDNN major, whose ABI the build was not made for"
                    if wrong
                    else "older than the cuDNN the build was made with"
                ),
                fix=_library_fix(plan, (wrong or older)[0], cudnn_fix(plan, result)),
                layer="smoke",
                expected=cudnn,
                loaded=[to_dict(lib) for lib in wrong or older],
            )
        )
    cuda = result.cuda_version or ""
    toolkit = [lib for lib in libs if lib.name in CUDA_FAMILY and lib.version]
    wrong = [lib for lib in toolkit if _major(lib.version) != _major(cuda)]
    if _major(cuda) is not None and wrong:
        found.append(
            fail(
                "smoke.loaded-cuda-mismatch",
                f"{build} loaded {'; '.join(_where(lib) for lib in wrong)}: CUDA libraries of "
                "another major version than the build's",
                fix=_library_fix(
                    plan,
                    wrong[0],
                    library_fix(plan, f"the CUDA {cuda} libraries the build expects"),
                ),
                layer="smoke",
                expected=cuda,
                loaded=[to_dict(lib) for lib in wrong],
            )
        )
    return found


def _library_fix(plan: Plan, lib: Mapped, provide: Remedy | str) -> Remedy | str:
    """Stop the wrong copy from winning, then `provide` the right one."""
    folder = posixpath.dirname(lib.path)
    stop: dict[LibrarySource, str] = {  # pip, cuda-home: only the right copy to provide
        "LD_LIBRARY_PATH": f"remove {folder} from LD_LIBRARY_PATH",
        "conda": f"remove the conda copy in {folder} (conda remove cudnn cudatoolkit) or run outside that conda environment",
        "compat": f"remove the CUDA compat folder {folder} from LD_LIBRARY_PATH",
        "system": f"the system copy in {folder} was found first: install the right one where the build looks first",
    }
    first = stop.get(lib.source)
    return steps(Instruction(first), as_remedy(provide)) if first else provide


def _against_probe(
    plan: Plan, name: str, title: str, probed: LibraryFacts, libs: list[Mapped]
) -> list[Finding]:
    """The copy the host probe said a Paddle process would load, against the one it did load."""
    loaded = next((lib for lib in libs if lib.name == name), None)
    if loaded is None or probed.status != "ok" or not probed.path:
        return []
    same_folder = posixpath.dirname(probed.path) == posixpath.dirname(loaded.path)
    if same_folder and (not loaded.version or loaded.version == probed.version):
        return []
    return [
        warn(
            f"smoke.loaded-{name.removeprefix('lib')}-shadowed",
            f"the host probe expected {title} {probed.version} from {probed.path} ({probed.origin}) "
            f"to win, but the smoke process loaded {_where(loaded)}: the {title} findings above "
            "judged a copy Paddle does not use",
            fix=_shadow_fix(loaded, probed),
            layer="smoke",
            expected={"path": probed.path, "version": probed.version, "origin": probed.origin},
            loaded=to_dict(loaded),
        )
    ]


def _shadow_fix(loaded: Mapped, probed: LibraryFacts) -> str:
    folder = posixpath.dirname(loaded.path)
    if loaded.source == "LD_LIBRARY_PATH":
        return f"remove {folder} from LD_LIBRARY_PATH so the copy in {posixpath.dirname(probed.path or '')} wins"
    if loaded.source == "conda":
        return f"deactivate the conda environment or remove its copy in {folder} (`conda remove cudnn`)"
    return (
        f"Paddle searched {folder} before {posixpath.dirname(probed.path or '')}: point it at the "
        "intended copy (Paddle's FLAGS_cudnn_dir / FLAGS_cuda_dir, or LD_LIBRARY_PATH), or remove "
        f"the copy in {folder}"
    )


def _against_kernel_module(
    host: HostFacts, plan: Plan, result: SmokeResult, libs: list[Mapped]
) -> list[Finding]:
    module = host.driver.kernel_module
    found = []
    driver = [lib for lib in libs if lib.name in DRIVER_FAMILY and lib.version]
    compat = [lib for lib in driver if lib.source == "compat" and lib.version != module]
    if module and compat:
        lib = compat[0]
        found.append(
            fail(
                "smoke.compat-driver-mismatch",
                f"the smoke process loaded the CUDA compat {_where(lib)}, but the host's kernel "
                f"module is {module}: CUDA falls back to the CPU or fails (the CUDA 13.0 image defect)",
                fix=COMPAT_FIX.format(
                    folder=posixpath.dirname(lib.path), cuda=host.driver.cuda or "?"
                ),
                layer="smoke",
                kernel_module=module,
                loaded=to_dict(lib),
            )
        )
    check = result.driver_check
    nvml_error = check.error if check else None
    # In-process, the host's own NVML probe already reported a mismatch (driver.version-mismatch).
    said = plan.mode == "in-process" and host.driver.error == "NVML_ERROR_LIB_RM_VERSION_MISMATCH"
    stale = [lib for lib in driver if lib.source != "compat" and lib.version != module]
    rm_error = nvml_error == "NVML_ERROR_LIB_RM_VERSION_MISMATCH"
    if module and (stale or rm_error) and not said:
        seen = "; ".join(_where(lib) for lib in stale) or f"NVML said {nvml_error}"
        injected = " (injected by the NVIDIA runtime)" if plan.mode == "container" else ""
        found.append(
            fail(
                "smoke.driver-library-mismatch",
                f"Driver/library version mismatch: the driver's user-space libraries in "
                f"{where(plan)}{injected} are not the host's kernel module {module}: {seen}",
                fix=REBOOT_FIX,
                layer="smoke",
                kernel_module=module,
                loaded=[to_dict(lib) for lib in stale],
                nvml=to_dict(check),
            )
        )
    if check and nvml_error == "NVML_ERROR_UNKNOWN" and plan.mode == "container":
        found.append(
            fail(
                "smoke.nvml-unknown-error",
                f"NVML: Unknown Error in {where(plan)}: nvmlInit returned {check.init} "
                f"from {check.library}",
                fix=NVML_UNKNOWN_FIX,
                layer="smoke",
                nvml=to_dict(check),
            )
        )
    return found

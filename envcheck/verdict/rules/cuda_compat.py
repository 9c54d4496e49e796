"""A CUDA forward-compatibility libcuda in use, judged by its own ELF note against the host
driver, the way the NVIDIA Container Toolkit decides (1.19.1,
`cmd/nvidia-cdi-hook/cudacompat/cuda-elf-header.go`): the compat library may replace the driver's
libcuda only when the note lists the host driver's branch and the library is newer than the host
driver; a note without branches falls back to its CUDA version against the driver's. The same
decision generalises the CUDA 13.0 images' defect (matrix/defects.toml: a compat library older
than the host driver, first on LD_LIBRARY_PATH, Paddle#76558).

Forward compatibility "is applicable only for systems with NVIDIA Data Center GPUs or select NGC
Server Ready SKUs of RTX cards" (https://docs.nvidia.com/deploy/cuda-compatibility/): elsewhere
cuInit fails with CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE (804, "forward compatibility was
attempted on non supported HW").

A compat library that nothing loads is no finding.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from typing import TYPE_CHECKING

from envcheck.contracts.facts import CompatLibrary, CompatNote, HostFacts
from envcheck.contracts.findings import Finding, fail, passed
from envcheck.contracts.remedy import Instruction, Remedy, RemedyStep, steps, user
from envcheck.contracts.versions import VersionParseError, parse_dotted

if TYPE_CHECKING:
    from envcheck.verdict.judge import Context

ERROR_804 = "forward compatibility was attempted on non supported HW"


def check_cuda_compat(ctx: Context) -> Iterable[Finding]:
    host = ctx.host
    for lib in host.cuda_compat or ():
        if lib.loaded and host.driver.version:
            yield from _judge(host, lib)


def compat_refusal(
    note: CompatNote | None, compat: str | None, host_driver: str, host_cuda: str | None
) -> str | None:
    """Why the toolkit would not use this compat library on this host driver; None: it would."""
    branch = host_driver.split(".", 1)[0]
    if note is not None and note.drivers and compat:
        if not branch.isdigit() or int(branch) not in note.drivers:
            return (
                f"the host driver {host_driver} is of branch {branch}, which its note does not list"
            )
        return None if _newer(compat, host_driver) else _not_newer(compat, host_driver)
    if note is not None and note.cuda and host_cuda:
        if _newer(note.cuda, host_cuda):
            return None
        return (
            f"it brings CUDA {note.cuda}, which the host driver {host_driver} (CUDA "
            f"{host_cuda}) already supports"
        )
    if compat and not _newer(compat, host_driver):
        return _not_newer(compat, host_driver)
    return None


def _judge(host: HostFacts, lib: CompatLibrary) -> Iterable[Finding]:
    driver = host.driver.version or ""
    what = describe_compat(lib)
    observed = {"path": lib.path, "version": lib.version, "host_driver": driver}
    refusal = compat_refusal(lib.note, lib.version, driver, host.driver.cuda)
    if refusal:
        yield fail(
            "cuda.compat-mismatch",
            f"{what} is on the loader's path, but {refusal}: CUDA fails to start (error 803, "
            "'system has unsupported display driver / cuda driver combination') or Paddle "
            "silently runs on the CPU",
            fix=_off_path_fix(host, lib, better_compat(lib.note, driver)),
            layer="cuda",
            **observed,
        )
        return
    consumer = [g for g in host.gpus if "GeForce" in (g.name or "")]
    if consumer:
        names = ", ".join(sorted({g.name or "?" for g in consumer}))
        yield fail(
            "cuda.compat-unsupported-gpu",
            f"{what} is on the loader's path, but forward compatibility runs only on data-center "
            f"GPUs (and select RTX server SKUs), not on {names}: CUDA error 804, '{ERROR_804}'",
            fix=_off_path_fix(host, lib, None),
            layer="cuda",
            **observed,
        )
        return
    yield passed(
        "cuda.compat",
        f"forward compatibility: {what} runs on the host driver {driver}",
        layer="cuda",
        **observed,
    )


def describe_compat(lib: CompatLibrary) -> str:
    note = lib.note
    if note is None:
        return f"the CUDA compat library {lib.path} (no compatibility note)"
    cuda = f"CUDA {note.cuda}, " if note.cuda else ""
    branches = ", ".join(map(str, note.drivers)) or "none listed"
    return f"the CUDA compat library {lib.path} ({cuda}driver branches {branches})"


def _off_path_fix(host: HostFacts, lib: CompatLibrary, better: str | None) -> Remedy:
    """Use the driver's own libcuda: the compat folder off LD_LIBRARY_PATH (a command where it is
    there), else the package removed; or a compat package the note would accept."""
    folder = posixpath.dirname(lib.path)
    kept = [d for d in host.env.get("LD_LIBRARY_PATH", "").split(":") if d]
    rest = [d for d in kept if posixpath.normpath(d) != posixpath.normpath(folder)]
    if rest != kept:
        first: RemedyStep = user(
            "export",
            f"LD_LIBRARY_PATH={':'.join(rest)}",
            changes=f"takes {folder} off the library path: the driver's own libcuda is loaded",
        )
    else:
        first = Instruction(
            f"stop loading {lib.path}: remove {folder} from the loader's configuration "
            "(/etc/ld.so.conf.d, then `sudo ldconfig`) or uninstall the cuda-compat package"
        )
    alternative = (
        Instruction(f"install the cuda-compat package whose note lists {better}", alternative=True)
        if better
        else None
    )
    return steps(first, alternative)


def better_compat(note: CompatNote | None, driver: str) -> str | None:
    """The compat package the note implies: one that lists the host's branch."""
    branch = driver.split(".", 1)[0]
    if note is None or not note.drivers or not branch.isdigit():
        return None
    if int(branch) in note.drivers:
        return None  # listed: the library is just not newer than the driver; none is needed
    return f"the driver branch {branch} (a CUDA newer than the driver's own)"


def _newer(a: str, b: str) -> bool:
    try:
        return parse_dotted(a).version > parse_dotted(b).version
    except VersionParseError:
        return False


def _not_newer(compat: str, host_driver: str) -> str:
    return (
        f"the library (driver {compat}) is not newer than the host driver {host_driver}, so it "
        "replaces the driver's own libcuda with an older one"
    )

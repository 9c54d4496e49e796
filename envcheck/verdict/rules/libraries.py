"""Everything the installed GPU build opens can be loaded: the CUDA driver API itself
(libcuda.so.1), and each other CUDA library the build opens by name (cuBLAS, cuBLASLt, cuFFT,
cuRAND, cuSOLVER, cuSPARSE, NCCL), by the names that build opens (`matrix/cuda_libraries.toml`),
as the probe's child opened them.

NVML answering while libcuda.so.1 cannot be loaded is the classic half-mounted driver: a container
started with `NVIDIA_DRIVER_CAPABILITIES=utility` (the NVIDIA runtime mounts nvidia-smi and
libnvidia-ml, and libcuda only with `compute`), or a host whose loader path misses the folder the
driver put libcuda in. Paddle then says "The third-party dynamic library (libcuda.so) that Paddle
depends on is not configured correctly" (Paddle#78917, PaddleDetection#7089) and sees no GPU.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from packaging.version import InvalidVersion, Version

from envcheck.contracts.facts import OpenedLibrary, PaddleFacts
from envcheck.contracts.findings import Finding, fail, passed, warn
from envcheck.contracts.libraries import DYNLOAD_STEMS, PIP_PACKAGES
from envcheck.contracts.remedy import Command, Instruction, Remedy, aiming, root, steps, user
from envcheck.matrix.model import CudaLibrary
from envcheck.matrix.provenance import plain_source
from envcheck.matrix.scope import libraries_of_build, scope_label
from envcheck.verdict.fixes import PipInstall, runtime_or_image_fix, target_python

if TYPE_CHECKING:
    from envcheck.verdict.judge import Context

_PIN = re.compile(r"nvidia-[a-z0-9-]+==[0-9][0-9a-z.+!]*")
# Where a driver's packages put libcuda.so.1 beside libnvidia-ml.so.1 (Debian/Ubuntu, RHEL).
_DRIVER_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib/aarch64-linux-gnu")


def check_driver_api_loadable(ctx: Context) -> Iterable[Finding]:
    """NVML answers, libcuda.so.1 does not load: a GPU build cannot use the GPU (FAIL); a CPU
    build or no Paddle trains on the CPU, and a GPU build installed later would not see it
    (warn). No GPU and no libcuda is a machine without a driver: nothing to say."""
    c, d, p = ctx.host.cuda_driver, ctx.host.driver, ctx.host.paddle
    if c.status != "absent" or d.status != "ok":
        return
    nvml = f" {d.version}" if d.version else ""
    nvml += f", {d.library}" if d.library else ""
    seen = f"NVML answers (driver{nvml}) but the CUDA driver API does not: "
    why = c.reason or "libcuda.so.1 cannot be loaded"
    words = '(Paddle: "The third-party dynamic library (libcuda.so) … is not configured correctly")'
    if p.status == "ok" and p.cuda:
        yield fail(
            "cuda.libcuda-missing",
            f"{seen}{why}; Paddle {p.version} (CUDA {p.cuda}) cannot use the GPU {words}",
            fix=libcuda_fix(ctx.host.env, d.library, d.version),
            layer="cuda",
            nvml=d.library,
        )
    else:
        yield warn(
            "cuda.libcuda-missing",
            f"{seen}{why}; a GPU build of Paddle would not see the GPU",
            fix=libcuda_fix(ctx.host.env, d.library, d.version),
            layer="cuda",
            nvml=d.library,
        )


def libcuda_fix(env: Mapping[str, str], nvml: str | None, version: str | None) -> Remedy:
    """In a container: what the NVIDIA runtime needs to mount libcuda. On a host: where the driver
    put it, and how the loader finds it."""
    capabilities = env.get("NVIDIA_DRIVER_CAPABILITIES")
    if capabilities is not None and not {"all", "compute"} & set(capabilities.split(",")):
        return aiming(
            f"this container was started with NVIDIA_DRIVER_CAPABILITIES={capabilities}: the "
            "NVIDIA runtime mounts libcuda only with the compute capability",
            steps(
                Instruction(
                    "start it again with --gpus all -e NVIDIA_DRIVER_CAPABILITIES=compute,utility"
                    " (Kubernetes: the same variable in the pod's env)"
                )
            ),
        )
    if capabilities is not None or "NVIDIA_VISIBLE_DEVICES" in env:
        return aiming(
            "this container has NVML but not the driver's libcuda: the NVIDIA runtime did not "
            "mount the driver's libraries",
            steps(
                Instruction(
                    "start it with the NVIDIA runtime: docker run --gpus all -e "
                    "NVIDIA_DRIVER_CAPABILITIES=compute,utility (or --runtime=nvidia)"
                )
            ),
        )
    folder = posixpath.dirname(nvml) if nvml and posixpath.isabs(nvml) else None
    where = folder or " or ".join(_DRIVER_DIRS)
    branch = (version or "").split(".")[0]
    return aiming(
        f"the driver puts libcuda.so.1 beside libnvidia-ml.so.1 ({where}); the loader must find it",
        steps(
            user("ls", "-l", f"{folder}/libcuda.so.1", changes="shows whether libcuda is there")
            if folder
            else Instruction(f"look for libcuda.so.1 in {where}: ldconfig -p | grep libcuda"),
            root(
                "apt-get",
                "install",
                "-y",
                f"libnvidia-compute-{branch}",
                changes=f"where it is not there: reinstalls driver {branch}'s libcuda.so.1 (Ubuntu)",
            )
            # WSL2's libcuda comes with the Windows driver (/usr/lib/wsl/lib), not a package
            if branch.isdigit() and not (folder or "").startswith("/usr/lib/wsl/")
            else None,
            root("ldconfig", changes="refreshes the loader's cache, so it finds libcuda.so.1"),
            Instruction(
                f"add {folder} to LD_LIBRARY_PATH"
                if folder
                else "add the driver's library folder to LD_LIBRARY_PATH",
                alternative=True,
            ),
        ),
    )


def check_build_libraries(ctx: Context) -> Iterable[Finding]:
    """Each library the installed GPU build opens, by the names the matrix gives for its release
    line, CUDA family and kind (pip CUDA libraries or not), as the probe opened them. Nothing is
    said where the probe did not open a name (a saved report older than it): unknown, not absent."""
    p = ctx.host.paddle
    pip = pip_cuda_libraries(p)
    if p.status != "ok" or not p.cuda or not p.version or pip is None:
        return
    opened = {o.name: o for o in ctx.host.opened_libraries}
    if not opened:
        return
    if pip and p.cuda_requirements:
        yield from _check_pip_build(ctx, opened, p.cuda_requirements)
        return
    rows = libraries_of_build(ctx.matrix, p.version, p.cuda, pip)
    loaded: list[tuple[CudaLibrary, OpenedLibrary]] = []
    missing: dict[str, list[tuple[CudaLibrary, list[OpenedLibrary]]]] = {}
    for row in rows:
        tried = [opened.get(name) for name in row.sonames]
        found = next((o for o in tried if o is not None and o.status == "ok"), None)
        if found is not None:
            loaded.append((row, found))
        elif all(o is not None for o in tried):
            package = _package(row, p.cuda)
            missing.setdefault(package, []).append((row, [o for o in tried if o is not None]))
    for package, group in missing.items():
        yield _missing(ctx, package, group)
    if loaded:
        names = ", ".join(f"{DYNLOAD_STEMS[r.library]} ({o.name})" for r, o in loaded)
        yield passed(
            "cuda.libraries",
            f"Paddle {p.version} (CUDA {p.cuda}) can open {names}; {_names_from(loaded[0][0])}",
            layer="cuda",
            libraries={o.name: o.path for _, o in loaded},
        )


def _check_pip_build(
    ctx: Context, opened: Mapping[str, OpenedLibrary], requirements: tuple[str, ...]
) -> Iterable[Finding]:
    """A pip-CUDA build opens its libraries from the nvidia-* packages it requires (FLAGS_cublas_dir
    & co. point at site-packages/nvidia/*/lib), then by the same versioned names on the loader's
    path: each library of each requirement must load from one or the other."""
    p = ctx.host.paddle
    loaded: list[tuple[str, OpenedLibrary]] = []
    for requirement in requirements:
        if not _PIN.fullmatch(requirement):
            continue  # a saved document's text, not a pin pip would take as one
        package = re.sub(r"-cu\d+$", "", requirement.split("==", 1)[0])
        missing: list[str] = []
        broken: list[OpenedLibrary] = []
        for stem in PIP_PACKAGES.get(package, ()):
            if f"lib{stem}.so" not in opened:
                continue  # not probed: unknown
            versioned = [o for o in opened.values() if re.fullmatch(rf"lib{stem}\.so\.\d+", o.name)]
            ok = sorted((o for o in versioned if o.status == "ok"), key=lambda o: o.origin != "pip")
            if ok:
                loaded.append((stem, ok[0]))
            else:
                missing.append(stem)
                broken += [o for o in versioned if o.status == "error"]
        if missing:
            yield _pip_missing(ctx, missing, requirement, broken)
    if loaded:
        names = ", ".join(f"{DYNLOAD_STEMS[stem]} ({o.name}, {o.origin})" for stem, o in loaded)
        yield passed(
            "cuda.libraries",
            f"Paddle {p.version} (CUDA {p.cuda}) can open {names}; names from the build's own "
            f"requirements ({', '.join(requirements)})",
            layer="cuda",
            libraries={o.name: o.path for _, o in loaded},
        )


def _pip_missing(
    ctx: Context, stems: list[str], requirement: str, broken: list[OpenedLibrary]
) -> Finding:
    p = ctx.host.paddle
    names = " and ".join(DYNLOAD_STEMS[stem] for stem in stems)
    why = "; ".join(o.reason for o in broken if o.reason) or "; ".join(
        f"no lib{stem}.so.N in its pip folder or on the loader's path" for stem in stems
    )
    python = target_python(ctx.host)
    install = PipInstall(python, ("--force-reinstall", requirement) if broken else (requirement,))
    one_gpu = stems == ["nccl"] and len(ctx.host.gpus) <= 1
    message = (
        f"Paddle {p.version} (CUDA {p.cuda}) opens {names} from {requirement}, its own "
        f"requirement, which cannot be loaded ({why}); names from the build's own requirements"
        + ("; needed only for training on more than one GPU" if one_gpu else "")
    )
    return (warn if one_gpu else fail)(
        "cuda.library-missing",
        message,
        fix=aiming(
            f"install the {requirement} this build requires",
            steps(*install.commands(f"installs {requirement} into {python}")),
        ),
        layer="cuda",
        libraries=stems,
        requirement=requirement,
    )


def _package(row: CudaLibrary, cuda: str) -> str:
    """The row's package for the build's CUDA: `libcublas-dev-{cuda}` -> `libcublas-dev-11-8`."""
    return row.toolkit_package.replace("{cuda}", "-".join(cuda.split(".")[:2]))


def _missing(
    ctx: Context, package: str, group: list[tuple[CudaLibrary, list[OpenedLibrary]]]
) -> Finding:
    """One finding per package: cuBLAS and cuBLASLt come (and go) together."""
    p = ctx.host.paddle
    opens = " and ".join(
        f"{DYNLOAD_STEMS[r.library]} as {' or '.join(r.sonames)}" for r, _ in group
    )
    loader = "; ".join(o.reason or f"{o.name}: not found" for _, tried in group for o in tried)
    first = group[0][0]
    message = (
        f"Paddle {p.version} (CUDA {p.cuda}) opens {opens}, which cannot be loaded ({loader}); "
        f'Paddle: "The third-party dynamic library ({first.sonames[0]}) that Paddle depends on '
        f'is not configured correctly"; {_names_from(first)}'
    )
    # One GPU trains without NCCL; an unconfirmed row may warn, never fail.
    one_gpu = all(r.library == "nccl" for r, _ in group) and len(ctx.host.gpus) <= 1
    if one_gpu:
        message += "; needed only for training on more than one GPU"
    report = warn if one_gpu or not all(r.confirmed for r, _ in group) else fail
    return report(
        "cuda.library-missing",
        message,
        fix=_library_fix(ctx, package, [r for r, _ in group]),
        layer="cuda",
        libraries=[r.library for r, _ in group],
        sonames=[n for r, _ in group for n in r.sonames],
        source=first.source,
    )


def _library_fix(ctx: Context, package: str, rows: list[CudaLibrary]) -> Remedy:
    """The versioned files the host has, linked to the names the build opens; else the toolkit's
    package with those names (NVIDIA's CUDA apt repository); or the official image."""
    wanted = [r.sonames[0] for r in rows]
    links = [link for want in wanted if (link := _link(ctx, want)) is not None]
    install = root(
        "apt-get",
        "install",
        "-y",
        package,
        changes=f"installs {', '.join(wanted)} from NVIDIA's CUDA apt repository",
        alternative=bool(links),
    )
    goal = f"give this build the {' and '.join(wanted)} it opens"
    if not links:
        return aiming(goal, runtime_or_image_fix(steps(install), ctx.image))
    return aiming(
        goal, steps(*links, root("ldconfig", changes="refreshes the loader's cache"), install)
    )


def _link(ctx: Context, want: str) -> Command | None:
    """`ln -s` of a versioned file that loaded (`libcublas.so.11`) to the unversioned name."""
    versioned = next(
        (
            o
            for o in ctx.host.opened_libraries
            if o.status == "ok" and o.path and o.name.startswith(f"{want}.")
        ),
        None,
    )
    if versioned is None or not versioned.path or not want.endswith(".so"):
        return None
    return root(
        "ln",
        "-s",
        versioned.path,
        f"{posixpath.dirname(versioned.path)}/{want}",
        changes=f"gives the {versioned.name} that is there the name this build opens",
    )


def _names_from(row: CudaLibrary) -> str:
    """Where the list of names came from, in words."""
    return (
        f"names from the matrix for {scope_label(row.releases)}, CUDA {row.cuda} "
        f"({plain_source(row.source, row.confirmed)})"
    )


def pip_cuda_libraries(p: PaddleFacts) -> bool | None:
    """Whether the build brings its CUDA libraries through pip: its record, else a 2.x build does
    not (2.x records nothing and ships no nvidia-* requirements); None: unknown."""
    if p.with_pip_cuda_libraries is not None:
        return p.with_pip_cuda_libraries
    try:
        return False if Version(p.version or "").major < 3 else None
    except InvalidVersion:
        return None

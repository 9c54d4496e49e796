"""The CUDA runtime and cuDNN a Paddle process would load, and every other copy on the host.

Where they come from, in the order they win:
1. pip: `nvidia/cuda_runtime/lib` (CUDA 11/12 wheels), `nvidia/cu13/lib` (CUDA 13 wheels group
   every library there: https://github.com/rapidsai/cuml/issues/7305) and `nvidia/cudnn/lib`.
   Paddle 3.x built `with_pip_cuda_libraries` points FLAGS_cudnn_dir & co. at these, before any
   system path (paddle/__init__.py; paddle/phi/backends/dynload/dynamic_loader.cc).
2. LD_LIBRARY_PATH, 3. the loader cache (`ldconfig -p`), 4. CUDA_HOME / /usr/local/cuda: the
   order dlopen(3) and then Paddle's last-resort /usr/local/cuda/lib64 search follow.

Versions come from the files themselves (cudaRuntimeGetVersion, cudnnGetVersion), called in the
child process of `cuda_driver` so a broken library cannot take the caller down.

The other libraries a GPU build opens by name (cuBLAS, cuBLASLt, cuFFT, cuRAND, cuSOLVER,
cuSPARSE, NCCL: `DYNLOAD_STEMS`) are opened in the same child, by every name a host holds for
them plus the unversioned one, the build's pip folders first as Paddle's loader tries them; the
judge picks the names the installed build opens (`matrix/cuda_libraries.toml`).
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable, Iterable, Mapping

from envcheck.contracts.facts import (
    CudaDriverFacts,
    LibraryCandidate,
    LibraryFacts,
    LibraryOrigin,
    OpenedLibrary,
)
from envcheck.contracts.libraries import DYNLOAD_STEMS
from envcheck.contracts.record import record, replace
from envcheck.contracts.versions import (
    VersionParseError,
    cuda_version_from_int,
    cudnn_version_from_int,
)
from envcheck.probe.cuda_driver import ChildRun, driver_facts, run_cuda_child

CUDA_HOME_DEFAULT = "/usr/local/cuda"
LDCONFIG = ("/sbin/ldconfig", "/usr/sbin/ldconfig")


@record
class LibrarySpec:
    """How to find one CUDA library (its file names, its pip folders) and read its version."""

    kind: str  # "cudart" | "cudnn": what the child calls to read the version
    file_name: re.Pattern[str]
    pip_dirs: tuple[str, ...]
    parse_version: Callable[[int], str]


CUDART = LibrarySpec(
    "cudart",
    re.compile(r"libcudart\.so(?:\.\d+)*"),
    ("nvidia/cuda_runtime/lib", "nvidia/cu13/lib"),
    cuda_version_from_int,
)
CUDNN = LibrarySpec(
    "cudnn", re.compile(r"libcudnn\.so(?:\.\d+)*"), ("nvidia/cudnn/lib",), cudnn_version_from_int
)


def probe_cuda_libraries(
    site_packages: list[str], env: Mapping[str, str], timeout: float = 5.0, *, opens: bool = False
) -> tuple[LibraryFacts, LibraryFacts, tuple[OpenedLibrary, ...]]:
    """`ldconfig -p | grep -E 'libcudart|libcudnn'` and `pip show nvidia-cuda-runtime-cu12
    nvidia-cudnn-cu12`, each file's version read by loading it: (cudart, cudnn, and, where
    `opens` (a GPU build), every name of the other libraries it opens, opened)."""
    _, cudart, cudnn, opened = probe_cuda(site_packages, env, timeout, driver=False, opens=opens)
    return cudart, cudnn, opened


def probe_cuda(
    site_packages: list[str],
    env: Mapping[str, str],
    timeout: float = 5.0,
    *,
    driver: bool = True,
    opens: bool = False,
) -> tuple[CudaDriverFacts, LibraryFacts, LibraryFacts, tuple[OpenedLibrary, ...]]:
    """The driver API and both libraries with one child process (one ~20 ms spawn); `opens`:
    the other libraries' names too."""
    cache = loader_cache()
    found = {
        spec.kind: find_candidates(spec, site_packages, env, cache) for spec in (CUDART, CUDNN)
    }
    names = dynload_names(site_packages, env, cache) if opens else []
    request = {
        "driver": driver,
        "libraries": [{"kind": k, "path": c.path} for k, cands in found.items() for c in cands],
        "open": [{"name": name, "folders": folders} for name, folders in names],
    }
    needed = driver or request["libraries"] or request["open"]
    run = run_cuda_child(request, env, timeout) if needed else ChildRun()
    driver_result = driver_facts(run) if driver else CudaDriverFacts()
    cudnn = library_facts(CUDNN, _with_versions(CUDNN, found["cudnn"], run))
    return (
        driver_result,
        library_facts(CUDART, _with_versions(CUDART, found["cudart"], run)),
        replace(cudnn, unversioned=unversioned_on_path(CUDNN, env, cache), unversioned_probed=True),
        tuple(opened_library(name, run) for name, _ in names),
    )


# Where a pip-CUDA build's loader looks first for each library (FLAGS_cublas_dir & co., set by
# paddle/__init__.py to site-packages/nvidia/<package>/lib; CUDA 13 wheels share nvidia/cu13/lib).
_PIP_DIRS = {
    "cublas": "nvidia/cublas/lib",
    "cublasLt": "nvidia/cublas/lib",
    "cufft": "nvidia/cufft/lib",
    "curand": "nvidia/curand/lib",
    "cusolver": "nvidia/cusolver/lib",
    "cusparse": "nvidia/cusparse/lib",
    "nccl": "nvidia/nccl/lib",
}
# dlopen's own folders after LD_LIBRARY_PATH and the cache (ld.so(8)), the multiarch ones first.
_DEFAULT_DIRS = (
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/lib/aarch64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/lib64",
    "/usr/lib64",
    "/lib",
    "/usr/lib",
)


def dynload_names(
    site_packages: Iterable[str], env: Mapping[str, str], cache: Iterable[tuple[str, str]]
) -> list[tuple[str, list[str]]]:
    """Each name to open, with the pip folders to try it in first: for every library of
    `DYNLOAD_STEMS`, its unversioned name (what a non-pip build opens) and every
    `lib<stem>.so.<major>` a folder on the loader's path or a pip folder holds."""
    ld = [d for d in (env.get("LD_LIBRARY_PATH") or "").split(":") if d]
    homes = [os.path.join(h, sub) for h in _cuda_homes(env) for sub in ("lib64", "lib")]
    # /lib is /usr/lib on merged-/usr systems: each real folder once
    folders = dict.fromkeys(os.path.realpath(f) for f in (*ld, *homes, *_DEFAULT_DIRS))
    names = re.compile(rf"lib({'|'.join(DYNLOAD_STEMS)})\.so(?:\.\d+)?")
    # One pass over each folder (/usr/lib/<triplet> holds thousands of files) and the cache.
    found = [m for f in folders for n in _listing(f) if (m := names.fullmatch(n))]
    found += [m for n, _ in cache if (m := names.fullmatch(n))]
    out = []
    for stem in DYNLOAD_STEMS:
        pip = [
            os.path.join(sp, sub)
            for sp in site_packages
            for sub in (_PIP_DIRS[stem], "nvidia/cu13/lib")
            if os.path.isdir(os.path.join(sp, sub))
        ]
        in_pip = [m for f in pip for n in _listing(f) if (m := names.fullmatch(n))]
        versioned = {m.group(0) for m in (*in_pip, *found) if m.group(1) == stem}
        out += [(name, pip) for name in (f"lib{stem}.so", *sorted(versioned - {f"lib{stem}.so"}))]
    return out


def _listing(folder: str) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def opened_library(name: str, run: ChildRun) -> OpenedLibrary:
    """What the child said of one name: loaded (from where), absent (no such file on the
    loader's path), or an error (the file is there, a library it needs is not)."""
    record = run.result("open", name)
    if record is None:
        why = "it" if run.stopped_during("open", name) else "an earlier step"
        reason = f"not probed: the probe process {run.failure or 'stopped'} while loading {why}"
        return OpenedLibrary(name=name, reason=reason)
    origin = record.get("origin")
    origin = origin if origin in ("pip", "loader") else None
    error = record.get("error")
    if error:
        missing = str(error).startswith(f"{name}: cannot open shared object file")
        return OpenedLibrary(
            name=name, status="absent" if missing else "error", origin=origin, reason=str(error)
        )
    return OpenedLibrary(name=name, status="ok", path=record.get("file"), origin=origin)


def unversioned_on_path(
    spec: LibrarySpec, env: Mapping[str, str], cache: Iterable[tuple[str, str]]
) -> str | None:
    """Where `dlopen("libcudnn.so")` of a non-pip build finds the unversioned name: the dev
    symlink Ubuntu's runtime package (`libcudnn8`, only `libcudnn.so.8`) does not ship. None when
    LD_LIBRARY_PATH, the loader cache and CUDA_HOME hold none (DYNLOAD; Paddle then says "Cannot
    load cudnn shared library")."""
    name = f"lib{spec.kind}.so"
    ld = [os.path.join(d, name) for d in (env.get("LD_LIBRARY_PATH") or "").split(":") if d]
    cached = [path for n, path in cache if n == name]
    homes = [os.path.join(h, sub, name) for h in _cuda_homes(env) for sub in ("lib64", "lib")]
    return next((p for p in (*ld, *cached, *homes) if os.path.isfile(p)), None)


def find_candidates(
    spec: LibrarySpec,
    site_packages: Iterable[str],
    env: Mapping[str, str],
    cache: Iterable[tuple[str, str]],
) -> list[LibraryCandidate]:
    """Every copy, in the order a Paddle process would try them, each file once."""
    found: list[LibraryCandidate] = []
    for sp in site_packages:
        for sub in spec.pip_dirs:
            found += _in_dir(spec, os.path.join(sp, sub), "pip")
    for d in (env.get("LD_LIBRARY_PATH") or "").split(":"):
        if d:
            found += _in_dir(spec, d, "LD_LIBRARY_PATH")
    found += [
        LibraryCandidate(path=path, origin="system")
        for name, path in cache
        if spec.file_name.fullmatch(name)
    ]
    for home in _cuda_homes(env):
        for sub in ("lib64", "lib"):
            found += _in_dir(spec, os.path.join(home, sub), "cuda-home")
    return _unique_files(found)


def library_facts(spec: LibrarySpec, candidates: list[LibraryCandidate]) -> LibraryFacts:
    """Pick the first candidate that loads; say which other copies it shadows."""
    if not candidates:
        return LibraryFacts(
            status="absent",
            reason=f"no lib{spec.kind}.so in pip packages, LD_LIBRARY_PATH, the loader cache"
            " or CUDA_HOME",
        )
    usable = [c for c in candidates if c.version]
    if not usable:
        errors = "; ".join(f"{c.path}: {c.error}" for c in candidates)
        return LibraryFacts(
            status="error", candidates=tuple(candidates), reason=f"none could be loaded: {errors}"
        )
    chosen = usable[0]
    return LibraryFacts(
        status="ok",
        version=chosen.version,
        path=chosen.path,
        origin=chosen.origin,
        candidates=tuple(candidates),
        reason=_shadowing(chosen, candidates),
    )


def parse_ldconfig(text: str, arch: str | None = None) -> list[tuple[str, str]]:
    """`ldconfig -p` lines `\tlibcudart.so.13 (libc6,x86-64) => /usr/local/cuda/lib/…` ->
    [(name, path)], keeping only this machine's architecture when `arch` is given."""
    entries = []
    for line in text.splitlines():
        m = re.match(r"\s+(\S+) \(([^)]*)\)(?: OS ABI: [^=]*)? => (.+)$", line)
        if m and (arch is None or arch in m.group(2).split(",")):
            entries.append((m.group(1), m.group(3).strip()))
    return entries


def loader_cache() -> list[tuple[str, str]]:
    """`ldconfig -p`, parsed; empty when it cannot be read (musl has no cache)."""
    ldconfig = next((p for p in LDCONFIG if os.access(p, os.X_OK)), None)
    if ldconfig is None:
        return []
    try:
        out = subprocess.run(
            [ldconfig, "-p"],
            capture_output=True,
            timeout=5,
            check=False,
            env={"LC_ALL": "C", "PATH": os.defpath},
        ).stdout.decode("utf-8", "replace")
    except (OSError, subprocess.TimeoutExpired):
        return []
    return parse_ldconfig(out, _ldconfig_arch())


def _ldconfig_arch() -> str | None:
    # ldconfig's tags for the libraries this interpreter can load (glibc elf/cache.c).
    return {"x86_64": "x86-64", "aarch64": "AArch64"}.get(os.uname().machine)


def _cuda_homes(env: Mapping[str, str]) -> list[str]:
    homes = [env.get("CUDA_HOME"), env.get("CUDA_PATH"), CUDA_HOME_DEFAULT]
    return list(dict.fromkeys(h for h in homes if h))


def _in_dir(spec: LibrarySpec, directory: str, origin: LibraryOrigin) -> list[LibraryCandidate]:
    try:
        names = [n for n in os.listdir(directory) if spec.file_name.fullmatch(n)]
    except OSError:
        return []
    # Versioned sonames first (libcudnn.so.9 before the libcudnn.so dev symlink), newest first.
    names.sort(key=lambda n: [int(x) for x in n.split(".so")[1].split(".") if x], reverse=True)
    return [LibraryCandidate(path=os.path.join(directory, n), origin=origin) for n in names]


def _unique_files(candidates: list[LibraryCandidate]) -> list[LibraryCandidate]:
    """One entry per real file: libcudart.so -> libcudart.so.13 is one library."""
    seen: set[str] = set()
    unique = []
    for c in candidates:
        real = os.path.realpath(c.path)
        if real not in seen and os.path.isfile(real):
            seen.add(real)
            unique.append(c)
    return unique


def _with_versions(
    spec: LibrarySpec, candidates: list[LibraryCandidate], run: ChildRun
) -> list[LibraryCandidate]:
    return [_versioned(spec, c, run) for c in candidates]


def _versioned(spec: LibrarySpec, c: LibraryCandidate, run: ChildRun) -> LibraryCandidate:
    record = run.result("library", c.path)
    if record is None:
        stopped = "it" if run.stopped_during("library", c.path) else "an earlier step"
        why = f"not probed: the probe process {run.failure or 'stopped'} while loading {stopped}"
        return replace(c, error=why if run.failure != "failed" else f"not probed: {run.detail}")
    value = record.get("version")
    if record.get("error") or not isinstance(value, int):
        return replace(c, error=str(record.get("error") or f"no version: {record}"))
    try:
        return replace(c, version=spec.parse_version(value))
    except VersionParseError as e:
        return replace(c, error=str(e))


def _shadowing(chosen: LibraryCandidate, candidates: list[LibraryCandidate]) -> str | None:
    others = [c for c in candidates if c is not chosen]
    notes = []
    skipped = [c for c in candidates[: candidates.index(chosen)] if c.error]
    for c in skipped:
        notes.append(f"{c.path} ({c.origin}) comes first but cannot be loaded: {c.error}")
    differing = [c for c in others if c.version and c.version != chosen.version]
    if differing:
        listed = ", ".join(f"{c.version} at {c.path} ({c.origin})" for c in differing)
        notes.append(f"{chosen.version} from {chosen.origin} wins over {listed}")
    same = [c for c in others if c.version == chosen.version]
    if same:
        listed = ", ".join(f"{c.path} ({c.origin})" for c in same)
        notes.append(f"duplicate copies of {chosen.version}: {listed}")
    return "; ".join(notes) or None

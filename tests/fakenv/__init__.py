"""Fake NVIDIA hosts at the C ABI: fake libnvidia-ml / libcuda / libcudart / libcudnn built with
gcc and driven by host profiles (profiles/*.toml). See README.md for how to use them.

A process sees a fake host only through its environment (dlopen reads LD_LIBRARY_PATH once, at
start), so every use is a subprocess started with `fake_nvidia(<profile>)` merged into its env.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from envcheck.matrix.toml import tomllib

HERE = Path(__file__).resolve().parent
SRC = HERE / "src"
PROFILES = HERE / "profiles"

# (soname, cudaRuntimeGetVersion) per CUDA runtime; CUDA 11's soname really is libcudart.so.11.0.
CUDART_BUILDS: dict[str, tuple[str, int]] = {
    "11.8": ("libcudart.so.11.0", 11080),
    "12.2": ("libcudart.so.12", 12020),
    "12.6": ("libcudart.so.12", 12060),
    "12.9": ("libcudart.so.12", 12090),
    "13.0": ("libcudart.so.13", 13000),
}
# (soname, cudnnGetVersion): cuDNN 8 encodes 1000*major+100*minor+patch, cuDNN 9 10000*major+…
CUDNN_BUILDS: dict[str, tuple[str, int]] = {
    "8.9.6": ("libcudnn.so.8", 8906),
    "9.5.1": ("libcudnn.so.9", 90501),
    "9.9.0": ("libcudnn.so.9", 90900),
    "9.13.0": ("libcudnn.so.9", 91300),
    "9.19.0": ("libcudnn.so.9", 91900),  # the lent H100's pip cuDNN (tests/data/real-h100)
}

# The notes of two real compat libcuda files, as NVIDIA/nvidia-container-toolkit's own test reads
# them from its testdata (cmd/nvidia-cdi-hook/cudacompat/cuda-elf-header_test.go): a profile's
# `compat_libcuda` puts a fake libcuda carrying that note into /usr/local/cuda/compat.
COMPAT_NOTES: dict[str, dict[str, Any]] = {
    "575.57.08": {
        "Format": 1,
        "CUDA Version": "12.9",
        "Driver": [535, 550, 560, 565, 570, 575],
        "Device": [1, 2, 7, 8, 9, 10, 11, 12, 13, 14],
    },
    "590.44.01": {
        "Format": 1,
        "CUDA Version": "13.1",
        "Driver": [535, 550, 570, 575, 580, 590],
        "Device": [1, 2, 7, 8, 9, 10, 11, 12, 13, 14],
    },
}

PROC_VERSION_TEXT = {
    # Formats from real /proc/driver/nvidia/version files (docs/facts/compat_facts.md §9).
    "proprietary": "NVRM version: NVIDIA UNIX x86_64 Kernel Module  {v}  Sat Aug 19 01:15:15 UTC 2023\n",
    "open": "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {v}  Release Build"
    "  (dvs-builder@U16-I3-B03-4-3)  Tue Jul 22 18:46:37 UTC 2025\n",
}


class FakeBuildError(RuntimeError):
    """gcc is missing or a fake library did not compile."""


@dataclass(frozen=True)
class FakeBuild:
    root: Path

    def nvml(self, variant: str) -> Path:
        return self.root / f"nvml-{variant}" / "libnvidia-ml.so"

    @property
    def cuda(self) -> Path:
        return self.root / "cuda" / "libcuda.so"

    def compat(self, version: str) -> Path:
        return self.root / f"compat-{version}" / "libcuda.so"

    def cudart(self, version: str) -> Path:
        return self.root / f"cudart-{version}" / CUDART_BUILDS[version][0]

    def cudnn(self, version: str) -> Path:
        return self.root / f"cudnn-{version}" / CUDNN_BUILDS[version][0]


def profile_names() -> tuple[str, ...]:
    return tuple(sorted(p.stem for p in PROFILES.glob("*.toml")))


def load_profile(name: str) -> dict[str, Any]:
    with open(PROFILES / f"{name}.toml", "rb") as f:
        profile: dict[str, Any] = tomllib.load(f)
    return profile


def build(root: Path) -> FakeBuild:
    """Compile every fake library under `root`, in parallel. Raises FakeBuildError."""
    gcc = shutil.which("gcc")
    if gcc is None:
        raise FakeBuildError("gcc is not installed: the fake NVIDIA libraries cannot be built")
    fake = FakeBuild(root)
    jobs: list[tuple[Path, str, list[str]]] = [
        (fake.nvml("current"), "fake_nvml.c", []),
        (fake.nvml("legacy"), "fake_nvml.c", ["-DFAKE_NVML_LEGACY"]),
        (fake.cuda, "fake_cuda.c", []),
    ]
    jobs += [
        (fake.cudart(v), "fake_cudart.c", [f"-DFAKE_CUDART_VERSION={n}"])
        for v, (_, n) in CUDART_BUILDS.items()
    ]
    jobs += [
        (fake.cudnn(v), "fake_cudnn.c", [f"-DFAKE_CUDNN_VERSION={n}"])
        for v, (_, n) in CUDNN_BUILDS.items()
    ]
    jobs += [  # the note's JSON as a C string literal
        (fake.compat(v), "fake_cuda_compat.c", [f"-DFAKE_COMPAT_NOTE={json.dumps(json.dumps(n))}"])
        for v, n in COMPAT_NOTES.items()
    ]
    procs = []
    for out, source, defines in jobs:
        out.parent.mkdir(parents=True, exist_ok=True)
        cmd = [
            gcc,
            "-shared",
            "-fPIC",
            "-O1",
            "-Wall",
            "-Werror",
            "-fvisibility=hidden",
            f"-Wl,-soname,{_soname(out)}",
            *defines,
            "-o",
            str(out),
            str(SRC / source),
        ]
        procs.append((cmd, subprocess.Popen(cmd, stderr=subprocess.PIPE)))
    failures = [f"{' '.join(cmd)}\n{p.communicate()[1].decode()}" for cmd, p in procs if p.wait()]
    if failures:  # the first one is enough to act on
        raise FakeBuildError(f"{len(failures)} fake library build(s) failed:\n{failures[0]}")
    return fake


def _soname(out: Path) -> str:
    # The driver libraries are built as plain .so files and linked in under their sonames.
    return {"libnvidia-ml.so": "libnvidia-ml.so.1", "libcuda.so": "libcuda.so.1"}.get(
        out.name, out.name
    )


def make_host(
    fake: FakeBuild, profile: str, work: Path, trace: Path | None = None
) -> dict[str, str]:
    """Lay out the files of one fake host under `work` and return the environment variables
    that make a subprocess see it (merge them into os.environ).

    The probes see the driver only through `ENVCHECK_DRIVER_ROOT` (envcheck/probe/driver_root.py):
    the fake's libraries, or none, and its /proc/driver/nvidia/version, or none. A real driver
    on the machine (loader cache, /proc/driver/nvidia) is hidden from them."""
    host = load_profile(profile)["host"]
    driver_dir, ld_dir, site = work / "driver", work / "ld", work / "site-packages"
    root = work / "root"
    for d in (driver_dir, ld_dir, site, root / "lib"):
        d.mkdir(parents=True, exist_ok=True)
    _install_driver(fake, host, driver_dir)
    # WSL 2: the Windows driver's libraries are in /usr/lib/wsl/lib, not in a driver package's
    libraries = root / "usr" / "lib" / "wsl" / "lib" if host.get("wsl") == 2 else root / "lib"
    libraries.mkdir(parents=True, exist_ok=True)
    for soname in ("libnvidia-ml.so.1", "libcuda.so.1"):
        if (driver_dir / soname).exists():  # what the loader would resolve the soname to
            (libraries / soname).symlink_to(driver_dir / soname)
    _install_wsl(root, host.get("wsl"))
    _install_libraries(fake, host, site, ld_dir)
    proc_version = root / "proc" / "driver" / "nvidia" / "version"
    if host.get("kernel_module"):
        proc_version.parent.mkdir(parents=True, exist_ok=True)
        text = PROC_VERSION_TEXT[host.get("kernel_module_flavor", "proprietary")]
        proc_version.write_text(text.format(v=host["kernel_module"]) + "GCC version:  gcc 12.2.0\n")
    devices = [d.strip() for d in host.get("pci_devices", "").split(",") if d.strip()]
    _install_pci(root, host.get("pci_gpus", len(devices)), devices)
    if "kern_log" in host:  # the kernel log's file, beside the profile
        log = root / "var" / "log" / "kern.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(PROFILES / host["kern_log"], log)
    compat = _install_compat(fake, root, host.get("compat_libcuda"))
    on_path = f"{compat}:" if compat and host.get("compat_on_path") else ""
    env = {
        "FAKE_NVIDIA_PROFILE": str(PROFILES / f"{profile}.toml"),
        "LD_LIBRARY_PATH": f"{on_path}{driver_dir}:{ld_dir}",
        "ENVCHECK_DRIVER_ROOT": str(root),
        "FAKE_NVIDIA_SITE_PACKAGES": str(site),
    }
    if trace is not None:
        env["FAKE_NVIDIA_TRACE"] = str(trace)
    return env


def _install_compat(fake: FakeBuild, root: Path, version: str | None) -> Path | None:
    """The cuda-compat package's folder under the root, as the package lays it out:
    libcuda.so.1 -> libcuda.so.<version> (`compat_libcuda`); None without one."""
    if not version:
        return None
    folder = root / "usr" / "local" / "cuda" / "compat"
    folder.mkdir(parents=True)
    _link_versioned(fake.compat(version), folder, "libcuda.so", version)
    return folder


def _install_pci(root: Path, gpus: int, device_ids: list[str] | None = None) -> None:
    """sysfs PCI functions as a real machine has them: `gpus` NVIDIA 3D controllers beside an
    Intel VGA one (that is no GPU of ours), under root/sys/bus/pci/devices (`pci_gpus`); with
    `device_ids` (`pci_devices = "1b80"`), each GPU's `device` file too."""
    if not gpus:
        return
    devices = root / "sys" / "bus" / "pci" / "devices"
    ids = device_ids or []
    functions = [("0000:00:02.0", "0x8086", "0x030000", "0x3e92")]
    functions += [
        (f"0000:{0x17 + i:02x}:00.0", "0x10de", "0x030200", f"0x{ids[i]}" if i < len(ids) else "")
        for i in range(gpus)
    ]
    for address, vendor, cls, device in functions:
        (devices / address).mkdir(parents=True)
        (devices / address / "vendor").write_text(vendor + "\n")
        (devices / address / "class").write_text(cls + "\n")
        if device and ids:
            (devices / address / "device").write_text(device + "\n")


# Kernel releases as WSL prints them (`uname -r`): WSL 2's Microsoft kernel, WSL 1's emulated one.
WSL_KERNELS = {2: "5.15.167.4-microsoft-standard-WSL2", 1: "4.4.0-19041-Microsoft"}


def _install_wsl(root: Path, version: int | None) -> None:
    """WSL's marks under the root: the kernel release, and for WSL 2 the GPU device /dev/dxg."""
    if version is None:
        return
    release = root / "proc" / "sys" / "kernel" / "osrelease"
    release.parent.mkdir(parents=True, exist_ok=True)
    release.write_text(WSL_KERNELS[version] + "\n")
    if version == 2:
        (root / "dev").mkdir(exist_ok=True)
        (root / "dev" / "dxg").write_text("")


def _install_driver(fake: FakeBuild, host: Mapping[str, Any], driver_dir: Path) -> None:
    # As a driver package does: libnvidia-ml.so.1 -> libnvidia-ml.so.<driver version>.
    version = host.get("driver_version")
    if host.get("nvml", "none") != "none":
        _link_versioned(fake.nvml(host["nvml"]), driver_dir, "libnvidia-ml.so", version)
    if host.get("libcuda"):
        _link_versioned(fake.cuda, driver_dir, "libcuda.so", version)


def _link_versioned(built: Path, directory: Path, stem: str, version: str | None) -> None:
    target = directory / (f"{stem}.{version}" if version else stem)
    shutil.copyfile(built, target)
    (directory / f"{stem}.1").symlink_to(target.name)


def _install_libraries(fake: FakeBuild, host: Mapping[str, Any], site: Path, ld_dir: Path) -> None:
    # Copies, not links: each place holds its own file, as on a real host.
    if "pip_cudart" in host:
        v = host["pip_cudart"]
        sub = "cu13" if v.startswith("13.") else "cuda_runtime"
        _copy_into(fake.cudart(v), site / "nvidia" / sub / "lib")
    if "pip_cudnn" in host:
        _copy_into(fake.cudnn(host["pip_cudnn"]), site / "nvidia" / "cudnn" / "lib")
    if "ld_cudart" in host:
        _copy_into(fake.cudart(host["ld_cudart"]), ld_dir)
    if "ld_cudnn" in host:
        _copy_into(fake.cudnn(host["ld_cudnn"]), ld_dir)
    # The other libraries a build opens by name (cuBLAS, cuFFT, NCCL, ...): files that load, with
    # the soname of their name, on LD_LIBRARY_PATH (`ld_libs`) or under site-packages/nvidia
    # (`pip_libs`, e.g. "cublas/lib/libcublas.so.12").
    for name in host.get("ld_libs", ()):
        _copy_into(empty_library(fake, name), ld_dir)
    for relative in host.get("pip_libs", ()):
        folder, name = (site / "nvidia" / relative).parent, Path(relative).name
        _copy_into(empty_library(fake, name), folder)


def empty_library(fake: FakeBuild, soname: str) -> Path:
    """A shared library with nothing in it but its soname, compiled once per build: what dlopen
    needs to open `soname`, which is all Paddle's loader asks of cuBLAS & co. before a call."""
    out = fake.root / "empty" / soname
    if not out.exists():
        gcc = shutil.which("gcc")
        if gcc is None:
            raise FakeBuildError("gcc is not installed: the fake libraries cannot be built")
        out.parent.mkdir(parents=True, exist_ok=True)
        built = out.with_name(f".{soname}.{os.getpid()}")  # parallel hosts: renamed whole
        cmd = [gcc, "-shared", "-fPIC", f"-Wl,-soname,{soname}", "-o", str(built), "-x", "c", "-"]
        done = subprocess.run(cmd, input=b"", capture_output=True, check=False)
        if done.returncode:
            raise FakeBuildError(f"{' '.join(cmd)}\n{done.stderr.decode()}")
        built.replace(out)
    return out


def _copy_into(built: Path, directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(built, directory / built.name)


# The probes in one subprocess, as the doctor runs them; prints one JSON document.
PROBE_SCRIPT = """
import json, os, sys, time
from envcheck.contracts.facts import to_dict
t0 = time.perf_counter()
from envcheck.probe.nvml import probe_driver
driver, gpus = probe_driver(os.environ)
t1 = time.perf_counter()
from envcheck.probe.cuda_libs import probe_cuda
sites = [p for p in [os.environ.get("FAKE_NVIDIA_SITE_PACKAGES")] if p]
cuda_driver, cudart, cudnn, opened = probe_cuda(
    sites, os.environ, timeout=float(sys.argv[1]), opens=True
)
t2 = time.perf_counter()
print(json.dumps({"driver": to_dict(driver), "gpus": to_dict(gpus),
                  "cuda_driver": to_dict(cuda_driver), "cudart": to_dict(cudart),
                  "cudnn": to_dict(cudnn), "opened": to_dict(opened), "seconds": {"nvml": t1 - t0, "cuda": t2 - t1}}))
"""


def run_probes(env: Mapping[str, str], timeout: float = 2.0) -> dict[str, Any]:
    """Run every envcheck probe in a fresh interpreter under `env` (merged into os.environ)."""
    full = {**os.environ, **env}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE_SCRIPT, str(timeout)],
        env=full,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"probe subprocess failed ({proc.returncode}):\n{proc.stderr}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def children_alive(marker: str) -> list[int]:
    """envcheck's CUDA probe children still running whose environment holds `marker` (a
    profile path of the test's own: another run of the suite has children of its own)."""
    alive = []
    for proc in Path("/proc").iterdir():
        try:
            if (
                b"_cuda_child.py" in (proc / "cmdline").read_bytes()
                and marker.encode() in (proc / "environ").read_bytes()
            ):
                alive.append(int(proc.name))
        except (OSError, ValueError):
            continue
    return alive


_BUILDS: dict[str, FakeBuild] = {}


@pytest.fixture(scope="session")
def fake_build(tmp_path_factory: pytest.TempPathFactory) -> FakeBuild:
    """The fake libraries, compiled once per session. Fails (never skips) without gcc."""
    if "build" not in _BUILDS:
        try:
            _BUILDS["build"] = build(tmp_path_factory.mktemp("fakenv-build"))
        except FakeBuildError as e:
            pytest.fail(str(e), pytrace=False)
    return _BUILDS["build"]


@pytest.fixture(scope="session")
def fake_nvidia(
    fake_build: FakeBuild, tmp_path_factory: pytest.TempPathFactory
) -> Callable[[str], dict[str, str]]:
    """`fake_nvidia("a100x2-535") -> {env var: value}` for a subprocess that must see that host."""

    def make(profile: str) -> dict[str, str]:
        return make_host(fake_build, profile, tmp_path_factory.mktemp(f"host-{profile}"))

    return make


_PROBED: dict[str, dict[str, Any]] = {}


@pytest.fixture(scope="session")
def probed_host(fake_nvidia: Callable[[str], dict[str, str]]) -> Callable[[str], dict[str, Any]]:
    """`probed_host("t4-470")` -> every probe's facts on that fake host: one fresh interpreter
    per profile, shared by all tests of the session (the cuInit timeout is 1 s)."""

    def get(profile: str) -> dict[str, Any]:
        if profile not in _PROBED:
            _PROBED[profile] = run_probes(fake_nvidia(profile), timeout=1.0)
        return _PROBED[profile]

    return get


@pytest.fixture
def no_driver(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This test's process and the processes it starts see no NVIDIA driver, whatever the
    machine has: ENVCHECK_DRIVER_ROOT is an empty folder (envcheck/probe/driver_root.py)."""
    root = tmp_path_factory.mktemp("no-driver-root")
    monkeypatch.setenv("ENVCHECK_DRIVER_ROOT", str(root))
    return root

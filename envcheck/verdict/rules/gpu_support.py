"""A GPU on the PCI bus that the loaded driver leaves out: a branch that no longer drives its
generation, or a kernel module of the wrong flavour for it. The hardware is there and the
software says "No devices were found"; the fix is one specific driver, named here.

- From the 590/595 branches on, the driver ignores Maxwell, Pascal and Volta GPUs ("The NVIDIA
  GeForce GTX 1050 GPU installed in this system is supported through the NVIDIA 580.xx Legacy
  drivers … The 595.58.03 NVIDIA driver will ignore this GPU": NixOS/nixos-hardware#1880).
- The open kernel modules need a GSP (Turing and newer): "… is not supported by open nvidia.ko
  because it does not include the required GPU System Processor (GSP)" on a Tesla P4
  (zzzhouuu/truenas-nvidia-drivers#20). Blackwell needs them: "… requires use of the NVIDIA
  open kernel modules" under the proprietary ones.

The generation comes from the PCI device id and the branch's support from the matrix
(`gpu_generations.toml`). Such a finding replaces the symptoms it explains (`gpu.none`,
`cuda.init-failed`, `driver.not-loaded`): see `REPLACES`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from envcheck.contracts.facts import DriverFacts, PciGpu
from envcheck.contracts.findings import Finding, fail
from envcheck.contracts.remedy import Instruction, Remedy, RemedyStep, root, steps
from envcheck.contracts.versions import VersionParseError, release_of
from envcheck.matrix.model import DriverBranch, GpuGeneration

if TYPE_CHECKING:
    from envcheck.verdict.judge import Context

GPU_DROPPED = "driver.gpu-dropped"
NEEDS_PROPRIETARY = "driver.module-needs-proprietary"
NEEDS_OPEN = "driver.module-needs-open"
# The findings that only show the symptom of a GPU the driver left out.
REPLACES = ("gpu.none", "cuda.init-failed", "driver.not-loaded")
HOW_TO_READ_THE_LOG = "`sudo dmesg | grep NVRM` shows the kernel's own words"
_LOG_WORDS = (
    "Legacy drivers",
    "will ignore this GPU",
    "GSP",
    "open kernel modules",
    "open nvidia.ko",
)


def check_gpu_support(ctx: Context) -> Iterable[Finding]:
    d = ctx.host.driver
    left_out = _left_out(ctx)
    if not left_out:
        return
    branch = driver_branch_of(d)
    row = ctx.matrix.driver_branch(branch) if branch is not None else None
    for device_id, gpus in left_out.items():
        found = ctx.matrix.generation_of(device_id)
        if found is None:
            continue
        generation, name = found
        if row is not None and generation.name not in row.generations:
            yield _dropped(ctx, gpus, generation, name, row)
        elif d.kernel_module_flavor == "open" and generation.open_module == "unsupported":
            yield _wrong_flavor(ctx, gpus, generation, name, NEEDS_PROPRIETARY)
        elif d.kernel_module_flavor == "proprietary" and generation.open_module == "required":
            yield _wrong_flavor(ctx, gpus, generation, name, NEEDS_OPEN)


def driver_branch_of(d: DriverFacts) -> int | None:
    """The loaded driver's branch: 595 for 595.58.03 (NVML's version, else the kernel
    module's, else the library file's)."""
    for version in (d.version, d.kernel_module):
        if version:
            try:
                return release_of(version)[0]
            except VersionParseError:
                continue
    return None


def _left_out(ctx: Context) -> dict[str, list[PciGpu]]:
    """The PCI GPUs NVML did not list, by device id: every one when it listed none (the probe
    reads the bus only then)."""
    pci = ctx.host.driver.pci_gpus or ()
    if not pci or ctx.gpus or ctx.host.wsl is not None:
        return {}
    by_id: dict[str, list[PciGpu]] = {}
    for gpu in pci:
        # a GPU another driver holds (vfio-pci for a virtual machine, nouveau) is not one the
        # NVIDIA driver left out
        if gpu.bound_to in (None, "nvidia"):
            by_id.setdefault(gpu.device_id, []).append(gpu)
    return by_id


def _dropped(
    ctx: Context, gpus: list[PciGpu], generation: GpuGeneration, name: str, row: DriverBranch
) -> Finding:
    d = ctx.host.driver
    version = d.version or d.kernel_module or f"R{row.branch}"
    last = ctx.matrix.last_branch_for(generation.name)
    target = f"the R{last.branch} legacy branch" if last else "an older driver branch"
    message = (
        f"{_label(gpus, name)} is a {generation.name} GPU, which the {version} driver "
        f"(R{row.branch}) no longer drives: {generation.name} stays supported through {target}"
        f"{_log(d.kernel_log)}"
    )
    flavor = "open" if generation.open_module == "required" else "proprietary"
    return fail(
        GPU_DROPPED,
        message,
        fix=_install_branch(ctx, last, flavor, generation.name),
        layer="driver",
        **_observed(gpus, generation, name, row.branch, last.branch if last else None),
        kernel_log=_quoted(d.kernel_log),
        replaces=list(REPLACES),
    )


def _wrong_flavor(
    ctx: Context, gpus: list[PciGpu], generation: GpuGeneration, name: str, id_: str
) -> Finding:
    d = ctx.host.driver
    branch = driver_branch_of(d)
    if id_ == NEEDS_PROPRIETARY:
        why = (
            f"the open kernel modules run only GPUs with a GSP (Turing and newer): a "
            f"{generation.name} GPU needs the proprietary module"
        )
        flavor = "proprietary"
    else:
        why = f"{generation.name} GPUs require the open kernel modules; the proprietary one binds none"
        flavor = "open"
    message = (
        f"{_label(gpus, name)} is a {generation.name} GPU under the {d.kernel_module_flavor} "
        f"kernel module {d.kernel_module or ''}".rstrip()
        + f": {why}{_log(d.kernel_log)}"
    )
    row = ctx.matrix.driver_branch(branch) if branch is not None else None
    return fail(
        id_,
        message,
        fix=_install_branch(ctx, row, flavor, generation.name, same_branch=True),
        layer="driver",
        **_observed(gpus, generation, name, branch, branch),
        kernel_module_flavor=d.kernel_module_flavor,
        kernel_log=_quoted(d.kernel_log),
        replaces=list(REPLACES),
    )


def _install_branch(
    ctx: Context,
    row: DriverBranch | None,
    flavor: str,
    generation: str,
    *,
    same_branch: bool = False,
) -> Remedy:
    """The driver to install: the distribution's package of that branch and flavour where the
    matrix knows it (the host's own distribution first), then a reboot."""
    if row is None:
        return steps(
            Instruction(f"install an NVIDIA driver that drives {generation} GPUs"),
            Instruction("reboot"),
        )
    packages = (row.open_packages if flavor == "open" else row.packages) or {}
    what = f"the R{row.branch} driver with the {flavor} kernel module"
    if same_branch:
        what = f"the {flavor} kernel module of the R{row.branch} driver"
    system = (ctx.host.machine.os or "").lower()
    mine = next((d for d in packages if d.lower() in system), None)
    first: RemedyStep
    if mine == "Ubuntu":
        first = root(
            "apt-get", "install", packages[mine], changes=f"installs {what} ({packages[mine]})"
        )
    elif mine is not None:
        first = Instruction(f"install {what}: on {mine}, {packages[mine]}")
    elif packages:
        each = "; ".join(f"on {d}, {p}" for d, p in packages.items())
        first = Instruction(f"install {what} ({each}; else NVIDIA's {row.branch}.xx installer)")
    else:
        first = Instruction(
            f"install {what} (NVIDIA's {row.branch}.xx installer or your distribution's package)"
        )
    return steps(first, Instruction("reboot, so that the kernel loads that module"))


def _observed(
    gpus: list[PciGpu],
    generation: GpuGeneration,
    name: str,
    branch: int | None,
    install: int | None,
) -> dict[str, object]:
    return {
        "gpu": name,
        "device_id": f"10de:{gpus[0].device_id}",
        "addresses": [g.address for g in gpus],
        "generation": generation.name,
        "driver_branch": branch,
        "install_branch": install,
        "source": generation.source,
        "confirmed": generation.confirmed,
    }


def _label(gpus: list[PciGpu], name: str) -> str:
    where = ", ".join(g.address for g in gpus)
    count = f"{len(gpus)}× " if len(gpus) > 1 else ""
    return f"{count}{name} (PCI {where}, 10de:{gpus[0].device_id})"


def _quoted(log: tuple[str, ...] | None) -> str | None:
    """The kernel log's NVRM lines about this, as one quotation; None when none says it."""
    if not log:
        return None
    starts = [i for i, line in enumerate(log) if "The NVIDIA" in line or "installed in" in line]
    # the last message's first line ("The NVIDIA … GPU" or its "installed in" continuation)
    first = starts[-1] if starts else 0
    while first > 0 and first - 1 in starts:
        first -= 1
    lines = list(log[first:])[:6]
    text = " ".join(" ".join(line.split()) for line in lines if line.strip())
    return text if any(w in text for w in _LOG_WORDS) else None


def _log(log: tuple[str, ...] | None) -> str:
    quoted = _quoted(log)
    if quoted:
        return f'. The kernel log says: "{quoted}"'
    return f" ({HOW_TO_READ_THE_LOG})"

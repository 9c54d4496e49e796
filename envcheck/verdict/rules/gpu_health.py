"""Each GPU's memory health as NVML reported it (`GpuFacts.health`): a GPU that needs a reset, a
reboot or a replacement before its results can be trusted. A healthy GPU, or one that cannot
say (GeForce, no ECC, an older driver), adds nothing: its `gpu.N` line stays the only one.

What each state obliges, after NVIDIA's own tools and its A100 memory-error guide
(https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/: "The GPU must be reset for the
remapping to go into effect"; the RMA criterion is the row-remapping failure flag validated by
the field diagnostic):
- a pending row remap, or uncorrectable ECC errors since the driver loaded: reset the GPU
  (DCGM's "Drain the GPU and reset it or reboot the node", NVIDIA/DCGM `dcgmlib/dcgm_errors.h`);
- a row-remapping failure: the memory cannot be repaired; DCGM sends it to NVIDIA's field
  diagnostic, i.e. the GPU is replaced;
- pages waiting for retirement alone: DCGM's "this GPU can still perform workload"; the next reset
  retires them, so a warning;
- the driver's recovery action (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION, drivers from R570) as it says.

`nvidia-smi -r` (the nvidia-smi manual): "Requires root. There can't be any applications using
these devices (e.g. CUDA application, graphics application like X server, monitoring application
like other instance of nvidia-smi)."
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from envcheck.contracts.facts import GpuFacts, GpuHealth
from envcheck.contracts.findings import Finding, fail, warn
from envcheck.contracts.record import asdict
from envcheck.contracts.remedy import Instruction, Remedy, root, steps

if TYPE_CHECKING:
    from envcheck.verdict.judge import Context

_RESET_ACTIONS = frozenset({"GPU_RESET", "DRAIN_AND_RESET"})
_REBOOT_ACTIONS = frozenset({"NODE_REBOOT", "SYSTEM_REBOOT", "BUS_RESET"})
_RECOVERY_WORDS = {
    "GPU_RESET": "the driver asks for a GPU reset (recovery action GPU_RESET)",
    "DRAIN_AND_RESET": "the GPU runs at reduced capacity and the driver asks to drain its work and"
    " reset it (recovery action DRAIN_AND_RESET)",
    "NODE_REBOOT": "the driver asks for a reboot of the machine (recovery action NODE_REBOOT)",
    "SYSTEM_REBOOT": "the driver asks for a reboot of the machine (recovery action SYSTEM_REBOOT)",
    "BUS_RESET": "the driver asks for a reset of the GPU's PCI bus (recovery action BUS_RESET)",
}


def check_gpu_health(ctx: Context) -> Iterable[Finding]:
    if ctx.host.driver.status != "ok":
        return
    for gpu in ctx.host.gpus:
        if gpu.health is not None:
            yield from _judge(gpu, gpu.health)


def unhealthy(gpu: GpuFacts) -> bool:
    """The GPU needs a reset, a reboot or a replacement: not one to list as good."""
    h = gpu.health
    return h is not None and bool(_replace_reasons(h) or _reset_reasons(h) or _reboot_reasons(h))


def _judge(gpu: GpuFacts, h: GpuHealth) -> Iterable[Finding]:
    label = f"GPU {gpu.index} {gpu.name or '?'}"
    observed = {"index": gpu.index, "health": asdict(h)}
    if replace := _replace_reasons(h):
        yield fail(
            "gpu.replace",
            f"{label}: {'; '.join(replace)}: its memory cannot be repaired, and training on it "
            "can crash or compute wrong values",
            fix=_replace_fix(gpu.index),
            layer="gpu",
            **observed,
        )
        return
    if reboot := _reboot_reasons(h):
        yield fail(
            "gpu.reboot-needed",
            f"{label}: {'; '.join(reboot)}: it cannot be trusted until then",
            fix=_REBOOT_FIX,
            layer="gpu",
            **observed,
        )
        return
    if reset := _reset_reasons(h):
        yield fail(
            "gpu.reset-needed",
            f"{label}: {'; '.join(reset)}: its memory cannot be trusted until the GPU is reset",
            fix=reset_fix(gpu.index),
            layer="gpu",
            **observed,
        )
        return
    if h.retired_pages_pending:
        yield warn(
            "gpu.retired-pages-pending",
            f"{label}: memory pages with errors wait to be retired; they stay in use until the "
            "GPU is reset or the machine rebooted",
            fix=reset_fix(gpu.index),
            layer="gpu",
            **observed,
        )
    elif h.recovery_action not in (None, "NONE"):
        yield warn(
            "gpu.recovery-action",
            f"{label}: the driver asks for the recovery action {h.recovery_action}",
            fix=_OTHER_ACTION_FIX.get(h.recovery_action or "", _UNKNOWN_ACTION_FIX),
            layer="gpu",
            **observed,
        )


def _replace_reasons(h: GpuHealth) -> list[str]:
    return ["a row of its memory could not be remapped (row-remapping failure)"] * bool(
        h.remap_failure
    )


def _reboot_reasons(h: GpuHealth) -> list[str]:
    return [_RECOVERY_WORDS[h.recovery_action]] if h.recovery_action in _REBOOT_ACTIONS else []


def _reset_reasons(h: GpuHealth) -> list[str]:
    reasons = []
    if h.remap_pending:
        reasons.append("a row remap of its memory is pending")
    if h.ecc_volatile_uncorrected:
        pending = " and pages wait to be retired" if h.retired_pages_pending else ""
        reasons.append(
            f"{h.ecc_volatile_uncorrected} uncorrectable ECC error(s) since the driver loaded"
            + pending
        )
    if h.recovery_action in _RESET_ACTIONS:
        reasons.append(_RECOVERY_WORDS[h.recovery_action])
    return reasons


def reset_fix(index: int) -> Remedy:
    """Stop what holds GPU `index` open, then reset it (`nvidia-smi -r`), or reboot."""
    i = str(index)
    return steps(
        Instruction(
            f"stop every process on GPU {i} (`nvidia-smi --query-compute-apps=pid,process_name "
            f"--format=csv -i {i}`) and what holds it open: a display server, "
            "nvidia-persistenced, DCGM's nv-hostengine, other nvidia-smi monitors"
        ),
        root(
            "nvidia-smi",
            "-r",
            "-i",
            i,
            changes=f"resets GPU {i}: applies pending row remaps and page retirements and clears "
            "its volatile error counters",
        ),
        Instruction(
            "reboot the machine where the reset is refused (a GPU linked to others by NVLink "
            "may only reset together with them)",
            alternative=True,
        ),
    )


def _replace_fix(index: int) -> Remedy:
    return steps(
        Instruction(
            f"take GPU {index} out of service: hide it from training with CUDA_VISIBLE_DEVICES "
            "set to the other GPUs' indices"
        ),
        Instruction(
            "have the GPU replaced (run NVIDIA's field diagnostic or `dcgmi diag -r 3` and send "
            "the result to the vendor)"
        ),
    )


_REBOOT_FIX = steps(Instruction("stop the GPU's work, then reboot the machine"))
_OTHER_ACTION_FIX = {
    "DRAIN_P2P": steps(
        Instruction(
            "stop the peer-to-peer (NVLink) traffic of the GPU's processes, then run the doctor "
            "again: the driver then names the action that remains"
        )
    ),
    "RECOVER_IMEX_DOMAIN": steps(
        Instruction("recover the GPU's IMEX domain (the NVIDIA IMEX service of its NVLink domain)")
    ),
}
_UNKNOWN_ACTION_FIX = steps(
    Instruction("look the action up in NVIDIA's NVML documentation of the driver in use")
)

"""What CUDA makes of `CUDA_VISIBLE_DEVICES` (pure): the GPUs it leaves visible and where it
stopped reading.

CUDA reads the list up to its first invalid entry; "" and "-1" hide everything
(https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#env-vars). UUIDs are matched in
full against NVML's: the Guide allows abbreviations, but on a real H100 (driver 580.159.04) the
prefix `GPU-09fd4f27` of its UUID made cuInit find no device. Where the CUDA
driver API answered, its device count is the truth and this reading only explains it.
"""

from __future__ import annotations

from collections.abc import Sequence

from envcheck.contracts.facts import GpuFacts
from envcheck.contracts.record import record


@record
class Visibility:
    """How many GPUs a CUDA_VISIBLE_DEVICES value leaves CUDA, and where it stops."""

    visible: int  # entries CUDA accepts (MIG- entries and unknown UUIDs counted as accepted)
    stopped: str | None  # why reading stopped early, in words; None: every entry is valid


def read_visible_devices(value: str, gpus: Sequence[GpuFacts]) -> Visibility:
    uuids = {g.uuid.lower() for g in gpus if g.uuid}
    visible = 0
    for raw in value.split(","):
        entry = raw.strip()
        why = _invalid(entry, len(gpus), uuids)
        if why is not None:
            return Visibility(visible, why)
        visible += 1
    return Visibility(visible, None)


def _invalid(entry: str, count: int, uuids: set[str]) -> str | None:
    if not entry:
        return "empty"
    if entry.isascii() and entry.isdigit():  # not "²"; no int() of a 5000-digit entry
        return (
            None
            if len(entry) < 10 and int(entry) < count
            else f"device {entry:.12} does not exist (this host has {count})"
        )
    if entry.upper().startswith("GPU-"):
        if not uuids or entry.lower() in uuids:
            return None
        prefix = any(u.startswith(entry.lower()) for u in uuids)
        return f"{entry} is {'only a prefix of' if prefix else 'not'} a GPU UUID of this host"
    if entry.upper().startswith("MIG-"):
        return None  # MIG device UUIDs are not in the facts: the driver API decides
    return f"{entry!r} is not a device index or GPU UUID"

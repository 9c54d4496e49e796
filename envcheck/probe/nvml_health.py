"""A GPU's memory health as NVML reports it: what `nvidia-smi -q -d
ROW_REMAPPER,PAGE_RETIREMENT,ECC` prints, and the driver's own recovery action.

Part of the NVML adapter (envcheck/probe/nvml.py reads it for each GPU, NVML initialised): a query
this GPU or driver lacks (NOT_SUPPORTED on GeForce and GPUs without ECC, FUNCTION_NOT_FOUND on
old drivers) leaves its field None, which is no finding. What each answer obliges the owner to do
is the judge's (envcheck/verdict/rules/gpu_health.py).

NVML reference: https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceQueries.html
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from envcheck.contracts.facts import GpuHealth
from envcheck.probe.nvml import _optional as optional_query

_RECOVERY_PREFIX = "NVML_GPU_RECOVERY_ACTION_"


def read_health(nvml: ModuleType, handle: Any) -> GpuHealth | None:
    """The health of one GPU; None when the GPU answers none of the queries (a GeForce)."""
    remapped = optional_query(nvml, nvml.nvmlDeviceGetRemappedRows, handle)
    pages = optional_query(nvml, nvml.nvmlDeviceGetRetiredPagesPendingStatus, handle)
    health = GpuHealth(
        remap_pending=bool(remapped[2]) if remapped is not None else None,
        remap_failure=bool(remapped[3]) if remapped is not None else None,
        retired_pages_pending=bool(pages) if pages is not None else None,
        ecc_volatile_uncorrected=_volatile_uncorrected(nvml, handle),
        recovery_action=_recovery_action(nvml, handle),
    )
    return None if health == GpuHealth() else health


def _volatile_uncorrected(nvml: ModuleType, handle: Any) -> int | None:
    """`nvidia-smi -q -d ECC`, "Volatile … Uncorrectable": errors since the driver was loaded.
    Read only where ECC is on: without it the counters mean nothing."""
    mode = optional_query(nvml, nvml.nvmlDeviceGetEccMode, handle)
    if mode is None or mode[0] != nvml.NVML_FEATURE_ENABLED:
        return None
    count = optional_query(
        nvml,
        nvml.nvmlDeviceGetTotalEccErrors,
        handle,
        nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
        nvml.NVML_VOLATILE_ECC,
    )
    return int(count) if count is not None else None


def _recovery_action(nvml: ModuleType, handle: Any) -> str | None:
    """The field NVML_FI_DEV_GET_GPU_RECOVERY_ACTION (drivers from R570): what the driver says
    must happen before the GPU is trustworthy again, as the name nvml.h gives the value ("NONE",
    "GPU_RESET", …). The names come from the installed nvidia-ml-py, whose numbering is the
    driver's; a value it does not name reads as its number."""
    field_id = getattr(nvml, "NVML_FI_DEV_GET_GPU_RECOVERY_ACTION", None)
    if field_id is None:
        return None
    values = optional_query(nvml, nvml.nvmlDeviceGetFieldValues, handle, [field_id])
    if not values or values[0].nvmlReturn != nvml.NVML_SUCCESS:
        return None  # a driver without the field answers NOT_SUPPORTED for it alone
    value = int(values[0].value.uiVal)
    for name, constant in vars(nvml).items():
        if name.startswith(_RECOVERY_PREFIX) and constant == value:
            return name.removeprefix(_RECOVERY_PREFIX)
    return str(value)

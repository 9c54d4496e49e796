"""What NVML saw a GPU do while the workload trained (pure): the host's witness of the claim.

The sampler stamps every NVML sample with the host's wall clock; the workload stamps its training
window (`train_window`) with the same clock (a container shares CLOCK_REALTIME with the host).
Only the samples inside the window count: a CUDA context opened at start-up holds memory for the
whole run even when every step computed on the CPU (612 MiB at 0.1 % mean utilisation on the real
H100, docs/facts/real-gpu-host.md), so memory alone proves a context, not training.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from envcheck.contracts.record import asdict, record
from envcheck.smoke.workload.protocol import TrainWindow

# NVML's utilisation is the share of the last sample period (1/6 s to 1 s, by product) in which
# a kernel ran: a sample up to a second after the window still describes it.
# https://docs.nvidia.com/deploy/nvml-api/structnvmlUtilization__t.html
UTIL_LAG_S = 1.0
MIN_BUSY_PERCENT = 1  # NVML rounds to whole percent: 0 means no kernel worth a percent ran


class GpuSummary(TypedDict, total=False):
    """One GPU in the summary (total=False: a saved summary may lack the time series)."""

    util_max: int | None
    util_mean: float | None
    mem_used_max_bytes: int
    process_seen: bool
    process_mem_max_bytes: int | None
    process_query: str
    process_util_query: str
    series: list[tuple[float, int | None, int | None]]  # (host time, device util %, our memory)
    process_util: list[tuple[float, int]]  # (NVML's time, the workload's SM util %)


class NvmlSummary(TypedDict, total=False):
    """What the witness saw, the judge's second input beside the workload's `SmokeResult`."""

    status: str  # ok | unavailable | error
    reason: str | None
    samples: int
    interval_s: float
    pids: list[int]
    gpus: dict[str, GpuSummary]  # by NVML index
    run_window: TrainWindow  # host wall clock: the workload started .. was reaped


State = Literal["busy", "idle", "unseen", "unknown", "no-samples", "stale"]
# When Paddle's gpu:i cannot be mapped to an NVML index, the GPU with the best evidence speaks.
_BEST_FIRST: tuple[State, ...] = ("busy", "idle", "unknown", "unseen", "no-samples", "stale")
# The workload's clock is the host's (a container shares CLOCK_REALTIME); a second either side
# covers the stamps' own rounding and the start-up before `started_at` is taken.
CLOCK_SLACK_S = 1.0


@record
class Witness:
    """NVML's evidence for one run, inside its training window."""

    gpu: int | None  # NVML index judged
    state: State
    samples: int  # NVML samples inside the window
    process_mem_max_bytes: int | None  # the workload's GPU memory in the window (None: unlisted)
    util_max: int | None  # the device's utilisation in the window (None: not reported)
    process_sm_max: int | None  # the workload's own SM utilisation (None: not reported)
    window_s: float | None  # the training window's length

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def util_text(self) -> str:
        if self.process_sm_max is not None:
            return f"{self.process_sm_max}% SM utilisation of the process"
        if self.util_max is not None:
            return f"{self.util_max}% GPU utilisation"
        return "no utilisation reported"


def witness(nvml: NvmlSummary, gpu: int | None, window: TrainWindow | None) -> Witness:
    """The evidence on NVML GPU `gpu` (None: unknown mapping, every GPU is asked). A training
    window outside the run the host started and reaped is the workload's word against the
    host's: NVML samples "inside" it prove nothing about this run (#23.1)."""
    if not _within(window, nvml.get("run_window")):
        return Witness(gpu, "stale", 0, None, None, None, _length(window))
    gpus = nvml.get("gpus") or {}
    if gpu is not None:
        return _on_gpu(gpu, gpus.get(str(gpu)) or {}, window)
    found = [_on_gpu(int(index), trace, window) for index, trace in gpus.items()]
    if not found:
        return Witness(None, "no-samples", 0, None, None, None, _length(window))
    return min(found, key=lambda w: _BEST_FIRST.index(w.state))


def _on_gpu(index: int, trace: GpuSummary, window: TrainWindow | None) -> Witness:
    if "series" not in trace:  # a summary without time stamps: the whole run stands in
        return _decide(
            index,
            int(bool(trace)),
            trace.get("process_mem_max_bytes") if trace.get("process_seen") else None,
            trace.get("util_max"),
            None,
            _length(window),
        )
    inside = [row for row in trace["series"] if _in(row[0], window)]
    memory = [row[2] for row in inside if row[2] is not None]
    util = [row[1] for row in inside if row[1] is not None]
    process_sm: int | None = None
    if trace.get("process_util_query") == "ok":
        # NVML keeps samples only for processes that ran kernels: silence is 0 %.
        process_sm = max([u for t, u in trace.get("process_util") or [] if _in(t, window)] or [0])
    return _decide(
        index,
        len(inside),
        max(memory) if memory else None,
        max(util) if util else None,
        process_sm,
        _length(window),
    )


def _decide(
    index: int,
    samples: int,
    memory: int | None,
    util: int | None,
    process_sm: int | None,
    window_s: float | None,
) -> Witness:
    state: State
    if samples == 0:
        state = "no-samples"
    elif process_sm is not None and process_sm >= MIN_BUSY_PERCENT:
        state = "busy"  # attributed to the workload's own PID
    elif not memory:
        state = "unseen"
    elif process_sm is not None:
        state = "idle"
    elif util is not None:
        state = "busy" if util >= MIN_BUSY_PERCENT else "idle"  # an idle device: an idle process
    else:
        state = "unknown"
    return Witness(index, state, samples, memory, util, process_sm, window_s)


def _in(t: float, window: TrainWindow | None) -> bool:
    if not window or window.get("start") is None or window.get("end") is None:
        return True
    return bool(window["start"] <= t <= window["end"] + UTIL_LAG_S)


def _within(window: TrainWindow | None, run: TrainWindow | None) -> bool:
    if not run or run.get("start") is None or run.get("end") is None:
        return True  # a saved summary without the host's interval: nothing to check against
    if not window or window.get("start") is None or window.get("end") is None:
        return False  # a GPU claim without a window cannot be placed in this run
    return bool(
        run["start"] - CLOCK_SLACK_S
        <= window["start"]
        <= window["end"]
        <= run["end"] + CLOCK_SLACK_S
    )


def _length(window: TrainWindow | None) -> float | None:
    if not window or window.get("start") is None or window.get("end") is None:
        return None
    return round(float(window["end"]) - float(window["start"]), 3)

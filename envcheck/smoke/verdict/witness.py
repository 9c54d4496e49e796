"""What NVML saw a GPU do while the workload trained (pure): the host's witness of the claim.

The sampler stamps every NVML sample with the host's wall clock; the workload stamps its training
window (`train_window`) with the same clock (a container shares CLOCK_REALTIME with the host).
Only the samples inside the window count: a CUDA context opened at start-up holds memory for the
whole run even when every step computed on the CPU (612 MiB at 0.1 % mean utilisation on the real
H100, docs/facts/real-gpu-host.md), so memory alone proves a context, not training.
"""

from __future__ import annotations

from envcheck.contracts.smoke_report import GpuSummary, NvmlSummary, State, Witness
from envcheck.contracts.smoke_result import TrainWindow

# NVML's utilisation is the share of the last sample period (1/6 s to 1 s, by product) in which
# a kernel ran: a sample up to a second after the window still describes it.
# https://docs.nvidia.com/deploy/nvml-api/structnvmlUtilization__t.html
UTIL_LAG_S = 1.0
MIN_BUSY_PERCENT = 1  # NVML rounds to whole percent: 0 means no kernel worth a percent ran


# When Paddle's gpu:i cannot be mapped to an NVML index, the GPU with the best evidence speaks.
_BEST_FIRST: tuple[State, ...] = ("busy", "idle", "unknown", "unseen", "no-samples", "stale")
# The workload's clock is the host's (a container shares CLOCK_REALTIME); a second either side
# covers the stamps' own rounding and the start-up before `started_at` is taken.
CLOCK_SLACK_S = 1.0


def witness(nvml: NvmlSummary, gpu: int | None, window: TrainWindow | None) -> Witness:
    """The evidence on NVML GPU `gpu` (None: unknown mapping, every GPU is asked). A training
    window outside the run the host started and reaped is the workload's word against the
    host's: NVML samples "inside" it prove nothing about this run."""
    if not _within(window, nvml.run_window):
        return Witness(gpu, "stale", 0, None, None, None, _length(window))
    gpus = nvml.gpus
    if gpu is not None:
        return _on_gpu(gpu, gpus.get(str(gpu)), window)
    found = [_on_gpu(int(index), trace, window) for index, trace in gpus.items()]
    if not found:
        return Witness(None, "no-samples", 0, None, None, None, _length(window))
    return min(found, key=lambda w: _BEST_FIRST.index(w.state))


def _on_gpu(index: int, trace: GpuSummary | None, window: TrainWindow | None) -> Witness:
    if trace is None or trace.series is None:  # no time stamps: the whole run stands in
        return _decide(
            index,
            int(trace is not None),
            trace.process_mem_max_bytes if trace is not None and trace.process_seen else None,
            trace.util_max if trace is not None else None,
            None,
            _length(window),
        )
    inside = [row for row in trace.series if _in(row[0], window)]
    memory = [row[2] for row in inside if row[2] is not None]
    util = [row[1] for row in inside if row[1] is not None]
    process_sm: int | None = None
    if trace.process_util_query == "ok":
        # NVML keeps samples only for processes that ran kernels: silence is 0 %.
        process_sm = max([u for t, u in trace.process_util or () if _in(t, window)] or [0])
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
    if window is None:
        return True
    return window.start <= t <= window.end + UTIL_LAG_S


def _within(window: TrainWindow | None, run: TrainWindow | None) -> bool:
    if run is None:
        return True  # a saved summary without the host's interval: nothing to check against
    if window is None:
        return False  # a GPU claim without a window cannot be placed in this run
    return run.start - CLOCK_SLACK_S <= window.start <= window.end <= run.end + CLOCK_SLACK_S


def _length(window: TrainWindow | None) -> float | None:
    if window is None:
        return None
    return round(float(window.end) - float(window.start), 3)

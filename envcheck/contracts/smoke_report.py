"""The report's `smoke` section, as records: where the smoke ran, what Paddle saw, the figures
per device, and the host's evidence (NVML's samples, each run's witness in its training window).

`envcheck.smoke.verdict.document.smoke_document` makes one from a run; a saved report's is read
back by `envcheck.contracts.facts.from_dict` (strictly: a program wrote it), so the renderers,
the fleet and the drift check read typed fields whichever way it came. Field order is the JSON's.
An `optional` field (envcheck/contracts/facts.py) is one a saved report may lack because it was
written before the field existed: it stays absent when the report is written again.
"""

from __future__ import annotations

from typing import Literal

from envcheck.contracts.facts import OPTIONAL, CompatLibrary
from envcheck.contracts.record import field, record
from envcheck.contracts.smoke_result import (
    Amp,
    CompareCpu,
    DriverCheck,
    Export,
    KnownAnswer,
    LibrarySource,
    LossCheck,
    PaddleWarning,
    TrainWindow,
    WorkloadError,
)

Mode = Literal["container", "in-process", "not-run"]
# What NVML showed of one run inside its training window (envcheck.smoke.verdict.witness)
State = Literal["busy", "idle", "unseen", "unknown", "no-samples", "stale"]


@record
class GpuSummary:
    """What NVML saw on one GPU during the run. The time series are the witness's input and stay
    out of the report (None there)."""

    util_max: int | None = None
    util_mean: float | None = None
    mem_used_max_bytes: int | None = None
    process_seen: bool = False
    process_mem_max_bytes: int | None = None
    process_query: str | None = None  # "ok", "not-supported" or the NVML error name
    process_util_query: str | None = None
    # (host time, device util %, the workload's GPU memory), one per sample
    series: tuple[tuple[float, int | None, int | None], ...] | None = field(
        default=None, metadata=OPTIONAL
    )
    # (NVML's time stamp, the workload's SM util %), one per sample NVML kept for it
    process_util: tuple[tuple[float, int], ...] | None = field(default=None, metadata=OPTIONAL)


@record
class NvmlSummary:
    """The host's NVML sampler over the run: the witness of the workload's claims."""

    status: str = "unavailable"  # ok | unavailable | error
    reason: str | None = None
    samples: int | None = None
    interval_s: float | None = None
    pids: tuple[int, ...] = ()
    gpus: dict[str, GpuSummary] = field(default_factory=dict)  # by NVML index
    # the host's wall clock: the workload started .. was reaped
    run_window: TrainWindow | None = field(default=None, metadata=OPTIONAL)


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

    @property
    def util_text(self) -> str:
        if self.process_sm_max is not None:
            return f"{self.process_sm_max}% SM utilisation of the process"
        if self.util_max is not None:
            return f"{self.util_max}% GPU utilisation"
        return "no utilisation reported"


@record
class SmokePaddle:
    """What the Paddle under test is and sees, as the workload said."""

    paddle_version: str | None = None
    python: str | None = None
    compiled_with_cuda: bool | None = None
    cuda_version: str | None = None
    cudnn_version: str | None = None
    cuda_device_count: int | None = None
    device_capabilities: tuple[str | None, ...] | None = None
    device_names: tuple[str | None, ...] | None = None
    default_device: str | None = None
    env: dict[str, str | None] | None = None
    import_s: float | None = None
    total_s: float | None = None


@record
class SmokeRun:
    """One device's run: the workload's figures (null where it did not measure them), the host
    GPU it ran on, and what NVML witnessed."""

    device_requested: str | None = None
    device_used: str | None = None
    device_error: str | None = None
    param_places: dict[str, str] | None = None
    logits_place: str | None = None
    logits_dtype: str | None = None
    amp: Amp | None = None
    loss_start: float | None = None
    loss_end: float | None = None
    losses: tuple[float | None, ...] | None = None
    accuracy: float | None = None
    steps: int | None = None
    batch_size: int | None = None
    steps_per_s: float | None = None
    samples_per_s: float | None = None
    first_step_s: float | None = None
    peak_gpu_mem_bytes: int | None = None
    peak_gpu_reserved_bytes: int | None = None
    compare_cpu: CompareCpu | None = None
    export: Export | None = None
    checks: tuple[KnownAnswer, ...] | None = None
    checks_s: float | None = None
    loss_check: LossCheck | None = None
    train_window: TrainWindow | None = None
    error: WorkloadError | None = None
    host_gpu: int | None = None  # the NVML index of the GPU it ran on
    on_gpu: bool = False  # trained on a GPU, and the host does not rule the claim out
    # a GPU claim the host rules out (kept as the workload's word, never `on_gpu`)
    contradicted: bool | None = field(default=None, metadata=OPTIONAL)
    nvml: GpuSummary | None = None
    witness: Witness | None = None


@record
class MappedLibrary:
    """A library the smoke process mapped, with its version decoded."""

    name: str
    path: str
    version: str | None
    source: LibrarySource
    version_from: str | None  # "cudnnGetVersion()", "file name", None: unknown


@record
class MappedCuda:
    """The libcuda the smoke process mapped: its file's version is the driver's, and its
    cuDriverGetVersion() the CUDA API it serves."""

    name: str
    path: str
    version: str | None
    source: LibrarySource
    version_from: str | None
    cuda_api: str | None


Mapped = MappedCuda | MappedLibrary


@record
class ContainerLimits:
    """What the smoke container was allowed."""

    network: str | None = None
    read_only_rootfs: bool | None = None
    no_new_privileges: bool | None = None
    cap_drop: tuple[str, ...] | None = None
    timeout_s: float | None = None
    gpu_request: tuple[str, ...] | None = None
    memory: str | None = None
    pids: int | None = None
    shm: str | None = None
    tmpfs: str | None = None
    user: str | None = None


@record
class ContainerInfo:
    """The smoke container: its id, the run's label, the image, its limits, and the cleanup."""

    container: str | None = None
    run_id: str | None = None
    image_id: str | None = None
    limits: ContainerLimits | None = None
    swept: tuple[str, ...] | None = None  # leftovers of earlier runs removed first
    read_only_dropped: str | None = None  # the NVIDIA hook's error that made the root writable
    removed: bool | None = None  # the engine, asked on the way out, has no container of this run
    # the image's CUDA forward-compatibility libcuda files, with their notes; None: not read
    compat: tuple[CompatLibrary, ...] | None = field(default=None, metadata=OPTIONAL)


@record
class SmokeDocument:
    """The report's `smoke`: where it ran and why, the outcome, and the evidence."""

    mode: Mode = "not-run"
    image: str | None = None
    python: str | None = None
    gpu_expected: bool = False
    gpu_expected_reason: str | None = None
    gpu_request: tuple[str, ...] | None = None
    gpu_refused: str | None = None
    fallback: str | None = None
    status: str | None = None  # one word: pass, or the most important failure
    exit_code: int | None = None
    timed_out: bool = False
    duration_s: float | None = None
    paddle: SmokePaddle | None = None
    runs: tuple[SmokeRun, ...] = ()
    warnings: tuple[PaddleWarning, ...] = ()
    nvml: NvmlSummary | None = None
    log_tail: tuple[str, ...] = ()
    container: ContainerInfo | None = None
    loaded_libraries: tuple[Mapped, ...] | None = field(
        default=None,
        metadata={
            "description": "The NVIDIA libraries the smoke process mapped (/proc/self/maps after"
            " its first step); null when the workload reported none."
        },
    )
    loaded_when: str | None = None
    driver_check: DriverCheck | None = None
    problem: str | None = None  # why the workload's line could not be read
    error: WorkloadError | None = None

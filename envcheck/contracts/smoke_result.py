"""The smoke workload's one JSON line (`envcheck-smoke/1`), as records: its schema.

The workload (envcheck/smoke/workload/, standard library only, Python 3.8) writes plain dicts; the
host reads the line back with the one reader of every document envcheck reads,
`envcheck.contracts.facts.from_dict`, strictly (`numbers_as_text=False`), in
`envcheck.smoke.parse.validate`, before any rule sees it. The field order is the order the
workload writes the keys in: the parts the report carries as they are (a run's known answers, its
`compare_cpu`, an error) are written back in that order.

Field metadata (see envcheck/contracts/facts.py): `optional`, a key the workload does not always
write; `unless_error`, a key that is there whenever the `error` beside it is null (a result's
build, a run's figures) and may be missing after a crash.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from envcheck.contracts.facts import OPTIONAL, LibraryOrigin
from envcheck.contracts.record import field, record

# Where a library the smoke process mapped came from: the probe's origins, a CUDA compat folder
# or the active conda environment. The workload spells them from its own standalone copy
# (envcheck/smoke/workload/protocol.py), which the doctor's static tier never imports: a test
# keeps the two equal.
LibrarySource = Literal[LibraryOrigin, "compat", "conda"]
UNLESS_ERROR: Final = {"unless_error": True}


def _figure() -> Any:
    """A key there whenever the `error` beside it is null."""
    return field(default=None, metadata=UNLESS_ERROR)


@record
class PaddleWarning:
    """One of Paddle's recognised log lines (the protocol's `WARNING_PATTERNS`)."""

    kind: str
    text: str


@record
class ThreadError:
    """An exception that ended a thread of the workload (the DataLoader's reader)."""

    thread: str
    type: str
    message: str


@record
class WorkloadError:
    """An exception that ended the smoke (the result's `error`) or one run (a run's `error`)."""

    phase: str | None = field(metadata=OPTIONAL)  # import, setup, check, train, data, export, ...
    type: str
    message: str
    traceback: str | None = field(metadata=OPTIONAL)
    thread_errors: tuple[ThreadError, ...] | None = field(metadata=OPTIONAL)  # phase "data"


@record
class KnownAnswer:
    """One op computed on the run's device and with numpy from the same inputs."""

    dtype: str | None = field(metadata=OPTIONAL)  # float32, tf32, float16, bfloat16
    tolerance: float
    max_abs_diff: float | None
    ok: bool
    problem: str | None  # shape ..., non-finite, all-zero, mismatch
    op: str
    phase: str  # before / after training
    device: str


@record
class LossCheck:
    """The full-precision loss curve's red flags."""

    start: float | None
    non_finite: int
    zero_steps: int
    distinct: int


@record
class TrainWindow:
    """The training's span on the host's wall clock (the NVML witness's window)."""

    start: float
    end: float


@record
class Amp:
    enabled: bool
    dtype: str | None


@record
class CpuSkipped:
    """--compare-cpu where the run itself was on the CPU: nothing to compare."""

    skipped: str
    steps_per_s: None = None
    speedup: None = None
    error: None = None


@record
class CpuCompared:
    """--compare-cpu: the same steps on the CPU of the same container."""

    steps_per_s: float | None
    first_step_s: float
    loss_start: float | None
    loss_end: float | None
    speedup: float | None
    skipped: None = None
    error: None = None


@record
class ExtraFailed:
    """--compare-cpu or --export failed on its own; the training's figures stand."""

    error: WorkloadError


@record
class ExportDone:
    """--export: the trained model saved with `paddle.jit`, served with `paddle.inference`."""

    format: str
    inference_gpu: bool
    max_abs_diff: float
    argmax_agreement: float
    match: bool
    seconds: float
    error: None = None


CompareCpu = CpuSkipped | CpuCompared | ExtraFailed
Export = ExportDone | ExtraFailed


@record
class RunResult:
    """One device's run: its figures are all there when its `error` is null."""

    device_requested: str
    device_used: str
    device_error: str | None
    error: WorkloadError | None
    steps: int | None = _figure()
    batch_size: int | None = _figure()
    param_places: dict[str, str] | None = _figure()
    logits_place: str | None = _figure()
    loss_start: float | None = _figure()
    loss_end: float | None = _figure()
    losses: tuple[float | None, ...] | None = _figure()
    first_step_s: float | None = _figure()
    steps_per_s: float | None = _figure()
    peak_gpu_mem_bytes: int | None = _figure()
    amp: Amp | None = _figure()
    checks: tuple[KnownAnswer, ...] | None = _figure()
    loss_check: LossCheck | None = _figure()
    train_window: TrainWindow | None = _figure()
    logits_dtype: str | None = None
    accuracy: float | None = None
    samples_per_s: float | None = None
    peak_gpu_reserved_bytes: int | None = None
    checks_s: float | None = None
    compare_cpu: CompareCpu | None = None
    export: Export | None = None


@record
class LoadedLibrary:
    """An NVIDIA library in the process's /proc/self/maps, and its own version call's answer."""

    name: str
    path: str
    source: LibrarySource
    call: str | None
    raw: int | tuple[int, ...] | None
    call_error: str | None


@record
class ShmSpace:
    size_bytes: int
    free_bytes: int


@record
class DriverCheck:
    """nvmlInit inside the process: the driver's user space against its kernel module."""

    library: str
    init: int | None
    error: str | None
    driver_version: str | None


@record
class SmokeResult:
    """The workload's one JSON line: what the Paddle under test is and sees (all there when the
    result's `error` is null), and one run per device."""

    schema: str
    error: WorkloadError | None  # the smoke died before training (import, setup)
    runs: tuple[RunResult, ...]
    warnings: tuple[PaddleWarning, ...]
    paddle_version: str | None = _figure()
    compiled_with_cuda: bool | None = _figure()
    cuda_device_count: int | None = _figure()
    device_capabilities: tuple[str | None, ...] | None = _figure()  # "8.6" per GPU, or null
    default_device: str | None = _figure()
    env: dict[str, str | None] | None = _figure()
    python: str | None = None
    cuda_version: str | None = None
    cudnn_version: str | None = None
    cuda_device_count_error: str | None = None
    device_names: tuple[str | None, ...] | None = None
    uid: int | None = None
    pid: int | None = None
    import_s: float | None = None
    total_s: float | None = None
    shm: ShmSpace | None = None
    loaded_libraries: tuple[LoadedLibrary, ...] | None = None  # None: not reported
    loaded_when: str | None = None  # first-step, end
    driver_check: DriverCheck | None = None

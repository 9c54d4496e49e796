"""What the doctor's flags ask of the smoke run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO, TYPE_CHECKING

from envcheck.contracts.record import field, record

if TYPE_CHECKING:
    from envcheck.matrix.model import Matrix
    from envcheck.probe.endpoint import Endpoint


@record
class SmokeOptions:
    image: str | None = None  # --image REF (else the doctor's choice)
    in_process: bool = False  # --in-process: a subprocess of the target Python, no container
    python: str | None = None  # --python: the target interpreter (None: the current one)
    gpus: tuple[int, ...] | None = None  # --gpus 0,2 (None: every visible GPU)
    expect_gpu: bool = False  # --expect-gpu
    pull: bool = True  # --no-pull forbids pulling a missing image
    amp: bool = False
    compare_cpu: bool = False
    export: bool = False
    timeout: float = 300.0  # --smoke-timeout seconds, after which the container is killed
    steps: int = 60
    quiet: bool = False  # no progress display
    endpoint: Endpoint | None = None  # the engine the doctor probed (None: resolve it)
    # The matrix the doctor loaded (--matrix, ENVCHECK_MATRIX of the command's variables) and
    # chose the image with: a missing image's pull plans its mirrors and pin with this one
    # (None: the shipped matrix).
    matrix: Matrix | None = None
    # The command's stderr: the pull's progress, the sweep's removals (None: nowhere to say it).
    stderr: IO[str] | None = None
    # The command's variables (its `Environment.env`): the in-process run's, the owner key's
    # folder, the NVML sampler's driver root, the tests' script hook. Empty: none at all.
    variables: Mapping[str, str] = field(default_factory=dict)

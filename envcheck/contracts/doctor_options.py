"""What a doctor run judges and how (`envcheck doctor`'s choices, without its output flags): the
typed form `envcheck fix` builds to plan from the doctor and to verify with it, and the one the
`doctor` command builds from its own command line."""

from __future__ import annotations

from envcheck.contracts.record import record


@record
class DoctorOptions:
    python: str | None = None  # the interpreter whose Paddle is judged (None: the one meant)
    python_reason: str | None = None  # why `python` is judged, where a caller resolved it
    matrix: str | None = None  # a matrix folder, already resolved from the command's cwd
    paddle: str | None = None  # the release to choose the image for
    registry: str = "dockerhub"
    image: str | None = None  # the image to smoke in instead of the chosen one
    facts: str | None = None  # a saved host or report to judge instead of probing
    expect_gpu: bool = False
    smoke: bool = True
    in_process: bool = False  # the smoke in a subprocess of `python`, not in a container
    pull: bool = True  # a missing image may be pulled for the smoke
    gpus: str | None = None  # GPU indices as the user wrote them ("0,2")
    amp: bool = False
    compare_cpu: bool = False
    export: bool = False
    smoke_timeout: float = 300.0
    quiet: bool = False
    baseline: str | None = None
    strict_drift: bool = False
    host_paddle: bool = True  # False (--no-host-paddle): the smoke's image holds the Paddle

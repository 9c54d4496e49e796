"""Pure rules: (facts, matrix, image choice) -> findings. Nothing here probes or prints.

Each check is a small function with a stable id family, in `envcheck.verdict.rules` (one module per
layer). A check whose prerequisite is unknown (e.g. no driver answered) returns nothing rather
than guessing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from packaging.version import InvalidVersion, Version

from envcheck.contracts.facts import GpuFacts, HostFacts, unlisted_gpus, usable_gpus
from envcheck.contracts.findings import Finding
from envcheck.contracts.host_report import ImageChoice
from envcheck.contracts.record import record, replace
from envcheck.contracts.remedy import Remedy
from envcheck.image.assessment import gpu_compute_capability
from envcheck.matrix.model import Matrix
from envcheck.verdict.fixes import (
    NO_GPU_BUILD_YET,
    paddle_install,
    paddle_remedy,
    replace_cpu_build,
)
from envcheck.verdict.one_plan import settle
from envcheck.verdict.rules.archs import check_build_archs
from envcheck.verdict.rules.container import check_engine, check_image
from envcheck.verdict.rules.cuda import check_cuda_driver_api, check_cuda_libraries
from envcheck.verdict.rules.cuda_compat import check_cuda_compat
from envcheck.verdict.rules.dlopen_names import check_unversioned_cudnn
from envcheck.verdict.rules.driver import check_driver
from envcheck.verdict.rules.driver_floor import check_driver_floor
from envcheck.verdict.rules.env_vars import check_nvidia_visible_devices, check_visible_devices
from envcheck.verdict.rules.frameworks import check_frameworks
from envcheck.verdict.rules.gpu_health import check_gpu_health
from envcheck.verdict.rules.gpu_support import check_gpu_support
from envcheck.verdict.rules.gpus import check_expected_gpu, check_gpus
from envcheck.verdict.rules.installed import check_gpu_build_without_driver, check_installed_floor
from envcheck.verdict.rules.libraries import check_build_libraries, check_driver_api_loadable
from envcheck.verdict.rules.paddle import check_paddle
from envcheck.verdict.rules.wsl import check_wsl


@record
class Context:
    """What every rule reads: the host, the matrix, the chosen image and the command's asks."""

    host: HostFacts
    matrix: Matrix
    image: ImageChoice | None
    expect_gpu: bool = False
    needs_engine: bool = False  # the smoke will run in a container
    # The run's subject is an image (`--image`): what no image can do decides the verdict. Else
    # the installed build does, and the image for this host is advice.
    image_subject: bool = False
    saved: bool = False  # the facts are a saved document (`--facts`): no smoke can run here

    @property
    def installed_decides(self) -> bool:
        """The environment in front of us holds a readable Paddle build that can train here and
        no image is the subject: that build, not the newest release or its image, decides."""
        p = self.host.paddle
        if p.status != "ok" or self.image_subject:
            return False
        # a CPU build where NVIDIA GPUs are cannot train on them (paddle.cpu-build): what to
        # move to is then the question, and no image for this host is part of the answer
        gpu_build = bool(p.cuda) or p.package == "paddlepaddle-gpu"
        return gpu_build or not (self.gpus or unlisted_gpus(self.host))

    def about_another_release(self, release: str | None) -> bool:
        """A finding about `release` (the image's, or the newest) is advice, not the verdict:
        the installed build decides and is another release."""
        installed = self.host.paddle.version
        if not self.installed_decides or not installed or not release:
            return False
        try:
            return Version(installed).base_version != Version(release).base_version
        except InvalidVersion:
            return False

    @property
    def gpus(self) -> tuple[GpuFacts, ...]:
        """The GPUs the driver reports, each with its compute capability: the probe's, else the
        matrix's for its name (gpus.toml), as the image choice reads it. A saved report that
        names an RTX 3060 Ti without its CC is still judged against the build's archs."""
        return tuple(
            g
            if g.compute_capability is not None
            else replace(g, compute_capability=gpu_compute_capability(g, self.matrix))
            for g in usable_gpus(self.host)
        )

    @property
    def install_fix(self) -> Remedy:
        """The report's one Paddle install (GPU where a GPU is usable, else CPU), as a command."""
        if self.gpus or unlisted_gpus(self.host) or self.image is None or not self.image.reason:
            otherwise: Remedy | str = NO_GPU_BUILD_YET
        else:
            otherwise = f"no Paddle build of the matrix fits: {self.image.reason}"
        install = paddle_install(self.host, self.image)
        return paddle_remedy(self.host, self.image, install, otherwise)

    @property
    def gpu_build_fix(self) -> Remedy:
        """The GPU build the doctor chose, as a command, or why there is none yet."""
        return replace_cpu_build(self.host, self.image)


Check = Callable[[Context], Iterable[Finding]]


CHECKS: tuple[Check, ...] = (
    check_wsl,
    check_driver,
    check_gpu_support,
    check_driver_floor,
    check_gpus,
    check_gpu_health,
    check_cuda_driver_api,
    check_driver_api_loadable,
    check_cuda_libraries,
    check_cuda_compat,
    check_build_libraries,
    check_unversioned_cudnn,
    check_paddle,
    check_installed_floor,
    check_frameworks,
    check_gpu_build_without_driver,
    check_build_archs,
    check_visible_devices,
    check_nvidia_visible_devices,
    check_engine,
    check_image,
    check_expected_gpu,
)


def judge(ctx: Context) -> list[Finding]:
    return timed_judge(ctx, clock=lambda: 0.0)[0]


def timed_judge(ctx: Context, clock: Callable[[], float]) -> tuple[list[Finding], dict[str, float]]:
    """The findings, and the seconds `clock` measured around the check that made each (by
    finding id): a JUnit test case's time is its check's, never a made-up number. The clock
    comes from the command, so the rules stay pure."""
    found: list[Finding] = []
    seconds: dict[str, float] = {}
    for check in CHECKS:
        start = clock()
        made = list(check(ctx))
        took = clock() - start
        for finding in made:
            seconds[finding.id] = seconds.get(finding.id, 0.0) + took
        found += made
    return settle(_unreplaced(found)), seconds


def _unreplaced(found: list[Finding]) -> list[Finding]:
    """Without the symptoms a finding explains (`observed["replaces"]`): a GPU the driver branch
    dropped is that, not "no GPU" and "cuInit failed" besides; WSL is not a missing Linux driver."""
    replaced = {r for f in found if f.severity != "pass" for r in f.observed.get("replaces", ())}
    return [f for f in found if f.id not in replaced] if replaced else found

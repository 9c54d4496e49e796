"""Pure rules: (facts, matrix, image choice) -> findings. Nothing here probes or prints.

Each check is a small function with a stable id family, in `envcheck.verdict.rules` (one module per
layer). A check whose prerequisite is unknown (e.g. no driver answered) returns nothing rather
than guessing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from envcheck.contracts.facts import GpuFacts, HostFacts, unlisted_gpus, usable_gpus
from envcheck.contracts.findings import Finding
from envcheck.contracts.host_report import ImageChoice
from envcheck.contracts.record import record
from envcheck.contracts.remedy import Remedy
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
from envcheck.verdict.rules.dlopen_names import check_unversioned_cudnn
from envcheck.verdict.rules.driver import check_driver
from envcheck.verdict.rules.driver_floor import check_driver_floor
from envcheck.verdict.rules.env_vars import check_nvidia_visible_devices, check_visible_devices
from envcheck.verdict.rules.gpus import check_expected_gpu, check_gpus
from envcheck.verdict.rules.installed import check_gpu_build_without_driver, check_installed_floor
from envcheck.verdict.rules.libraries import check_build_libraries, check_driver_api_loadable
from envcheck.verdict.rules.paddle import check_paddle


@record
class Context:
    """What every rule reads: the host, the matrix, the chosen image and the command's asks."""

    host: HostFacts
    matrix: Matrix
    image: ImageChoice | None
    expect_gpu: bool = False
    needs_engine: bool = False  # the smoke will run in a container

    @property
    def gpus(self) -> tuple[GpuFacts, ...]:
        return usable_gpus(self.host)

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
    check_driver,
    check_driver_floor,
    check_gpus,
    check_cuda_driver_api,
    check_driver_api_loadable,
    check_cuda_libraries,
    check_build_libraries,
    check_unversioned_cudnn,
    check_paddle,
    check_installed_floor,
    check_gpu_build_without_driver,
    check_build_archs,
    check_visible_devices,
    check_nvidia_visible_devices,
    check_engine,
    check_image,
    check_expected_gpu,
)


def judge(ctx: Context) -> list[Finding]:
    return settle(finding for check in CHECKS for finding in check(ctx))

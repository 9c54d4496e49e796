"""The smoke image's CUDA forward-compatibility libcuda (read from its files before the smoke
started: envcheck/smoke/runner/image_compat.py), judged by its own ELF note against the host
driver as the host's is (envcheck/verdict/rules/cuda_compat.py). This generalises the CUDA 13.0
images' defect row (matrix/defects.toml), which the image choice still uses before an image is
pulled: once the image's files are read, its note decides, for any image.
"""

from __future__ import annotations

import posixpath

from envcheck.contracts.facts import CompatLibrary, HostFacts
from envcheck.contracts.findings import Finding, fail
from envcheck.contracts.remedy import Instruction, Remedy, steps
from envcheck.contracts.smoke_report import ContainerInfo
from envcheck.verdict.rules.cuda_compat import (
    ERROR_804,
    better_compat,
    compat_refusal,
    describe_compat,
)


def image_compat_findings(host: HostFacts, container: ContainerInfo | None) -> list[Finding]:
    driver = host.driver.version
    if container is None or not container.compat or not driver:
        return []
    found = []
    for lib in container.compat:
        if not lib.loaded or lib.error:
            continue
        what = f"the image's {describe_compat(lib).removeprefix('the ')}"
        refusal = compat_refusal(lib.note, lib.version, driver, host.driver.cuda)
        geforce = sorted({g.name or "?" for g in host.gpus if "GeForce" in (g.name or "")})
        if refusal:
            problem = (
                f"{refusal}: CUDA fails in the container (error 803) or Paddle silently runs on "
                "the CPU"
            )
        elif geforce:
            problem = (
                f"forward compatibility runs only on data-center GPUs, not on "
                f"{', '.join(geforce)}: CUDA error 804, '{ERROR_804}'"
            )
        else:
            continue
        found.append(
            fail(
                "image.compat-mismatch",
                f"{what} is on the image's LD_LIBRARY_PATH, but {problem}",
                fix=_fix(host, lib),
                layer="image",
                path=lib.path,
                version=lib.version,
                host_driver=driver,
            )
        )
    return found


def _fix(host: HostFacts, lib: CompatLibrary) -> Remedy:
    folder = posixpath.dirname(lib.path)
    cuda = host.driver.cuda or "?"
    better = better_compat(lib.note, host.driver.version or "")
    return steps(
        Instruction(
            f"use an image of a CUDA the host driver supports itself (CUDA {cuda} or older), "
            f"or start the container with {folder} (and the image's cuda-*/compat folder it "
            "links to) left out of LD_LIBRARY_PATH, so that the driver's own libcuda is loaded"
        ),
        Instruction(f"or use an image whose compat library's note lists {better}", alternative=True)
        if better
        else None,
    )

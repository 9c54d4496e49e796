"""Gather every fact about the host once: the only entry point the doctor needs.

The CUDA driver/library probe runs in a child process (a broken driver can hang or kill its
caller); it is started first, in a thread, so its ~20 ms spawn overlaps the in-process probes.
"""

from __future__ import annotations

import os
import threading

from envcheck.facts import CudaDriverFacts, EngineFacts, HostFacts, LibraryFacts
from envcheck.probe.environment import probe_env, probe_machine
from envcheck.probe.paddle_build import interpreter_paths, probe_paddle


def probe_host(python: str | None = None, *, engine: bool = True, timeout: float = 5.0) -> HostFacts:
    from envcheck.probe.cuda_libs import probe_cuda
    from envcheck.probe.nvml import probe_driver

    target, paths, path_error = interpreter_paths(python)
    native: dict[str, tuple[CudaDriverFacts, LibraryFacts, LibraryFacts]] = {}

    def _native() -> None:  # one child for libcuda, libcudart and libcudnn
        native["cuda"] = probe_cuda(_site_packages(paths), os.environ, timeout)

    worker = threading.Thread(target=_native, name="envcheck-cuda-probe", daemon=True)
    worker.start()
    driver, gpus = probe_driver()
    paddle = probe_paddle(target, None if path_error else paths)
    engine_facts = _probe_engine() if engine else EngineFacts()
    worker.join(timeout * 3)
    cuda_driver, cudart, cudnn = native.get("cuda") or (
        CudaDriverFacts(status="error", error="timeout", reason="the CUDA probe did not finish"),
        LibraryFacts(), LibraryFacts())
    return HostFacts(
        driver=driver,
        gpus=gpus,
        cuda_driver=cuda_driver,
        cuda_runtime=cudart,
        cudnn=cudnn,
        paddle=paddle,
        engine=engine_facts,
        env=probe_env(),
        machine=probe_machine(),
    )


def _probe_engine() -> EngineFacts:
    from envcheck.probe.engine import probe_engine

    return probe_engine()


def _site_packages(paths: list[str]) -> list[str]:
    return [p for p in paths if p.endswith(("site-packages", "dist-packages")) and os.path.isdir(p)]

"""Gather every fact about the host once: the only entry point the doctor needs.

The CUDA driver/library probe runs in a child process (a broken driver can hang or kill its
caller). `start_host_probe` launches it before anything else, in a thread, so the child's
start-up runs on the other core while this process imports and reads the matrix.
"""

from __future__ import annotations

import os
import threading

from envcheck.facts import CudaDriverFacts, EngineFacts, HostFacts, LibraryFacts
from envcheck.probe.environment import probe_env, probe_machine
from envcheck.probe.paddle_build import interpreter_paths, probe_paddle

_NativeFacts = tuple[CudaDriverFacts, LibraryFacts, LibraryFacts]


class HostProbe:
    """A probe in flight: the CUDA child is running; `facts()` does the rest and joins it."""

    def __init__(self, python: str | None, *, engine: bool, timeout: float) -> None:
        self._target, self._paths, self._path_error = interpreter_paths(python)
        self._engine, self._timeout = engine, timeout
        self._native: list[_NativeFacts] = []
        self._worker = threading.Thread(target=self._probe_native, name="envcheck-cuda-probe", daemon=True)
        self._worker.start()

    def _probe_native(self) -> None:  # one child for libcuda, libcudart and libcudnn
        from envcheck.probe.cuda_libs import probe_cuda

        self._native.append(probe_cuda(_site_packages(self._paths), os.environ, self._timeout))

    def settle(self) -> None:
        """Wait for the CUDA child to end (it is killed at its own timeout)."""
        self._worker.join(self._timeout * 3)

    def facts(self) -> HostFacts:
        from envcheck.probe.nvml import probe_driver

        driver, gpus = probe_driver()
        paddle = probe_paddle(self._target, None if self._path_error else self._paths)
        engine = _probe_engine() if self._engine else EngineFacts()
        self.settle()
        cuda_driver, cudart, cudnn = self._native[0] if self._native else (
            CudaDriverFacts(status="error", error="timeout", reason="the CUDA probe did not finish"),
            LibraryFacts(), LibraryFacts())
        return HostFacts(driver=driver, gpus=gpus, cuda_driver=cuda_driver, cuda_runtime=cudart,
                         cudnn=cudnn, paddle=paddle, engine=engine, env=probe_env(), machine=probe_machine())


def start_host_probe(python: str | None = None, *, engine: bool = True, timeout: float = 5.0) -> HostProbe:
    return HostProbe(python, engine=engine, timeout=timeout)


def probe_host(python: str | None = None, *, engine: bool = True, timeout: float = 5.0) -> HostFacts:
    return start_host_probe(python, engine=engine, timeout=timeout).facts()


def _probe_engine() -> EngineFacts:
    from envcheck.probe.engine import probe_engine

    return probe_engine()


def _site_packages(paths: list[str]) -> list[str]:
    return [p for p in paths if p.endswith(("site-packages", "dist-packages")) and os.path.isdir(p)]

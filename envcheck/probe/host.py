"""Gather every fact about the host once: the only entry point the doctor needs.

The CUDA driver/library probe runs in a child process (a broken driver can hang or kill its
caller). `start_host_probe` launches it before anything else, in a worker thread, so the child's
start-up runs on the other core while this process imports and reads the matrix.
"""

from __future__ import annotations

import os
from concurrent.futures import Future, ThreadPoolExecutor, wait
from concurrent.futures import TimeoutError as FutureTimeout

from envcheck.facts import CudaDriverFacts, EngineFacts, HostFacts, LibraryFacts
from envcheck.probe.endpoint import Endpoint
from envcheck.probe.environment import probe_env, probe_machine
from envcheck.probe.interpreter import Interpreter, current_interpreter
from envcheck.probe.paddle_build import probe_paddle

_NativeFacts = tuple[CudaDriverFacts, LibraryFacts, LibraryFacts]


class HostProbe:
    """A probe in flight: the CUDA child is running; `facts()` does the rest and joins it.

    The child is driven from a worker thread whose future re-raises: a bug in the probe is a bug
    (exit 3), never mistaken for a driver that did not answer.
    """

    def __init__(self, target: Interpreter, *, engine: Endpoint | None, timeout: float) -> None:
        self.target = target
        self._engine, self._timeout = engine, timeout
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="envcheck-cuda-probe")
        self._native: Future[_NativeFacts] = self._pool.submit(self._probe_native)
        self._pool.shutdown(wait=False)

    def _probe_native(self) -> _NativeFacts:  # one child for libcuda, libcudart and libcudnn
        from envcheck.probe.cuda_libs import probe_cuda

        return probe_cuda(self.target.site_packages, os.environ, self._timeout)

    def settle(self) -> None:
        """Wait for the CUDA child to end (it is killed at its own timeout); never raises."""
        wait([self._native], self._timeout * 3)

    def facts(self) -> HostFacts:
        from envcheck.probe.nvml import probe_driver

        driver, gpus = probe_driver()
        paddle = probe_paddle(self.target)
        engine = _probe_engine(self._engine) if self._engine else EngineFacts()
        try:
            cuda_driver, cudart, cudnn = self._native.result(self._timeout * 3)
        except FutureTimeout:
            cuda_driver, cudart, cudnn = (
                CudaDriverFacts(
                    status="error", error="timeout", reason="the CUDA probe did not finish"
                ),
                LibraryFacts(),
                LibraryFacts(),
            )
        return HostFacts(
            driver=driver,
            gpus=gpus,
            cuda_driver=cuda_driver,
            cuda_runtime=cudart,
            cudnn=cudnn,
            paddle=paddle,
            engine=engine,
            env=probe_env(),
            machine=probe_machine(),
        )


def start_host_probe(
    target: Interpreter | None = None, *, engine: Endpoint | None = None, timeout: float = 5.0
) -> HostProbe:
    """`engine`: the resolved endpoint to read (None: the engine is not probed)."""
    return HostProbe(target or current_interpreter(), engine=engine, timeout=timeout)


def probe_host(
    target: Interpreter | None = None, *, engine: Endpoint | None = None, timeout: float = 5.0
) -> HostFacts:
    return start_host_probe(target, engine=engine, timeout=timeout).facts()


def _probe_engine(endpoint: Endpoint) -> EngineFacts:
    from envcheck.probe.engine import probe_engine

    return probe_engine(endpoint)

"""Gather every fact about the host once: the only entry point the doctor needs.

The slowest probe is the driver's own initialisation (`cuInit`: ~0.2 s on an H100), so the
probes overlap instead of adding up. `HostProbe(env)` starts the CUDA driver child at
once, `start_nvml()` the NVML probe; `start()` adds the CUDA library search (with a child of its
own, so that a wedged cuInit never hides the libraries), the engine probe and the Paddle build
read; `facts()` waits for the driver child last. Each child runs in its own process group with
a deadline (a broken driver can hang or kill its caller); no CUDA library is loaded in this
process.

The command's entry point (envcheck/entry.py) starts the driver child before it imports
anything else (envcheck/probe/early.py), so that a `doctor` that will probe has it on the way
while the interpreter imports the rest; the command's probe `adopt()`s it (or starts its own).

This module imports only the standard library and `cuda_spawn` at start-up: everything else is
imported by the work that needs it, once the child is on its way.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from envcheck.probe import early
from envcheck.probe.cuda_spawn import CUINIT_BEGINS, TIMEOUT_S, Child, start_cuda_child

if TYPE_CHECKING:
    from envcheck.contracts.facts import (
        DriverFacts,
        GpuFacts,
        HostFacts,
        LibraryFacts,
        OpenedLibrary,
        PaddleFacts,
    )
    from envcheck.probe.endpoint import Endpoint
    from envcheck.probe.interpreter import Interpreter

    Libraries = tuple[LibraryFacts, LibraryFacts, tuple[OpenedLibrary, ...]]

T = TypeVar("T")
_HEAD_START_S = 1.0  # the longest the library and engine probes let the driver child go first


class _Task(threading.Thread, Generic[T]):
    """One probe on a thread of its own; `result()` returns its value or re-raises its error: a
    bug in a probe is a bug (exit 3), never mistaken for a driver that did not answer."""

    def __init__(self, name: str, work: Callable[[], T]) -> None:
        super().__init__(name=f"envcheck-probe-{name}", daemon=True)
        self._work = work
        self._value: T | None = None
        self._error: BaseException | None = None
        self.start()

    def run(self) -> None:
        try:
            self._value = self._work()
        except BaseException as e:  # noqa: BLE001 - handed to the caller by result()
            self._error = e

    def result(self, timeout: float | None = None) -> T:
        self.join(timeout)
        if self.is_alive():
            raise TimeoutError(self.name)
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]  # set by run() when no error


class HostProbe:
    """A probe in flight: the CUDA driver child from construction, NVML from `start_nvml()`, the
    rest from `start()`.

    The probes' modules are imported by the caller's thread before their work is handed to a
    thread of its own, which then only calls: two threads importing at once raced inside
    importlib (`NameError: name 'sys' is not defined`, one run in 40 on a busy machine)."""

    def __init__(
        self,
        env: Mapping[str, str],
        *,
        timeout: float = TIMEOUT_S,
        driver: Child | str | None = None,
    ) -> None:
        """`env`: the command's variables (the children's, and those reported); `driver`: the
        driver child already started on them (envcheck/probe/early.py), else one is."""
        self.env = env
        self._timeout = timeout
        self._driver: Child | str = (
            start_cuda_child({"driver": True}, env, timeout) if driver is None else driver
        )
        self._nvml: _Task[tuple[DriverFacts, tuple[GpuFacts, ...]]] | None = None
        self.target: Interpreter | None = None

    def start_nvml(self) -> HostProbe:
        """Run the NVML probe (once) while the driver initialises."""
        if self._nvml is None:
            from envcheck.probe import _cuda_child, nvml  # noqa: F401 - see the class

            if nvml.load_nvml_library(self.env):  # no driver: the probe never imports pynvml
                try:
                    import pynvml  # noqa: F401 - a broken one is the NVML probe's to report
                except ImportError:
                    pass
            self._nvml = _Task("nvml", lambda: nvml.probe_driver(self.env))
        return self

    def start(self, target: Interpreter, *, engine: Endpoint | None) -> HostProbe:
        """Run every other probe while the driver initialises; `engine`: the resolved endpoint
        to read (None: the engine is not probed)."""
        from envcheck.contracts.facts import EngineFacts
        from envcheck.probe import cuda_libs, paddle_build
        from envcheck.probe import engine as engine_probe  # see the class

        def probe_engine() -> EngineFacts:
            if engine is None:
                return EngineFacts()
            return self._after_cuinit_begins(engine_probe.probe_engine, engine)

        if engine is not None and engine_probe.uses_sdk(engine):
            engine_probe.import_sdk()
        self.start_nvml()
        self.target = target

        def probe_libraries() -> tuple[PaddleFacts, Libraries]:
            # The build first (its version file, read as text): a GPU build's other libraries
            # are opened too; a CPU build opens none of them.
            paddle = paddle_build.probe_paddle(target)
            gpu_build = paddle.status == "ok" and bool(paddle.cuda)
            return paddle, self._after_cuinit_begins(
                lambda: cuda_libs.probe_cuda_libraries(
                    target.site_packages, self.env, self._timeout, opens=gpu_build
                )
            )

        self._libraries = _Task("libraries", probe_libraries)
        self._engine = _Task("engine", probe_engine)
        return self

    def _after_cuinit_begins(self, probe: Callable[..., T], *args: Any) -> T:
        """`probe(*args)` once the driver child calls cuInit (or ended, or had its head start):
        its start-up gets the CPU before `ldconfig`, the library child and the engine's answers
        (on two busy cores they delayed its cuInit by ~0.1 s); they run while cuInit does."""
        if isinstance(self._driver, Child):
            self._driver.wait_for(CUINIT_BEGINS, _HEAD_START_S)
        return probe(*args)

    def settle(self) -> None:
        """For a caller that gives up before `facts()`: stop and reap the driver child now, let
        NVML shut down and the library child end (killed at its deadline). Never raises."""
        if isinstance(self._driver, Child):
            self._driver.stop()
        if self._nvml is not None:
            self._nvml.join(self._timeout)
        if self.target is not None:
            self._libraries.join(self._timeout * 3)

    def facts(self) -> HostFacts:
        from envcheck.contracts.facts import HostFacts, LibraryFacts
        from envcheck.probe.cuda_compat import probe_cuda_compat
        from envcheck.probe.cuda_driver import driver_facts, finish_cuda_child
        from envcheck.probe.env_vars import probe_env, probe_machine
        from envcheck.probe.nvidia_wheels import probe_nvidia_wheels
        from envcheck.probe.paddle_build import probe_paddle
        from envcheck.probe.wsl import probe_wsl

        assert self.target is not None and self._nvml is not None, "start() the probe first"
        driver, gpus = self._nvml.result()
        engine = self._engine.result()
        opened: tuple[OpenedLibrary, ...] = ()
        try:
            paddle, (cudart, cudnn, opened) = self._libraries.result(self._timeout * 3)
        except TimeoutError:
            paddle = probe_paddle(self.target)
            cudart = cudnn = LibraryFacts(reason="the CUDA library probe did not finish")
        cuda_driver = driver_facts(finish_cuda_child(self._driver))  # the slowest, waited last
        cuda_compat = probe_cuda_compat(self.env, cuda_driver.library)
        return HostFacts(
            driver=driver,
            gpus=gpus,
            cuda_driver=cuda_driver,
            cuda_runtime=cudart,
            cudnn=cudnn,
            opened_libraries=opened,
            paddle=paddle,
            engine=engine,
            env=probe_env(self.env),
            machine=probe_machine(),
            wsl=probe_wsl(self.env),
            nvidia_wheels=probe_nvidia_wheels(self.target.site_packages),
            cuda_compat=cuda_compat,
        )


def adopt(env: Mapping[str, str]) -> HostProbe:
    """A probe of the driver child envcheck.entry started early on these very variables, else
    of a new one on them; its NVML probe running."""
    return HostProbe(env, driver=early.take(env)).start_nvml()


def start_host_probe(
    env: Mapping[str, str],
    target: Interpreter | None = None,
    *,
    engine: Endpoint | None = None,
    timeout: float = TIMEOUT_S,
) -> HostProbe:
    """`env`: the command's variables; `engine`: the resolved endpoint to read (None: the engine
    is not probed)."""
    from envcheck.probe.interpreter import current_interpreter

    return HostProbe(env, timeout=timeout).start(target or current_interpreter(), engine=engine)


def probe_host(
    env: Mapping[str, str],
    target: Interpreter | None = None,
    *,
    engine: Endpoint | None = None,
    timeout: float = TIMEOUT_S,
) -> HostFacts:
    return start_host_probe(env, target, engine=engine, timeout=timeout).facts()

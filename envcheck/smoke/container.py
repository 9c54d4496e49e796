"""The smoke container: locked down, bounded in time and output, and always removed.

`SmokeContainer` is a context manager in the manner of cibuildwheel's `OCIContainer`
(https://github.com/pypa/cibuildwheel/blob/main/cibuildwheel/oci_container.py): whatever happens
inside the `with` (success, failure, timeout, Ctrl-C, SIGTERM), `__exit__` force-removes the
container; a signal during `create` is held until the handle is kept (`envcheck.signals`), and a
create that failed midway is looked up by its name, which is its run id. Containers left by a run
that died harder than that (SIGKILL, power loss) are swept before each new one — only those
`envcheck.smoke.ownership` proves are ours, stopped, past a grace period and abandoned by their
owner; never a running one, never a volume — and each removal is printed on stderr.

The workload runs as `python /envcheck/workload.py ARGS` with: the script bind-mounted read-only,
no network, a read-only root file system with a small tmpfs on /tmp, uid 1000, no new privileges,
every capability dropped, memory/pids/shm limits, and the GPUs requested with `device_requests`
(the SDK's `--gpus`). stdout and stderr are read from the attach stream as they come, stdout up to
a bound; past the timeout or the bound the container is killed.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from envcheck import activity, signals
from envcheck.docker_adapter import LABEL, translate_errors
from envcheck.errors import EnvcheckError
from envcheck.smoke import ownership
from envcheck.smoke.ownership import DEADLINE_LABEL, MARK_LABEL, OWNER_LABEL
from envcheck.smoke.parse import OutputCollector, RawRun
from envcheck.smoke.protocol import PLACED_AS, PROTOCOL

if TYPE_CHECKING:
    import docker
    from docker.models.containers import Container
    from typing_extensions import Self

SCRIPT_TARGET = "/envcheck/workload.py"
PROTOCOL_TARGET = f"/envcheck/{PLACED_AS}"  # beside the workload, which imports it
SWEEP_GRACE_S = 30.0  # past the smoke's timeout, before its owner stops waiting for it
KILL_WAIT_S = 10.0


@dataclass(frozen=True)
class Limits:
    """Resource bounds. Memory is generous: a CUDA process maps GBs of cuDNN/cuBLAS."""

    memory: str = "8g"
    pids: int = 1024  # OpenMP starts a thread per core, and threads count as pids
    shm: str = "256m"
    tmpfs: str = "256m"  # /tmp: HOME, the --export model (~3 MB), Paddle's caches
    user: str = "1000:1000"


@dataclass(frozen=True)
class ContainerSpec:
    image: str
    args: tuple[str, ...]  # the workload's arguments
    script: Path  # host file, mounted read-only at SCRIPT_TARGET
    timeout: float
    gpu_ids: tuple[str, ...] | None = None  # None: no GPU request; ("all",): every GPU
    environment: Mapping[str, str] = field(default_factory=dict)
    binds: tuple[
        tuple[str, str], ...
    ] = ()  # more (host path, target) read-only binds: tests' fake driver
    limits: Limits = field(default_factory=Limits)
    read_only: bool = (
        True  # False only when an NVIDIA hook must write the root (hook_needs_writable_root)
    )


BASE_ENVIRONMENT = {
    "HOME": "/tmp",  # uid 1000 may have no home, and / is read-only
    "TMPDIR": "/tmp",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONUNBUFFERED": "1",  # the log arrives live, so a killed run still shows its last lines
    # CUDA numbers devices fastest-first by default; PCI order matches NVML and nvidia-smi:
    # https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#env-vars
    "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
}


class SmokeContainer:
    """`with SmokeContainer(client, spec) as box: raw = box.run()` — removed on the way out."""

    def __init__(self, client: docker.DockerClient, spec: ContainerSpec) -> None:
        self.client = client
        self.spec = spec
        self.run_id = uuid.uuid4().hex[:12]
        self.container: Container | None = None
        self.swept: list[str] = []

    def __enter__(self) -> Self:
        activity.phase(f"creating the smoke container from {self.spec.image}")
        self.swept = sweep_leftovers(self.client)
        try:
            with (
                signals.deferred(),
                translate_errors(f"creating the smoke container from {self.spec.image}"),
            ):
                self.container = self.client.containers.create(
                    **create_kwargs(self.spec, self.run_id)
                )
        except BaseException:
            self._remove(
                quiet=True
            )  # a timeout or a signal may have cut the answer, not the create
            raise
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        activity.phase("removing the smoke container")
        self._remove(quiet=t is not None)

    def _remove(self, quiet: bool) -> None:
        container = self.container or _by_name(self.client, ownership.container_name(self.run_id))
        if container is not None:
            remove(container, quiet=quiet)

    def run(self, on_start: Callable[[int | None], None] | None = None) -> RawRun:
        """Start, stream the output until exit, timeout or overflow; the container's verdict."""
        assert self.container is not None, "use SmokeContainer as a context manager"
        container, collector, attention = self.container, OutputCollector(), threading.Event()
        failures: list[Exception] = []  # a bug in the reader thread, raised here (exit 3)
        with translate_errors("attaching to the smoke container"):
            stream = container.attach(stdout=True, stderr=True, stream=True, logs=True, demux=True)
        reader = threading.Thread(
            target=_pump,
            args=(stream, collector, attention, failures, activity.LineSplitter()),
            name="envcheck-smoke-io",
            daemon=True,
        )
        reader.start()
        started = time.monotonic()
        try:
            with signals.unwind_on_signals(), translate_errors("starting the smoke container"):
                activity.phase("starting the smoke container")
                container.start()
                activity.phase("smoke: importing Paddle in the container")
                if on_start is not None:
                    on_start(_host_pid(container))
                    activity.detail("the NVML witness samples the GPUs while it runs")
                done = attention.wait(
                    timeout=max(0.0, started + self.spec.timeout - time.monotonic())
                )
                if not done or collector.overflow.is_set():
                    _kill(container)
                reader.join(timeout=KILL_WAIT_S)  # the stream ends with the container
                exit_code = _exit_code(container)
        finally:
            stream.close()
        if failures:
            raise failures[0]
        return collector.raw_run(
            exit_code,
            started,
            timed_out=not done,
            oom_killed=exit_code == 137 and done and _oom_killed(container),
            # exit_code None without a timeout: the container vanished under us
            extra={"container": container.short_id, "run_id": self.run_id, "swept": self.swept},
        )


def create_kwargs(spec: ContainerSpec, run_id: str) -> dict[str, Any]:
    """The `containers.create` arguments: every restriction of the smoke in one place."""
    from docker.types import DeviceRequest, LogConfig, Mount

    limits = spec.limits
    kwargs: dict[str, Any] = {
        "image": spec.image,
        "name": ownership.container_name(run_id),
        "entrypoint": ["python", SCRIPT_TARGET],  # no image entrypoint banner on our stdout
        "command": list(spec.args),
        "labels": labels(run_id, spec.timeout),
        "environment": {**BASE_ENVIRONMENT, **spec.environment},
        "user": limits.user,
        "working_dir": "/tmp",
        "network_mode": "none",
        "read_only": spec.read_only,
        "tmpfs": {"/tmp": f"rw,nosuid,nodev,size={limits.tmpfs},mode=1777"},
        "security_opt": ["no-new-privileges"],
        "cap_drop": ["ALL"],
        "mem_limit": limits.memory,
        "memswap_limit": limits.memory,  # no swap: an OOM is reported, not crawled through
        "pids_limit": limits.pids,
        "shm_size": limits.shm,
        "mounts": [
            Mount(target, source, type="bind", read_only=True)
            for source, target in (
                (str(spec.script.resolve()), SCRIPT_TARGET),
                (str(PROTOCOL), PROTOCOL_TARGET),
                *spec.binds,
            )
        ],
        # The engine keeps its own copy of the output; megabytes of it must not fill the disk.
        "log_config": LogConfig(type="json-file", config={"max-size": "1m", "max-file": "1"}),
    }
    if spec.gpu_ids is not None:
        every = spec.gpu_ids == ("all",)
        kwargs["device_requests"] = [
            DeviceRequest(
                count=-1 if every else None,
                device_ids=None if every else list(spec.gpu_ids),
                capabilities=[["gpu"]],
            )
        ]
    return kwargs


def describe(spec: ContainerSpec) -> dict[str, Any]:
    """The restrictions, for the report."""
    return {
        "network": "none",
        "read_only_rootfs": spec.read_only,
        "no_new_privileges": True,
        "cap_drop": ["ALL"],
        "timeout_s": spec.timeout,
        "gpu_request": list(spec.gpu_ids) if spec.gpu_ids is not None else None,
        **asdict(spec.limits),
    }


def hook_needs_writable_root(message: str) -> bool:
    """Did an NVIDIA OCI hook fail because the container's root is read-only? Some toolkit
    versions write into it at create time (ldcache, application profiles):
    https://github.com/NVIDIA/nvidia-container-toolkit/issues/2026,
    https://github.com/kserve/kserve/pull/5711"""
    text = message.lower()
    return "read-only file system" in text and "hook" in text


def labels(run_id: str, timeout: float, now: float | None = None) -> dict[str, str]:
    now = time.time() if now is None else now
    owner = f"{socket.gethostname()}:{os.getpid()}"
    deadline = str(int(now + timeout + SWEEP_GRACE_S))
    return {
        LABEL: run_id,
        OWNER_LABEL: owner,
        DEADLINE_LABEL: deadline,
        MARK_LABEL: ownership.mark(ownership.owner_key(), run_id, owner, deadline),
    }


def sweep_leftovers(
    client: docker.DockerClient, grace: float = ownership.LEFTOVER_GRACE_S, now: float | None = None
) -> list[str]:
    """Remove the stopped containers crashed envcheck runs left (see `ownership.leftover_reason`),
    printing each on stderr; returns their short ids."""
    with translate_errors("listing leftover smoke containers"):
        found = client.containers.list(
            all=True,
            ignore_removed=True,
            filters={"label": MARK_LABEL, "status": list(ownership.SWEPT_STATES)},
        )
    removed = []
    host, now = socket.gethostname(), time.time() if now is None else now
    for container in found:
        reason = ownership.leftover_reason(
            container.attrs,
            key=ownership.owner_key(),
            now=now,
            hostname=host,
            alive=_pid_alive,
            grace=grace,
        )
        if reason is not None and remove(container, quiet=True, volumes=False):
            removed.append(container.short_id)
            print(
                f"envcheck: removed leftover smoke container {container.short_id} "
                f"({container.name}: {reason})",
                file=sys.stderr,
            )
    return removed


def remove(container: Container, quiet: bool = False, volumes: bool = True) -> bool:
    """Force-remove (kills it if running); True when this call removed it. Already gone is fine.
    `quiet`: never raise, because another exception is on its way out and must not be masked.
    `volumes`: also its anonymous volumes — for a container this run made; a sweep keeps them."""
    import docker.errors

    try:
        with translate_errors(f"removing smoke container {container.short_id}"):
            try:
                container.remove(force=True, v=volumes)
            except docker.errors.NotFound:
                return False
            except docker.errors.APIError as e:
                if e.status_code != 409:  # 409: removal already in progress
                    raise
                return False
    except EnvcheckError:
        if not quiet:
            raise
        return False
    return True


def _by_name(client: docker.DockerClient, name: str) -> Container | None:
    """The container called `name`, if the engine has one (after a create whose answer we lost)."""
    try:
        with translate_errors(f"looking up smoke container {name}"):
            found = client.containers.list(all=True, sparse=True, filters={"name": f"^/{name}$"})
    except EnvcheckError:
        return None
    return found[0] if found else None


def _pump(
    stream: Iterator[tuple[bytes | None, bytes | None]],
    sink: OutputCollector,
    attention: threading.Event,
    failures: list[Exception],
    lines: activity.LineSplitter,
) -> None:
    """Read to the end of the stream (the workload's log lines to the activity display too). Past the stdout bound keep draining (the collector drops
    it): an attach stream nobody reads blocks dockerd, and then even `kill` hangs (measured).
    The stream breaking is its end; any other exception is a bug, handed to the main thread."""
    import requests.exceptions
    import urllib3.exceptions

    try:
        for out, err in _frames(
            stream,
            (
                OSError,
                ValueError,
                requests.exceptions.RequestException,
                urllib3.exceptions.HTTPError,
            ),
        ):
            if out:
                sink.feed_stdout(out)
                if sink.overflow.is_set():
                    attention.set()  # the main thread kills the container
            if err:
                sink.feed_stderr(err)
                lines.feed(err)
    except Exception as e:  # noqa: BLE001 - not swallowed: re-raised by run() in the main thread
        failures.append(e)
    finally:
        attention.set()


def _frames(
    stream: Iterator[tuple[bytes | None, bytes | None]], ends: tuple[type[Exception], ...]
) -> Iterator[tuple[bytes | None, bytes | None]]:
    """The stream's frames until it ends or breaks (`ends`: the socket closed under us when the
    container was killed, or the stream was closed) — only the read is guarded."""
    while True:
        try:
            frame = next(stream)
        except StopIteration:
            return
        except ends:
            return
        yield frame


def _host_pid(container: Container) -> int | None:
    container.reload()
    pid = container.attrs.get("State", {}).get("Pid")
    return int(pid) if pid else None


def _kill(container: Container) -> None:
    import docker.errors

    with suppress(docker.errors.APIError):  # 409: it exited on its own meanwhile
        container.kill()


def _exit_code(container: Container) -> int | None:
    """None when it is still not dead after a kill (removal will force it), or when it is gone:
    something else removed it mid-run (another tool's `docker rm -f`, a `container prune`)."""
    import docker.errors
    import requests.exceptions

    try:
        return int(container.wait(timeout=KILL_WAIT_S)["StatusCode"])
    except (requests.exceptions.RequestException, docker.errors.NotFound):
        return None


def _oom_killed(container: Container) -> bool:
    import docker.errors
    import requests.exceptions

    try:
        container.reload()
    except (requests.exceptions.RequestException, docker.errors.NotFound):
        return False  # gone under us, as in _exit_code: the crash finding still says 137
    return bool(container.attrs.get("State", {}).get("OOMKilled"))


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True

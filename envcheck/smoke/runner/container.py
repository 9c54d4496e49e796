"""The smoke container: created, run and always removed, through the docker SDK.

`SmokeContainer` is a context manager in the manner of cibuildwheel's `OCIContainer`
(https://github.com/pypa/cibuildwheel/blob/main/cibuildwheel/oci_container.py): whatever happens
inside the `with` (success, failure, timeout, Ctrl-C, SIGTERM), `__exit__` force-removes the
container; a signal during `create` is held until the handle is kept (`envcheck.edges.signals`), and
a create that failed midway is looked up by its name, which is its run id. Containers left by a run
that died harder than that (SIGKILL, power loss) are swept before each new one — only those
`envcheck.smoke.runner.ownership` proves are ours, stopped, past a grace period and abandoned by
their owner; never a running one, never a volume — and each removal is printed on stderr.

What it is made with (image, arguments, limits, GPU request, labels) is
`envcheck.smoke.runner.container_spec`; its stdout and stderr are read from the attach stream as
they come (`envcheck.smoke.runner.attach`), stdout up to a bound; past the timeout or the bound the
container is killed.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from contextlib import suppress
from types import TracebackType
from typing import IO, TYPE_CHECKING

from envcheck.contracts.errors import EnvcheckError
from envcheck.contracts.facts import CompatLibrary
from envcheck.contracts.smoke_report import ContainerInfo
from envcheck.edges import activity, signals
from envcheck.engine.docker_adapter import translate_errors
from envcheck.image.reference import shown_image
from envcheck.render.sanitize import visible
from envcheck.smoke.parse import OutputCollector, RawRun
from envcheck.smoke.runner import ownership
from envcheck.smoke.runner.attach import pump
from envcheck.smoke.runner.container_spec import ContainerSpec, create_kwargs
from envcheck.smoke.runner.image_compat import read_image_compat
from envcheck.smoke.runner.ownership import MARK_LABEL

if TYPE_CHECKING:
    import docker
    from docker.models.containers import Container
    from typing_extensions import Self

KILL_WAIT_S = 10.0


class SmokeContainer:
    """`with SmokeContainer(client, spec, variables=env.env, stderr=env.stderr) as box:
    raw = box.run()` — removed on the way out. `variables`: the command's (the owner key's
    folder); `stderr`: the command's, where the sweep's removals are said (None: nowhere)."""

    def __init__(
        self,
        client: docker.DockerClient,
        spec: ContainerSpec,
        *,
        variables: Mapping[str, str],
        stderr: IO[str] | None,
    ) -> None:
        self.client = client
        self.spec = spec
        self.variables, self.stderr = variables, stderr
        self.run_id = uuid.uuid4().hex[:12]
        self.container: Container | None = None
        self.swept: list[str] = []
        self.removed = False  # the engine, asked on the way out, has no container of this run
        self.compat: tuple[CompatLibrary, ...] = ()  # the image's compat libcuda, read once created

    def __enter__(self) -> Self:
        activity.phase(f"creating the smoke container from {self.image_words}")
        self.swept = sweep_leftovers(self.client, variables=self.variables, stderr=self.stderr)
        try:
            with (
                signals.deferred(),
                translate_errors(f"creating the smoke container from {self.image_words}"),
            ):
                self.container = self.client.containers.create(
                    **create_kwargs(self.spec, self.run_id, ownership.owner_key(self.variables))
                )
            self.compat = read_image_compat(self.container)  # its image's files, before it runs
        except BaseException:
            # a timeout or a signal may have cut the answer, not the create, or come before the
            # `with` holds the container (no __exit__ then): remove it by run id
            self._remove(quiet=True)
            raise
        return self

    @property
    def image_words(self) -> str:
        """`paddlepaddle/paddle:3.3.1-… (image 4f0c1a2b3c4d)`: the id as `docker images` shows
        it, beside the name it was checked or pulled under (a mirror's pull leaves no such name)."""
        image, label = self.spec.image, self.spec.label
        shown = shown_image(image)
        if label and label != image:
            return f"{label} (image {shown})"
        return shown

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        interrupted = t is not None and issubclass(t, KeyboardInterrupt)
        if interrupted:  # Ctrl-C or a signal: the phase it cut is not done (never ✓)
            activity.interrupted()
        activity.phase("removing the smoke container")
        self._remove(quiet=t is not None)
        if interrupted and self.removed:
            signals.cleaned_up(
                f"removed the smoke container {ownership.container_name(self.run_id)}"
            )

    def _remove(self, quiet: bool) -> None:
        name = ownership.container_name(self.run_id)
        container = self.container or _by_name(self.client, name)
        if container is not None:
            remove(container, quiet=quiet)
        self.removed = _named(self.client, name) == []  # the engine answered: none left

    def run(self, on_start: Callable[[int | None], None] | None = None) -> RawRun:
        """Start, stream the output until exit, timeout or overflow; the container's verdict."""
        assert self.container is not None, "use SmokeContainer as a context manager"
        container, collector, attention = self.container, OutputCollector(), threading.Event()
        failures: list[Exception] = []  # a bug in the reader thread, raised here (exit 3)
        with translate_errors("attaching to the smoke container"):
            stream = container.attach(stdout=True, stderr=True, stream=True, logs=True, demux=True)
        reader = threading.Thread(
            target=pump,
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
                if not done or collector.overflow.is_set() or failures:
                    _kill(container)  # a reader's failure ends the run at once
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
            container=ContainerInfo(
                container=container.short_id,
                run_id=self.run_id,
                swept=tuple(self.swept),
                compat=self.compat,
            ),
        )


def sweep_leftovers(
    client: docker.DockerClient,
    grace: float = ownership.LEFTOVER_GRACE_S,
    now: float | None = None,
    *,
    variables: Mapping[str, str],
    stderr: IO[str] | None,
) -> list[str]:
    """Remove the stopped containers crashed envcheck runs left (see `ownership.leftover_reason`),
    saying each on `stderr`, the command's; returns their short ids. `variables`: the command's
    (the owner key's folder)."""
    with translate_errors("listing leftover smoke containers"):
        found = client.containers.list(
            all=True,
            ignore_removed=True,
            filters={"label": MARK_LABEL, "status": list(ownership.SWEPT_STATES)},
        )
    removed = []
    host, now = socket.gethostname(), time.time() if now is None else now
    if found and (why := ownership.unprovable(variables)):
        _say(
            stderr,
            visible(
                f"envcheck: {len(found)} stopped smoke container(s) of earlier runs left alone: "
                f"this run cannot prove ownership without its owner key ({why})"
            ),
        )
    for container in found:
        reason = ownership.leftover_reason(
            container.attrs,
            key=ownership.owner_key(variables),
            now=now,
            hostname=host,
            alive=_pid_alive,
            grace=grace,
        )
        if reason is not None and remove(container, quiet=True, volumes=False):
            removed.append(container.short_id)
            _say(
                stderr,
                visible(
                    f"envcheck: removed leftover smoke container {container.short_id} "
                    f"({container.name}: {reason})"
                ),
            )
    return removed


def _say(stderr: IO[str] | None, line: str) -> None:
    if stderr is not None:
        print(line, file=stderr, flush=True)


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
    found = _named(client, name)
    return found[0] if found else None


def _named(client: docker.DockerClient, name: str) -> list[Container] | None:
    """The engine's containers called `name`; None when the engine could not be asked."""
    try:
        with translate_errors(f"looking up smoke container {name}"):
            found: list[Container] = client.containers.list(
                all=True, sparse=True, filters={"name": f"^/{name}$"}
            )
    except EnvcheckError:
        return None
    return found


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

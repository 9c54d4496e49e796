"""The fixtures both lanes (tests/unit, tests/integration) may use, most of them the integration
lane's: the real Docker engine and the local registry that `scripts/dev setup` starts, throwaway
registries/proxies, and a session-end check that no container labelled `envcheck` is left behind.

A test that needs the engine or the registry FAILS when they are missing (it never skips): a
green run must mean the integration tests ran. Run `scripts/dev setup` first (as root).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.lanes import implied_markers
from tests.registry_push import Fresh
from tests.servers import MAIN_REGISTRY_STORAGE, FlakyProxy, RegistryProcess, free_port, http_status

# The matrix cache off for the whole suite and its subprocesses: every test parses the TOML
# it names; tests/unit/test_matrix_cache.py turns it on in a folder of its own.
os.environ["ENVCHECK_CACHE_DIR"] = ""
REGISTRY_ADDR = os.environ.get("ENVCHECK_REGISTRY_ADDR", "127.0.0.1:5000")
CONTAINER_LABEL = "envcheck"  # envcheck.engine.docker_adapter.LABEL
SETUP_HINT = "run `scripts/dev setup` (as root) to start dockerd and the local registry"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that asks for the engine or the registry carries the marker (tests/lanes.py)."""
    for item in items:
        for marker in sorted(implied_markers(item)):
            item.add_marker(marker)


# Images `scripts/dev setup` builds offline and pushes to the local registry.
BUSYBOX = "envcheck-test/busybox:1"
BUSYBOX_LAYERS = "envcheck-test/busybox:layers"  # 4 layers, 12 MiB incompressible
BUSYBOX_CUDA = "envcheck-test/busybox:cuda12.9"  # env CUDA_VERSION / NVIDIA_REQUIRE_CUDA
PADDLE_CPU = "envcheck-test/paddle-cpu:3.3.1"


@dataclass(frozen=True)
class LocalRegistry:
    addr: str  # "127.0.0.1:5000": what image references start with
    url: str  # "http://127.0.0.1:5000"
    storage: Path  # its filesystem storage (a throwaway registry can serve the same blobs)

    def ref(self, name: str) -> str:
        """`envcheck-test/busybox:1` → `127.0.0.1:5000/envcheck-test/busybox:1`."""
        return f"{self.addr}/{name}"


@pytest.fixture(scope="session")
def docker_client() -> Any:
    """A `docker.DockerClient` on the real engine (DOCKER_HOST or the local socket), pinged."""
    import docker

    try:
        client = docker.from_env(timeout=120)
        client.ping()
    except Exception as e:  # noqa: BLE001 - any failure to reach the engine is fatal here
        pytest.fail(
            f"the Docker engine is unreachable ({type(e).__name__}: {e}); {SETUP_HINT}",
            pytrace=False,
        )
    return client


@pytest.fixture(scope="session")
def registry() -> LocalRegistry:
    """The local registry holding the test images (`scripts/dev setup`)."""
    local = LocalRegistry(REGISTRY_ADDR, f"http://{REGISTRY_ADDR}", MAIN_REGISTRY_STORAGE)
    if http_status(f"{local.url}/v2/", 2.0) != 200:
        pytest.fail(f"no registry answers at {local.url}/v2/; {SETUP_HINT}", pytrace=False)
    return local


@pytest.fixture
def registry_factory(tmp_path: Path) -> Iterator[Callable[..., RegistryProcess]]:
    """Start extra `docker-registry` processes on free loopback ports, all stopped afterwards.

    start(auth=True)                    # htpasswd: anonymous requests get 401
    start(storage=registry.storage)     # serves the local registry's blobs: kill it mid-pull
    """
    started: list[RegistryProcess] = []

    def start(
        *, auth: bool = False, storage: Path | None = None, port: int | None = None
    ) -> RegistryProcess:
        if storage is None:
            storage = tmp_path / f"registry-{len(started)}"
            storage.mkdir()
        process = RegistryProcess(port or free_port(), storage, auth=auth)
        started.append(process)
        return process.start()

    yield start
    for process in started:
        process.stop()


@pytest.fixture
def fresh(docker_client: Any, registry: LocalRegistry) -> Iterator[Fresh]:
    """Never-seen images pushed to the loopback registries, every local copy removed afterwards."""
    images = Fresh(docker_client, registry, [])
    yield images
    images.cleanup()


@pytest.fixture
def proxy_factory() -> Iterator[Callable[..., FlakyProxy]]:
    """Start loopback HTTP proxies in front of a registry that fail or slow down on purpose."""
    started: list[FlakyProxy] = []

    def start(upstream: str, **behaviour: Any) -> FlakyProxy:
        proxy = FlakyProxy(upstream, **behaviour).start()
        started.append(proxy)
        return proxy

    yield start
    for proxy in started:
        proxy.stop()


@pytest.fixture(scope="session", autouse=True)
def no_envcheck_container_left() -> Iterator[None]:
    """At the end of the session, `docker ps -a --filter label=envcheck` must hold no container
    created during it. Stopped left-overs are removed (so the next run starts clean) and reported.

    A grace period lets containers being removed (`remove=True`, 409 "removal in progress") go.
    Containers created before the session are not this run's doing and are ignored."""
    started = time.time()
    yield
    client = _engine_or_none()
    if client is None:
        return  # the tests that needed the engine have failed already, loudly
    left = _created_since(client, started)
    deadline = time.monotonic() + 10
    while left and time.monotonic() < deadline:
        time.sleep(0.5)
        left = _created_since(client, started)
    for container in left:
        if container.status != "running":
            with contextlib.suppress(Exception):  # already going: 404/409
                container.remove(force=True)
    names = ", ".join(f"{c.name} ({c.status}, labels {c.labels})" for c in left)
    assert not left, f"containers labelled {CONTAINER_LABEL!r} were left behind: {names}"


def _created_since(client: Any, started: float) -> list[Any]:
    import docker.errors

    found = []
    for container in client.containers.list(all=True, filters={"label": CONTAINER_LABEL}):
        with contextlib.suppress(docker.errors.NotFound):
            created = container.attrs.get("Created", "")
            if _epoch(created) >= started - 1 and not _owned_by_another_live_run(container.labels):
                found.append(container)
    return found


def _owned_by_another_live_run(labels: dict[str, str]) -> bool:
    """`envcheck.owner` = "host:pid" of the envcheck process that made the container. A live
    process outside this test session (a developer's concurrent run) still owns its container."""
    host, _, pid_text = labels.get("envcheck.owner", "").rpartition(":")
    if not pid_text.isdigit():
        return False
    if host and host != os.uname().nodename:
        return True  # made from another machine on a shared engine: not ours to judge
    pid = int(pid_text)
    if not Path(f"/proc/{pid}").exists():
        return False  # its owner is gone: a true leftover
    while pid > 1:
        if pid == os.getpid():
            return False  # one of ours (this session or a child it started)
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            return True
    return True


def _epoch(created: str) -> float:
    """The engine's RFC 3339 `Created` (nanoseconds, `Z`) as seconds since the epoch."""
    from datetime import datetime

    stamp = created.rstrip("Z")
    head, _, frac = stamp.partition(".")
    try:
        return datetime.fromisoformat(head + "+00:00").timestamp() + float(f"0.{frac or 0}")
    except ValueError:
        return float("inf")  # unreadable: count it as this session's, to be looked at


def _engine_or_none() -> Any:
    try:
        import docker

        client = docker.from_env(timeout=30)
        client.ping()
        return client
    except Exception:  # noqa: BLE001 - no engine: nothing can have been left on it
        return None


@pytest.fixture(scope="session")
def sibling_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv made from the same base interpreter as envcheck's own venv, without Paddle: both
    `bin/python` resolve (realpath) to the same binary — the pipx / Slurm / CI-runner layout."""
    import subprocess
    import sys

    root = tmp_path_factory.mktemp("target") / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120)
    assert os.path.realpath(root / "bin" / "python") == os.path.realpath(sys.executable)
    return root

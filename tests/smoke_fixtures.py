"""Fixtures for the smoke's integration tests: the offline Paddle image, the bad scripts a real
container runs in place of the workload, and a per-test check that no container is left.

Load with `pytest_plugins = ("tests.smoke_fixtures",)`. The engine itself is `docker_client`
from tests/conftest.py. A missing engine or image *fails* (it does not skip): CI must not go
green without them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from envcheck.smoke.runner.check import SCRIPT_ENV
from tests.smoke_host import PADDLE_IMAGE, SCRIPTS, envcheck_container_ids, envcheck_containers


@pytest.fixture(scope="session")
def paddle_image(docker_client: Any) -> str:
    """The offline Paddle CPU image; `docker_client` (tests/conftest.py) fails without an engine."""
    import docker.errors

    try:
        docker_client.images.get(PADDLE_IMAGE)
    except docker.errors.ImageNotFound:
        pytest.fail(f"{PADDLE_IMAGE} is missing: run `scripts/dev setup`", pytrace=False)
    return PADDLE_IMAGE


@pytest.fixture
def containers_before(docker_client: Any) -> frozenset[str]:
    """The envcheck containers on the engine when the test started: not the test's to count."""
    return envcheck_container_ids(docker_client)


@pytest.fixture
def no_leftovers(docker_client: Any, containers_before: frozenset[str]) -> Iterator[None]:
    """Every test that runs a container must leave none of its own behind, whatever it did."""
    yield
    left = envcheck_containers(docker_client, containers_before)
    assert not left, f"smoke containers left behind: {left}"


@pytest.fixture
def smoke_script(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], Path]:
    """Run tests/smoke_scripts/NAME in place of the workload (SCRIPT_ENV, the tests-only hook)."""

    def use(name: str) -> Path:
        path = SCRIPTS / name
        assert path.is_file(), path
        monkeypatch.setenv(SCRIPT_ENV, str(path))
        return path

    return use

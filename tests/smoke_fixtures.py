"""Fixtures for the smoke's integration tests: the real engine, the offline Paddle image, the bad
scripts a real container runs in place of the workload, and a check that nothing is left.

A missing engine or image *fails* (it does not skip): CI must not go green without them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from envcheck.docker_adapter import LABEL
from envcheck.errors import EnvcheckError
from envcheck.facts import HostFacts, host_from_document
from envcheck.report import ImageChoice
from envcheck.smoke.check import SCRIPT_ENV
from tests import scenarios as s

PADDLE_IMAGE = os.environ.get("ENVCHECK_TEST_PADDLE_IMAGE", "envcheck-test/paddle-cpu:3.3.1")
SCRIPTS = Path(__file__).with_name("smoke_scripts")

# This machine as the probes see it: no driver, Debian's engine without the NVIDIA runtime, and
# the Paddle 3.3.1 CPU wheel in the interpreter running the tests.
NO_GPU_HOST: HostFacts = host_from_document(
    s.host(engine=s.ENGINE_PLAIN, paddle=s.PADDLE_331_CPU | {"python": sys.executable})
)
CPU_CHOICE = ImageChoice(ref=PADDLE_IMAGE, kind="cpu", reason="offline test image")


@pytest.fixture(scope="session")
def engine() -> Any:
    from envcheck.docker_adapter import connect

    try:
        return connect(timeout=20)
    except EnvcheckError as e:
        pytest.fail(f"the docker tests need the engine of `scripts/dev setup`: {e.message}", pytrace=False)


@pytest.fixture(scope="session")
def paddle_image(engine: Any) -> str:
    import docker.errors

    try:
        engine.images.get(PADDLE_IMAGE)
    except docker.errors.ImageNotFound:
        pytest.fail(f"{PADDLE_IMAGE} is missing: run `scripts/dev setup`", pytrace=False)
    return PADDLE_IMAGE


def envcheck_containers(engine: Any) -> list[str]:
    return [c.short_id for c in engine.containers.list(all=True, sparse=True, filters={"label": LABEL})]


@pytest.fixture
def no_leftovers(engine: Any) -> Iterator[None]:
    """Every test that runs a container must leave none behind, whatever it did."""
    yield
    left = envcheck_containers(engine)
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


def dead_pid() -> int:
    """A pid that existed a moment ago and is gone (reaped) now."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True

"""The tests' second dockerd (tests/servers.SecondEngine) must never harm the main engine: with
`--bridge=none` dockerd deletes the host's `docker0`, after which no container of the main
engine could start (seen: "could not find bridge docker0"). Never touch what is not ours."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from tests.servers import SecondEngine


@pytest.mark.docker
def test_a_second_engine_leaves_the_main_engines_bridge_alone(docker_client: Any) -> None:
    before = subprocess.run(
        ["ip", "link", "show", "docker0"], capture_output=True, text=True, check=False
    )
    assert before.returncode == 0, "the main engine has no docker0 bridge before the test"
    engine = SecondEngine({}).start()
    try:
        assert (
            subprocess.run(
                ["ip", "link", "show", "docker0"], capture_output=True, check=False
            ).returncode
            == 0
        )
    finally:
        engine.stop()
    assert (
        subprocess.run(
            ["ip", "link", "show", "docker0"], capture_output=True, check=False
        ).returncode
        == 0
    )
    out = docker_client.containers.run("envcheck-test/busybox:1", ["echo", "alive"], remove=True)
    assert out.strip() == b"alive"

"""This machine as the smoke's integration tests see it, and small helpers they share.

No driver, Debian's engine without the NVIDIA runtime, the Paddle 3.3.1 CPU wheel in the
interpreter running the tests, and the offline image `scripts/dev setup` builds.
(Fixtures live in tests/smoke_fixtures.py, loaded with `pytest_plugins`.)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from envcheck.contracts.facts import HostFacts, host_from_document
from envcheck.contracts.host_report import ImageChoice
from envcheck.engine.docker_adapter import LABEL
from tests import scenarios as s

PADDLE_IMAGE = os.environ.get("ENVCHECK_TEST_PADDLE_IMAGE", "envcheck-test/paddle-cpu:3.3.1")
SCRIPTS = Path(__file__).with_name("smoke_scripts")

NO_GPU_HOST: HostFacts = host_from_document(
    s.host(engine=s.ENGINE_PLAIN, paddle=s.PADDLE_331_CPU | {"python": sys.executable})
)
CPU_CHOICE = ImageChoice(ref=PADDLE_IMAGE, kind="cpu", reason="offline test image")


def envcheck_containers(client: Any, before: frozenset[str] = frozenset()) -> list[str]:
    """`docker ps -aq --filter label=envcheck`, less the ones in `before` (ids seen when the
    test started): another process may share the engine, and a container it left (a killed
    run, before its deadline) is not this test's."""
    found = client.containers.list(all=True, sparse=True, filters={"label": LABEL})
    return [c.short_id for c in found if c.id not in before]


def envcheck_container_ids(client: Any) -> frozenset[str]:
    found = client.containers.list(all=True, sparse=True, filters={"label": LABEL})
    return frozenset(c.id for c in found)


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


def processes_mentioning(text: str) -> list[str]:
    """The processes (`pid: command line`) whose command line holds `text`: a training child
    left behind names its temp folder."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and int(proc.name) != os.getpid():
            try:
                cmdline = (
                    (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                )
            except OSError:
                continue  # gone meanwhile
            if text in cmdline:
                found.append(f"{proc.name}: {cmdline}")
    return found

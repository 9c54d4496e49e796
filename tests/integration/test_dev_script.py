"""scripts/dev decides about Docker from what is really on the machine (issues #13.5, #20.1).

A fresh machine of this project's kind ships a standalone Docker *client* and no engine: a client
binary is not an installed Docker. An engine that answers is used as it is; an installed engine
package is started, never replaced (Debian's docker.io conflicts with docker-ce, the usual Docker on
NVIDIA servers, and apt would remove docker-ce to install it); otherwise Debian's engine is
installed. The script's own functions run on a simulated machine: a PATH of stubs, a package
database answered by a `dpkg-query` stub, and an Engine API peer on a unix socket.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import shutil
import socket
import socketserver
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.paths import ROOT

DEV = ROOT / "scripts" / "dev"
TOOLS = ("grep", "curl", "id", "cat", "dirname", "pgrep", "mkdir", "setsid", "nohup", "sleep")


class Machine:
    """A simulated machine: packages installed (with their files), commands on PATH."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.bin = root / "bin"
        self.bin.mkdir()
        self.started = root / "started"  # a stub dockerd writes here when it is run
        for tool in TOOLS:
            found = shutil.which(tool)
            assert found, f"{tool} is needed to simulate a machine"
            (self.bin / tool).symlink_to(found)
        # a real interpreter, not a version manager's shim that needs the rest of PATH
        (self.bin / "python3").symlink_to(os.path.realpath(sys.executable))
        self.packages: dict[str, list[str]] = {}

    def command(self, name: str, body: str = "exit 1") -> Path:
        path = self.bin / name
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(0o755)
        return path

    def dockerd(self, where: Path) -> Path:
        where.mkdir(parents=True, exist_ok=True)
        path = where / "dockerd"
        path.write_text(f'#!/bin/sh\necho "$0" >>{self.started}\n')
        path.chmod(0o755)
        return path

    def install(self, package: str, files: list[str]) -> None:
        self.packages[package] = files

    def run(self, script: str, env: dict[str, str] | None = None) -> str:
        lines = ["pkg=; for a; do pkg=$a; done", 'case "$pkg" in']
        for package, files in self.packages.items():
            listing = "\\n".join(files)
            lines.append(
                f'  {package}) case "$1" in -L) printf "{listing}\\n";; '
                '*) printf "install ok installed";; esac; exit 0;;'
            )
        lines += ["esac", "exit 1"]
        self.command("dpkg-query", "\n".join(lines))
        base = {
            "PATH": str(self.bin),
            "HOME": str(self.root / "home"),
            "XDG_RUNTIME_DIR": str(self.root / "run"),
            "ENVCHECK_DEV_DOCKER_SOCKET": str(self.root / "docker.sock"),
            "ENVCHECK_DEV_STATE": str(self.root / "state"),
        }
        out = subprocess.run(
            ["/bin/bash", "-c", f"source {DEV}; {script}"],
            env={**base, **(env or {})},
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        return out.stdout


class _Ping(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200 if self.path == "/_ping" else 404)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"OK")

    def log_message(self, format: str, *args: object) -> None:
        pass


class _UnixHTTPServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def get_request(self) -> tuple[socket.socket, tuple[str, int]]:
        request, _ = super().get_request()
        return request, ("local", 0)  # BaseHTTPRequestHandler wants an address pair


@pytest.fixture
def machine(tmp_path: Path) -> Machine:
    return Machine(tmp_path)


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Path]:
    """An Engine API peer answering /_ping on a unix socket, as dockerd's does."""
    sock = tmp_path / "engine.sock"
    server = _UnixHTTPServer(str(sock), _Ping)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield sock
    server.shutdown()
    server.server_close()


def test_a_client_binary_alone_gets_debians_engine_installed(machine: Machine) -> None:
    # the fresh machine: /usr/local/bin/docker answers `docker --version`, no engine anywhere
    machine.command("docker", 'echo "Docker version 28.2.2, build e6534b4"; exit 1')
    assert machine.run("docker_plan").split() == ["install"]
    packages = machine.run("apt_packages").split()
    assert "docker.io" in packages and "docker-registry" in packages


def test_a_machine_without_docker_gets_debians_engine(machine: Machine) -> None:
    assert machine.run("docker_plan").split() == ["install"]
    assert "docker.io" in machine.run("apt_packages").split()


@pytest.mark.parametrize(
    ("package", "where"),
    [("docker-ce", "usr/bin"), ("docker.io", "usr/sbin"), ("moby-engine", "usr/bin")],
    ids=["docker-ce", "debian-docker-io", "moby-engine"],
)
def test_an_installed_engine_package_is_started_never_replaced(
    machine: Machine, package: str, where: str
) -> None:
    dockerd = machine.dockerd(machine.root / "pkg" / where)
    machine.install(package, [f"/{where}", str(dockerd)])
    machine.command("docker")  # the package's client, no engine answering yet
    assert machine.run("docker_plan").split() == ["start", str(dockerd)]
    assert "docker.io" not in machine.run("apt_packages").split()


def test_a_dockerd_on_path_without_a_package_is_started(machine: Machine) -> None:
    dockerd = machine.dockerd(machine.bin)
    assert machine.run("docker_plan").split() == ["start", str(dockerd)]
    assert "docker.io" not in machine.run("apt_packages").split()


def test_an_engine_answering_at_docker_host_is_used_nothing_installed_nothing_started(
    machine: Machine, engine: Path
) -> None:
    dockerd = machine.dockerd(machine.root / "pkg" / "usr" / "bin")
    machine.install("docker-ce", [str(dockerd)])
    env = {"DOCKER_HOST": f"unix://{engine}"}
    assert machine.run("docker_plan", env).split() == ["use", f"unix://{engine}"]
    assert "docker.io" not in machine.run("apt_packages", env).split()
    # the set-up's engine step hands that endpoint to every docker command after it
    assert machine.run('ensure_dockerd; echo "$DOCKER_HOST"', env).split() == [f"unix://{engine}"]
    assert not machine.started.exists()


def test_an_engine_answering_through_the_current_context_is_used(
    machine: Machine, engine: Path
) -> None:
    config = machine.root / "home" / ".docker"
    meta = config / "contexts" / "meta" / hashlib.sha256(b"remote").hexdigest()
    meta.mkdir(parents=True)
    (config / "config.json").write_text(json.dumps({"currentContext": "remote"}))
    (meta / "meta.json").write_text(
        json.dumps({"Name": "remote", "Endpoints": {"docker": {"Host": f"unix://{engine}"}}})
    )
    assert machine.run("docker_plan").split() == ["use", f"unix://{engine}"]


def test_the_rootless_socket_is_an_engine_too(machine: Machine, engine: Path) -> None:
    run = machine.root / "run"
    run.mkdir()
    os.symlink(engine, run / "docker.sock")
    assert machine.run("docker_plan").split() == ["use", f"unix://{run}/docker.sock"]

"""scripts/dev decides about Docker from what is really on the machine.

A fresh machine of this project's kind ships a standalone Docker *client* and no engine: a client
binary is not an installed Docker. An engine that answers is used as it is; an installed engine
package is started, never replaced (Debian's docker.io conflicts with docker-ce, the usual Docker on
NVIDIA servers, and apt would remove docker-ce to install it); otherwise Debian's engine is
installed. The script's own functions run on a simulated machine: a PATH of stubs, a package
database answered by a `dpkg-query` stub, and an Engine API peer on a unix socket.

And what `scripts/dev test` runs, in order (set-up, lint, the unit lane, the integration lane),
on a .venv whose python only writes down what it is asked.
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


# -- lint and the two lanes ------------------------------------------------------------------------


def lanes(tmp_path: Path, command: str, fail_on: str = "", code: int = 1) -> tuple[int, list[str]]:
    """Run a `scripts/dev` command against a .venv whose python only writes down each call (and
    exits `code` for the call whose arguments hold `fail_on`); the set-up is a stub that says so.
    Returns the exit status and the calls, in order."""
    calls = tmp_path / "calls"
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text(
        '#!/bin/sh\necho "$*" >>"$CALLS"\n'
        'if [ -n "$FAIL_ON" ]; then case "$*" in *"$FAIL_ON"*) exit "$FAIL_CODE";; esac; fi\n'
    )
    python.chmod(0o755)
    script = (
        f'source {DEV}; VENV="{venv}"; cmd_setup() {{ echo setup >>"$CALLS"; }}; '
        f"compile_envcheck() {{ :; }}; {command}"
    )
    run = subprocess.run(
        ["/bin/bash", "-c", script],
        env={
            "PATH": os.environ["PATH"],
            "CALLS": str(calls),
            "FAIL_ON": fail_on,
            "FAIL_CODE": str(code),
        },
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return run.returncode, calls.read_text().splitlines() if calls.exists() else []


LINT = ["-m ruff check --output-format concise .", "-m ruff format --check .", "-m mypy"]


def test_test_sets_up_lints_then_runs_the_unit_lane_then_the_integration_lane(
    tmp_path: Path,
) -> None:
    """What CI runs (`.ci/run` is `bash scripts/dev test`): ruff and mypy left pytest for this
    step, and the unit lane fails in a minute before the integration lane's quarter of an hour."""
    code, calls = lanes(tmp_path, "cmd_test -k judge")
    assert code == 0
    assert calls == [
        "setup",
        *LINT,
        "-m pytest tests/unit -k judge",
        "-m pytest tests/integration -k judge",
    ]


@pytest.mark.parametrize("failing", ["ruff check", "ruff format", "mypy", "tests/unit"])
def test_a_failed_step_stops_the_test_command_before_the_next(tmp_path: Path, failing: str) -> None:
    code, calls = lanes(tmp_path, "cmd_test", fail_on=failing)
    steps = ["setup", *LINT, "-m pytest tests/unit", "-m pytest tests/integration"]
    last = next(i for i, step in enumerate(steps) if failing in step)
    assert (code, calls) == (1, steps[: last + 1])


def test_a_filter_that_selects_nothing_in_one_lane_is_not_a_failure(tmp_path: Path) -> None:
    """pytest exits 5 when nothing is selected: `-k judge` matches no integration test. Without
    arguments an empty lane is an error."""
    assert lanes(tmp_path, "cmd_test -k judge", fail_on="tests/integration", code=5)[0] == 0
    assert lanes(tmp_path / "bare", "cmd_test", fail_on="tests/integration", code=5)[0] == 5


def test_unit_runs_only_the_unit_lane_without_the_set_up(tmp_path: Path) -> None:
    assert lanes(tmp_path, "cmd_unit -x") == (0, ["-m pytest tests/unit -x"])


def test_lint_is_ruff_then_mypy_without_the_set_up(tmp_path: Path) -> None:
    assert lanes(tmp_path, "cmd_lint") == (0, LINT)

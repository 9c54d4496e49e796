"""The engine is resolved as the docker CLI resolves it (DOCKER_HOST, DOCKER_CONTEXT, the current
context of $DOCKER_CONFIG/config.json, the default or rootless socket), once, and the same
endpoint feeds the engine probe and the SDK client. Against the real engine
through a second socket (a relay to the engine's own socket) named by a real docker context."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from envcheck.contracts.errors import UsageError
from envcheck.probe import endpoint as ep
from envcheck.probe.endpoint import resolve_endpoint

ENGINE_SOCKET = "/var/run/docker.sock"


class SocketRelay:
    """A second socket of the real engine: every connection is relayed to the engine's own
    socket and counted, so a test can tell which socket envcheck used."""

    def __init__(self, path: Path) -> None:
        self.path, self.connections = path, 0
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(path))
        self._server.listen(16)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            self.connections += 1
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            upstream.connect(ENGINE_SOCKET)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while chunk := src.recv(65536):
                dst.sendall(chunk)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self._server.close()


@pytest.fixture
def relay(tmp_path: Path) -> Iterator[SocketRelay]:
    r = SocketRelay(tmp_path / "second.sock")
    yield r
    r.close()


def _context(config: Path, name: str, host: str, *, current: bool) -> None:
    """A docker context as `docker context create NAME --docker host=HOST` stores it."""
    import hashlib

    meta = config / "contexts" / "meta" / hashlib.sha256(name.encode()).hexdigest()
    meta.mkdir(parents=True)
    (meta / "meta.json").write_text(
        json.dumps(
            {
                "Name": name,
                "Metadata": {},
                "Endpoints": {"docker": {"Host": host, "SkipTLSVerify": False}},
            }
        )
    )
    if current:
        (config / "config.json").write_text(json.dumps({"auths": {}, "currentContext": name}))


def _env(config: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DOCKER_HOST", "DOCKER_CONTEXT", "GITHUB_ACTIONS")
    }
    return env | {"DOCKER_CONFIG": str(config)} | extra


def _resolve(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> ep.Endpoint:
    for name in (
        "DOCKER_HOST",
        "DOCKER_CONTEXT",
        "DOCKER_CONFIG",
        "DOCKER_TLS_VERIFY",
        "DOCKER_CERT_PATH",
    ):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return resolve_endpoint(os.environ)


def test_resolution_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _context(tmp_path, "remote", "tcp://10.0.0.1:2375", current=True)
    _context(tmp_path, "other", "unix:///run/other.sock", current=False)
    cfg = {"DOCKER_CONFIG": str(tmp_path)}
    assert (
        _resolve(monkeypatch, cfg | {"DOCKER_HOST": "tcp://1.2.3.4:2375"}).source == "DOCKER_HOST"
    )
    named = _resolve(monkeypatch, cfg | {"DOCKER_CONTEXT": "other"})
    assert (named.host, named.context, named.source) == (
        "unix:///run/other.sock",
        "other",
        "DOCKER_CONTEXT",
    )
    current = _resolve(monkeypatch, cfg)
    assert (current.host, current.context, current.source) == (
        "tcp://10.0.0.1:2375",
        "remote",
        "config.json",
    )
    assert (
        _resolve(monkeypatch, {"DOCKER_CONFIG": str(tmp_path / "none")}).host
        == f"unix://{ENGINE_SOCKET}"
    )
    assert _resolve(monkeypatch, cfg | {"DOCKER_CONTEXT": "default"}).source == "default"


def test_tls_material_of_docker_host(monkeypatch: pytest.MonkeyPatch) -> None:
    found = _resolve(
        monkeypatch,
        {"DOCKER_HOST": "tcp://h:2376", "DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": "/certs"},
    )
    assert found.tls and (found.tls_ca, found.tls_cert, found.tls_key) == (
        "/certs/ca.pem",
        "/certs/cert.pem",
        "/certs/key.pem",
    )


def test_rootless_socket_when_the_default_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "docker.sock").touch()
    monkeypatch.setattr(ep, "DEFAULT_SOCKET", str(tmp_path / "no-default.sock"))
    found = _resolve(
        monkeypatch, {"DOCKER_CONFIG": str(tmp_path / "cfg"), "XDG_RUNTIME_DIR": str(tmp_path)}
    )
    assert (found.host, found.source) == (f"unix://{tmp_path}/docker.sock", "rootless")


@pytest.mark.parametrize("bad", ["missing", "garbage-config"])
def test_a_context_that_cannot_be_had_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bad: str
) -> None:
    if bad == "garbage-config":
        (tmp_path / "config.json").write_text("{not json")
        env = _env(tmp_path)
    else:
        env = _env(tmp_path, DOCKER_CONTEXT="nope")
    with pytest.raises(UsageError):
        _resolve(monkeypatch, {k: env[k] for k in ("DOCKER_CONFIG", "DOCKER_CONTEXT") if k in env})
    run = subprocess.run(
        [sys.executable, "-m", "envcheck", "doctor", "--no-smoke"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 2 and "Traceback" not in run.stderr and "docker" in run.stderr


@pytest.mark.docker
@pytest.mark.parametrize("how", ["current-context", "DOCKER_CONTEXT"])
def test_doctor_probes_the_contexts_engine(tmp_path: Path, relay: SocketRelay, how: str) -> None:
    config = tmp_path / "docker-config"
    _context(config, "second", f"unix://{relay.path}", current=how == "current-context")
    env = _env(config, **({"DOCKER_CONTEXT": "second"} if how == "DOCKER_CONTEXT" else {}))
    run = subprocess.run(
        [sys.executable, "-m", "envcheck", "doctor", "--no-smoke", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    engine = json.loads(run.stdout)["host"]["engine"]
    assert (
        engine["status"] == "ok"
        and engine["host"] == f"unix://{relay.path}"
        and engine["context"] == "second"
    )
    assert relay.connections >= 2  # /version and /info went through the context's socket


@pytest.mark.docker
@pytest.mark.registry
def test_the_sdk_client_uses_the_same_endpoint(tmp_path: Path, relay: SocketRelay) -> None:
    """pull-image (the SDK path) talks to the context's socket, not the default one."""
    config = tmp_path / "docker-config"
    _context(config, "second", f"unix://{relay.path}", current=True)
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "envcheck",
            "pull-image",
            "--image",
            "127.0.0.1:5000/envcheck-test/busybox:1",
            "--quiet",
            "--json",
        ],
        env=_env(config),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert relay.connections >= 1


@pytest.mark.parametrize(
    "meta", ["[1, 2]", '{"Endpoints": 3}', '{"Endpoints": {"docker": {"Host": 7}}}', "{bad"]
)
def test_a_hostile_context_store_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, meta: str
) -> None:
    _context(tmp_path, "odd", "unix:///x.sock", current=True)
    next((tmp_path / "contexts" / "meta").glob("*/meta.json")).write_text(meta)
    with pytest.raises(UsageError, match="docker context 'odd'"):
        _resolve(monkeypatch, {"DOCKER_CONFIG": str(tmp_path)})

"""The read-only engine probe: against the real dockerd, recorded documents, and broken peers."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from envcheck.probe.endpoint import resolve_endpoint
from envcheck.probe.engine import engine_facts, parse_response, probe_engine

# `GET /info` of an engine with the NVIDIA Container Toolkit registered (trimmed), and of one with CDI.
INFO_NVIDIA = {
    "Runtimes": {"nvidia": {"path": "nvidia-container-runtime"}, "runc": {"path": "runc"}},
    "DefaultRuntime": "runc",
}
INFO_CDI = {
    "Runtimes": {"runc": {}},
    "DefaultRuntime": "runc",
    "DiscoveredDevices": [
        {"Source": "cdi", "ID": "nvidia.com/gpu=0"},
        {"Source": "cdi", "ID": "vendor.com/x=1"},
    ],
}


@pytest.mark.docker
def test_real_engine_agrees_with_the_docker_sdk(docker_client: Any) -> None:
    facts = probe_engine(resolve_endpoint(os.environ))
    info, version = docker_client.info(), docker_client.version()
    assert facts.status == "ok"
    assert facts.version == version["Version"] and facts.api_version == version["ApiVersion"]
    assert set(facts.runtimes) == set(info["Runtimes"]) and facts.nvidia_runtime is False


@pytest.mark.docker
def test_the_sdk_transport_reads_the_same_engine(docker_client: Any) -> None:
    """The path a TLS or ssh:// engine takes (the docker SDK's transports), on the real engine:
    it raised TypeError (this SDK's DockerClient is no context manager), a crash, not a fact."""
    from envcheck.probe.engine import _sdk_documents

    version, info = _sdk_documents(resolve_endpoint(dict(os.environ)), 5)
    assert version["ApiVersion"] == docker_client.version()["ApiVersion"]
    assert info["ID"] == docker_client.info()["ID"]


@pytest.mark.parametrize(
    ("info", "runtime", "cdi"),
    [
        (INFO_NVIDIA, True, ()),
        (INFO_CDI, True, ("nvidia.com/gpu=0",)),
        ({"Runtimes": {"runc": {}}}, False, ()),
        ({"Runtimes": "garbled"}, False, ()),
    ],
    ids=["nvidia-runtime", "cdi-device", "plain-runc", "garbled-runtimes"],
)
def test_gpu_support_from_info(info: dict[str, Any], runtime: bool, cdi: tuple[str, ...]) -> None:
    facts = engine_facts({"Version": "27.3.1", "ApiVersion": "1.47"}, info, "unix:///x")
    assert facts.nvidia_runtime is runtime and facts.cdi_devices == cdi


def test_no_socket_is_absent(tmp_path: Path) -> None:
    facts = probe_engine(f"unix://{tmp_path}/docker.sock")
    assert facts.status == "absent" and "no Docker engine socket" in (facts.reason or "")


def test_stale_socket_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "docker.sock"
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))
    s.close()  # the file stays, nobody listens: a dockerd that died
    facts = probe_engine(f"unix://{path}")
    assert facts.status == "error" and "did not answer" in (facts.reason or "")


@pytest.fixture
def peer(tmp_path: Path) -> Iterator[tuple[str, list[bytes]]]:
    """A unix-socket server answering each connection with the next canned reply."""
    path = str(tmp_path / "peer.sock")
    replies: list[bytes] = []
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen(4)

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.recv(4096)
                if replies:
                    conn.sendall(replies.pop(0))

    threading.Thread(target=serve, daemon=True).start()
    yield f"unix://{path}", replies
    server.close()


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (b"garbage\x00\xff", "not an HTTP answer"),
        (b"HTTP/1.0 500 Internal\r\n\r\n{}", "answered 500"),
        (b"HTTP/1.0 200 OK\r\n\r\n{not json", "did not answer"),
        (b"", "not an HTTP answer"),
    ],
    ids=["garbage", "server-error", "bad-json", "hung-up"],
)
def test_broken_answers_are_error_facts(
    peer: tuple[str, list[bytes]], reply: bytes, reason: str
) -> None:
    host, replies = peer
    replies += [reply, reply]
    facts = probe_engine(host, timeout=2)
    assert facts.status == "error" and reason in (facts.reason or "")


def test_silent_engine_times_out(tmp_path: Path) -> None:
    path = str(tmp_path / "slow.sock")
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen(1)  # accepts into the backlog, never answers
    try:
        facts = probe_engine(f"unix://{path}", timeout=0.3)
    finally:
        server.close()
    assert facts.status == "error" and "timed out" in (facts.reason or "")


def test_parse_response_reads_the_body() -> None:
    assert parse_response(
        b'HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{"a": 1}', "/x"
    ) == {"a": 1}

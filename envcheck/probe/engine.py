"""The container engine, read-only: `docker version` and `docker info` over the Engine API.

Why not the docker SDK here: importing it (requests, urllib3, charset_normalizer) costs ~300 ms
on this class of machine, twice the whole `doctor --no-smoke` budget, to read two JSON documents.
Two GETs over the socket with the standard library take a few ms. Every *action* on the engine
(pull, create, run, remove) goes through the SDK in `envcheck.docker_adapter`.
API: https://docs.docker.com/engine/api/v1.41/#tag/System
"""

from __future__ import annotations

import http.client
import json
import os
import socket
from typing import Any
from urllib.parse import urlparse

from envcheck.facts import EngineFacts

_TIMEOUT = 2.0
_MAX_BODY = 4 * 1024 * 1024


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self._path)
        self.sock = sock


def _connection(docker_host: str, timeout: float) -> http.client.HTTPConnection:
    url = urlparse(docker_host)
    if url.scheme == "unix":
        return _UnixConnection(url.path, timeout)
    if url.scheme in ("tcp", "http"):
        return http.client.HTTPConnection(url.hostname or "localhost", url.port or 2375, timeout=timeout)
    raise ValueError(f"unsupported DOCKER_HOST scheme {url.scheme!r} (unix:// and tcp:// are read)")


def _get(docker_host: str, path: str, timeout: float) -> Any:
    conn = _connection(docker_host, timeout)
    try:
        conn.request("GET", path, headers={"Host": "docker"})
        resp = conn.getresponse()
        body = resp.read(_MAX_BODY)
        if resp.status != 200:
            raise ConnectionError(f"GET {path} answered {resp.status}")
        return json.loads(body)
    finally:
        conn.close()


def probe_engine(docker_host: str | None = None, timeout: float = _TIMEOUT) -> EngineFacts:
    """`docker version --format json` + `docker info --format json`, reduced to what matters."""
    host = docker_host or os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    if host.startswith("unix://") and not os.path.exists(urlparse(host).path):
        return EngineFacts(status="absent", host=host, reason=f"no Docker engine socket at {urlparse(host).path}")
    try:
        version = _get(host, "/version", timeout)
        info = _get(host, "/info", timeout)
    except PermissionError as e:
        return EngineFacts(status="error", host=host, reason=f"permission denied on the engine socket: {e}")
    except (OSError, ValueError, http.client.HTTPException) as e:
        return EngineFacts(status="error", host=host, reason=f"the engine did not answer: {e}")
    return engine_facts(version, info, host)


def engine_facts(version: Any, info: Any, host: str) -> EngineFacts:
    """Pure: the two documents -> facts. `nvidia` among the runtimes, or CDI devices named
    `nvidia.com/gpu=…`, are the two ways an engine can honour a GPU request."""
    version = version if isinstance(version, dict) else {}
    info = info if isinstance(info, dict) else {}
    runtimes = info.get("Runtimes") if isinstance(info.get("Runtimes"), dict) else {}
    cdi = info.get("DiscoveredDevices") if isinstance(info.get("DiscoveredDevices"), list) else []
    cdi_ids = tuple(
        str(d.get("ID")) for d in cdi if isinstance(d, dict) and str(d.get("ID", "")).startswith("nvidia.com/")
    )
    names = tuple(sorted(str(k) for k in runtimes))
    return EngineFacts(
        status="ok",
        version=_str(version.get("Version")),
        api_version=_str(version.get("ApiVersion")),
        runtimes=names,
        default_runtime=_str(info.get("DefaultRuntime")),
        nvidia_runtime="nvidia" in names or bool(cdi_ids),
        cdi_devices=cdi_ids,
        host=host,
    )


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None

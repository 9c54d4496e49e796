"""The container engine, read-only: `docker version` and `docker info` over the Engine API.

Why not the docker SDK here: importing it (requests, urllib3, charset_normalizer) costs ~300 ms
on this class of machine, twice the whole `doctor --no-smoke` budget, to read two JSON documents.
Two GETs over the socket with the standard library take a few ms. Every *action* on the engine
(pull, create, run, remove) goes through the SDK in `envcheck.engine.docker_adapter`.
API: https://docs.docker.com/engine/api/v1.41/#tag/System
"""

from __future__ import annotations

import json
import os
import socket
from typing import Any
from urllib.parse import quote, urlparse

from envcheck.contracts.facts import EngineFacts
from envcheck.contracts.record import replace
from envcheck.probe.endpoint import Endpoint

_TIMEOUT = 2.0
_MAX_RESPONSE = 4 * 1024 * 1024


class EngineAnswerError(OSError):
    """The engine answered something other than a 200 with a JSON body (`status`: its HTTP
    status, where it gave one)."""

    def __init__(self, message: str, status: str | None = None) -> None:
        super().__init__(message)
        self.status = status


def _connect(docker_host: str, timeout: float) -> socket.socket:
    url = urlparse(docker_host)
    if url.scheme == "unix":
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        sock.connect(url.path)
        return sock
    if url.scheme in ("tcp", "http"):
        return socket.create_connection(
            (url.hostname or "localhost", url.port or 2375), timeout=timeout
        )
    raise ValueError(f"unsupported DOCKER_HOST scheme {url.scheme!r} (unix:// and tcp:// are read)")


def _get(docker_host: str, path: str, timeout: float) -> Any:
    """One HTTP/1.0 GET: the engine answers with a plain body and closes (no chunking), so the
    standard library's socket suffices; http.client would pull in email and ssl (~40 ms)."""
    with _connect(docker_host, timeout) as sock:
        sock.sendall(f"GET {path} HTTP/1.0\r\nHost: docker\r\n\r\n".encode("ascii"))
        chunks, size = [], 0
        while size <= _MAX_RESPONSE:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    return parse_response(b"".join(chunks), path)


def parse_response(raw: bytes, path: str) -> Any:
    head, sep, body = raw.partition(b"\r\n\r\n")
    status = head.split(b"\r\n", 1)[0].split()
    if not sep or len(status) < 2 or not status[0].startswith(b"HTTP/"):
        raise EngineAnswerError(f"GET {path}: not an HTTP answer")
    if status[1] != b"200":
        code = status[1].decode("ascii", "replace")
        raise EngineAnswerError(f"GET {path} answered {code}", code)
    return json.loads(body)


def socket_denied(path: str | None) -> str:
    """What a socket we may not open is, for the message: its path, and its owner and mode where
    they can be read (`/var/run/docker.sock (root:docker, srw-rw----)`), never `[Errno 13]`."""
    if not path:
        return "permission denied on the engine's socket"
    try:
        st = os.stat(path)
    except OSError:
        return f"permission denied on the engine's socket {path}"
    import grp
    import pwd
    import stat

    try:
        owner = pwd.getpwuid(st.st_uid).pw_name
    except KeyError:
        owner = str(st.st_uid)
    try:
        group = grp.getgrgid(st.st_gid).gr_name
    except KeyError:
        group = str(st.st_gid)
    return (
        f"permission denied on the engine's socket {path} ({owner}:{group}, "
        f"{stat.filemode(st.st_mode)})"
    )


def socket_access_fix(path: str | None) -> str:
    """The three ways to an engine socket one may not open: its group, a rootless engine of
    one's own, or another context (https://docs.docker.com/engine/install/linux-postinstall/,
    https://docs.docker.com/engine/security/rootless/)."""
    group = "docker"  # the group Docker's packages give the socket
    if path:
        try:
            import grp

            st = os.stat(path)
            if st.st_mode & 0o060 == 0o060 and st.st_gid != 0:  # a group that may use it
                group = grp.getgrgid(st.st_gid).gr_name
        except (OSError, KeyError):
            pass
    return (
        f"join the {group} group (`sudo usermod -aG {group} $USER`, then log in again), or run "
        "a rootless engine of your own (`dockerd-rootless-setuptool.sh install`, then "
        "DOCKER_HOST=unix://$XDG_RUNTIME_DIR/docker.sock), or use a context you can reach "
        "(`docker context ls`, `docker context use NAME`)"
    )


def probe_engine(endpoint: Endpoint | str, timeout: float = _TIMEOUT) -> EngineFacts:
    """`docker version --format json` + `docker info --format json`, reduced to what matters.

    `endpoint`: the resolved engine (`resolve_endpoint` of the command's variables; a bare host
    string is taken as given, for tests)."""
    if not isinstance(endpoint, Endpoint):
        endpoint = Endpoint(endpoint, "DOCKER_HOST")
    host, path = endpoint.host, endpoint.socket_path
    where = EngineFacts(host=host, context=endpoint.context)
    if path is not None and not os.path.exists(path):
        return replace(where, status="absent", reason=f"no Docker engine socket at {path}")
    try:
        if uses_sdk(endpoint):
            version, info = _sdk_documents(endpoint, timeout)
        else:
            version, info = _get(host, "/version", timeout), _get(host, "/info", timeout)
    except PermissionError:
        return replace(where, status="error", denied=True, reason=socket_denied(path))
    except (OSError, ValueError) as e:
        return replace(where, status="error", reason=f"the engine did not answer: {e}")
    return replace(engine_facts(version, info, host), context=endpoint.context)


def probe_image(ref: str, endpoint: Endpoint, timeout: float = _TIMEOUT) -> str | None:
    """`docker image inspect REF --format '{{.Id}}'`: the engine's image id for `ref`, None when
    it holds no image of that name. Raises OSError when the engine does not answer. One GET, as
    above (`envcheck fix`'s dry run asks it: the SDK would cost more than the whole plan)."""
    if uses_sdk(endpoint):
        return _sdk_image_id(ref, endpoint, timeout)
    try:
        return str(_get(endpoint.host, f"/images/{quote(ref, safe='/:@')}/json", timeout)["Id"])
    except EngineAnswerError as e:
        if e.status == "404":
            return None
        raise


def uses_sdk(endpoint: Endpoint) -> bool:
    """TLS and ssh:// engines are read through the docker SDK's transports."""
    return endpoint.tls or urlparse(endpoint.host).scheme not in ("unix", "tcp", "http")


def import_sdk() -> None:
    """Import what `probe_engine` needs for an engine that `uses_sdk`: the host probe does it
    in its own thread before it runs `probe_engine` in another (envcheck/probe/host.py)."""
    import docker
    import docker.errors  # noqa: F401
    import requests.exceptions  # noqa: F401


def _sdk_documents(endpoint: Endpoint, timeout: float) -> tuple[Any, Any]:
    import docker
    import docker.errors
    import requests.exceptions

    try:
        client = docker.DockerClient(**endpoint.sdk_kwargs(), timeout=max(1, int(timeout)))
        try:  # this SDK's client is no context manager
            return client.version(), client.info()
        finally:
            client.close()
    except (docker.errors.DockerException, requests.exceptions.RequestException) as e:
        raise OSError(str(e)) from e


def _sdk_image_id(ref: str, endpoint: Endpoint, timeout: float) -> str | None:
    import docker
    import docker.errors
    import requests.exceptions

    try:
        client = docker.DockerClient(**endpoint.sdk_kwargs(), timeout=max(1, int(timeout)))
        try:
            return str(client.api.inspect_image(ref)["Id"])
        finally:
            client.close()
    except docker.errors.ImageNotFound:
        return None
    except (docker.errors.DockerException, requests.exceptions.RequestException) as e:
        raise OSError(str(e)) from e


def engine_facts(version: Any, info: Any, host: str) -> EngineFacts:
    """Pure: the two documents -> facts. `nvidia` among the runtimes, or CDI devices named
    `nvidia.com/gpu=…`, are the two ways an engine can honour a GPU request."""
    version = version if isinstance(version, dict) else {}
    info = info if isinstance(info, dict) else {}
    runtimes = info.get("Runtimes") if isinstance(info.get("Runtimes"), dict) else {}
    cdi = info.get("DiscoveredDevices") if isinstance(info.get("DiscoveredDevices"), list) else []
    cdi_ids = tuple(
        str(d.get("ID"))
        for d in cdi
        if isinstance(d, dict) and str(d.get("ID", "")).startswith("nvidia.com/")
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

"""Which Docker engine: resolved once, the way the docker CLI resolves it, and handed to the
engine probe and to the SDK client alike, so they can never judge two different engines.

Order (https://docs.docker.com/engine/manage-resources/contexts/): `DOCKER_HOST`, then
`DOCKER_CONTEXT`, then `currentContext` in `$DOCKER_CONFIG/config.json` (default `~/.docker`),
then the default socket. A named context is read from the CLI's context store (its `meta.json`
and TLS files) without importing the docker SDK, so resolving stays fast. Where
the default socket is missing and a rootless engine's socket exists under `$XDG_RUNTIME_DIR`,
that one is used (what `dockerd-rootless-setuptool.sh` tells users to export).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from typing import Any, Literal

from envcheck.contracts.command_env import home
from envcheck.contracts.errors import UsageError
from envcheck.contracts.record import record
from envcheck.digest import sha256
from envcheck.regular import read_regular

DEFAULT_SOCKET = "/var/run/docker.sock"
_MAX_CLIENT_FILE = 1024 * 1024  # config.json, meta.json: a few KB each
Source = Literal["DOCKER_HOST", "DOCKER_CONTEXT", "config.json", "rootless", "default"]


@record
class Endpoint:
    """The container engine to talk to, and where that choice came from."""

    host: str  # unix:///…, tcp://host:port, ssh://user@host
    source: Source  # where the choice came from
    context: str | None = None  # the docker context name, when one chose it
    tls_verify: bool = False
    tls_ca: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None

    @property
    def tls(self) -> bool:
        return bool(self.tls_verify or self.tls_cert)

    @property
    def socket_path(self) -> str | None:
        return self.host[len("unix://") :] if self.host.startswith("unix://") else None

    def sdk_kwargs(self) -> dict[str, Any]:
        """`docker.DockerClient(**…)` for this endpoint (TLS material included)."""
        kwargs: dict[str, Any] = {"base_url": self.host}
        if self.tls:
            from docker.tls import TLSConfig

            cert = (self.tls_cert, self.tls_key) if self.tls_cert and self.tls_key else None
            kwargs["tls"] = TLSConfig(client_cert=cert, ca_cert=self.tls_ca, verify=self.tls_verify)
        if self.host.startswith("ssh://"):
            kwargs["use_ssh_client"] = True  # the user's ssh and its config, as the CLI does
        return kwargs


def resolve_endpoint(env: Mapping[str, str]) -> Endpoint:
    """The engine the docker CLI would use with the command's variables `env`."""
    _refuse_a_config_that_blocks(env)
    if env.get("DOCKER_HOST"):
        return _from_docker_host(env)
    name, source = _context_name(env)
    if name and name != "default":
        return _from_context(name, source, _config_dir(env))
    return _default(env)


def _from_docker_host(env: Mapping[str, str]) -> Endpoint:
    certs = env.get("DOCKER_CERT_PATH") or ""
    verify = env.get("DOCKER_TLS_VERIFY", "") not in ("", "0")
    if not (verify and certs):
        return Endpoint(env["DOCKER_HOST"], "DOCKER_HOST", tls_verify=verify)
    return Endpoint(
        env["DOCKER_HOST"],
        "DOCKER_HOST",
        tls_verify=True,
        tls_ca=os.path.join(certs, "ca.pem"),
        tls_cert=os.path.join(certs, "cert.pem"),
        tls_key=os.path.join(certs, "key.pem"),
    )


def _config_dir(env: Mapping[str, str]) -> str:
    return env.get("DOCKER_CONFIG") or os.path.join(home(env), ".docker")


def _refuse_a_config_that_blocks(env: Mapping[str, str]) -> None:
    """The docker SDK opens config.json whatever chose the engine (`APIClient.__init__`,
    `auth.load_config`), and a FIFO there blocks it forever: refused here, before any
    client is made."""
    config = os.path.join(_config_dir(env), "config.json")
    try:
        info = os.stat(config)
    except OSError:
        return  # missing or unreachable: the SDK skips it too
    if not stat.S_ISREG(info.st_mode):
        raise UsageError(
            f"cannot read the docker client configuration {config}: not a regular file",
            hint="remove it, or point DOCKER_CONFIG at a folder with a real config.json",
        )


def _context_name(env: Mapping[str, str]) -> tuple[str | None, Source]:
    if env.get("DOCKER_CONTEXT"):
        return env["DOCKER_CONTEXT"], "DOCKER_CONTEXT"
    config = os.path.join(_config_dir(env), "config.json")
    try:
        doc = json.loads(read_regular(config, _MAX_CLIENT_FILE))
    except FileNotFoundError:
        return None, "default"
    except (OSError, ValueError, RecursionError) as e:
        raise UsageError(
            f"cannot read the docker client configuration {config}: {e}",
            hint="fix or remove the file (`docker context use default` rewrites it)",
        ) from e
    name = doc.get("currentContext") if isinstance(doc, dict) else None
    return (name, "config.json") if isinstance(name, str) and name else (None, "default")


def _from_context(name: str, source: Source, config_dir: str) -> Endpoint:
    """The CLI's context store: contexts/meta/<sha256(name)>/meta.json and contexts/tls/<id>/docker/.

    Read here rather than with the docker SDK's ContextAPI: the SDK finds the store only next to
    an existing config.json (docker/context/config.py, get_context_dir), and the CLI does not
    need one, so `DOCKER_CONTEXT=x` would name a context the SDK cannot see."""
    store_id = sha256(name.encode("utf-8")).hexdigest()
    meta_file = os.path.join(config_dir, "contexts", "meta", store_id, "meta.json")
    hint = (
        "list them with `docker context ls`; unset DOCKER_CONTEXT or `docker context use default`"
    )
    try:
        meta = json.loads(read_regular(meta_file, _MAX_CLIENT_FILE))
    except FileNotFoundError:
        raise UsageError(f"docker context {name!r} ({source}) does not exist", hint=hint) from None
    except (OSError, ValueError, RecursionError) as e:
        raise UsageError(
            f"docker context {name!r} ({source}): cannot read {meta_file}: {e}", hint=hint
        ) from e
    endpoints = meta.get("Endpoints") if isinstance(meta, dict) else None
    docker = endpoints.get("docker") if isinstance(endpoints, dict) else None
    host = docker.get("Host") if isinstance(docker, dict) else None
    if not isinstance(docker, dict) or not isinstance(host, str) or not host:
        raise UsageError(
            f"docker context {name!r} ({source}) has no docker endpoint in {meta_file}", hint=hint
        )
    tls_dir = os.path.join(config_dir, "contexts", "tls", store_id, "docker")
    files = {k: os.path.join(tls_dir, f"{k}.pem") for k in ("ca", "cert", "key")}
    have = {k: v for k, v in files.items() if os.path.isfile(v)}
    return Endpoint(
        host=host,
        source=source,
        context=name,
        tls_verify=bool(have) and not docker.get("SkipTLSVerify", False),
        tls_ca=have.get("ca"),
        tls_cert=have.get("cert") if "key" in have else None,
        tls_key=have.get("key") if "cert" in have else None,
    )


def _default(env: Mapping[str, str]) -> Endpoint:
    runtime = env.get("XDG_RUNTIME_DIR")
    rootless = os.path.join(runtime, "docker.sock") if runtime else None
    if not os.path.exists(DEFAULT_SOCKET) and rootless and os.path.exists(rootless):
        return Endpoint(f"unix://{rootless}", "rootless")
    return Endpoint(f"unix://{DEFAULT_SOCKET}", "default")

"""The one place that touches the `docker` SDK's connection and errors.

Every `docker.errors.*` / `requests` exception raised while acting on the engine is translated
here into an `EnvcheckError` with its exit status and a fix, always `raise … from e`.
The SDK is imported lazily: it costs ~300 ms, more than the whole `doctor --no-smoke` budget.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from envcheck.contracts.errors import EnvcheckError, EnvironmentProblem, UsageError
from envcheck.verdict.fixes import DOCKER_GROUP_FIX, NVIDIA_RUNTIME_FIX, START_DOCKER_FIX

if TYPE_CHECKING:
    import docker

    from envcheck.probe.endpoint import Endpoint

LABEL = "envcheck"  # every container envcheck creates carries this label (value: the run id)

GPU_DRIVER_MISSING = 'could not select device driver "" with capabilities: [[gpu]]'

__all__ = [
    "NVIDIA_RUNTIME_FIX"
]  # said in envcheck.verdict.fixes; the smoke's callers quote it from here


class GpuRequestRefused(EnvironmentProblem):
    """The engine has no NVIDIA runtime/CDI to satisfy a GPU device request."""


_CONNECTED: list[str] = []  # the engine hosts `connect` was asked for, the last one last


def engine_host() -> str:
    """The engine this process last connected to (resolved from the command's variables by its
    caller), for the messages of an engine that cannot be reached."""
    return _CONNECTED[-1] if _CONNECTED else "the engine DOCKER_HOST names"


def connect(endpoint: Endpoint, timeout: float = 30.0) -> docker.DockerClient:
    """A client for `endpoint` (`probe.endpoint.resolve_endpoint` of the command's variables:
    DOCKER_HOST, the current context with its TLS material, the default socket), pinged once."""
    import docker

    _CONNECTED.append(endpoint.host)
    with translate_errors("connecting to the Docker engine"):
        client = docker.DockerClient(**endpoint.sdk_kwargs(), timeout=int(timeout))
        client.ping()
        return client


@contextmanager
def translate_errors(action: str) -> Iterator[None]:
    """Map the SDK's exceptions to one-screen errors with exit codes."""
    import docker.errors
    import requests.exceptions

    try:
        yield
    except EnvcheckError:
        raise
    except docker.errors.ImageNotFound as e:
        raise UsageError(f"{action}: image not found: {_explanation(e)}") from e
    except docker.errors.NotFound as e:
        raise UsageError(f"{action}: not found: {_explanation(e)}") from e
    except docker.errors.APIError as e:
        text = _explanation(e)
        if GPU_DRIVER_MISSING in text or "could not select device driver" in text:
            raise GpuRequestRefused(
                f"{action}: the engine cannot provide GPUs: {text}", hint=NVIDIA_RUNTIME_FIX.prose()
            ) from e
        if "no space left on device" in text:
            raise EnvironmentProblem(
                f"{action}: no space left on device",
                hint="free space with `docker system prune` or move Docker's data-root",
            ) from e
        if e.status_code in (401, 403) or "unauthorized" in text or "denied" in text:
            raise EnvironmentProblem(f"{action}: access denied: {text}") from e
        raise EnvironmentProblem(f"{action}: the engine answered: {text}") from e
    except docker.errors.DockerException as e:
        raise _unreachable(action, e) from e
    except (requests.exceptions.ConnectionError, requests.exceptions.Timeout) as e:
        raise _unreachable(action, e) from e
    except requests.exceptions.RequestException as e:  # e.g. a stream cut mid-answer
        raise EnvironmentProblem(
            f"{action}: the connection to the engine broke: {e}",
            hint="check `docker info` and the engine's log, then run again",
        ) from e
    except PermissionError as e:
        raise _unreachable(action, e) from e


def _unreachable(action: str, e: BaseException) -> EnvironmentProblem:
    text = str(e)
    if "Permission denied" in text or isinstance(e, PermissionError):
        from envcheck.probe.engine import socket_access_fix, socket_denied

        host = engine_host()
        path = host.removeprefix("unix://") if host.startswith("unix://") else None
        if path is None:  # a TCP or SSH engine: not a socket of ours to name
            return EnvironmentProblem(
                f"{action}: permission denied reaching the Docker engine at {host}: {text}",
                DOCKER_GROUP_FIX.prose(),
            )
        return EnvironmentProblem(f"{action}: {socket_denied(path)}", socket_access_fix(path))
    else:
        hint = f"{START_DOCKER_FIX.prose()} or set DOCKER_HOST (now {engine_host()})"
    return EnvironmentProblem(
        f"{action}: cannot reach the Docker engine at {engine_host()}: {text}", hint
    )


def _explanation(e: BaseException) -> str:
    explanation = getattr(e, "explanation", None)
    return str(explanation or e)


# -- pulls: the engine's words mapped to the same errors envcheck's registry reads raise -----------
class PullFailed(EnvironmentProblem):
    """The engine could not pull (exit 4). `transient`: a retry (or the mirror) may succeed."""

    def __init__(self, message: str, hint: str | None = None, *, transient: bool = False) -> None:
        super().__init__(message, hint)
        self.transient = transient


NO_SPACE_HINT = (
    "free space with `docker system prune` (or `docker image prune -a`) or move Docker's data-root"
)


def pull_error(
    text: str, *, ref: str, registry: str, status_code: int | None = None
) -> EnvcheckError:
    """One engine pull error (HTTP error or an `error` event in the stream) as an envcheck error."""
    from envcheck.contracts.pull_events import classify_engine_error
    from envcheck.image.checks import ImageRefused
    from envcheck.registry.errors import (
        ManifestNotFound,
        RegistryAuthRequired,
        RegistryUnavailable,
        login_hint,
    )

    kind = classify_engine_error(text)
    if kind == "other" and status_code in (401, 403):
        kind = "auth"
    if kind == "other" and status_code == 404:
        kind = "not-found"
    if kind == "no-space":
        return EnvironmentProblem(
            f"pulling {ref}: no space left on device ({text})", hint=NO_SPACE_HINT
        )
    if kind == "auth":
        return RegistryAuthRequired(
            f"{registry} refused access to {ref}: {text}", hint=login_hint(registry)
        )
    if kind == "platform":
        return ImageRefused(
            f"pulling {ref}: {text}", hint="choose an image built for this platform"
        )
    if kind == "not-found":
        return ManifestNotFound(f"{ref}: not found on {registry} ({text})")
    # The engine's words whole, in quotes, after the registry (or mirror) it was pulling from:
    # they name a URL, a socket and an errno that a person searches for as they are.
    said = f'pulling {ref} from {registry}: the engine said "{text}"'
    if kind == "transient":
        # A name that does not resolve will not resolve on a retry: straight to the mirror.
        return RegistryUnavailable(said, retry="no such host" not in text.lower())
    return PullFailed(said)


@contextmanager
def translate_pull_errors(ref: str, registry: str) -> Iterator[None]:
    """Around `APIClient.pull(stream=True)` and the iteration of its events."""
    import docker.errors
    import requests.exceptions

    try:
        yield
    except EnvcheckError:
        raise
    except docker.errors.APIError as e:
        raise pull_error(
            _explanation(e), ref=ref, registry=registry, status_code=e.status_code
        ) from e
    except (requests.exceptions.ChunkedEncodingError, requests.exceptions.ReadTimeout) as e:
        # The stream broke or went silent mid-pull: the engine may be fine; worth a retry.
        raise PullFailed(
            f"pulling {ref}: the engine's progress stream broke: {e}", transient=True
        ) from e
    except docker.errors.DockerException as e:
        raise _unreachable(f"pulling {ref}", e) from e
    except (requests.exceptions.ConnectionError, requests.exceptions.Timeout, PermissionError) as e:
        raise _unreachable(f"pulling {ref}", e) from e
    except (ValueError, docker.errors.StreamParseError, RecursionError) as e:
        # An answer that is not a stream of JSON objects (docker-py decodes a non-chunked one
        # whole, raising JSONDecodeError): not an engine we can read; a retry will not fix it.
        raise PullFailed(
            f"pulling {ref}: the engine's answer is not a stream of JSON events: {str(e)[:200]}",
            hint="check `docker info` and the engine's log (is DOCKER_HOST a Docker engine?)",
        ) from e


def inspect_distribution(
    client: docker.DockerClient, ref: str, registry: str, *, deadline: float
) -> Any:
    """The engine's answer to `GET /distribution/{ref}/json` (`docker buildx imagetools inspect`
    without buildx): the daemon reads the registry through its own proxy, `registry-mirrors` and
    `insecure-registries`, with the login the SDK found in `$DOCKER_CONFIG` — what its pull will do.

    `deadline` bounds the whole call: the engine answers only once its registry reads are done, so
    a read timeout of `deadline` seconds is an overall one (a trickling registry behind the
    daemon cannot hang the run); the connection's close cancels the daemon's request."""
    import requests.exceptions

    from envcheck.registry.errors import RegistryUnavailable

    api = client.api
    saved = api.timeout  # the client is used by this thread only while a pull runs
    api.timeout = deadline
    try:
        with translate_pull_errors(ref, registry):
            try:
                return api.inspect_distribution(ref)
            except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError) as e:
                if not _timed_out(e):
                    raise
                raise RegistryUnavailable(
                    f"{registry} did not answer within {deadline:g} s (the engine reading {ref}: "
                    "a stalled or trickling connection)",
                    hint="check the network and the engine's proxy; envcheck retries and tries the mirror",
                ) from e
    finally:
        api.timeout = saved


def _timed_out(e: BaseException) -> bool:
    """requests raises a read timeout on a unix socket as ConnectionError(ReadTimeoutError) in
    some urllib3 versions and as ReadTimeout in others."""
    import requests.exceptions

    return isinstance(e, requests.exceptions.ReadTimeout) or "timed out" in str(e).lower()


def saved_login(registry: str) -> tuple[str, str] | None:
    """The engine's saved login for `registry` (`docker login`: config.json or a credential helper),
    so envcheck's own registry reads see what the engine's pull will see. None when there is none."""
    import docker.errors
    from docker import auth
    from docker.credentials.errors import StoreError
    from docker.utils.config import find_config_file

    from envcheck.regular import read_regular

    path = find_config_file()
    try:
        # Read here, not by the SDK's open(): a FIFO planted there would block it forever
        config = json.loads(read_regular(path, 1024 * 1024)) if path else None
        if not isinstance(config, dict) or not config:
            return None
        found = auth.resolve_authconfig(auth.load_config(config_dict=config), registry) or {}
    except (docker.errors.DockerException, StoreError, OSError, ValueError, RecursionError):
        return None  # an unreadable config.json or a failing credential helper: read anonymously
    if not isinstance(found, dict):
        return None
    user = found.get("Username") or found.get("username")
    secret = found.get("IdentityToken") or found.get("Password") or found.get("password")
    return (str(user or "<token>"), str(secret)) if secret else None

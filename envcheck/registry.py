"""A read-only Registry HTTP API v2 client (standard library only): what a registry knows about
an image before anything is pulled — its digest, its platforms, its size and its config's env.

- Manifests are asked with every Accept type the engine sends, so a registry answers with an index
  when it has one (https://distribution.github.io/distribution/spec/manifest-v2-2/).
- Docker Hub-style registries answer 401 with `WWW-Authenticate: Bearer realm=…,service=…,scope=…`:
  a token is fetched from the realm (anonymously, or with the engine's saved credentials) and the
  request retried (https://distribution.github.io/distribution/spec/auth/token/).
- Plain HTTP only for loopback registries, as the engine does for 127.0.0.0/8.
- The Authorization header never follows a redirect: blob downloads redirect to CDNs/S3, which
  reject (or would leak) a registry token.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import http.client
import ipaddress
import json
import re
import socket
import ssl
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from envcheck.errors import EnvironmentProblem, UsageError
from envcheck.reference import DOCKER_HUB, Reference

DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
INDEX_TYPES = (DOCKER_LIST, OCI_INDEX)
ACCEPT = f"{OCI_INDEX}, {DOCKER_LIST}, {OCI_MANIFEST}, {DOCKER_MANIFEST}"
MAX_DOCUMENT = 4 << 20  # manifests and configs are small: refuse to buffer anything bigger

Credentials = tuple[str, str]  # (username, password or identity token)


# -- errors: each one screen, with its exit status -------------------------------------------------
class RegistryError(EnvironmentProblem):
    """The registry could not be read (exit 4)."""

    transient = False


class RegistryUnavailable(RegistryError):
    """5xx, 429, connection refused/reset, timeouts: worth a retry, then the mirror.
    `retry` is False when waiting cannot help (the name does not resolve): straight to the mirror."""

    transient = True

    def __init__(self, message: str, hint: str | None = None, *, retry: bool = True) -> None:
        super().__init__(message, hint)
        self.retry = retry


class RegistryAuthRequired(RegistryError):
    """401/403: the registry wants a login the engine does not have."""


class ManifestNotFound(UsageError):
    """The tag (or digest, or repository) does not exist on that registry (exit 2)."""


def login_hint(registry: str) -> str:
    command = "docker login" if registry == DOCKER_HUB else f"docker login {registry}"
    return f"log in to {registry}: `{command}` (then run envcheck again)"


# -- what we learn ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Platform:
    os: str
    architecture: str
    variant: str | None = None

    def __str__(self) -> str:
        return "/".join(p for p in (self.os, self.architecture, self.variant) if p)


@dataclass(frozen=True)
class RemoteImage:
    """One tag as the registry describes it."""

    reference: Reference
    digest: str  # of the document the tag points at (an index for multi-platform images)
    media_type: str
    platforms: tuple[Platform, ...]
    # For the platform this host would pull (None when the registry gave no such manifest):
    size: int | None = None  # compressed bytes to download: config + layers
    layers: tuple[tuple[str, int], ...] = ()  # (digest, compressed size) in pull order
    env: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class _Response:
    status: int
    headers: Mapping[str, str]
    body: bytes


# -- the client -------------------------------------------------------------------------------------
class RegistryClient:
    """One registry host. `credentials` come from the engine's saved logins (docker_adapter)."""

    def __init__(self, registry: str, api_host: str, *, credentials: Credentials | None = None,
                 timeout: float = 10.0) -> None:
        self.registry = registry
        self.base = f"{'http' if is_loopback(api_host) else 'https'}://{api_host}/v2"
        self.credentials = credentials
        self.timeout = timeout
        self._tokens: dict[str, str] = {}  # scope -> bearer token

    @classmethod
    def for_reference(cls, ref: Reference, *, credentials: Credentials | None = None,
                      timeout: float = 10.0) -> RegistryClient:
        return cls(ref.registry, ref.api_host, credentials=credentials, timeout=timeout)

    def inspect(self, ref: Reference, platform: Platform) -> RemoteImage:
        """Digest, platforms, and for `platform`: size, layers and config env/labels."""
        try:
            return self._inspect(ref, platform)
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            # a registry (or proxy) answering JSON that is not a manifest: one screen, not a traceback
            raise RegistryError(f"{self.registry} sent a malformed manifest for {ref}: {e!r}",
                                hint="the registry or a proxy in front of it is misbehaving; "
                                "try the mirror with --registry") from e

    def _inspect(self, ref: Reference, platform: Platform) -> RemoteImage:
        doc, digest, media_type = self.manifest(ref.repository, ref.reference)
        if media_type in INDEX_TYPES or "manifests" in doc:
            platforms = tuple(_index_platforms(doc))
            chosen = _match_platform(doc, platform)
            if chosen is None:
                return RemoteImage(ref, digest, media_type, platforms)
            doc, _, _ = self.manifest(ref.repository, chosen)
            config = self._config(ref.repository, doc)
        else:
            config = self._config(ref.repository, doc)
            platforms = (_config_platform(config),)
        layers = tuple((str(l["digest"]), int(l.get("size", 0))) for l in doc.get("layers", []))
        size = int(doc.get("config", {}).get("size", 0)) + sum(s for _, s in layers)
        cfg = config.get("config") or {}
        return RemoteImage(ref, digest, media_type, platforms, size, layers,
                           _env(cfg.get("Env")), dict(cfg.get("Labels") or {}))

    def manifest(self, repository: str, reference: str) -> tuple[dict[str, Any], str, str]:
        """(document, digest of its exact bytes, media type)."""
        url = f"{self.base}/{repository}/manifests/{reference}"
        response = self._get(url, repository, {"Accept": ACCEPT}, what=f"{repository}:{reference}")
        digest = "sha256:" + hashlib.sha256(response.body).hexdigest()
        if reference.startswith("sha256:") and digest != reference:
            raise RegistryError(f"{self.registry} served a manifest whose digest is {digest}, "
                                f"not the {reference} asked for")
        doc = _json(response.body, url)
        media_type = response.headers.get("content-type", "").split(";")[0].strip()
        return doc, digest, str(doc.get("mediaType") or media_type)

    def tags(self, repository: str) -> tuple[str, ...]:
        response = self._get(f"{self.base}/{repository}/tags/list?n=1000", repository, {},
                             what=f"{repository} tags")
        return tuple(_json(response.body, repository).get("tags") or ())

    def _config(self, repository: str, manifest: Mapping[str, Any]) -> dict[str, Any]:
        digest = (manifest.get("config") or {}).get("digest")
        if not digest:
            return {}
        response = self._get(f"{self.base}/{repository}/blobs/{digest}", repository, {},
                             what=f"config {digest}")
        return _json(response.body, digest)

    # -- HTTP with the auth handshake -------------------------------------------------------------
    def _get(self, url: str, repository: str, headers: Mapping[str, str], *, what: str) -> _Response:
        scope = f"repository:{repository}:pull"
        response = self._request(url, headers, self._authorization(scope))
        if response.status == 401:
            challenge = response.headers.get("www-authenticate", "")
            authorization = self._answer(challenge, scope)
            if authorization:
                response = self._request(url, headers, authorization)
        return self._checked(response, what)

    def _authorization(self, scope: str) -> str | None:
        token = self._tokens.get(scope)
        return f"Bearer {token}" if token else None

    def _answer(self, challenge: str, scope: str) -> str | None:
        scheme, params = parse_challenge(challenge)
        if scheme == "basic":
            return _basic(self.credentials) if self.credentials else None
        if scheme != "bearer" or "realm" not in params:
            return None
        query = {"service": params.get("service", ""), "scope": params.get("scope", scope)}
        url = f"{params['realm']}?{urllib.parse.urlencode({k: v for k, v in query.items() if v})}"
        auth = _basic(self.credentials) if self.credentials else None
        response = self._checked(self._request(url, {}, auth), f"a token from {params['realm']}")
        doc = _json(response.body, params["realm"])
        token = doc.get("token") or doc.get("access_token")
        if not token:
            return None
        self._tokens[scope] = str(token)
        return f"Bearer {token}"

    def _request(self, url: str, headers: Mapping[str, str], authorization: str | None) -> _Response:
        request = urllib.request.Request(url, headers=dict(headers))
        request.add_header("User-Agent", "envcheck")
        if authorization:
            request.add_unredirected_header("Authorization", authorization)
        try:
            with _opener().open(request, timeout=self.timeout) as answer:
                return _Response(answer.status, _lower(answer.headers), answer.read(MAX_DOCUMENT))
        except urllib.error.HTTPError as e:
            with e:
                try:
                    body = e.read(MAX_DOCUMENT)
                except (OSError, http.client.HTTPException):
                    body = b""  # the status is the answer; its error page was cut off
                return _Response(e.code, _lower(e.headers), body)
        except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
            reason = getattr(e, "reason", e)
            raise RegistryUnavailable(
                f"cannot reach {self.registry} ({urllib.parse.urlsplit(url).netloc}): {reason}",
                hint="check the network, DNS and any proxy; envcheck retries and tries the mirror",
                retry=not isinstance(reason, socket.gaierror),
            ) from e

    def _checked(self, response: _Response, what: str) -> _Response:
        status = response.status
        if 200 <= status < 300:
            return response
        detail = _error_detail(response.body)
        if status in (401, 403):
            raise RegistryAuthRequired(
                f"{self.registry} refused access to {what} (HTTP {status}{detail})",
                hint=login_hint(self.registry))
        if status == 404:
            raise ManifestNotFound(f"{what}: not found on {self.registry} (HTTP 404{detail})")
        if status == 429 or status >= 500:
            raise RegistryUnavailable(f"{self.registry} answered HTTP {status} for {what}{detail}")
        raise RegistryError(f"{self.registry} answered HTTP {status} for {what}{detail}")


# -- pure helpers -----------------------------------------------------------------------------------
def is_loopback(host_port: str) -> bool:
    if host_port.startswith("["):  # [::1]:5000
        host = host_port[1:].partition("]")[0]
    else:
        host = host_port.rsplit(":", 1)[0] if host_port.count(":") == 1 else host_port
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_challenge(header: str) -> tuple[str, dict[str, str]]:
    """`Bearer realm="https://auth.docker.io/token",service="registry.docker.io"` → parts."""
    scheme, _, rest = header.strip().partition(" ")
    params = {k.lower(): quoted or bare.strip() for k, quoted, bare in _CHALLENGE_PARAM.findall(rest)}
    return scheme.lower(), params


_CHALLENGE_PARAM = re.compile(r'([A-Za-z_]+)=(?:"([^"]*)"|([^,]*))')


def host_platform(machine: str | None = None) -> Platform:
    """This machine as an OCI platform: `uname -m` x86_64 → linux/amd64."""
    import platform as _platform

    arch = (machine or _platform.machine()).lower()
    arch = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm", "ppc64le": "ppc64le"}.get(arch, arch)
    variant = "v8" if arch == "arm64" else "v7" if arch == "arm" else None
    return Platform("linux", arch, variant)


def _index_platforms(index: Mapping[str, Any]) -> list[Platform]:
    found = []
    for entry in index.get("manifests") or []:
        p = entry.get("platform") or {}
        # BuildKit attestations are listed as unknown/unknown: not runnable platforms.
        if p.get("os") and p.get("architecture") and p.get("os") != "unknown":
            found.append(Platform(p["os"], p["architecture"], p.get("variant")))
    return found


def _match_platform(index: Mapping[str, Any], want: Platform) -> str | None:
    for entry in index.get("manifests") or []:
        p = entry.get("platform") or {}
        if p.get("os") == want.os and p.get("architecture") == want.architecture and (
            want.variant is None or p.get("variant") in (None, want.variant)
        ):
            return str(entry["digest"])
    return None


def _config_platform(config: Mapping[str, Any]) -> Platform:
    return Platform(str(config.get("os") or "linux"), str(config.get("architecture") or "amd64"),
                    config.get("variant"))


def platform_runs(platforms: tuple[Platform, ...], want: Platform) -> bool:
    return any(p.os == want.os and p.architecture == want.architecture for p in platforms)


def _env(items: Any) -> dict[str, str]:
    env: dict[str, str] = {}
    for item in items or []:
        key, _, value = str(item).partition("=")
        env[key] = value
    return env


def _json(body: bytes, where: str) -> dict[str, Any]:
    try:
        doc = json.loads(body)
    except ValueError as e:
        raise RegistryError(f"{where}: the registry's answer is not JSON") from e
    if not isinstance(doc, dict):
        raise RegistryError(f"{where}: the registry's answer is not a JSON object")
    return doc


def _error_detail(body: bytes) -> str:
    try:
        errors = json.loads(body).get("errors") or []
        return ": " + "; ".join(f"{e.get('code')}: {e.get('message')}" for e in errors) if errors else ""
    except (ValueError, AttributeError):
        return ""


def _basic(credentials: Credentials) -> str:
    return "Basic " + base64.b64encode(f"{credentials[0]}:{credentials[1]}".encode()).decode()


def _lower(headers: Any) -> dict[str, str]:
    return {k.lower(): v for k, v in (headers or {}).items()}


@functools.cache
def _opener() -> urllib.request.OpenerDirector:
    # One opener per process, its TLS context made on first use: loading the CA store costs
    # ~70 ms, which a pull from a loopback (plain HTTP) registry never needs.
    return urllib.request.build_opener(_LazyHTTPSHandler())


class _LazyHTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self) -> None:
        super().__init__()
        self._context_made = False

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        if not self._context_made:
            self._context = ssl.create_default_context()
            self._context_made = True
        return super().https_open(req)


__all__ = [
    "ManifestNotFound", "Platform", "RegistryAuthRequired", "RegistryClient", "RegistryError",
    "RegistryUnavailable", "RemoteImage", "host_platform", "is_loopback", "login_hint",
    "parse_challenge", "platform_runs",
]

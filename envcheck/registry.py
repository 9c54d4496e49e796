"""What a registry knows about an image before anything is pulled.

The digest and platforms come from the engine (`parse_distribution` reads its answer to
`docker.APIClient.inspect_distribution`): the daemon asks the registry through its own network
path — its proxy, `registry-mirrors`, `insecure-registries` — with the logins the docker CLI
stored, exactly as `docker pull` will. What the engine does not tell (the image config's env, for
its CUDA claims; layer sizes, for the progress bars; tag lists, for "tags nearby") is read by the
read-only Registry HTTP API v2 client below (standard library only), and is advisory: `envcheck.pull`
warns and lets the engine pull when that read fails.

- Manifests are asked with every Accept type the engine sends, so a registry answers with an index
  when it has one (https://distribution.github.io/distribution/spec/manifest-v2-2/).
- Docker Hub-style registries answer 401 with `WWW-Authenticate: Bearer realm=…,service=…,scope=…`:
  a token is fetched from the realm (anonymously, or with the engine's saved credentials) and the
  request retried (https://distribution.github.io/distribution/spec/auth/token/).
- Plain HTTP only for loopback registries, as the engine does for 127.0.0.0/8. A token realm
  must be http(s) under the same rule, on the registry's own host, Docker Hub's auth host, or a
  host the user named in `ENVCHECK_AUTH_HOSTS`: a realm is whatever the server says, and
  `file:///etc/shadow` or an internal address is not where envcheck sends credentials or reads.
  The opener knows only HTTP(S) (no file:, ftp:, data: handlers), as a second fence.
- The Authorization header never follows a redirect: blob downloads redirect to CDNs/S3, which
  reject (or would leak) a registry token.
- Every request has an overall deadline (`deadline`), not only a per-read timeout: a registry or
  proxy sending one byte every 2 s passes every read timeout and would hang the run. At the
  deadline the socket is shut down; the request is a transient failure (retried, then the mirror).
- Documents are checked for shape before use (`_Shape`): a wrong type is "a malformed manifest"
  from the registry; anything else escaping is envcheck's bug (exit 3).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import http.client
import ipaddress
import json
import os
import re
import socket
import ssl
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

from envcheck.errors import EnvironmentProblem, UsageError
from envcheck.platforms import Platform
from envcheck.reference import DOCKER_HUB, Reference

DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
INDEX_TYPES = (DOCKER_LIST, OCI_INDEX)
ACCEPT = f"{OCI_INDEX}, {DOCKER_LIST}, {OCI_MANIFEST}, {DOCKER_MANIFEST}"
MAX_DOCUMENT = 4 << 20  # manifests and configs are small: refuse to buffer anything bigger
REQUEST_DEADLINE_S = 20.0  # one whole request (connect, headers, body); Hub manifests are ~10 kB
AUTH_HOSTS_ENV = "ENVCHECK_AUTH_HOSTS"  # extra token-realm hosts the user trusts, comma-separated
# Registries whose token service lives on another host, as their documentation says:
# https://distribution.github.io/distribution/spec/auth/token/ (Docker Hub: auth.docker.io)
KNOWN_AUTH_HOSTS = {"registry-1.docker.io": ("auth.docker.io",)}

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

    def __init__(
        self,
        registry: str,
        api_host: str,
        *,
        credentials: Credentials | None = None,
        timeout: float = 10.0,
        deadline: float = REQUEST_DEADLINE_S,
    ) -> None:
        self.registry = registry
        self.api_host = api_host
        self.base = f"{'http' if is_loopback(api_host) else 'https'}://{api_host}/v2"
        self.credentials = credentials
        self.timeout = timeout  # per socket operation
        self.deadline = deadline  # per request, whole
        self._tokens: dict[str, str] = {}  # scope -> bearer token

    @classmethod
    def for_reference(
        cls,
        ref: Reference,
        *,
        credentials: Credentials | None = None,
        timeout: float = 10.0,
        deadline: float = REQUEST_DEADLINE_S,
    ) -> RegistryClient:
        return cls(
            ref.registry, ref.api_host, credentials=credentials, timeout=timeout, deadline=deadline
        )

    def inspect(self, ref: Reference, platform: Platform) -> RemoteImage:
        """Digest, platforms, and for `platform`: size, layers and config env/labels."""
        doc, digest, media_type = self.manifest(ref.repository, ref.reference)
        shape = _Shape(f"{self.registry} sent a malformed manifest for {ref}")
        if media_type in INDEX_TYPES or "manifests" in doc:
            entries = shape.index_entries(doc)
            platforms = tuple(_index_platforms(entries))
            chosen = _match_platform(entries, platform)
            if chosen is None:
                return RemoteImage(ref, digest, media_type, platforms)
            doc, _, _ = self.manifest(ref.repository, chosen)
            config = self._config(ref.repository, doc, shape)
        else:
            config = self._config(ref.repository, doc, shape)
            platforms = (_config_platform(config, shape),)
        layers = shape.layers(doc)
        config_size = shape.descriptor(doc.get("config"), "config", required=False)[1]
        cfg = shape.mapping(config.get("config"), "config.config")
        return RemoteImage(
            ref,
            digest,
            media_type,
            platforms,
            config_size + sum(s for _, s in layers),
            layers,
            env_mapping(shape.strings(cfg.get("Env"), "config.Env")),
            shape.labels(cfg.get("Labels")),
        )

    def manifest(self, repository: str, reference: str) -> tuple[dict[str, Any], str, str]:
        """(document, digest of its exact bytes, media type)."""
        url = f"{self.base}/{repository}/manifests/{reference}"
        response = self._get(url, repository, {"Accept": ACCEPT}, what=f"{repository}:{reference}")
        digest = "sha256:" + hashlib.sha256(response.body).hexdigest()
        if reference.startswith("sha256:") and digest != reference:
            raise RegistryError(
                f"{self.registry} served a manifest whose digest is {digest}, "
                f"not the {reference} asked for"
            )
        doc = _json(response.body, url)
        media_type = response.headers.get("content-type", "").split(";")[0].strip()
        return doc, digest, str(doc.get("mediaType") or media_type)

    def tags(self, repository: str) -> tuple[str, ...]:
        response = self._get(
            f"{self.base}/{repository}/tags/list?n=1000", repository, {}, what=f"{repository} tags"
        )
        shape = _Shape(f"{self.registry} sent a malformed tag list for {repository}")
        return tuple(shape.strings(_json(response.body, repository).get("tags"), "tags"))

    def _config(
        self, repository: str, manifest: Mapping[str, Any], shape: _Shape
    ) -> dict[str, Any]:
        digest = shape.descriptor(manifest.get("config"), "config", required=False)[0]
        if not digest:
            return {}
        response = self._get(
            f"{self.base}/{repository}/blobs/{digest}", repository, {}, what=f"config {digest}"
        )
        return _json(response.body, digest)

    # -- HTTP with the auth handshake -------------------------------------------------------------
    def _get(
        self, url: str, repository: str, headers: Mapping[str, str], *, what: str
    ) -> _Response:
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
        refusal = realm_refusal(params["realm"], self.api_host, _configured_auth_hosts())
        if refusal:
            raise RegistryError(
                f"{self.registry} asked for a token from {params['realm']!r}: refused, {refusal}",
                hint=f"if this registry's token service really is that host, allow it: "
                f"`export {AUTH_HOSTS_ENV}=<host>` (https only, except loopback)",
            )
        query = {"service": params.get("service", ""), "scope": params.get("scope", scope)}
        url = f"{params['realm']}?{urllib.parse.urlencode({k: v for k, v in query.items() if v})}"
        auth = _basic(self.credentials) if self.credentials else None
        response = self._checked(self._request(url, {}, auth), f"a token from {params['realm']}")
        doc = _json(response.body, params["realm"])
        token = doc.get("token") or doc.get("access_token")
        if not token or not isinstance(token, str):
            return None
        self._tokens[scope] = str(token)
        return f"Bearer {token}"

    def _request(
        self, url: str, headers: Mapping[str, str], authorization: str | None
    ) -> _Response:
        """One GET, done within `self.deadline` or a transient RegistryUnavailable."""
        with _deadline(self.deadline) as expired:
            try:
                response = self._fetch(url, headers, authorization)
            except RegistryUnavailable as e:
                if not expired():
                    raise
                raise self._too_slow(url) from e
        if expired():  # a shut-down socket may read as an early end: never trust that body
            raise self._too_slow(url)
        return response

    def _too_slow(self, url: str) -> RegistryUnavailable:
        return RegistryUnavailable(
            f"{self.registry} ({urllib.parse.urlsplit(url).netloc}) did not answer within "
            f"{self.deadline:g} s (a stalled or trickling connection)",
            hint="check the network and any proxy; envcheck retries and tries the mirror",
        )

    def _fetch(self, url: str, headers: Mapping[str, str], authorization: str | None) -> _Response:
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
                hint=login_hint(self.registry),
            )
        if status == 404:
            raise ManifestNotFound(f"{what}: not found on {self.registry} (HTTP 404{detail})")
        if status == 429 or status >= 500:
            raise RegistryUnavailable(f"{self.registry} answered HTTP {status} for {what}{detail}")
        raise RegistryError(f"{self.registry} answered HTTP {status} for {what}{detail}")


# -- the engine's answer ----------------------------------------------------------------------------
def parse_distribution(doc: Any, ref: Reference) -> RemoteImage:
    """The engine's `GET /distribution/{name}/json` (`docker.APIClient.inspect_distribution`:
    `{"Descriptor": {"mediaType", "digest", "size"}, "Platforms": [{"os", "architecture"}…]}`) as
    a `RemoteImage` without size, layers or config: the engine tells the digest and platforms only.
    https://docs.docker.com/reference/api/engine/version/v1.41/#tag/Distribution"""
    shape = _Shape(f"the engine sent a malformed distribution answer for {ref}")
    top = shape.mapping(doc, "the answer")
    digest, _ = shape.descriptor(top.get("Descriptor"), "Descriptor")
    media_type = top["Descriptor"].get("mediaType") or ""
    if not isinstance(media_type, str):
        raise shape.fail("Descriptor.mediaType", media_type)
    entries = []
    for i, p in enumerate(shape.items(top.get("Platforms"), "Platforms")):
        fields = [p.get(k) for k in ("os", "architecture", "variant")]
        if not all(f is None or isinstance(f, str) for f in fields):
            raise shape.fail(f"Platforms[{i}]", p)
        os_, arch, variant = fields
        entries.append((digest, Platform(os_, arch, variant or None) if os_ and arch else None))
    return RemoteImage(ref, digest, media_type, tuple(_index_platforms(entries)))


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
    params = {
        k.lower(): quoted or bare.strip() for k, quoted, bare in _CHALLENGE_PARAM.findall(rest)
    }
    return scheme.lower(), params


_CHALLENGE_PARAM = re.compile(r'([A-Za-z_]+)=(?:"([^"]*)"|([^,]*))')


def realm_refusal(
    realm: str, api_host: str, configured: frozenset[str] = frozenset()
) -> str | None:
    """Why a `WWW-Authenticate` realm must not be fetched, or None when it may be: http(s) only
    (plain http only on loopback, as for registries), no credentials in the URL, and on the
    registry's own host, a host known to serve its tokens, or one the user configured."""
    try:
        parts = urllib.parse.urlsplit(realm)
        host = (parts.hostname or "").lower()
        port = parts.port
    except ValueError as e:
        return f"not a URL ({e})"
    if parts.scheme not in ("http", "https") or not host:
        return f"only http(s) token realms are used, not {parts.scheme or 'a relative'}: URLs"
    if parts.username is not None or parts.password is not None:
        return "the realm URL carries credentials"
    netloc = f"[{host}]" if ":" in host else host
    if parts.scheme == "http" and not is_loopback(f"{netloc}:{port or 80}"):
        return "plain http is only used on loopback"
    own = _hostname(api_host)
    allowed = {own, *KNOWN_AUTH_HOSTS.get(own, ()), *configured}
    if host not in allowed:
        return f"{host} is neither the registry's host ({own}) nor in {AUTH_HOSTS_ENV}"
    return None


def _hostname(host_port: str) -> str:
    return (urllib.parse.urlsplit(f"//{host_port}").hostname or host_port).lower()


def _configured_auth_hosts() -> frozenset[str]:
    text = os.environ.get(AUTH_HOSTS_ENV, "")
    return frozenset(h.strip().lower() for h in text.split(",") if h.strip())


class _Shape:
    """Checks a registry document's fields before they are used; a wrong one is a RegistryError
    naming the field (https://github.com/opencontainers/image-spec/blob/main/manifest.md)."""

    def __init__(self, context: str) -> None:
        self.context = context

    def fail(self, where: str, value: Any) -> RegistryError:
        return RegistryError(
            f"{self.context}: {where} is {_shown(value)}",
            hint="the registry or a proxy in front of it is misbehaving; "
            "try the mirror with --registry",
        )

    def mapping(self, value: Any, where: str) -> Mapping[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.fail(where, value)
        return value

    def items(self, value: Any, where: str) -> list[Mapping[str, Any]]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(where, value)
        for i, v in enumerate(value):
            if not isinstance(v, dict):
                raise self.fail(f"{where}[{i}]", v)
        return value

    def strings(self, value: Any, where: str) -> list[str]:
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(where, value)
        return value

    def labels(self, value: Any) -> dict[str, str]:
        found = self.mapping(value, "config.Labels")
        if not all(isinstance(v, str) for v in found.values()):
            raise self.fail("config.Labels", value)
        return dict(found)

    def descriptor(self, value: Any, where: str, *, required: bool = True) -> tuple[str, int]:
        """(digest, size) of a content descriptor; ("", 0) for an absent optional one."""
        if value is None and not required:
            return "", 0
        if not isinstance(value, dict):
            raise self.fail(where, value)
        digest, size = value.get("digest"), value.get("size", 0)
        if not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
            raise self.fail(f"{where}.digest", digest)
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise self.fail(f"{where}.size", size)
        return digest, size

    def layers(self, manifest: Mapping[str, Any]) -> tuple[tuple[str, int], ...]:
        entries = self.items(manifest.get("layers"), "layers")
        return tuple(self.descriptor(e, f"layers[{i}]") for i, e in enumerate(entries))

    def index_entries(self, index: Mapping[str, Any]) -> list[tuple[str, Platform | None]]:
        """(digest, platform or None) per entry of an image index."""
        found = []
        for i, entry in enumerate(self.items(index.get("manifests"), "manifests")):
            digest, _ = self.descriptor(entry, f"manifests[{i}]")
            p = self.mapping(entry.get("platform"), f"manifests[{i}].platform")
            fields = [p.get(k) for k in ("os", "architecture", "variant")]
            if not all(f is None or isinstance(f, str) for f in fields):
                raise self.fail(f"manifests[{i}].platform", p)
            os_, arch, variant = fields
            found.append((digest, Platform(os_, arch, variant) if os_ and arch else None))
        return found


_DIGEST = re.compile(r"[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,}")


def _shown(value: Any) -> str:
    text = "missing" if value is None else f"{type(value).__name__} {value!r}"
    return text if len(text) <= 80 else text[:77] + "..."


def _index_platforms(entries: list[tuple[str, Platform | None]]) -> list[Platform]:
    # BuildKit attestations are listed as unknown/unknown: not runnable platforms.
    return [p for _, p in entries if p is not None and p.os != "unknown"]


def _match_platform(entries: list[tuple[str, Platform | None]], want: Platform) -> str | None:
    for digest, p in entries:
        if (
            p is not None
            and p.os == want.os
            and p.architecture == want.architecture
            and (want.variant is None or p.variant in (None, want.variant))
        ):
            return digest
    return None


def _config_platform(config: Mapping[str, Any], shape: _Shape) -> Platform:
    fields = [config.get(k) for k in ("os", "architecture", "variant")]
    if not all(f is None or isinstance(f, str) for f in fields):
        raise shape.fail(
            "config platform", {k: config.get(k) for k in ("os", "architecture", "variant")}
        )
    return Platform(fields[0] or "linux", fields[1] or "amd64", fields[2])


def env_mapping(items: list[str]) -> dict[str, str]:
    """An image config's `Env` (`["KEY=value", …]`) as a mapping."""
    env: dict[str, str] = {}
    for item in items:
        key, _, value = item.partition("=")
        env[key] = value
    return env


def _json(body: bytes, where: str) -> dict[str, Any]:
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError) as e:  # RecursionError: `[[[[…` thousands deep
        raise RegistryError(f"{where}: the registry's answer is not JSON") from e
    if not isinstance(doc, dict):
        raise RegistryError(f"{where}: the registry's answer is not a JSON object")
    return doc


def _error_detail(body: bytes) -> str:
    """`{"errors": [{"code": …, "message": …}]}` of the distribution spec, or "" for anything else."""
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):
        return ""
    errors = doc.get("errors") if isinstance(doc, dict) else None
    if not isinstance(errors, list):
        return ""
    shown = [f"{e.get('code')}: {e.get('message')}" for e in errors if isinstance(e, dict)]
    return ": " + "; ".join(shown) if shown else ""


def _basic(credentials: Credentials) -> str:
    return "Basic " + base64.b64encode(f"{credentials[0]}:{credentials[1]}".encode()).decode()


def _lower(headers: Any) -> dict[str, str]:
    return {k.lower(): v for k, v in (headers or {}).items()}


@functools.cache
def _opener() -> urllib.request.OpenerDirector:
    # One opener per process, its TLS context made on first use: loading the CA store costs
    # ~70 ms, which a pull from a loopback (plain HTTP) registry never needs. Built by hand, not
    # with build_opener(): that one also opens file:, ftp: and data: URLs.
    opener = urllib.request.OpenerDirector()
    for handler in (
        urllib.request.ProxyHandler(),
        _HTTPHandler(),
        _LazyHTTPSHandler(),
        urllib.request.HTTPDefaultErrorHandler(),
        urllib.request.HTTPRedirectHandler(),
        urllib.request.HTTPErrorProcessor(),
        urllib.request.UnknownHandler(),
    ):
        opener.add_handler(handler)
    return opener


# -- the overall deadline: the sockets of the request in flight, shut down when it passes ----------
_current = threading.local()  # the deadline of this thread's request (redirects included)


class _Deadline:
    def __init__(self) -> None:
        self.expired = False
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []  # dups: shutdown() reaches the shared socket

    def watch(self, sock: socket.socket) -> socket.socket:
        with self._lock:
            dup = sock.dup()  # the TLS wrapper detaches `sock`; the kernel socket stays shared
            self._sockets.append(dup)
            if self.expired:
                _shutdown(dup)
        return sock

    def expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                _shutdown(sock)

    def close(self) -> None:
        with self._lock:
            for sock in self._sockets:
                sock.close()
            self._sockets.clear()


def _shutdown(sock: socket.socket) -> None:
    with suppress(OSError):  # already closed by the request itself
        sock.shutdown(socket.SHUT_RDWR)


@contextmanager
def _deadline(seconds: float) -> Iterator[Callable[[], bool]]:
    """Within the block, this thread's requests are cut `seconds` after it started; yields
    "has it passed?"."""
    deadline = _Deadline()
    timer = threading.Timer(seconds, deadline.expire)
    timer.daemon = True
    _current.deadline = deadline
    timer.start()
    try:
        yield lambda: deadline.expired
    finally:
        timer.cancel()
        _current.deadline = None
        deadline.close()


def _watched(http_class: Any) -> Callable[..., http.client.HTTPConnection]:
    """`http_class`, its connections' sockets registered with this thread's deadline."""
    deadline: _Deadline | None = getattr(_current, "deadline", None)

    def make(*args: Any, **kwargs: Any) -> http.client.HTTPConnection:
        conn: http.client.HTTPConnection = http_class(*args, **kwargs)
        if deadline is not None:
            connect = conn._create_connection  # type: ignore[attr-defined]
            conn._create_connection = (  # type: ignore[attr-defined]
                lambda *a, **k: deadline.watch(connect(*a, **k))
            )
        return conn

    return make


class _HTTPHandler(urllib.request.HTTPHandler):
    def do_open(
        self, http_class: Any, req: urllib.request.Request, **kw: Any
    ) -> http.client.HTTPResponse:
        return super().do_open(_watched(http_class), req, **kw)


class _LazyHTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self) -> None:
        super().__init__()
        self._context_made = False

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        if not self._context_made:
            self._context = ssl.create_default_context()
            self._context_made = True
        return super().https_open(req)

    def do_open(
        self, http_class: Any, req: urllib.request.Request, **kw: Any
    ) -> http.client.HTTPResponse:
        return super().do_open(_watched(http_class), req, **kw)


__all__ = [
    "ManifestNotFound",
    "RegistryAuthRequired",
    "RegistryClient",
    "RegistryError",
    "RegistryUnavailable",
    "RemoteImage",
    "env_mapping",
    "is_loopback",
    "login_hint",
    "parse_challenge",
    "parse_distribution",
    "realm_refusal",
]

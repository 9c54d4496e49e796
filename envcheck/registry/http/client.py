"""`RegistryClient`: envcheck's own read-only Registry HTTP API v2 client for one registry host —
manifests (by tag or digest, the digest checked against the bytes), image configs and tag lists,
with the token handshake (`envcheck.registry.auth` says which realms and credentials), each
request within its deadline (`envcheck.registry.http.transport`), each answer mapped to one error."""

from __future__ import annotations

import hashlib
import http.client
import socket
import urllib.error
import urllib.parse
from collections.abc import Mapping
from typing import Any

from envcheck.image.platforms import Platform
from envcheck.image.reference import Reference
from envcheck.registry.auth import (
    AUTH_HOSTS_ENV,
    Credentials,
    auth_hosts,
    basic,
    is_loopback,
    parse_challenge,
    realm_refusal,
)
from envcheck.registry.documents import (
    ACCEPT,
    INDEX_TYPES,
    RemoteImage,
    Shape,
    config_platform,
    env_mapping,
    error_detail,
    index_platforms,
    json_object,
    match_platform,
)
from envcheck.registry.errors import (
    ManifestNotFound,
    RegistryAuthRequired,
    RegistryError,
    RegistryUnavailable,
    login_hint,
)
from envcheck.registry.http import transport

REQUEST_DEADLINE_S = 20.0  # one whole request (connect, headers, body); Hub manifests are ~10 kB


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
        trusted_realms: str = "",
    ) -> None:
        """`trusted_realms`: ENVCHECK_AUTH_HOSTS of the command's variables (token-service hosts
        the user trusts beside the registry's own)."""
        self.registry = registry
        self.trusted_realms = trusted_realms
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
        trusted_realms: str = "",
    ) -> RegistryClient:
        return cls(
            ref.registry,
            ref.api_host,
            credentials=credentials,
            timeout=timeout,
            deadline=deadline,
            trusted_realms=trusted_realms,
        )

    def inspect(self, ref: Reference, platform: Platform) -> RemoteImage:
        """Digest, platforms, and for `platform`: size, layers and config env/labels."""
        doc, digest, media_type = self.manifest(ref.repository, ref.reference)
        shape = Shape(f"{self.registry} sent a malformed manifest for {ref}")
        if media_type in INDEX_TYPES or "manifests" in doc:
            entries = shape.index_entries(doc)
            platforms = tuple(index_platforms(entries))
            chosen = match_platform(entries, platform)
            if chosen is None:
                return RemoteImage(ref, digest, media_type, platforms)
            doc, _, _ = self.manifest(ref.repository, chosen)
            config = self._config(ref.repository, doc, shape)
        else:
            config = self._config(ref.repository, doc, shape)
            platforms = (config_platform(config, shape),)
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
        if reference.startswith("sha"):  # by digest: content addressed means checked
            self._verified(response.body, reference, "a manifest")
        doc = json_object(response.body, url)
        media_type = response.headers.get("content-type", "").split(";")[0].strip()
        return doc, digest, str(doc.get("mediaType") or media_type)

    def tags(self, repository: str) -> tuple[str, ...]:
        response = self._get(
            f"{self.base}/{repository}/tags/list?n=1000", repository, {}, what=f"{repository} tags"
        )
        shape = Shape(f"{self.registry} sent a malformed tag list for {repository}")
        return tuple(shape.strings(json_object(response.body, repository).get("tags"), "tags"))

    def _config(self, repository: str, manifest: Mapping[str, Any], shape: Shape) -> dict[str, Any]:
        digest = shape.descriptor(manifest.get("config"), "config", required=False)[0]
        if not digest:
            return {}
        response = self._get(
            f"{self.base}/{repository}/blobs/{digest}", repository, {}, what=f"config {digest}"
        )
        # its CUDA requirement and platform are judged: only from the bytes the manifest names
        self._verified(response.body, digest, "an image config")
        return json_object(response.body, digest)

    def _verified(self, body: bytes, digest: str, what: str) -> None:
        """`body` is the content `digest` (`sha256:…` or `sha512:…`) names, else RegistryError."""
        algorithm, _, expected = digest.partition(":")
        if algorithm not in ("sha256", "sha512"):
            raise RegistryError(
                f"{self.registry} named {what} by {digest!r}, which cannot be checked"
            )
        actual = hashlib.new(algorithm, body).hexdigest()
        if actual != expected:
            raise RegistryError(
                f"{self.registry} served {what} whose digest is {algorithm}:{actual}, "
                f"not the {digest} asked for"
            )

    # -- HTTP with the auth handshake -------------------------------------------------------------
    def _get(
        self, url: str, repository: str, headers: Mapping[str, str], *, what: str
    ) -> transport.Response:
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
            return basic(self.credentials) if self.credentials else None
        if scheme != "bearer" or "realm" not in params:
            return None
        configured = auth_hosts(self.trusted_realms)
        refusal = realm_refusal(params["realm"], self.api_host, configured)
        if refusal:
            raise RegistryError(
                f"{self.registry} asked for a token from {params['realm']!r}: refused, {refusal}",
                hint=f"if this registry's token service really is that host, allow it: "
                f"`export {AUTH_HOSTS_ENV}=<host>` (https only, except loopback)",
            )
        query = {"service": params.get("service", ""), "scope": params.get("scope", scope)}
        url = f"{params['realm']}?{urllib.parse.urlencode({k: v for k, v in query.items() if v})}"
        auth = basic(self.credentials) if self.credentials else None
        response = self._checked(self._request(url, {}, auth), f"a token from {params['realm']}")
        doc = json_object(response.body, params["realm"])
        token = doc.get("token") or doc.get("access_token")
        if not token or not isinstance(token, str):
            return None
        self._tokens[scope] = str(token)
        return f"Bearer {token}"

    def _request(
        self, url: str, headers: Mapping[str, str], authorization: str | None
    ) -> transport.Response:
        """One GET, done within `self.deadline` or a transient RegistryUnavailable."""
        with transport.deadline(self.deadline) as expired:
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

    def _fetch(
        self, url: str, headers: Mapping[str, str], authorization: str | None
    ) -> transport.Response:
        try:
            return transport.fetch(url, headers, authorization, timeout=self.timeout)
        except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
            reason = getattr(e, "reason", e)
            raise RegistryUnavailable(
                f"cannot reach {self.registry} ({urllib.parse.urlsplit(url).netloc}): {reason}",
                hint="check the network, DNS and any proxy; envcheck retries and tries the mirror",
                retry=not isinstance(reason, socket.gaierror),
            ) from e

    def _checked(self, response: transport.Response, what: str) -> transport.Response:
        status = response.status
        if 200 <= status < 300:
            return response
        detail = error_detail(response.body)
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

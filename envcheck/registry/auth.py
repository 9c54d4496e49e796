"""Whom envcheck's registry reads trust, and with what: pure policy, no I/O.

- Plain HTTP only for loopback registries, as the engine does for 127.0.0.0/8.
- Docker Hub-style registries answer 401 with `WWW-Authenticate: Bearer realm=…,service=…,scope=…`:
  a token is fetched from the realm (anonymously, or with the engine's saved credentials) and the
  request retried (https://distribution.github.io/distribution/spec/auth/token/). A realm must be
  http(s) under the rule above, on the registry's own host, Docker Hub's auth host, or a host the
  user named in `ENVCHECK_AUTH_HOSTS`: a realm is whatever the server says, and
  `file:///etc/shadow` or an internal address is not where envcheck sends credentials or reads.
"""

from __future__ import annotations

import base64
import ipaddress
import re
import urllib.parse

AUTH_HOSTS_ENV = "ENVCHECK_AUTH_HOSTS"  # extra token-realm hosts the user trusts, comma-separated
# Registries whose token service lives on another host, as their documentation says:
# https://distribution.github.io/distribution/spec/auth/token/ (Docker Hub: auth.docker.io)
KNOWN_AUTH_HOSTS = {"registry-1.docker.io": ("auth.docker.io",)}

Credentials = tuple[str, str]  # (username, password or identity token)


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


def auth_hosts(text: str) -> frozenset[str]:
    """The hosts named in `ENVCHECK_AUTH_HOSTS`'s value."""
    return frozenset(h.strip().lower() for h in text.split(",") if h.strip())


def basic(credentials: Credentials) -> str:
    """The `Authorization` header's value for HTTP Basic."""
    return "Basic " + base64.b64encode(f"{credentials[0]}:{credentials[1]}".encode()).decode()

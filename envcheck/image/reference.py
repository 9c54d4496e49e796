"""Image references: a strict parser, so nothing odd ever reaches the engine or a registry.

The grammar is distribution's (github.com/distribution/reference, `reference.go`), with Docker's
normalisation (no domain → `docker.io`, one path component → `library/…`), and stricter where the
engine is lenient: ASCII only, no surrounding whitespace, ports 1–65535, only `sha256` digests
(the only algorithm registries use), a name of at most 255 characters.

    reference  := name [ ":" tag ] [ "@" digest ]
    name       := [ domain "/" ] component ( "/" component )*
    domain     := host [ ":" port ]            (a first part with "." or ":", or "localhost")
    component  := [a-z0-9]+ ( ( "." | "_" | "__" | "-"+ ) [a-z0-9]+ )*
    tag        := [A-Za-z0-9_] [A-Za-z0-9_.-]{0,127}
    digest     := "sha256:" [0-9a-f]{64}
"""

from __future__ import annotations

import re

from envcheck.contracts.errors import UsageError
from envcheck.contracts.record import record
from envcheck.digest import short_id

DOCKER_HUB = "docker.io"
DOCKER_HUB_API = "registry-1.docker.io"  # where docker.io's Registry API v2 really answers
_LEGACY_HUB_NAMES = {"index.docker.io", "registry-1.docker.io"}

_COMPONENT = re.compile(r"[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*")
_HOST_PART = r"(?:[A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9])"
_DOMAIN = re.compile(rf"(?P<host>{_HOST_PART}(?:\.{_HOST_PART})*)(?::(?P<port>[0-9]{{1,5}}))?")
_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
NAME_MAX = 255


class InvalidReference(UsageError):
    """Not a valid image reference (exit 2, before any engine or registry call)."""


@record
class Reference:
    """A validated, normalised image reference."""

    registry: str  # "docker.io", "127.0.0.1:5000", "ccr-….bj.baidubce.com"
    repository: str  # "paddlepaddle/paddle", "library/busybox"
    tag: str | None = None
    digest: str | None = None  # "sha256:<64 hex>"

    @property
    def name(self) -> str:
        """`registry/repository`: what the engine files the image under."""
        return f"{self.registry}/{self.repository}"

    @property
    def familiar_name(self) -> str:
        """How the engine prints the name (`RepoTags`, `RepoDigests`): Docker Hub's prefix dropped."""
        if self.registry != DOCKER_HUB:
            return self.name
        return self.repository.removeprefix("library/")

    @property
    def reference(self) -> str:
        """What to ask the registry's manifest endpoint for: the digest if pinned, else the tag."""
        return self.digest or self.tag or "latest"

    @property
    def api_host(self) -> str:
        return DOCKER_HUB_API if self.registry == DOCKER_HUB else self.registry

    def __str__(self) -> str:
        text = self.name
        if self.tag:
            text += f":{self.tag}"
        if self.digest:
            text += f"@{self.digest}"
        return text

    def with_tag(self, tag: str) -> Reference:
        return Reference(self.registry, self.repository, tag, None)

    def with_digest(self, digest: str) -> Reference:
        return Reference(self.registry, self.repository, None, digest)

    def tagged(self) -> Reference:
        """The same reference with `latest` filled in when neither tag nor digest was given."""
        if self.tag or self.digest:
            return self
        return self.with_tag("latest")


def parse_reference(text: str) -> Reference:
    """Parse and normalise `text`, or raise `InvalidReference` naming what is wrong."""
    problem = _problem(text)
    if problem:
        raise InvalidReference(
            f"invalid image reference {text!r}: {problem}",
            hint="expected [REGISTRY[:PORT]/]NAME[:TAG][@sha256:DIGEST], "
            "e.g. paddlepaddle/paddle:3.3.1 or 127.0.0.1:5000/team/image:1",
        )
    return _parse_valid(text)


def is_valid_reference(text: str) -> bool:
    return _problem(text) is None


def _problem(text: str) -> str | None:
    if not isinstance(text, str) or not text:
        return "empty"
    if not text.isascii() or not text.isprintable() or text != text.strip() or " " in text:
        return "only printable ASCII without spaces is allowed"
    rest, _, digest = text.partition("@")
    if "@" in text and not _DIGEST.fullmatch(digest):
        return "the digest must be sha256: followed by 64 lowercase hex digits"
    name, tag = _split_tag(rest)
    if tag is not None and not _TAG.fullmatch(tag):
        return f"bad tag {tag!r} (letters, digits, _ . -, not starting with . or -, ≤ 128)"
    if len(name) > NAME_MAX:
        return f"the name is longer than {NAME_MAX} characters"
    domain, path = _split_domain(name)
    if domain is not None:
        bad = _domain_problem(domain)
        if bad:
            return bad
    for component in path.split("/"):
        if not _COMPONENT.fullmatch(component):
            return (
                f"bad name component {component!r} (lowercase letters, digits, "
                "separated by . _ __ or -)"
            )
    return None


def _split_tag(rest: str) -> tuple[str, str | None]:
    """A ':' after the last '/' starts the tag; before it, it is the registry's port."""
    colon = rest.rfind(":")
    if colon > rest.rfind("/"):
        return rest[:colon], rest[colon + 1 :]
    return rest, None


def _split_domain(name: str) -> tuple[str | None, str]:
    first, slash, remainder = name.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost" or first != first.lower()):
        return first, remainder
    return None, name


def _domain_problem(domain: str) -> str | None:
    match = _DOMAIN.fullmatch(domain)
    if not match:
        return f"bad registry host {domain!r}"
    port = match.group("port")
    if port is not None and not 0 < int(port) < 65536:
        return f"bad registry port {port!r}"
    return None


def _parse_valid(text: str) -> Reference:
    rest, _, digest = text.partition("@")
    name, tag = _split_tag(rest)
    domain, path = _split_domain(name)
    if domain is None or domain in _LEGACY_HUB_NAMES:
        domain = DOCKER_HUB
    if domain == DOCKER_HUB and "/" not in path:
        path = f"library/{path}"  # Docker Hub's official images
    return Reference(domain, path, tag, digest or None)


def shown_image(image: str) -> str:
    """An image as a log line names it: a reference as given, an image id as docker shows it."""
    return short_id(image) if re.fullmatch(r"sha256:[0-9a-f]{64}", image) else image

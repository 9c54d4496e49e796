"""A registry's documents — manifests, image indexes, image configs, error bodies — and the
engine's distribution answer, read from hostile bytes: every field is checked for shape before
use (`Shape`), so a wrong type is "a malformed manifest" from the registry; anything else escaping
is envcheck's bug (exit 3). Pure: no I/O.

Manifests are asked with every Accept type the engine sends, so a registry answers with an index
when it has one (https://distribution.github.io/distribution/spec/manifest-v2-2/).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from envcheck.contracts.record import field, record
from envcheck.image.platforms import Platform
from envcheck.image.reference import Reference
from envcheck.registry.errors import RegistryError

DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
INDEX_TYPES = (DOCKER_LIST, OCI_INDEX)
ACCEPT = f"{OCI_INDEX}, {DOCKER_LIST}, {OCI_MANIFEST}, {DOCKER_MANIFEST}"


@record
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


# -- the engine's answer ----------------------------------------------------------------------------
def parse_distribution(doc: Any, ref: Reference) -> RemoteImage:
    """The engine's `GET /distribution/{name}/json` (`docker.APIClient.inspect_distribution`:
    `{"Descriptor": {"mediaType", "digest", "size"}, "Platforms": [{"os", "architecture"}…]}`) as
    a `RemoteImage` without size, layers or config: the engine tells the digest and platforms only.
    https://docs.docker.com/reference/api/engine/version/v1.41/#tag/Distribution"""
    shape = Shape(f"the engine sent a malformed distribution answer for {ref}")
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
    return RemoteImage(ref, digest, media_type, tuple(index_platforms(entries)))


# -- field by field ---------------------------------------------------------------------------------
class Shape:
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


# -- what the fields mean ---------------------------------------------------------------------------
def index_platforms(entries: list[tuple[str, Platform | None]]) -> list[Platform]:
    # BuildKit attestations are listed as unknown/unknown: not runnable platforms.
    return [p for _, p in entries if p is not None and p.os != "unknown"]


def match_platform(entries: list[tuple[str, Platform | None]], want: Platform) -> str | None:
    for digest, p in entries:
        if (
            p is not None
            and p.os == want.os
            and p.architecture == want.architecture
            and (want.variant is None or p.variant in (None, want.variant))
        ):
            return digest
    return None


def config_platform(config: Mapping[str, Any], shape: Shape) -> Platform:
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


# -- bodies -----------------------------------------------------------------------------------------
def json_object(body: bytes, where: str) -> dict[str, Any]:
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError) as e:  # RecursionError: `[[[[…` thousands deep
        raise RegistryError(f"{where}: the registry's answer is not JSON") from e
    if not isinstance(doc, dict):
        raise RegistryError(f"{where}: the registry's answer is not a JSON object")
    return doc


def error_detail(body: bytes) -> str:
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

"""Push images to a real registry over the Registry HTTP API v2, for tests that need content the
engine has never seen (so a pull really downloads and extracts), or shapes `docker push` cannot
make (an index without linux/amd64). Uploads are monolithic: POST an upload, PUT the blob.
https://distribution.github.io/distribution/spec/api/#pushing-an-image
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import tarfile
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.conftest import LocalRegistry

DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
LAYER = "application/vnd.docker.image.rootfs.diff.tar.gzip"
CONFIG = "application/vnd.docker.container.image.v1+json"


@dataclass(frozen=True)
class PushedImage:
    digest: str  # of the manifest: what the engine records in RepoDigests
    size: int  # of the manifest document
    config_digest: str  # the engine's image id
    layers: tuple[tuple[str, int], ...]  # (compressed digest, size)


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def push_blob(base: str, repo: str, data: bytes) -> str:
    digest = _digest(data)
    start = urllib.request.Request(f"{base}/v2/{repo}/blobs/uploads/", method="POST", data=b"")
    with urllib.request.urlopen(start, timeout=30) as answer:
        location = urllib.parse.urljoin(base, answer.headers["Location"])
    sep = "&" if "?" in location else "?"
    put = urllib.request.Request(
        f"{location}{sep}digest={digest}",
        method="PUT",
        data=data,
        headers={"Content-Type": "application/octet-stream"},
    )
    with urllib.request.urlopen(put, timeout=60):
        return digest


def push_manifest(
    base: str, repo: str, reference: str, doc: dict[str, Any], media_type: str
) -> tuple[str, int]:
    body = json.dumps(doc).encode()
    put = urllib.request.Request(
        f"{base}/v2/{repo}/manifests/{reference}",
        method="PUT",
        data=body,
        headers={"Content-Type": media_type},
    )
    with urllib.request.urlopen(put, timeout=30):
        return _digest(body), len(body)


def random_layer(size: int, name: str) -> tuple[bytes, str]:
    """(gzipped tar holding one file of `size` random bytes, diff id of the plain tar)."""
    plain = io.BytesIO()
    with tarfile.open(fileobj=plain, mode="w") as tar:
        info = tarfile.TarInfo(f"data/{name}")
        info.size = size
        tar.addfile(info, io.BytesIO(os.urandom(size)))
    raw = plain.getvalue()
    return gzip.compress(raw, compresslevel=1), _digest(raw)


def push_random_image(
    base: str,
    repo: str,
    tag: str,
    *,
    layers: int = 3,
    layer_size: int = 1 << 20,
    env: dict[str, str] | None = None,
    architecture: str = "amd64",
) -> PushedImage:
    """A fresh image (random bytes: no layer can already be in the engine) under `repo:tag`."""
    blobs, diff_ids = [], []
    for i in range(layers):
        gz, diff_id = random_layer(layer_size, f"blob{i}")
        blobs.append((push_blob(base, repo, gz), len(gz)))
        diff_ids.append(diff_id)
    config = json.dumps(
        {
            "architecture": architecture,
            "os": "linux",
            "config": {"Env": [f"{k}={v}" for k, v in (env or {}).items()], "Cmd": ["/bin/true"]},
            "rootfs": {"type": "layers", "diff_ids": diff_ids},
        }
    ).encode()
    config_digest = push_blob(base, repo, config)
    manifest = {
        "schemaVersion": 2,
        "mediaType": DOCKER_MANIFEST,
        "config": {"mediaType": CONFIG, "size": len(config), "digest": config_digest},
        "layers": [{"mediaType": LAYER, "size": size, "digest": d} for d, size in blobs],
    }
    digest, size = push_manifest(base, repo, tag, manifest, DOCKER_MANIFEST)
    return PushedImage(digest, size, config_digest, tuple(blobs))


def push_index(base: str, repo: str, tag: str, entries: list[tuple[PushedImage, str, str]]) -> str:
    """A manifest list of (image, os, architecture) under `repo:tag`; returns its digest."""
    index = {
        "schemaVersion": 2,
        "mediaType": DOCKER_LIST,
        "manifests": [
            {
                "mediaType": DOCKER_MANIFEST,
                "size": image.size,
                "digest": image.digest,
                "platform": {"os": os_name, "architecture": arch},
            }
            for image, os_name, arch in entries
        ],
    }
    return push_manifest(base, repo, tag, index, DOCKER_LIST)[0]


@dataclass
class Fresh:
    """Push never-seen images to a registry; every local copy is removed at the end."""

    client: Any
    registry: LocalRegistry
    repos: list[str]

    def push(
        self,
        *,
        base: str | None = None,
        layers: int = 3,
        layer_size: int = 512 << 10,
        env: dict[str, str] | None = None,
        tag: str = "1",
        repo: str | None = None,
        architecture: str = "amd64",
    ) -> tuple[str, PushedImage]:
        repo = repo or f"envcheck-test/fresh-{uuid.uuid4().hex[:10]}"
        self.repos.append(repo)
        image = push_random_image(
            base or self.registry.url,
            repo,
            tag,
            layers=layers,
            layer_size=layer_size,
            env=env,
            architecture=architecture,
        )
        return repo, image

    def local(self, ref: str) -> dict[str, Any] | None:
        import docker.errors

        try:
            return dict(self.client.api.inspect_image(ref))
        except docker.errors.NotFound:
            return None

    def cleanup(self) -> None:
        for image in self.client.images.list():
            names = image.tags + image.attrs.get("RepoDigests", [])
            if any(f"/{repo}:" in n or f"/{repo}@" in n for n in names for repo in self.repos):
                self.client.images.remove(image.id, force=True)

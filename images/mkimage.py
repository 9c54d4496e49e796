#!/usr/bin/env python3
"""Write a `docker save`-style archive from directories, one layer each, to stdout.

    python3 images/mkimage.py --tag NAME:TAG --layer DIR [--layer DIR ...] \
        [--env K=V] [--label K=V] [--cmd JSON] [--chown PATH=UID:GID] | docker load

Why not `docker build`: with no base image to pull (offline), a rootfs has to be assembled on
the host anyway, and writing the layer tars ourselves is the fastest way in (`docker load`
≈ 10 s for 900 MB, see docs/facts/docker-offline.md). Tars are deterministic (sorted names,
fixed mtime, root ownership) so the same inputs give the same layer digests.
Standard library only: it runs before any virtualenv exists.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path

EPOCH = 1_700_000_000  # fixed mtime: identical inputs → identical layer digests
CHUNK = 1 << 20


def _parse_pairs(items: list[str], sep: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for item in items:
        key, found, value = item.partition(sep)
        if not found:
            raise SystemExit(f"mkimage: expected KEY{sep}VALUE, got {item!r}")
        pairs[key] = value
    return pairs


def _normaliser(chown: dict[str, tuple[int, int]]):  # type: ignore[no-untyped-def]
    def normalise(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.mtime = EPOCH
        path = "/" + info.name.lstrip("./")
        uid, gid = next(
            (
                ids
                for prefix, ids in chown.items()
                if path == prefix or path.startswith(prefix + "/")
            ),
            (0, 0),
        )
        info.uid, info.gid, info.uname, info.gname = uid, gid, "", ""
        return info

    return normalise


class _HashingWriter(io.RawIOBase):
    """A file sink that hashes what passes through, so a layer is read from disk only once."""

    def __init__(self, path: Path) -> None:
        self._file = path.open("wb")
        self.sha256 = hashlib.sha256()
        self.size = 0

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:  # type: ignore[no-untyped-def]
        self.sha256.update(data)
        self.size += len(data)
        return self._file.write(data)

    def close(self) -> None:
        self._file.close()
        super().close()


def write_layer(src: Path, dest: Path, chown: dict[str, tuple[int, int]]) -> str:
    """Tar `src`'s contents (paths relative to it) into `dest`; return the diff id."""
    sink = _HashingWriter(dest)
    with tarfile.open(fileobj=sink, mode="w|", format=tarfile.PAX_FORMAT, bufsize=CHUNK) as tar:
        for entry in sorted(os.listdir(src)):
            tar.add(src / entry, arcname=entry, recursive=True, filter=_normaliser(chown))
    sink.close()
    return "sha256:" + sink.sha256.hexdigest()


def image_config(args: argparse.Namespace, diff_ids: list[str]) -> dict[str, object]:
    env = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"] + args.env
    config: dict[str, object] = {"Env": env, "Labels": _parse_pairs(args.label, "=")}
    if args.cmd:
        config["Cmd"] = json.loads(args.cmd)
    if args.workdir:
        config["WorkingDir"] = args.workdir
    return {
        "architecture": "amd64",
        "os": "linux",
        "created": "2023-11-14T22:13:20Z",
        "config": config,
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
        "history": [
            {"created": "2023-11-14T22:13:20Z", "created_by": f"mkimage.py layer {i}"}
            for i in range(len(diff_ids))
        ],
    }


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mtime = len(data), EPOCH
    tar.addfile(info, io.BytesIO(data))


def write_archive(args: argparse.Namespace, work: Path, out) -> None:  # type: ignore[no-untyped-def]
    chown = {
        k: tuple(int(x) for x in v.split(":")) for k, v in _parse_pairs(args.chown, "=").items()
    }
    layers: list[tuple[str, Path]] = []
    for i, src in enumerate(args.layer):
        dest = work / f"layer{i}.tar"
        layers.append((write_layer(Path(src), dest, chown), dest))  # type: ignore[arg-type]
    config = json.dumps(image_config(args, [d for d, _ in layers]), sort_keys=True).encode()
    config_name = hashlib.sha256(config).hexdigest() + ".json"
    manifest = [
        {
            "Config": config_name,
            "RepoTags": args.tag,
            "Layers": [f"{d.removeprefix('sha256:')}/layer.tar" for d, _ in layers],
        }
    ]
    with tarfile.open(fileobj=out, mode="w|", bufsize=CHUNK) as tar:
        _add_bytes(tar, config_name, config)
        for diff_id, path in layers:
            tar.add(path, arcname=f"{diff_id.removeprefix('sha256:')}/layer.tar")
        _add_bytes(tar, "manifest.json", json.dumps(manifest).encode())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tag", action="append", required=True)
    parser.add_argument("--layer", action="append", required=True, help="a directory: one layer")
    parser.add_argument("--env", action="append", default=[])
    parser.add_argument("--label", action="append", default=[])
    parser.add_argument("--chown", action="append", default=[], help="/path=UID:GID")
    parser.add_argument("--cmd", help="JSON list, e.g. '[\"sh\"]'")
    parser.add_argument("--workdir")
    parser.add_argument("--scratch", help="where to write the layer tars (default: a temp dir)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="mkimage-", dir=args.scratch))
    try:
        write_archive(args, work, sys.stdout.buffer)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

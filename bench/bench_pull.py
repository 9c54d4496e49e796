#!/usr/bin/env python3
"""Benchmark `envcheck pull-image` against `docker pull`: the same image, the same local registry,
fresh each time (the image and its layers removed before every pull), runs alternated.

    .venv/bin/python bench/bench_pull.py [--runs 5] [--image REF]

Targets: envcheck's median wall ≤ 1.05 × docker's, and envcheck's own CPU time (user +
sys of its process, `resource.getrusage` via `os.wait4`) ≤ 10 % of its pull's wall time.
Exits 1 when a target is missed.

The default image is the Paddle CPU test image rebuilt with distinct layers
(`envcheck-test/paddle-cpu-bench:3.3.1`): same files, one marker file appended to each layer tar,
so removing it between runs never touches `envcheck-test/paddle-cpu:3.3.1`, which the smoke tests
use. It is made from that image (docker save → append → docker load → push) on first use.
Needs `scripts/dev setup` first.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = os.environ.get("ENVCHECK_REGISTRY_ADDR", "127.0.0.1:5000")
SOURCE_IMAGE = "envcheck-test/paddle-cpu:3.3.1"
BENCH_IMAGE = "envcheck-test/paddle-cpu-bench:3.3.1"
WALL_RATIO_MAX = 1.05
CPU_SHARE_MAX = 0.10
TIMEOUT = 600.0  # seconds for one pull


@dataclass(frozen=True)
class Run:
    tool: str
    wall: float
    cpu: float  # user + sys seconds of the tool's process (and children it waited for)


# -- the bench image ---------------------------------------------------------------------------------
def registry_has(ref: str) -> bool:
    host, _, rest = ref.partition("/")
    repo, _, tag = rest.rpartition(":")
    request = urllib.request.Request(
        f"http://{host}/v2/{repo}/manifests/{tag}",
        method="HEAD",
        headers={"Accept": "application/vnd.docker.distribution.manifest.v2+json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=5):
            return True
    except (urllib.error.URLError, OSError):
        return False


def make_bench_image(remote: str) -> None:
    """SOURCE_IMAGE with a marker file appended to every layer: new diff ids, same content."""
    print(f"making {remote} from {SOURCE_IMAGE} (once)…", file=sys.stderr)
    work = Path(tempfile.mkdtemp(prefix="bench-image-", dir=ROOT / ".cache"))
    try:
        save = subprocess.Popen(["docker", "save", SOURCE_IMAGE], stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", str(work)], stdin=save.stdout, check=True)
        if save.wait() != 0:
            raise SystemExit(f"docker save {SOURCE_IMAGE} failed: run scripts/dev setup")
        manifest = json.loads((work / "manifest.json").read_text())[0]
        config = json.loads((work / manifest["Config"]).read_text())
        diff_ids = []
        for i, layer in enumerate(manifest["Layers"]):
            marker = work / f"envcheck-bench-layer-{i}"
            marker.write_text(f"layer {i} of the pull benchmark image\n")
            # GNU tar appends in place (before the end-of-archive blocks): no copy of the layer.
            subprocess.run(
                ["tar", "-rf", str(work / layer), "-C", str(work), marker.name], check=True
            )
            diff_ids.append("sha256:" + _sha256(work / layer))
        config["rootfs"]["diff_ids"] = diff_ids
        config_bytes = json.dumps(config).encode()
        config_name = hashlib.sha256(config_bytes).hexdigest() + ".json"
        (work / config_name).write_bytes(config_bytes)
        manifest.update(Config=config_name, RepoTags=[remote])
        (work / "manifest.json").write_text(json.dumps([manifest]))
        (work / "repositories").unlink(missing_ok=True)
        tar = subprocess.Popen(
            ["tar", "-C", str(work), "-c", "manifest.json", config_name, *manifest["Layers"]],
            stdout=subprocess.PIPE,
        )
        subprocess.run(
            ["docker", "load", "-q"], stdin=tar.stdout, check=True, stdout=subprocess.DEVNULL
        )
        tar.wait()
        subprocess.run(["docker", "push", "-q", remote], check=True, stdout=subprocess.DEVNULL)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


# -- runs --------------------------------------------------------------------------------------------
def remove_image(ref: str) -> None:
    """The image and every layer only it uses, so the next pull downloads and extracts it all."""
    image_id = subprocess.run(
        ["docker", "image", "inspect", "-f", "{{.Id}}", ref],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    if image_id:
        subprocess.run(["docker", "rmi", "-f", image_id], check=True, stdout=subprocess.DEVNULL)


def timed(tool: str, argv: list[str]) -> Run:
    # Output to a file, not a pipe nobody reads during the pull (a full pipe would stall the tool).
    with tempfile.TemporaryFile() as log:
        start = time.perf_counter()
        child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        guard = threading.Timer(TIMEOUT, child.kill)  # a stuck pull must not hang the bench
        guard.start()
        _, status, usage = os.wait4(child.pid, 0)
        guard.cancel()
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            log.seek(0)
            raise SystemExit(f"{tool} failed ({child.returncode}): {log.read().decode()[-2000:]}")
    return Run(tool, wall, usage.ru_utime + usage.ru_stime)


def commands(ref: str) -> dict[str, list[str]]:
    envcheck = str(ROOT / ".venv" / "bin" / "envcheck")
    # Both with their non-TTY progress output (what a CI log gets), discarded.
    return {"envcheck": [envcheck, "pull-image", "--image", ref], "docker": ["docker", "pull", ref]}


def bench(ref: str, runs: int) -> list[Run]:
    cmds, results = commands(ref), []
    for i in range(runs):
        # Alternate which tool goes first, so drifts (page cache, other load) hit both alike.
        order = ("envcheck", "docker") if i % 2 == 0 else ("docker", "envcheck")
        for tool in order:
            remove_image(ref)
            subprocess.run(["sync"], check=True)
            run = timed(tool, cmds[tool])
            results.append(run)
            print(
                f"  run {i + 1}/{runs} {tool:8} wall {run.wall:6.2f} s  cpu {run.cpu:5.2f} s",
                file=sys.stderr,
            )
    remove_image(ref)
    return results


def report(results: list[Run]) -> bool:
    med = {
        tool: (
            statistics.median(r.wall for r in results if r.tool == tool),
            statistics.median(r.cpu for r in results if r.tool == tool),
        )
        for tool in ("envcheck", "docker")
    }
    ratio = med["envcheck"][0] / med["docker"][0]
    cpu_share = statistics.median(r.cpu / r.wall for r in results if r.tool == "envcheck")
    print(f"{'tool':10}{'median wall':>14}{'median cpu':>14}")
    for tool, (wall, cpu) in med.items():
        print(f"{tool:10}{wall:12.2f} s{cpu:12.2f} s")
    ok_wall, ok_cpu = ratio <= WALL_RATIO_MAX, cpu_share <= CPU_SHARE_MAX
    print(
        f"wall ratio envcheck/docker: {ratio:.3f} (target ≤ {WALL_RATIO_MAX}) {'ok' if ok_wall else 'MISSED'}"
    )
    print(
        f"envcheck cpu / its wall:    {cpu_share:.1%} (target ≤ {CPU_SHARE_MAX:.0%}) {'ok' if ok_cpu else 'MISSED'}"
    )
    return ok_wall and ok_cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="pulls per tool (default 5)")
    parser.add_argument(
        "--image", help=f"a reference on a local registry (default: {REGISTRY}/{BENCH_IMAGE})"
    )
    args = parser.parse_args()
    ref = args.image or f"{REGISTRY}/{BENCH_IMAGE}"
    if not args.image and not registry_has(ref):
        make_bench_image(ref)
    print(f"pulling {ref}, {args.runs} runs per tool, alternated", file=sys.stderr)
    return 0 if report(bench(ref, args.runs)) else 1


if __name__ == "__main__":
    sys.exit(main())

"""The longest silence on stderr: `envcheck doctor` on a terminal (a real pty,
120x40) and in a log (a pipe, under --json), for a warm container smoke, a cold pull and a hung
smoke. Target: no silence longer than 2 s on a terminal, 15 s in a log (heartbeat every 10 s).

- warm:  `doctor --image envcheck-test/paddle-cpu:3.3.1` (the image present, the smoke trains)
- cold:  `doctor --image 127.0.0.1:5000/envcheck-bench/cold-…:1`: an image of never-seen random
         layers pushed to the local registry, pulled by the doctor (its smoke then fails: it has
         no Python — the pull is what is measured), removed again after each run
- hung:  the smoke replaced by tests/smoke_scripts/hang.py, killed at --smoke-timeout 25

    .venv/bin/python bench/bench_silence.py [--layers 4] [--layer-mb 48]
"""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envcheck.engine.docker_adapter import connect
from envcheck.probe.endpoint import resolve_endpoint
from tests.registry_push import push_random_image
from tests.silence import watch

IMAGE = "envcheck-test/paddle-cpu:3.3.1"
REGISTRY = "127.0.0.1:5000"
HANG = str(Path(__file__).resolve().parents[1] / "tests" / "smoke_scripts" / "hang.py")


def measure(name: str, args: list[str], env: dict[str, str], before: object = None) -> None:
    for tty in (True, False):
        if callable(before):
            before()
        extra = [] if tty else ["--json"]
        run = watch(
            [sys.executable, "-m", "envcheck", "doctor", *args, *extra],
            tty=tty,
            env=env,
            timeout=400,
        )
        where = "terminal" if tty else "log (--json)"
        print(
            f"{name:5} {where:13} exit {run.code}, {run.elapsed:5.1f} s, {len(run.arrivals):4} stderr writes, "
            f"longest silence {run.longest_silence:5.2f} s",
            flush=True,
        )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--layer-mb", type=int, default=48)
    opts = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    measure("warm", ["--image", IMAGE], env)

    client = connect(resolve_endpoint(os.environ))
    repo = f"envcheck-bench/cold-{uuid.uuid4().hex[:8]}"
    push_random_image(
        f"http://{REGISTRY}", repo, "1", layers=opts.layers, layer_size=opts.layer_mb << 20
    )
    ref = f"{REGISTRY}/{repo}:1"

    def absent() -> None:
        for image in client.images.list():
            if any(repo in name for name in image.tags + image.attrs.get("RepoDigests", [])):
                client.images.remove(image.id, force=True)

    try:
        measure("cold", ["--image", ref], env, before=absent)
    finally:
        absent()
    measure(
        "hung", ["--image", IMAGE, "--smoke-timeout", "25"], env | {"ENVCHECK_SMOKE_SCRIPT": HANG}
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

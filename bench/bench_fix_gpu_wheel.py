"""`envcheck fix --yes` with a real Paddle GPU wheel from PyPI.

A fake Tesla T4 on driver 470 (the C-ABI fakes, tests/fakenv/profiles/t4-470.toml: CUDA 11.4, the
CUDA 11 minor-version compatibility, cuDNN 8.9.6 on LD_LIBRARY_PATH) holding Paddle's CPU build
3.3.1 in a venv, asked for `--paddle RELEASE`. A PEP 503 index on 127.0.0.1 serves Paddle's CPU
path (`ENVCHECK_PADDLE_INDEX`: the venv's build and its rollback) and, as pip's configured index
(`PIP_INDEX_URL`), `paddlepaddle-gpu==RELEASE` downloaded from PyPI (PyPI's build is the CUDA
11.8 one) with its dependencies. `fix --yes` follows its plan; the verification smoke fails
honestly (there is no GPU here); the rollback must bring `pip freeze --all` back byte for byte.
Prints the transcript (the renderer of `envcheck fix`) and the timings; asserts nothing.

Which build the plan names is the doctor's image choice: for 2.6.0 the only image is CUDA 11.8,
whose build is PyPI's `paddlepaddle-gpu==2.6.0` (2.8 GB installed), so the whole install runs.
2.6.2 has no CUDA 11.8 image (its images: 11.2, 11.7, 12.0; matrix/images.toml), so on this host
the plan names `paddlepaddle-gpu==2.6.2.post117` from Paddle's cu117 path, which PyPI's 2.6.2
wheel is not: pip finds no such build on the local index and the rollback runs from there.

    .venv/bin/python bench/bench_fix_gpu_wheel.py [--paddle 2.6.0] [--work /tmp/bench-fix-gpu]

The wheel (~760 MB) is downloaded once into .cache/wheels/gpu (git-ignored); ~8 GB free disk
is needed (the wheel, the venv's 2.8 GB install, pip's unpacking).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests import fakenv, fix_env  # the repo's own test helpers

GPU_WHEELS = ROOT / ".cache" / "wheels" / "gpu"
PROFILE = "t4-470"
NEED_FREE = 8 << 30


def _say(text: str) -> None:
    print(text, flush=True)


def gpu_wheels(paddle: str) -> tuple[list[Path], float | None]:
    """The GPU wheel and its dependencies from PyPI, downloaded once (seconds, None: cached)."""
    if any(GPU_WHEELS.glob(f"paddlepaddle_gpu-{paddle}-*.whl")):
        return sorted(GPU_WHEELS.glob("*.whl")), None
    GPU_WHEELS.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    requirement = f"paddlepaddle-gpu=={paddle}"
    cmd = [sys.executable, "-m", "pip", "download", requirement, "-d", str(GPU_WHEELS)]
    subprocess.run(cmd, check=True)
    return sorted(GPU_WHEELS.glob("*.whl")), time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--paddle", default="2.6.0", help="the release to fix to (default: 2.6.0)")
    parser.add_argument("--work", help="the work folder (default: a new temporary one)")
    args = parser.parse_args()
    free = shutil.disk_usage(ROOT).free
    _say(f"free disk under {ROOT}: {free / (1 << 30):.1f} GiB (needed: {NEED_FREE >> 30} GiB)")
    if free < NEED_FREE:
        _say("not enough free disk: nothing done")
        return 1
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-fix-gpu-"))
    wheels, downloaded = gpu_wheels(args.paddle)
    gpu = next(w for w in wheels if w.name.startswith(f"paddlepaddle_gpu-{args.paddle}-"))
    _say(
        f"wheel: {gpu.name}, {gpu.stat().st_size / 1e6:.0f} MB "
        + (f"(downloaded from PyPI in {downloaded:.1f} s)" if downloaded else "(cached)")
    )
    # Paddle's CPU path for the venv's own build (and its rollback), pip's index for the GPU one
    fix_env.build_index(work / "index", "packages/stable/cpu", fix_env.wheels())
    fix_env.build_index(work / "index", "simple", wheels)
    fake = fakenv.make_host(fakenv.build(work / "fakenv"), PROFILE, work / "host")
    with fix_env.serve(work / "index") as url:
        started = time.perf_counter()
        python = fix_env.make_venv(work / "venv")
        fix_env.pip(python, "install", "paddlepaddle==3.3.1", "-i", f"{url}/packages/stable/cpu/")
        _say(f"venv with the CPU build 3.3.1: {time.perf_counter() - started:.1f} s")
        before = fix_env.freeze(python)
        env = {
            **os.environ,
            **fake,
            "PYTHONPATH": os.pathsep.join([str(ROOT), fake["FAKE_NVIDIA_SITE_PACKAGES"]]),
            "ENVCHECK_PADDLE_INDEX": url,
            "PIP_INDEX_URL": f"{url}/simple/",
            "XDG_STATE_HOME": str(work / "state"),
        }
        fix = [sys.executable, "-m", "envcheck", "fix", "--python", python]
        fix += ["--paddle", args.paddle, "--no-pull", "--smoke-timeout", "300", "--json", "--yes"]
        _say(f"$ envcheck fix --python {python} --paddle {args.paddle} --no-pull --yes")
        started = time.perf_counter()
        run = subprocess.run(fix, env=env, cwd=ROOT, capture_output=True, text=True, check=False)
        took = time.perf_counter() - started
        after = fix_env.freeze(python)
    doc = json.loads(run.stdout)
    from envcheck.render.fix import render_fix

    _say(render_fix(doc).rstrip())
    _say(f"exit {run.returncode}; `envcheck fix --yes` took {took:.1f} s in all")
    for ran in doc.get("applied", []):
        _say(f"  step {ran['argv'][3]} {ran['argv'][-1]}: {ran['seconds']:.1f} s")
    for ran in doc.get("rollback", {}).get("ran", []):
        _say(f"  rollback {ran['argv'][3]}: {ran['seconds']:.1f} s")
    _say(f"pip freeze --all after == before, byte for byte: {after == before}")
    _say(f"({len(before.splitlines())} lines, {len(before.encode())} bytes)")
    _say(f"work folder: {work} (remove it when done)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
